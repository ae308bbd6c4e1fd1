"""The coarse-to-fine multimodal reranker (seed 001, 3.6).

Chunking (3.6.1) is CRUISE's s4_chunk: infobox fields as sentences that name their entity, web
snippets and pages packed on sentence boundaries.

Coarse (3.6.2, eq. 2): the paper scores each chunk against the question and photo with a Q-Former
and keeps the top K1 above tau_coarse. We have no Q-Former: the profile's reranker (bge-reranker
on GPU, MiniLM on CPU) scores each chunk against q' (question + the named object), and the top
`qa_dragon_coarse_k` chunks scoring at least `qa_dragon_coarse_min` go on.

Fine (eq. 3): the paper's Qwen3-Reranker is a language model read as P(yes) for "does this
passage meet the query"; ours is the profile's VLM read the same way (Sampling.choices yes/no,
one forward pass per chunk, text only, prompts/qa_dragon_fine_rerank.txt; an engine without
next-token odds gives the written word, 1 or 0). A chunk's score is fine x coarse; the top
K2 = `k_rerank` with a score of at least tau_fine x tau_coarse make the context (3.6.3, best first,
as "[Info m]" lines). A fine stage that did not run (cut by the deadline) leaves the coarse order.
"""
from __future__ import annotations

import dataclasses

from agents.config.cruise_config import CruiseConfig
from agents.engines.base import ChatEngine, ChatRequest, Reranker, Sampling
from agents.peers.qa_dragon.types import Reranked, column
from agents.runtime.system import Prior, Stage
from agents.stages.prompts import load_prompt, quote_notes
from agents.stages.s5_rerank import context_block
from agents.stages.types import Evidence, Retrieval
from agents.stages.verdicts import YES_NO, read_check


def coarse_pick(scores: list[float], cfg: CruiseConfig) -> list[int]:
    """Chunk indices passing the coarse stage, best first."""
    ranked = sorted(range(len(scores)), key=lambda i: (-scores[i], i))
    return [i for i in ranked if scores[i] >= cfg.own.qa_dragon_coarse_min][: cfg.own.qa_dragon_coarse_k]


def assemble(retrieval: Retrieval, scores: list[float], order: list[int], cfg: CruiseConfig) -> Evidence:
    """The context of the chunks `order` (best first), at most k_rerank of them."""
    kept = order[: cfg.retrieval.k_rerank]
    dates = retrieval.chunk_dates
    chunks = [retrieval.chunks[i] for i in kept]
    kept_dates = [dates[i] for i in kept] if dates else []
    return Evidence(chunk_scores=list(scores), theta=cfg.own.qa_dragon_coarse_min if retrieval.chunks else None,
                    kept=chunks, kept_dates=kept_dates, context=context_block(chunks, kept_dates),
                    retrieval_score=max(scores, default=0.0))


def coarse_batch(retrievals: list[Retrieval], reranker: Reranker, cfg: CruiseConfig) -> list[Reranked]:
    pairs = [(r.query, chunk) for r in retrievals for chunk in r.chunks]
    scores = reranker.score(pairs, stage="rerank") if pairs else []
    out, start = [], 0
    for r in retrievals:
        mine = [float(s) for s in scores[start: start + len(r.chunks)]]
        start += len(r.chunks)
        picked = coarse_pick(mine, cfg)
        out.append(Reranked(assemble(r, mine, picked, cfg), [None] * len(mine)))
    return out


def fine_batch(retrievals: list[Retrieval], coarse: list[Reranked], engine: ChatEngine,
               cfg: CruiseConfig) -> list[Reranked]:
    asks = [(t, i) for t, (r, c) in enumerate(zip(retrievals, coarse)) for i in coarse_pick(c.evidence.chunk_scores, cfg)]
    out = list(coarse)
    if not asks:
        return out
    prompt = load_prompt("qa_dragon_fine_rerank")
    requests = [ChatRequest(prompt.messages(None, query=retrievals[t].query,
                                            passage=quote_notes(retrievals[t].chunks[i]))) for t, i in asks]
    results = engine.generate(requests, Sampling(max_tokens=1, seed=cfg.models.seed, choices=YES_NO),
                              stage="fine_rerank")
    fine: dict[int, list[float | None]] = {}
    for (t, i), result in zip(asks, results):
        check = read_check(result)
        fine.setdefault(t, [None] * len(retrievals[t].chunks))[i] = check.p_yes if check.p_yes is not None else 0.0
    floor = cfg.own.qa_dragon_fine_min * cfg.own.qa_dragon_coarse_min
    for t, p_yes in fine.items():
        coarse_scores = coarse[t].evidence.chunk_scores
        joint = {i: p * coarse_scores[i] for i, p in enumerate(p_yes) if p is not None}
        order = [i for i in sorted(joint, key=lambda i: (-joint[i], i)) if joint[i] >= floor]
        evidence = assemble(retrievals[t], coarse_scores, order, cfg)
        out[t] = dataclasses.replace(coarse[t], evidence=evidence, fine=p_yes, fine_ran=True)
    return out


# The coarse reranker is priced as CRUISE's reranker (the same model over the same chunks).
def coarse(batch) -> list[dict]:
    return [{"reranked": r} for r in coarse_batch(column(batch.reads, "retrieval"), batch.engines.reranker, batch.cfg)]


def fine(batch) -> list[dict]:
    found = fine_batch(column(batch.reads, "retrieval"), column(batch.reads, "reranked"), batch.engines.vlm, batch.cfg)
    return [{"reranked": r} for r in found]


COARSE = Stage("rerank", batch_fn=coarse, reads=("retrieval",), writes=("reranked",), prior=Prior("rerank"))
FINE = Stage("fine_rerank", batch_fn=fine, reads=("retrieval", "reranked"), writes=("reranked",),
             prompts=("qa_dragon_fine_rerank",))

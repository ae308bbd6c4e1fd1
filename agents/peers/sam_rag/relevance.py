"""SAM-RAG's document retrieval and relevance verification, isRel (seed 002, Table 1 top row and
the text around it).

The retrieved documents (CRUISE's chunks of the image-KG and web hits) are ranked by similarity
to the query, our reranker's score against q' (the paper ranks by its retriever's embedding
similarity), and judged for relevance a round of `sam_rag_batch_docs` at a time, best first: one
request per document (prompts/sam_rag_is_rel.txt: the question, the photo's question-aware
caption, the document; text only, since the photo is already aligned to text), read as the
stack reads a yes/no check. The relevant ones are kept (C). A round that keeps one ends the
search (the paper's flag F); otherwise the next round judges the next documents. The paper
retrieves until a relevant document turns up; here at most `sam_rag_rounds` rounds run, each one
engine call for the turns still searching, under the batch's deadline. An unreadable verdict
keeps nothing (the check cannot vouch for the document).
"""
from __future__ import annotations

import dataclasses

from agents.config.cruise_config import CruiseConfig
from agents.engines.base import ChatEngine, ChatRequest, Reranker
from agents.peers.sam_rag.types import RelevanceSearch, column
from agents.runtime.system import Stage
from agents.stages.prompts import load_prompt, quote_notes
from agents.stages.types import Retrieval, Summary, Turn
from agents.stages.verdicts import check_sampling, read_check


def rank_batch(retrievals: list[Retrieval], reranker: Reranker, cfg: CruiseConfig) -> list[RelevanceSearch]:
    pairs = [(r.query, chunk) for r in retrievals for chunk in r.chunks]
    scores = reranker.score(pairs, stage="rank") if pairs else []
    out, start = [], 0
    limit = cfg.own.sam_rag_batch_docs * cfg.own.sam_rag_rounds
    for r in retrievals:
        mine = [float(s) for s in scores[start: start + len(r.chunks)]]
        start += len(r.chunks)
        order = sorted(range(len(mine)), key=lambda i: (-mine[i], i))[:limit]
        out.append(RelevanceSearch(scores=mine, order=order))
    return out


def searching(state: RelevanceSearch, cfg: CruiseConfig) -> bool:
    return not state.found and state.rounds < cfg.own.sam_rag_rounds and bool(state.next_round(cfg.own.sam_rag_batch_docs))


def is_rel_round(turns: list[Turn], summaries: list[Summary], retrievals: list[Retrieval],
                 states: list[RelevanceSearch], engine: ChatEngine, cfg: CruiseConfig) -> list[RelevanceSearch]:
    """One round: the next documents of every turn still searching, one engine call."""
    asks = [(t, i) for t, state in enumerate(states) if searching(state, cfg)
            for i in state.next_round(cfg.own.sam_rag_batch_docs)]
    out = [dataclasses.replace(s, checks=dict(s.checks)) for s in states]
    if not asks:
        return out
    prompt = load_prompt("sam_rag_is_rel")
    requests = [ChatRequest(prompt.messages(None, query=turns[t].query,
                                            caption=summaries[t].text or "(no caption)",
                                            document=quote_notes(retrievals[t].chunks[i]))) for t, i in asks]
    results = engine.generate(requests, check_sampling(cfg, cfg.own.sam_rag_check_max_tokens), stage="is_rel")
    for (t, i), result in zip(asks, results):
        out[t].checks[i] = read_check(result)
    for t in {t for t, _ in asks}:
        out[t].rounds += 1
    return out


def rank(batch) -> list[dict]:
    found = rank_batch(column(batch.reads, "retrieval"), batch.engines.reranker, batch.cfg)
    return [{"relevance": r} for r in found]


def is_rel(batch) -> list[dict]:
    """One round of isRel over the turns still searching (`relevance`: where each stands)."""
    found = is_rel_round(batch.turns, column(batch.reads, "summary"), column(batch.reads, "retrieval"),
                         column(batch.reads, "relevance"), batch.engines.vlm, batch.cfg)
    return [{"relevance": r} for r in found]


RANK = Stage("rank", batch_fn=rank, reads=("retrieval",), writes=("relevance",))
IS_REL = Stage("is_rel", batch_fn=is_rel, reads=("summary", "retrieval", "relevance"), writes=("relevance",),
               parsed="is_rel", prompts=("sam_rag_is_rel",))

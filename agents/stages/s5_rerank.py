"""Stage 5: score every chunk against q' (one reranker call per batch) and keep the salient ones.

Dynamic threshold (paper, eq. 5): theta = max(tau, median(top) - lambda * MAD(top)) over the
top-10 scores, MAD being the raw median absolute deviation (no 1.4826 consistency factor).
Chunks with score >= theta are kept, best first, at most K_rerank of them (eq. 6).

Coarse to fine (ours, `rerank_coarse_k` > 0; off by default): a bi-encoder (all-MiniLM-L6-v2)
scores every chunk first and keeps each turn's best k, and the reranker scores only those; the
others have no reranker score (None), and the MAD filter and K_rerank read the scored ones. A
cross-encoder reads query and chunk together for each pair, a bi-encoder each text once: on 2 cores
the paper's cross-encoder over a cpu-profile turn's ~85 chunks costs ~20 s, over 16 ~6 s.

A kept chunk from a dated web page (the full-content database's page_last_modified) shows its
date in the context, "[Info m] (page last modified: DATE) chunk": a real-time question's answer
can then tell how old its evidence is.
"""
from __future__ import annotations

import statistics

from agents.config.cruise_config import CruiseConfig
from agents.engines.base import Reranker
from agents.runtime.system import Prior, Stage
from agents.stages.types import Evidence, Retrieval, column


def mad_threshold(scores, tau: float = 0.1, lam: float = 1.5, top_k: int = 10) -> float:
    top = sorted((float(s) for s in scores), reverse=True)[:top_k]
    if not top:
        return tau
    median = statistics.median(top)
    mad = statistics.median(abs(s - median) for s in top)
    return max(tau, median - lam * mad)


def select_chunks(chunks: list[str], scores: list[float | None], cfg: CruiseConfig,
                  dates: list[str] | None = None, coarse_scores: list[float] | None = None) -> Evidence:
    """The MAD filter and the context block for one turn (also used to re-decide offline) over
    the chunks the reranker scored (a None score: the coarse step left it out); `dates` aligned
    with `chunks` (Retrieval.chunk_dates), or None."""
    scored = [(score, i) for i, score in enumerate(scores) if score is not None]
    theta = mad_threshold([score for score, _ in scored], cfg.retrieval.mad_tau, cfg.retrieval.mad_lambda,
                          cfg.retrieval.mad_top_k)
    ranked = sorted(scored, key=lambda p: (-p[0], p[1]))
    picked = [i for score, i in ranked if score >= theta][: cfg.retrieval.k_rerank]
    kept = [chunks[i] for i in picked]
    kept_dates = [dates[i] for i in picked] if dates else []
    return Evidence(
        chunk_scores=list(scores),
        coarse_scores=list(coarse_scores or []),
        theta=theta if chunks else None,
        kept=kept,
        kept_dates=kept_dates,
        context=context_block(kept, kept_dates),
        retrieval_score=max((score for score, _ in scored), default=0.0),
    )


def context_block(kept: list[str], dates: list[str] | None = None) -> str:
    """C: the kept chunks as "[Info m] chunk" lines, a dated page's chunk with its date; empty
    means no context."""
    dates = dates or [""] * len(kept)
    return "\n".join(f"[Info {m}] " + (f"(page last modified: {date}) " if date else "") + chunk
                     for m, (chunk, date) in enumerate(zip(kept, dates), start=1))


def per_turn(retrievals: list[Retrieval], flat: list) -> list[list]:
    """A batch's flat list (one item per chunk, turn after turn) cut back into turns."""
    out, start = [], 0
    for r in retrievals:
        out.append(list(flat[start : start + len(r.chunks)]))
        start += len(r.chunks)
    return out


def best_k(scores: list[float], k: int) -> list[int]:
    """The indices of the k best scores, in chunk order (ties: the earlier chunk)."""
    return sorted(sorted(range(len(scores)), key=lambda i: (-scores[i], i))[:k])


def rerank_batch(retrievals: list[Retrieval], reranker: Reranker, cfg: CruiseConfig,
                 coarse: Reranker | None = None) -> list[Evidence]:
    k = cfg.retrieval.rerank_coarse_k
    if k and coarse is None:
        raise ValueError("rerank_coarse_k needs a coarse bi-encoder (Engines.coarse; build_engines makes it)")
    coarse_scores = [[] for _ in retrievals]
    shortlist = [list(range(len(r.chunks))) for r in retrievals]
    if k:
        pairs = [(r.query, chunk) for r in retrievals for chunk in r.chunks]
        coarse_scores = per_turn(retrievals, coarse.score(pairs, stage="rerank") if pairs else [])
        shortlist = [best_k(scores, k) for scores in coarse_scores]
    pairs = [(r.query, r.chunks[i]) for r, rows in zip(retrievals, shortlist) for i in rows]
    scores = iter(reranker.score(pairs, stage="rerank") if pairs else [])
    out = []
    for r, rows, turn_coarse in zip(retrievals, shortlist, coarse_scores):
        mine: list[float | None] = [None] * len(r.chunks)
        for i in rows:
            mine[i] = next(scores)
        out.append(select_chunks(r.chunks, mine, cfg, r.chunk_dates, turn_coarse))
    return out


def rerank(batch) -> list[dict]:
    found = rerank_batch(column(batch.reads, "retrieval"), batch.engines.reranker, batch.cfg, batch.engines.coarse)
    return [{"evidence": e} for e in found]


STAGE = Stage("rerank", batch_fn=rerank, reads=("retrieval",), writes=("evidence",), prior=Prior("rerank"))

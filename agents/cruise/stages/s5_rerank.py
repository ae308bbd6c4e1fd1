"""Stage 5: score every chunk against q' (one reranker call per batch) and keep the salient ones.

Dynamic threshold (paper, eq. 5): theta = max(tau, median(top) - lambda * MAD(top)) over the
top-10 scores, MAD being the raw median absolute deviation (no 1.4826 consistency factor).
Chunks with score >= theta are kept, best first, at most K_rerank of them (eq. 6).
"""
from __future__ import annotations

import statistics

from agents.config import CruiseConfig
from agents.cruise.types import Evidence, Retrieval
from agents.engines.base import Reranker


def mad_threshold(scores, tau: float = 0.1, lam: float = 1.5, top_k: int = 10) -> float:
    top = sorted((float(s) for s in scores), reverse=True)[:top_k]
    if not top:
        return tau
    median = statistics.median(top)
    mad = statistics.median(abs(s - median) for s in top)
    return max(tau, median - lam * mad)


def select_chunks(chunks: list[str], scores: list[float], cfg: CruiseConfig) -> Evidence:
    """The MAD filter and the context block for one turn (also used to re-decide offline)."""
    theta = mad_threshold(scores, cfg.mad_tau, cfg.mad_lambda, cfg.mad_top_k)
    ranked = sorted(zip(scores, range(len(chunks))), key=lambda p: (-p[0], p[1]))
    kept = [chunks[i] for score, i in ranked if score >= theta][: cfg.k_rerank]
    return Evidence(
        chunk_scores=list(scores),
        theta=theta if chunks else None,
        kept=kept,
        context=context_block(kept),
        retrieval_score=max(scores, default=0.0),
    )


def context_block(kept: list[str]) -> str:
    """C: the kept chunks as "[Info m] chunk" lines; empty means no context."""
    return "\n".join(f"[Info {m}] {chunk}" for m, chunk in enumerate(kept, start=1))


def rerank_batch(retrievals: list[Retrieval], reranker: Reranker, cfg: CruiseConfig) -> list[Evidence]:
    pairs = [(r.query, chunk) for r in retrievals for chunk in r.chunks]
    scores = reranker.score(pairs, stage="rerank") if pairs else []
    out, start = [], 0
    for r in retrievals:
        mine = scores[start : start + len(r.chunks)]
        start += len(r.chunks)
        out.append(select_chunks(r.chunks, mine, cfg))
    return out

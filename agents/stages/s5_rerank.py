"""Stage 5: score every chunk against q' (one reranker call per batch) and keep the salient ones.

Dynamic threshold (paper, eq. 5): theta = max(tau, median(top) - lambda * MAD(top)) over the
top-10 scores, MAD being the raw median absolute deviation (no 1.4826 consistency factor).
Chunks with score >= theta are kept, best first, at most K_rerank of them (eq. 6).

A kept chunk from a dated web page (the full-content database's page_last_modified) shows its
date in the context, "[Info m] (page last modified: DATE) chunk": a real-time question's answer
can then tell how old its evidence is.
"""
from __future__ import annotations

import statistics

from agents.config import CruiseConfig
from agents.engines.base import Reranker
from agents.runtime.system import Stage
from agents.stages.types import Evidence, Retrieval


def mad_threshold(scores, tau: float = 0.1, lam: float = 1.5, top_k: int = 10) -> float:
    top = sorted((float(s) for s in scores), reverse=True)[:top_k]
    if not top:
        return tau
    median = statistics.median(top)
    mad = statistics.median(abs(s - median) for s in top)
    return max(tau, median - lam * mad)


def select_chunks(chunks: list[str], scores: list[float], cfg: CruiseConfig,
                  dates: list[str] | None = None) -> Evidence:
    """The MAD filter and the context block for one turn (also used to re-decide offline);
    `dates` aligned with `chunks` (Retrieval.chunk_dates), or None."""
    theta = mad_threshold(scores, cfg.retrieval.mad_tau, cfg.retrieval.mad_lambda, cfg.retrieval.mad_top_k)
    ranked = sorted(zip(scores, range(len(chunks))), key=lambda p: (-p[0], p[1]))
    picked = [i for score, i in ranked if score >= theta][: cfg.retrieval.k_rerank]
    kept = [chunks[i] for i in picked]
    kept_dates = [dates[i] for i in picked] if dates else []
    return Evidence(
        chunk_scores=list(scores),
        theta=theta if chunks else None,
        kept=kept,
        kept_dates=kept_dates,
        context=context_block(kept, kept_dates),
        retrieval_score=max(scores, default=0.0),
    )


def context_block(kept: list[str], dates: list[str] | None = None) -> str:
    """C: the kept chunks as "[Info m] chunk" lines, a dated page's chunk with its date; empty
    means no context."""
    dates = dates or [""] * len(kept)
    return "\n".join(f"[Info {m}] " + (f"(page last modified: {date}) " if date else "") + chunk
                     for m, (chunk, date) in enumerate(zip(kept, dates), start=1))


def rerank_batch(retrievals: list[Retrieval], reranker: Reranker, cfg: CruiseConfig) -> list[Evidence]:
    pairs = [(r.query, chunk) for r in retrievals for chunk in r.chunks]
    scores = reranker.score(pairs, stage="rerank") if pairs else []
    out, start = [], 0
    for r in retrievals:
        mine = scores[start : start + len(r.chunks)]
        start += len(r.chunks)
        out.append(select_chunks(r.chunks, mine, cfg, r.chunk_dates))
    return out


STAGE = Stage("rerank", cost_prior="rerank",
              trace_fields=("chunks", "theta", "kept_chunks", "context", "retrieval_score"))

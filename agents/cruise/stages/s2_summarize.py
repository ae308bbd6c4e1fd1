"""Stage 2: a one-sentence, question-aware description of the image, to sharpen retrieval.

The retrieval query is q' = question + summary (paper, eq. 2).
"""
from __future__ import annotations

from agents.config import CruiseConfig
from agents.cruise.prompts import ask_vlm
from agents.cruise.types import Route, Turn
from agents.engines.base import ChatEngine, Sampling


def first_sentence(text: str) -> str:
    line = next((ln.strip() for ln in text.strip().splitlines() if ln.strip()), "")
    for end in (". ", "! ", "? "):
        if end in line:
            line = line[: line.index(end) + 1]
    return line


def summarize_batch(
    turns: list[Turn], routes: list[Route], engine: ChatEngine, cfg: CruiseConfig
) -> list[str]:
    """Summaries for the turns that will retrieve; "" for the others (no engine request)."""
    wanted = [i for i, r in enumerate(routes) if r.needs_external and cfg.use_retrieval and cfg.use_summary]
    summaries = [""] * len(turns)
    replies = ask_vlm(
        engine, "summarize", turns, wanted, lambda i: dict(query=turns[i].query),
        Sampling(max_tokens=cfg.summary_max_tokens, seed=cfg.seed), with_history=False,
    )
    for i, text in zip(wanted, replies):
        summaries[i] = first_sentence(text)
    return summaries

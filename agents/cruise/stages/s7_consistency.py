"""Stage 7: self-consistency. The VLM judges yes/no whether the RAG and non-RAG answers agree,
given the context and the image. Turns whose RAG answer is already "I don't know" are not asked:
the finalizer returns "I don't know" for them whatever the verdict."""
from __future__ import annotations

import re

from agents.base_agent import IDK_ANSWER
from agents.config import CruiseConfig
from agents.cruise.prompts import ask_vlm, quote_notes
from agents.cruise.types import Answers, Evidence, Turn
from agents.engines.base import ChatEngine, Sampling

_VERDICT = re.compile(r"\b(yes|no)\b", re.IGNORECASE)


def parse_verdict(text: str) -> bool:
    """The first yes/no word decides; no such word counts as "not consistent"."""
    match = _VERDICT.search(text)
    return match is not None and match.group(1).lower() == "yes"


def needs_consistency_check(answers: Answers, cfg: CruiseConfig) -> bool:
    return cfg.use_self_consistency and answers.direct is not None and answers.rag != IDK_ANSWER


def consistency_batch(
    turns: list[Turn], evidence: list[Evidence], answers: list[Answers], engine: ChatEngine, cfg: CruiseConfig
) -> list[tuple[bool | None, str]]:
    """(verdict, raw text) per turn; (None, "") where no check ran."""
    out: list[tuple[bool | None, str]] = [(None, "")] * len(turns)
    wanted = [i for i, a in enumerate(answers) if needs_consistency_check(a, cfg)]
    replies = ask_vlm(
        engine, "consistency", turns, wanted,
        lambda i: dict(query=turns[i].query, context=quote_notes(evidence[i].context),
                       direct_answer=answers[i].direct, rag_answer=answers[i].rag),
        Sampling(max_tokens=cfg.consistency_max_tokens, seed=cfg.seed),
    )
    for i, text in zip(wanted, replies):
        out[i] = (parse_verdict(text), text)
    return out

"""Stage 8: Chain-of-Verification confidence for the RAG answer.

The model writes `CONFIDENCE: <float>` first (then REASONING and SUB-QUESTIONS), so a cut-off
output is still scored. Only the number drives the finalizer, so by default generation stops
where REASONING would begin (cfg.cov_full_output keeps the rest for the trace).
A missing or unreadable confidence counts as 0.0.
"""
from __future__ import annotations

import re

from agents.base_agent import IDK_ANSWER
from agents.config import CruiseConfig
from agents.cruise.prompts import ask_vlm, quote_notes
from agents.cruise.types import Answers, Evidence, Turn
from agents.engines.base import ChatEngine, Sampling

# "CONFIDENCE: 0.9", "Confidence score = .95", "**Confidence**: [1.0]"; never "10" or "95%".
_CONFIDENCE = re.compile(r"confidence[^0-9\n]{0,24}?((?<![\d.])(?:[01](?:\.\d+)?|\.\d+))(?![\d%])", re.IGNORECASE)


def parse_confidence(text: str) -> float:
    match = _CONFIDENCE.search(text)
    if match is None:
        return 0.0
    return min(1.0, max(0.0, float(match.group(1))))


def needs_verification(answers: Answers, consistent: bool | None, cfg: CruiseConfig) -> bool:
    # An inconsistent pair is rejected by Algorithm 1 whatever the confidence, so it is not asked.
    return cfg.use_cov and answers.rag != IDK_ANSWER and consistent is not False


def verify_batch(
    turns: list[Turn],
    evidence: list[Evidence],
    answers: list[Answers],
    verdicts: list[bool | None],
    engine: ChatEngine,
    cfg: CruiseConfig,
) -> list[tuple[float | None, str]]:
    """(confidence, raw text) per turn; (None, "") where no check ran."""
    out: list[tuple[float | None, str]] = [(None, "")] * len(turns)
    wanted = [i for i, (a, v) in enumerate(zip(answers, verdicts)) if needs_verification(a, v, cfg)]
    sampling = (
        Sampling(max_tokens=cfg.cov_full_max_tokens, seed=cfg.seed)
        if cfg.cov_full_output
        else Sampling(max_tokens=cfg.cov_max_tokens, stop=("REASONING", "Reasoning"), seed=cfg.seed)
    )
    replies = ask_vlm(
        engine, "verify", turns, wanted,
        lambda i: dict(query=turns[i].query, context=quote_notes(evidence[i].context), answer=answers[i].rag),
        sampling,
    )
    for i, text in zip(wanted, replies):
        out[i] = (parse_confidence(text), text)
    return out

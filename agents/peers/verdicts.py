"""How the peer systems read a model's verdict, on any model stack.

A yes/no check (QA-Dragon's tool router and fine reranker, SAM-RAG's isRel and isUse) is read as
the stack reads CRUISE's consistency verdict (`consistency_mode`): the written word ("text"), or
the odds of the two words at the first token ("yes_no": one forward pass, always read). A
support check (QA-Dragon's answer verifier, SAM-RAG's isSup) is read as the stack reads CRUISE's
CoV (`cov_mode`): a written verdict, the yes/no odds, or the lexical grounding share where the
stack's model cannot verify at all; it passes at `tau_low`, the stack's cut for that reading.
"""
from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from agents.config import CruiseConfig
from agents.cruise.stages.s7_consistency import read_verdict
from agents.cruise.stages.s8_verify import grounding, yes_odds
from agents.engines.base import ChatEngine, ChatResult, Sampling

YES_NO = ("yes", "no")
# s5_rerank's "[Info m]" labels and page dates are no evidence of their own.
_INFO_LABEL = re.compile(r"^\[Info \d+\] (?:\(page last modified: [^)\n]*\) )?", re.MULTILINE)


@dataclass
class Check:
    """One yes/no verdict: `passed` None when unreadable; `p_yes` the model's odds (1/0 for a
    written word); `raw` what the model wrote."""

    passed: bool | None = None
    p_yes: float | None = None
    raw: str = ""


def check_sampling(cfg: CruiseConfig, max_tokens: int) -> Sampling:
    if cfg.answer.consistency_mode == "yes_no":
        return Sampling(max_tokens=1, seed=cfg.models.seed, choices=YES_NO)
    return Sampling(max_tokens=max_tokens, seed=cfg.models.seed)


def read_check(result: ChatResult, min_p_yes: float = 0.5) -> Check:
    """The odds where the engine gave them (yes from `min_p_yes` up), else the written word;
    unreadable: passed None."""
    if result.choice_logprobs:
        p_yes, parsed = yes_odds(result.choice_logprobs)
        if parsed:
            return Check(p_yes >= min_p_yes, p_yes, result.text)
    verdict, parsed = read_verdict(result.text)
    if not parsed:
        return Check(None, None, result.text)
    return Check(verdict, 1.0 if verdict else 0.0, result.text)


_ANSWER_LABEL_ONLY = re.compile(r"^\W*(?:the\s+)?(?:final\s+|draft\s+|short\s+)?answer(?:\s+is)?\s*[:=]\s*",
                                re.IGNORECASE)


def without_answer_labels(text: str) -> str:
    """A reply's answer without answer labels in front ("The answer is: Draft answer: X" -> "X"):
    a model that repeats the label line leaves nothing of its own."""
    previous = None
    while text != previous:
        previous, text = text, _ANSWER_LABEL_ONLY.sub("", text.strip(), count=1)
    return text.strip()


def evidence_text(context: str, picture_text: str) -> str:
    """What a grounding check may find an answer's words in: the notes without their labels and
    what perception read in the picture."""
    return "\n".join(part for part in (_INFO_LABEL.sub("", context or ""), picture_text) if part)


def grounding_confidence(answer: str, query: str, context: str, picture_text: str) -> float:
    return grounding(answer, query, evidence_text(context, picture_text))


def support_checks(engine: ChatEngine, cfg: CruiseConfig, turns: list, wanted: list[int], *, stage: str,
                   prompt: str, max_tokens: int, answer_of: Callable[[int], str], context_of: Callable[[int], str],
                   values: Callable[[int], dict], read_text: Callable[[str], tuple[float, bool]],
                   ) -> dict[int, tuple[float, str, bool]]:
    """Turn index -> (confidence, raw reply, parsed) for each turn in `wanted`, read as the stack
    reads a support check (`cov_mode`): the grounding share (no model call), the odds of a one-word
    yes/no (prompt `<prompt>_yes_no`), or the written verdict (prompt `prompt`, `read_text`)."""
    from agents.cruise.prompts import ask_vlm_results

    if cfg.answer.cov_mode == "grounding":
        out = {}
        for i in wanted:
            confidence = grounding_confidence(answer_of(i), turns[i].query, context_of(i), turns[i].picture_text)
            out[i] = (confidence, f"grounded {confidence}", True)
        return out
    if cfg.answer.cov_mode == "yes_no":
        results = ask_vlm_results(engine, stage, turns, wanted, values,
                                  Sampling(max_tokens=1, seed=cfg.models.seed,
                                           choices=YES_NO), prompt_name=f"{prompt}_yes_no")
        out = {}
        for i, result in zip(wanted, results):
            check = read_check(result)
            out[i] = (check.p_yes if check.p_yes is not None else 0.0, result.text, check.passed is not None)
        return out
    results = ask_vlm_results(engine, stage, turns, wanted, values,
                              Sampling(max_tokens=max_tokens, seed=cfg.models.seed), prompt_name=prompt)
    out = {}
    for i, result in zip(wanted, results):
        confidence, parsed = read_text(result.text)
        out[i] = (confidence, result.text, parsed)
    return out


def support_passes(confidence: float | None, cfg: CruiseConfig) -> bool:
    return confidence is not None and confidence >= cfg.answer.tau_low

"""Stage 8: Chain-of-Verification confidence for the RAG answer.

The model is asked to write `CONFIDENCE: <float>` first (then REASONING and SUB-QUESTIONS), so a
cut-off output is still scored. Only the number drives the finalizer, so by default generation
stops at a REASONING or SUB-QUESTIONS label that starts a new line: right after the confidence
line when the model keeps the order, and after its reasoning when it writes REASONING first (a
label at the very start of the reply is no stop), so the number is still there to read.
`cov_full_output` keeps everything for the trace.

The number is read through what models write: a newline after the label, an echoed scale
("Confidence (0.0-1.0): 0.8"), a decimal comma, markdown, `=` for `:`, integers 1 and 0, prose
before the label, any case, or a bare number as the whole first line. A value outside [0, 1]
("10", "95%") or no number counts as 0.0 and as a parse failure.

`cov_mode` "yes_no" (the cpu profile) asks the same question for one word instead
(prompts/verify_yes_no.txt) and reads the confidence from one forward pass: P(yes) / (P(yes) +
P(no)) at the first token. A small model writes no readable CONFIDENCE line on most turns, and
writing one costs a generation per turn; the odds are always there, and they are a number the
finalizer's thresholds (and offline calibration) can cut at.

`cov_mode` "grounding" asks no model: the confidence is the share of the answer's own words
(not in the question, not function words) found in the notes or in what was read in the picture
(`Turn.picture_text`), numbers exactly, other words up to a plural or tense ending. An answer
that asserts nothing of its own (a rephrased question) scores 0, and so does one of a kind words
cannot vouch for: a reply to a yes/no or why/how-to question, or a question asking for a number
(how many, when, what year, a price) answered without a number the evidence holds. It checks that the answer
says what the evidence says, not that the evidence is right; it is the cpu profile's verifier,
where the small model's yes/no odds did not tell right answers from wrong ones (docs/chain.md).
"""
from __future__ import annotations

import dataclasses
import re

from agents.base_agent import IDK_ANSWER
from agents.config.cruise_config import CruiseConfig
from agents.engines.base import ChatEngine, Sampling
from agents.runtime.system import Prior, Stage
from agents.stages.parsing import NUMBER, strip_markdown, to_float
from agents.stages.prompts import ask_vlm, ask_vlm_results, quote_notes
from agents.stages.types import (
    Answers,
    Evidence,
    Turn,
    Verification,
    column,
    question_beside_standalone,
    search_question,
)
from agents.stages.verdicts import INFO_LABEL, grounding, grounding_mode, yes_odds

_SCALE = re.compile(
    r"[(\[]\s*(?:from\s+|on\s+a\s+scale\s+(?:of|from)\s+)?0(?:[.,]0+)?\s*(?:-|–|to)\s*1(?:[.,]0+)?\s*[)\]]",
    re.IGNORECASE,
)
_CONFIDENCE = re.compile(r"\bconfidence\b[^\d\n]{0,40}?\s*" + NUMBER, re.IGNORECASE)
_BARE_NUMBER = re.compile(r"^[\[(]?\s*" + NUMBER + r"\s*[\])]?\.?$")
# Stop where a later section begins on a new line (never at the very start of the reply).
COV_STOPS = tuple(f"\n{mark}{label}" for label in ("REASONING", "Reasoning", "SUB-QUESTIONS", "Sub-questions")
                  for mark in ("", "**"))


def read_confidence(text: str) -> tuple[float, bool]:
    """(confidence in [0, 1], parsed); unreadable is (0.0, False)."""
    plain = _SCALE.sub(" ", strip_markdown(text or ""))
    for match in _CONFIDENCE.finditer(plain):
        value = to_float(match.group(1))
        if 0.0 <= value <= 1.0:
            return value, True
    first = next((line.strip() for line in plain.splitlines() if line.strip()), "")
    bare = _BARE_NUMBER.match(first)
    if bare and 0.0 <= to_float(bare.group(1)) <= 1.0:
        return to_float(bare.group(1)), True
    return 0.0, False


def parse_confidence(text: str) -> float:
    return read_confidence(text)[0]


def cov_sampling(cfg: CruiseConfig) -> Sampling:
    if cfg.own.cov_full_output:
        return Sampling(max_tokens=cfg.own.cov_full_max_tokens, seed=cfg.models.seed)
    return Sampling(max_tokens=cfg.own.cov_max_tokens, stop=COV_STOPS, seed=cfg.models.seed)


def needs_verification(answers: Answers, consistent: bool | None, cfg: CruiseConfig) -> bool:
    # An inconsistent pair is rejected by Algorithm 1 whatever the confidence, so it is not asked.
    return cfg.own.use_cov and answers.rag != IDK_ANSWER and consistent is not False


def verify_batch(
    turns: list[Turn],
    evidence: list[Evidence],
    answers: list[Answers],
    checks: list[Verification],
    engine: ChatEngine,
    cfg: CruiseConfig,
) -> list[Verification]:
    """Each turn's Verification with the CoV fields added (cov_confidence None where no check ran)."""
    out = list(checks)
    wanted = [i for i, (a, c) in enumerate(zip(answers, checks)) if needs_verification(a, c.consistent, cfg)]
    values = lambda i: dict(query=question_beside_standalone(turns[i]), context=quote_notes(evidence[i].context), answer=answers[i].rag)  # noqa: E731
    if cfg.answer.cov_mode == "grounding":
        for i in wanted:
            notes = "\n".join(part for part in (INFO_LABEL.sub("", evidence[i].context), turns[i].picture_text) if part)
            confidence = grounding(answers[i].rag, search_question(turns[i]), notes)
            out[i] = dataclasses.replace(checks[i], cov_confidence=confidence, cov_raw=f"grounded {confidence}",
                                         cov_parsed=True)
        return out
    if cfg.answer.cov_mode == "yes_no":
        results = ask_vlm_results(engine, "verify", turns, wanted, values,
                                  Sampling(max_tokens=1, seed=cfg.models.seed, choices=("yes", "no")),
                                  prompt_name="verify_yes_no")
        for i, result in zip(wanted, results):
            confidence, parsed = yes_odds(result.choice_logprobs)
            out[i] = dataclasses.replace(checks[i], cov_confidence=confidence, cov_raw=result.text, cov_parsed=parsed)
        return out
    replies = ask_vlm(engine, "verify", turns, wanted, values, cov_sampling(cfg))
    for i, text in zip(wanted, replies):
        confidence, parsed = read_confidence(text)
        out[i] = dataclasses.replace(checks[i], cov_confidence=confidence, cov_raw=text, cov_parsed=parsed)
    return out


def verify(batch) -> list[dict]:
    checks = verify_batch(batch.turns, column(batch.reads, "evidence"), column(batch.reads, "answers"),
                          column(batch.reads, "check"), batch.engines.vlm, batch.cfg)
    return [{"check": c} for c in checks]


STAGE = Stage("verify", batch_fn=verify, reads=("evidence", "answers", "check"), writes=("check",), switch="use_cov",
              parsed="verify", prior=Prior("verify", max_tokens=lambda cfg: cov_sampling(cfg).max_tokens,
                          # the grounding check asks no model
                          requests_per_turn=lambda cfg: 0 if grounding_mode(cfg) else 1),
              prompts=("verify", "verify_yes_no"))

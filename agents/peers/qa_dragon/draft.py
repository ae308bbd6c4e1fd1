"""Pre-answer, step 2: the domain-specific chain of thought, D-CoT (seed 001, 3.1.2). The VLM
sees the photo, the conversation and the question, with the domain's own lines where
prompts/domains/ has them (the paper's in-domain prompt; its few-shot examples are not
reproduced), and writes:

    Object: <the exact name of the thing asked about, or its kind>
    1. <one sentence per step, at most five>
    Draft answer: <a short answer, or I don't know>

The steps are the reasoning trace the search router reads; a step that says what cannot be
determined is the paper's explicit uncertainty signal. A reply without a readable draft answer
(cut by max_tokens or the deadline, or off-format) counts as a failed draft: the router then
sends the turn to RAG.
"""
from __future__ import annotations

import re

from agents.base_agent import IDK_ANSWER
from agents.config.cruise_config import CruiseConfig
from agents.engines.base import ChatEngine, Sampling
from agents.peers.qa_dragon.types import DomainRoute, Draft, column
from agents.runtime.system import Stage
from agents.stages.parsing import labelled_value, strip_markdown
from agents.stages.prompts import ask_vlm, load_prompt, load_prompt_lines
from agents.stages.s1b_domain_route import domain_slug
from agents.stages.s6_answer import read_answer
from agents.stages.types import Turn
from agents.stages.verdicts import without_answer_labels

_STEP = re.compile(r"^\s*(?:step\s*)?\d+[.):]\s*(.+)$", re.IGNORECASE)
_ANSWER_LABEL = r"draft[\s_-]*answer|final[\s_-]*answer|(?:the\s+)?answer(?:\s+is)?"
_OBJECT_LABEL = r"object|item|subject"
MAX_STEPS = 5
_WORD = re.compile(r"[a-z0-9']+")


def read_draft(text: str, instructions: str = "") -> Draft:
    """The Object line, the numbered steps (at most five) and the draft answer ("I don't know"
    for any abstention); parsed False when no answer line could be read, or when the answer
    only repeats words of the prompt's `instructions` (a model copying the format)."""
    plain = strip_markdown(text or "")
    object_name = (labelled_value(plain, _OBJECT_LABEL) or "").strip()
    steps = []
    for line in plain.splitlines():
        found = _STEP.match(line)
        if found and not re.match(rf"\s*(?:{_ANSWER_LABEL})\s*[:=]", found.group(1), re.IGNORECASE):
            steps.append(found.group(1).strip())
    value = without_answer_labels(labelled_value(plain, _ANSWER_LABEL) or "")
    if not value or copies(value, instructions):
        return Draft(IDK_ANSWER, object_name[:120], steps[:MAX_STEPS], text, parsed=False)
    answer, parsed = read_answer(value)
    return Draft(answer, object_name[:120], steps[:MAX_STEPS], text, parsed=parsed)


def copies(value: str, instructions: str, min_words: int = 4) -> bool:
    """Whether `value` is a run of at least `min_words` words of the instructions."""
    words = _WORD.findall(value.lower())
    return len(words) >= min_words and f" {' '.join(words)} " in f" {' '.join(_WORD.findall(instructions.lower()))} "


def lengths(cfg: CruiseConfig, answers: float) -> int:
    """A generation budget of `answers` answer lengths (the stack's answer_max_tokens)."""
    return max(1, round(answers * cfg.answer.answer_max_tokens))


def domain_lines(domain: DomainRoute) -> str:
    """The domain's own lines for the D-CoT prompt ("" for none)."""
    return load_prompt_lines(f"domains/{domain_slug(domain.domain)}") if domain.domain else ""


def draft_batch(turns: list[Turn], domains: list[DomainRoute], engine: ChatEngine, cfg: CruiseConfig) -> list[Draft]:
    wanted = list(range(len(turns)))
    replies = ask_vlm(
        engine, "draft", turns, wanted,
        lambda i: dict(query=turns[i].query, domain_notes=domain_lines(domains[i])),
        Sampling(max_tokens=lengths(cfg, cfg.own.qa_dragon_draft_lengths),
                 seed=cfg.models.seed), prompt_name="qa_dragon_draft",
    )
    instructions = load_prompt("qa_dragon_draft").user.template
    return [read_draft(text, instructions) for text in replies]


def draft(batch) -> list[dict]:
    """Each turn's D-CoT draft, given its `domain`."""
    return [{"draft": d} for d in draft_batch(batch.turns, column(batch.reads, "domain"), batch.engines.vlm, batch.cfg)]


STAGE = Stage("draft", batch_fn=draft, reads=("domain",), writes=("draft",), parsed="draft", prompts=("qa_dragon_draft",))

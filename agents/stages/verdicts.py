"""How the peer systems read a model's verdict, on any model stack.

A yes/no check (QA-Dragon's tool router and fine reranker, SAM-RAG's isRel and isUse) is read as
the stack reads CRUISE's consistency verdict (`consistency_mode`): the written word ("text"), or
the odds of the two words at the first token ("yes_no": one forward pass, always read). A
support check (QA-Dragon's answer verifier, SAM-RAG's isSup) is read as the stack reads CRUISE's
CoV (`cov_mode`): a written verdict, the yes/no odds, or the lexical grounding share where the
stack's model cannot verify at all; it passes at `tau_low`, the stack's cut for that reading.
"""
from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass

from agents.base_agent import IDK_ANSWER
from agents.config.cruise_config import CruiseConfig
from agents.engines.base import ChatEngine, ChatResult, Sampling
from agents.runtime.system import Decision
from agents.stages.parsing import strip_markdown

YES_NO = ("yes", "no")
# s5_rerank's "[Info m]" labels and page dates are no evidence of their own.
INFO_LABEL = re.compile(r"^\[Info \d+\] (?:\(page last modified: [^)\n]*\) )?", re.MULTILINE)


_WORDS = r"(yes|no|true|false)"
# In order of trust: a labelled verdict ("Answer: yes"), a verdict word standing alone (at the
# start of a line or sentence, or closing one: "There is no contradiction, so yes."), any verdict word.
_VERDICT_PATTERNS = (
    re.compile(rf"\b(?:answer|verdict|judg(?:e)?ment|agree(?:ment)?|consistent)\b[^\S\n]*[:=]\s*{_WORDS}\b", re.I),
    re.compile(rf"(?:^|(?<=[.!?:=\n]))[^\S\n]*{_WORDS}\b|\b{_WORDS}[^\S\n]*(?=[.!,;]|$)", re.I | re.M),
    re.compile(rf"\b{_WORDS}\b", re.I),
)


def read_verdict(text: str) -> tuple[bool, bool]:
    """(consistent, parsed); no verdict word counts as "not consistent" (parsed False)."""
    plain = strip_markdown(text)
    for pattern in _VERDICT_PATTERNS:
        match = pattern.search(plain)
        if match:
            word = next(g for g in match.groups() if g)
            return word.lower() in ("yes", "true"), True
    return False, False


def yes_odds(choice_logprobs: dict[str, float] | None) -> tuple[float, bool]:
    """(P(yes) / (P(yes) + P(no)), parsed) from the engine's log-probabilities of the two words;
    (0.0, False) when the engine gave none (a deadline cut) or neither word has any probability."""
    if not choice_logprobs:
        return 0.0, False
    yes, no = (math.exp(choice_logprobs.get(w, -math.inf)) for w in ("yes", "no"))
    if yes + no <= 0.0 or math.isnan(yes + no):
        return 0.0, False
    return round(yes / (yes + no), 4), True


# Words that carry no claim of their own: function words, and the ways an answer frames one.
FRAME_WORDS = frozenset("""
a an the this that these those it its it's is are was were be been being am do does did done
has have had having of in on at to from by for with without about into onto over under than then
and or but nor so as if not no yes there here which who whom whose what when where why how
i you he she we they me him her us them my your his our their mine yours
can could may might must shall should will would one ones some any all each both more most very
also just only still likely probably appears appear seems seem looks look looking shown shows show
picture image photo photograph pictured see seen visible called named known answer question
based according given information notes note text cost costs price priced worth
""".split())
_NUMBER_SEPARATOR = re.compile(r"(?<=\d)[,\s](?=\d{3}\b)")
_WORD = re.compile(r"[a-z0-9]+(?:[.'][a-z0-9]+)*")
_ENDINGS = (("ies", "y"), ("ing", ""), ("ed", ""), ("s", ""))


def claim_words(text: str) -> set[str]:
    """The lower-cased words of `text` without accents, thousands separators and frame words."""
    plain = unicodedata.normalize("NFKD", text or "").encode("ascii", "ignore").decode().lower()
    return {w for w in _WORD.findall(_NUMBER_SEPARATOR.sub("", plain)) if w not in FRAME_WORDS}


def word_stem(word: str) -> str:
    """A word without a plural or tense ending; numbers and short words as they are."""
    if not word.isalpha() or len(word) <= 4:
        return word
    for ending, replacement in _ENDINGS:
        if word.endswith(ending) and len(word) - len(ending) >= 3:
            return word[: -len(ending)] + replacement
    return word


# Questions whose right reply is not a grounded phrase: yes/no, an explanation or instructions.
_UNCHECKABLE_QUESTION = re.compile(
    r"^(?:is|are|was|were|am|can|could|does|do|did|will|would|should|shall|has|have|had|why|"
    r"how (?:do|does|did|to|should|can|could)|what should)\b")
# Questions that ask for a number (a count, an amount, a date, a time, a price).
_NUMBER_QUESTION = re.compile(
    r"^(?:how (?:many|much|long|old|tall|far|often|big|high|heavy|deep|wide|large)|when|"
    r"(?:in |by )?(?:what|which) (?:year|time|date|decade|century)|what(?:'s| is| was| would| does).{0,40}\b(?:price|cost)s?)\b")
_DIGITS = re.compile(r"\d+(?:\.\d+)?")


def numbers(text: str) -> set[str]:
    return set(_DIGITS.findall(_NUMBER_SEPARATOR.sub("", text or "").replace(",", "")))


def checkable(answer: str, query: str, evidence: str) -> bool:
    """Whether words can vouch for this kind of answer: not a yes/no or why/how-to reply, and a
    question asking for a number has one in its answer (not copied from the question) that the
    evidence holds."""
    question = " ".join((query or "").lower().split())
    if _UNCHECKABLE_QUESTION.match(question):
        return False
    if _NUMBER_QUESTION.match(question):
        return bool((numbers(answer) - numbers(question)) & numbers(evidence))
    return True


def grounding(answer: str, query: str, evidence: str) -> float:
    """Share of the answer's claim words (those not in the question) that the evidence holds;
    0 for an answer words cannot vouch for (`checkable`)."""
    if not checkable(answer, query, evidence):
        return 0.0
    asked = {word_stem(w) for w in claim_words(query)}
    claims = {word_stem(w) for w in claim_words(answer)} - asked
    if not claims:
        return 0.0
    found = {word_stem(w) for w in claim_words(evidence)}
    return round(len(claims & found) / len(claims), 4)


def grounding_mode(cfg) -> bool:
    """Whether a support check is read as the grounding share (no model asked)."""
    return cfg.answer.cov_mode == "grounding"


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
    return "\n".join(part for part in (INFO_LABEL.sub("", context or ""), picture_text) if part)


def grounding_confidence(answer: str, query: str, context: str, picture_text: str) -> float:
    return grounding(answer, query, evidence_text(context, picture_text))


def support_checks(engine: ChatEngine, cfg: CruiseConfig, turns: list, wanted: list[int], *, stage: str,
                   prompt: str, max_tokens: int, answer_of: Callable[[int], str], context_of: Callable[[int], str],
                   values: Callable[[int], dict], read_text: Callable[[str], tuple[float, bool]],
                   ) -> dict[int, tuple[float, str, bool]]:
    """Turn index -> (confidence, raw reply, parsed) for each turn in `wanted`, read as the stack
    reads a support check (`cov_mode`): the grounding share (no model call), the odds of a one-word
    yes/no (prompt `<prompt>_yes_no`), or the written verdict (prompt `prompt`, `read_text`)."""
    from agents.stages.prompts import ask_vlm_results

    if cfg.answer.cov_mode == "grounding":
        out = {}
        for i in wanted:
            confidence = grounding_confidence(answer_of(i), turns[i].query, context_of(i), turns[i].picture_text)
            out[i] = (confidence, f"grounded {confidence}", True)
        return out
    if cfg.answer.cov_mode == "yes_no":
        results = ask_vlm_results(engine, stage, turns, wanted, values,
                                  Sampling(max_tokens=1, seed=cfg.models.seed, choices=YES_NO), prompt_name=f"{prompt}_yes_no")
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


def support_gate(confidence: float | None, cfg: CruiseConfig, *, unchecked: str, rejected: str):
    """The peers' abstention on a support check (QA-Dragon's verifier, SAM-RAG's isSup): a
    Decision of "I don't know" under `unchecked` where no check ran (the deadline cut it), under
    `rejected` where its confidence is below `tau_low`; None where the answer may stand."""
    if confidence is None:
        return Decision(IDK_ANSWER, unchecked)
    if not support_passes(float(confidence), cfg):
        return Decision(IDK_ANSWER, rejected)
    return None

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
import math
import re
import unicodedata

from agents.base_agent import IDK_ANSWER
from agents.config import CruiseConfig
from agents.cruise.parsing import NUMBER, strip_markdown, to_float
from agents.cruise.prompts import ask_vlm, ask_vlm_results, quote_notes
from agents.cruise.types import Answers, Evidence, Turn, Verification
from agents.engines.base import ChatEngine, Sampling

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
# s5_rerank's chunk labels, and the page date it puts before a full page's chunk, are no evidence
_INFO_LABEL = re.compile(r"^\[Info \d+\] (?:\(page last modified: [^)\n]*\) )?", re.MULTILINE)
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


def parse_confidence(text: str) -> float:
    return read_confidence(text)[0]


def cov_sampling(cfg: CruiseConfig) -> Sampling:
    if cfg.cruise.cov_full_output:
        return Sampling(max_tokens=cfg.cruise.cov_full_max_tokens, seed=cfg.models.seed)
    return Sampling(max_tokens=cfg.cruise.cov_max_tokens, stop=COV_STOPS, seed=cfg.models.seed)


def needs_verification(answers: Answers, consistent: bool | None, cfg: CruiseConfig) -> bool:
    # An inconsistent pair is rejected by Algorithm 1 whatever the confidence, so it is not asked.
    return cfg.cruise.use_cov and answers.rag != IDK_ANSWER and consistent is not False


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
    values = lambda i: dict(query=turns[i].query, context=quote_notes(evidence[i].context), answer=answers[i].rag)  # noqa: E731
    if cfg.answer.cov_mode == "grounding":
        for i in wanted:
            notes = "\n".join(part for part in (_INFO_LABEL.sub("", evidence[i].context), turns[i].picture_text) if part)
            confidence = grounding(answers[i].rag, turns[i].query, notes)
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

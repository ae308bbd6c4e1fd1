"""The offline lexical judge: a transparent stand-in for the LLM judge on data that carries
accepted answer forms (the mini benchmark's `ans_accepted` and `abstain_expected` answer keys).

It is NOT the official judge and never says it is: every place that shows its verdicts names it
OFFLINE_JUDGE_LABEL. It is used only when no LLM judge is configured and a turn's data carries
forms; data without them (the official splits) keeps exact match only.

Rules, in order, for a turn that is neither a miss nor an exact match (scores.needs_judge):
- abstain_expected (no source in the benchmark holds the answer; real-time questions are not
  marked for being real-time): any answer
  is wrong, so it counts as a hallucination. An "I don't know" there is a miss, 0, as the
  official metric counts it; the run summary counts such correct abstentions separately.
- else correct when one accepted form occurs in the answer. Answer and form are normalised the
  same way (lower case, Unicode NFKC, thousands commas and apostrophes dropped, other punctuation
  a space, the articles a/an/the dropped, number words zero..twenty, the tens and first..tenth
  written as digits) and compared as whole words; " & " in a form joins parts that must all occur.
An answer that names the right form next to a conflicting one ("6 or 7 coins") or under a
negation ("certainly not espresso") still matches: no special case, so the judge is lenient
towards hedges, which the official judge is not; a right answer in other words does not match.
"""
from __future__ import annotations

import re
import unicodedata

OFFLINE_JUDGE_LABEL = "offline lexical judge (not the official judge)"
ANSWER_FORM_KEYS = ("ans_accepted", "abstain_expected")

ARTICLES = frozenset({"a", "an", "the"})
_UNITS = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
          "eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen",
          "nineteen", "twenty"]
_TENS = {"thirty": "30", "forty": "40", "fifty": "50", "sixty": "60", "seventy": "70", "eighty": "80",
         "ninety": "90", "hundred": "100"}
_ORDINALS = ["first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth", "ninth", "tenth"]
_SUFFIXES = {1: "st", 2: "nd", 3: "rd"}
NUMBER_WORDS = {word: str(i) for i, word in enumerate(_UNITS)} | _TENS | {
    word: f"{i}{_SUFFIXES.get(i, 'th')}" for i, word in enumerate(_ORDINALS, start=1)}


def normalise(text: str) -> list[str]:
    """The words the judge compares (module notes)."""
    text = unicodedata.normalize("NFKC", str(text)).lower()
    text = re.sub(r"(?<=\d),(?=\d{3}\b)", "", text)  # 5,500 -> 5500
    text = re.sub(r"['\u2019]", "", text)  # don't -> dont
    text = re.sub(r"[^\w\s]|_", " ", text)
    return [NUMBER_WORDS.get(word, word) for word in text.split() if word not in ARTICLES]


def _contains(words: list[str], part: list[str]) -> bool:
    n = len(part)
    return any(words[i:i + n] == part for i in range(len(words) - n + 1))


def matching_form(answer: str, forms: list[str]) -> str | None:
    """The first accepted form found in `answer`, or None."""
    words = normalise(answer)
    for form in forms:
        parts = [normalise(part) for part in str(form).split(" & ")]
        if all(parts) and all(_contains(words, part) for part in parts):
            return form
    return None


def has_answer_forms(record: dict) -> bool:
    """Does the turn's data carry accepted answer forms (either key, as the mini benchmark writes them)?"""
    return record.get("abstain_expected") is not None or record.get("ans_accepted") is not None


def lexical_verdict(answer: str, forms: list[str] | None, abstain_expected: bool) -> tuple[bool, str]:
    """(correct, why) for an answer that is not a miss (module notes)."""
    if abstain_expected:
        return False, f"{OFFLINE_JUDGE_LABEL}: the right reply is to abstain; an answer counts as wrong"
    form = matching_form(answer, list(forms or []))
    if form is None:
        return False, f"{OFFLINE_JUDGE_LABEL}: no accepted form found"
    return True, f"{OFFLINE_JUDGE_LABEL}: matched {form!r}"


def abstention_counts(rows: list[dict]) -> dict[str, int]:
    """Over turns whose right reply is to abstain (rows with is_miss set, before the multi-turn
    cut): how many there were, how many the agent abstained on, how many it answered."""
    expected = [r for r in rows if r.get("abstain_expected")]
    abstained = sum(1 for r in expected if r["is_miss"])
    return {"abstain_expected_turns": len(expected), "abstain_expected_abstained": abstained,
            "abstain_expected_answered": len(expected) - abstained}

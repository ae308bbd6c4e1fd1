"""Reading what models write: the text clean-up every stage parser shares.

Small and large models decorate their replies: markdown emphasis (`**Answer:**`), a lead-in
sentence ("Here is a one-sentence description:"), `=` instead of `:`, a newline between a label
and its value, labels in any case. The helpers here remove the decoration so that each stage's
parser only has to look for its own label and value.
"""
from __future__ import annotations

import re

# Markdown emphasis, inline code and heading marks; never letters or digits.
_MARKDOWN = re.compile(r"(\*{1,3}|_{2,3}|`+|^\s{0,3}#{1,6}\s*|^\s*>\s?)", re.MULTILINE)
# "Here is a one-sentence description:", "Sure! Here's the answer:", "Below is ...:"
_PREAMBLE = re.compile(
    r"^\s*(?:(?:sure|okay|ok|certainly|of course)\b[\s,.!]*)?"
    r"(?:here(?:'s|’s|\s+is|\s+are)|below\s+is|the\s+following\s+is)\b[^:\n]{0,80}:\s*",
    re.IGNORECASE,
)
# Abbreviations after which a full stop does not end a sentence.
_ABBREVIATIONS = (
    "st", "mt", "ft", "dr", "mr", "mrs", "ms", "prof", "jr", "sr", "no", "nos", "vs", "etc", "inc",
    "ltd", "co", "corp", "ave", "blvd", "rd", "approx", "fig", "e.g", "i.e", "u.s", "u.k", "a.m", "p.m",
)
_SENTENCE_END = re.compile(r"([.!?])[\"'’”)\]]*(?=\s+|$)")
# Any apostrophe models and keyboards write, or none ("I dont know").
_APOSTROPHE = "['’‘ʼ′´`]?"
# Ways a model says it cannot answer; `\s+` spans a line break too ("I don't\nknow").
_ABSTENTION = re.compile(
    rf"\b(i\s+do\s+not\s+know|i\s+don{_APOSTROPHE}t\s+know|not\s+sure"
    rf"|cannot\s+(?:be\s+)?(?:determined?|told|tell|answer(?:ed)?|know)"
    rf"|can{_APOSTROPHE}t\s+(?:determine|tell|answer)|unable\s+to\s+(?:determine|tell|answer)|no\s+information)\b",
    re.IGNORECASE,
)


def strip_markdown(text: str) -> str:
    """The text without emphasis, code ticks, heading or quote marks."""
    return _MARKDOWN.sub("", text or "")


def drop_preamble(line: str) -> str:
    """A line without a lead-in such as "Here is a one-sentence description:"."""
    return _PREAMBLE.sub("", line, count=1)


def content_lines(text: str, labels: tuple[str, ...] = ()) -> list[str]:
    """Non-empty lines, markdown stripped, lead-ins and any leading `label:` / `label =` removed.
    A line that held only a lead-in or a label disappears, so "Answer:\\nParis" gives ["Paris"]."""
    label = None
    if labels:
        names = "|".join(re.escape(name).replace(r"\ ", r"[\s_-]*") for name in labels)
        label = re.compile(rf"^\s*(?:\d+[.)]\s*)?(?:{names})\s*(?:[:=]|-(?=\s))\s*", re.IGNORECASE)
    out = []
    for line in abstentions_on_one_line(strip_markdown(text)).splitlines():
        line = drop_preamble(line.strip())
        if label is not None:
            line = label.sub("", line, count=1)
        line = line.strip()
        if line:
            out.append(line)
    return out


def abstains(text: str) -> bool:
    """Whether `text` says that it cannot answer ("I don't know", "I do not know", "not sure",
    "cannot be determined", ...), with any apostrophe, in any case, across line breaks. The
    agent's own reading: the evaluator's miss test stays the official rule (evaluator/scoring/rules.py)."""
    return _ABSTENTION.search(str(text or "")) is not None


def abstentions_on_one_line(text: str) -> str:
    """`text` with each abstention's words on one line ("I don't\\nknow" -> "I don't know"), so
    that a reader going line by line sees it whole."""
    return _ABSTENTION.sub(lambda found: " ".join(found.group(0).split()), text)


def first_sentence(line: str) -> str:
    """The first sentence of a line; a full stop after an abbreviation ("St.", "Dr.", "e.g.") or an
    initial ("J. K. Rowling") does not end it."""
    for match in _SENTENCE_END.finditer(line):
        if match.group(1) == ".":
            word = re.search(r"([\w.]+)$", line[: match.start(1)])
            stem = word.group(1).lower() if word else ""
            if stem in _ABBREVIATIONS or (len(stem) == 1 and stem.isalpha() and line[match.start(1) - 1].isupper()):
                continue
        return line[: match.end()].strip()
    return line.strip()


# A number a model writes for a probability: "0.8", ".95", "1", "0,8" (decimal comma).
NUMBER = r"(?<![\d.,])(\d+(?:[.,]\d+)?|[.,]\d+)(?![\d%]|[.,]\d)"


def to_float(text: str) -> float:
    return float(text.replace(",", "."))


def labelled_value(text: str, label: str) -> str | None:
    """The text after `label` and ":" / "=" / " - " (the next line when the label stands alone),
    through markdown and in any case; None when the label is missing or has no value.
    `label` is a regular expression ("search(?:\\s+tool)?")."""
    pattern = re.compile(rf"^[^\S\n]*(?:\d+[.)]\s*|[-*•][^\S\n]*)?(?:{label})[^\S\n]*(?:[:=]|-(?=\s))[^\S\n]*(.*)$",
                         re.IGNORECASE | re.MULTILINE)
    lines = abstentions_on_one_line(strip_markdown(text)).splitlines()
    for i, line in enumerate(lines):
        match = pattern.match(line)
        if not match:
            continue
        value = match.group(1).strip()
        if not value and i + 1 < len(lines):
            value = lines[i + 1].strip()
        return value.strip("\"'“”[]()") or None
    return None


def labelled_choice(text: str, label: str, choices) -> str | None:
    """The first of `choices` ((value, compiled pattern), in order of trust) whose pattern finds
    the labelled value (`labelled_value`); None when the label is missing or nothing fits."""
    value = labelled_value(text, label)
    if not value:
        return None
    return next((choice for choice, pattern in choices if pattern.search(value)), None)

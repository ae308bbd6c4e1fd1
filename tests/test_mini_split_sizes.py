"""The mini benchmark's sizes as README.md and the data's own README state them equal the data's:
every statement of a count the test recognises ("55 single-turn sessions", "30 conversations of
2-5 turns (110 turns)", "2 of 110 multi-turn ones", "0 of 80 follow-ups", ...) is read out of the
text and checked against the parquet files, so an edit that writes a wrong number fails here.
"""
from __future__ import annotations

import re
from pathlib import Path

import pyarrow.parquet as pq
import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent
MINI = REPO_ROOT / "data" / "crag-mm-mini"
PAGES = [REPO_ROOT / "README.md", MINI / "README.md"]

# (what the number counts, the pattern whose groups are such numbers); read over text whose line
# breaks are spaces. A number joined to a range ("2-5 turns") is not a count of turns.
STATEMENTS = [
    ("single-turn sessions", r"\b(\d+) single-turn sessions\b"),
    ("single-turn sessions", r"\bof (\d+) single-turn questions\b"),  # "All 30 single-turn questions about ...": a part
    ("conversations", r"\b(\d+) (?:multi-turn )?conversations\b"),
    ("conversations", r"\bof (\d+) first turns\b"),
    ("shortest and longest conversation", r"\bconversations of (\d+)-(\d+) turns\b"),
    ("multi-turn turns", r"\bconversations of \d+-\d+ turns \((\d+) turns\)"),
    ("multi-turn turns", r"\bconversations with (\d+) turns\b"),
    ("multi-turn turns", r"\b(\d+) multi-turn (?:turns|ones)\b"),
    ("multi-turn turns", r"\bconversations, (\d+) turns\b"),
    ("multi-turn turns", r"\bof (\d+) turns right\b"),
    ("follow-ups", r"\bof (\d+) follow-ups\b"),
    ("follow-ups", r"\b(\d+) of them follow-ups\b"),
]


def split_sizes() -> dict[str, tuple[int, ...]]:
    """The counts, read from the parquet files (one row a session, its turns a list)."""
    single = pq.read_table(next((MINI / "single-turn" / "data").glob("*.parquet")), columns=["turns"]).to_pylist()
    multi = pq.read_table(next((MINI / "multi-turn" / "data").glob("*.parquet")), columns=["turns"]).to_pylist()
    assert all(len(row["turns"]) == 1 for row in single)
    lengths = [len(row["turns"]) for row in multi]
    return {"single-turn sessions": (len(single),), "conversations": (len(multi),),
            "shortest and longest conversation": (min(lengths), max(lengths)),
            "multi-turn turns": (sum(lengths),), "follow-ups": (sum(lengths) - len(multi),)}


def stated_sizes(text: str) -> list[tuple[str, tuple[int, ...], str]]:
    """(what, the numbers, the words) of every statement of a split size in `text`."""
    flat = re.sub(r"\s+", " ", text)
    return [(what, tuple(int(g) for g in m.groups()), m.group(0))
            for what, pattern in STATEMENTS for m in re.finditer(pattern, flat)]


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(REPO_ROOT)))
def test_every_split_size_a_readme_states_is_the_datas(page):
    sizes = split_sizes()
    stated = stated_sizes(page.read_text(encoding="utf-8"))
    wrong = [f"{words!r} says {numbers}, the data {sizes[what]} ({what})"
             for what, numbers, words in stated if numbers != sizes[what]]
    assert not wrong, "\n".join(wrong)
    # the statements are found at all: a rewording that hides them from this test fails it too
    assert {"single-turn sessions", "conversations", "multi-turn turns"} <= {what for what, _, _ in stated}


def test_the_statements_are_read_as_the_sentences_word_them():
    text = ("It has 55 single-turn sessions and 31 conversations of 2-5 turns\n(110 turns). It answered 4 of 54\n"
            "single-turn questions and 2 of 110 multi-turn ones (2 of 30 first turns, 0 of 80 follow-ups). "
            "One page per 100 turns. All 30 single-turn questions about those photos are labelled.")
    assert sorted(stated_sizes(text)) == sorted([
        ("single-turn sessions", (55,), "55 single-turn sessions"),
        ("single-turn sessions", (54,), "of 54 single-turn questions"),
        ("conversations", (31,), "31 conversations"),
        ("conversations", (30,), "of 30 first turns"),
        ("shortest and longest conversation", (2, 5), "conversations of 2-5 turns"),
        ("multi-turn turns", (110,), "conversations of 2-5 turns (110 turns)"),
        ("multi-turn turns", (110,), "110 multi-turn ones"),
        ("follow-ups", (80,), "of 80 follow-ups"),
    ])

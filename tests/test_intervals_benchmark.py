"""benchmarks/intervals.py's main, in process, at a small size: it times each piece a finished
run computes over as many single-turn sessions and multi-turn conversations as asked (the
conversations of 2-6 turns, in turn), and the turn rows are those the scoring reads."""
from __future__ import annotations

import re

from benchmarks import intervals
from evaluator.harness.score_files import BREAKDOWN_COLUMNS
from evaluator.scoring.intervals import BOOTSTRAP_RESAMPLES


def test_the_benchmark_times_each_piece_over_the_turns_and_conversations_asked(capsys):
    intervals.main(["--single", "7", "--multi", "6"])
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("machine: ")
    # 7 one-turn sessions, then conversations of 2, 3, 4, 5, 6 and 2 turns
    assert lines[1] == f"29 turns, 13 conversations, {BOOTSTRAP_RESAMPLES} resamples"
    labels = [re.fullmatch(r"(.+?) +\d+\.\d{3} s", line)[1] for line in lines[2:]]
    assert labels == ["score intervals, all turns", "score intervals, egocentric",
                      f"breakdowns ({len(BREAKDOWN_COLUMNS)} tables, every row)", "paired differences, all turns"]


def test_the_synthetic_rows_are_numbered_by_conversation_and_turn_and_the_seed_fixes_the_outcomes():
    rows = intervals.synthetic_rows(2, 3, seed=1)
    assert [(r["session_id"], r["turn_idx"]) for r in rows] == [
        ("s00000", 0), ("s00001", 0), ("s00002", 0), ("s00002", 1), ("s00003", 0), ("s00003", 1), ("s00003", 2),
        ("s00004", 0), ("s00004", 1), ("s00004", 2), ("s00004", 3)]
    assert all(r["interaction_id"] == f"{r['session_id']}-{r['turn_idx']}" for r in rows)
    assert all(r["is_correct"] + r["is_miss"] <= 1 for r in rows)
    assert rows == intervals.synthetic_rows(2, 3, seed=1) != intervals.synthetic_rows(2, 3, seed=2)

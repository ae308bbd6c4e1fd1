"""A multi-turn run's figures under both rule sets, by turn index, and what the early stop took.

The two rule sets count a conversation differently (evaluator.scoring.rules): kddcup2025 scores
the turns AFTER the multi-turn cut (two turns in a row that are not correct turn the rest of the
conversation into misses); crag-mm scores them BEFORE it and uses the cut only for the
conversation score. A run is scored by one of them, so its headline figures alone do not say how
much of a difference the cut made. These figures give both side by side, recomputed from the
same verdicts: the run's own miss test and judge decided each turn, and only the counting
differs. Intervals: the percentile bootstrap over conversations (evaluator.scoring.intervals).

By turn index the flags are taken BEFORE the cut (what the agent answered at that point in a
conversation): accuracy, and the answered rate (1 - missing), with `cut`, how many of those
turns the early stop turned into misses.
"""
from __future__ import annotations

from collections import defaultdict

from evaluator.scoring.intervals import score_intervals
from evaluator.scoring.rules import RULE_SETS
from evaluator.scoring.scores import apply_conversation_rules, score_rows

SIDE_BY_SIDE_KEYS = ("accuracy", "missing", "hallucination_rate", "truthfulness_score",
                     "mean_multi_turn_conversation_score")


def _flag(row: dict, key: str) -> bool:
    value = row.get(key)
    if isinstance(value, str):
        return value.strip().lower() in ("true", "1", "yes")
    return bool(value)


def _answered_interval(missing: list[float] | None) -> list[float] | None:
    return [1.0 - missing[1], 1.0 - missing[0]] if missing else None


def multi_turn_figures(rows: list[dict]) -> dict | None:
    """The figures for `rows`, one per turn with the flags BEFORE the multi-turn cut (the official
    turn CSV's: session_id, turn_idx, is_correct, is_miss, is_exact_match); None when no
    conversation has more than one turn (a single-turn run: nothing to cut)."""
    rows = [{**r, "turn_idx": int(r["turn_idx"]), "is_correct": _flag(r, "is_correct"),
             "is_miss": _flag(r, "is_miss"), "is_exact_match": _flag(r, "is_exact_match")} for r in rows]
    lengths: dict[str, int] = defaultdict(int)
    for row in rows:
        lengths[str(row["session_id"])] += 1
    if not rows or max(lengths.values()) < 2:
        return None

    rule_sets = {}
    for name, rules in RULE_SETS.items():
        counted, scores = score_rows(rows, rules)
        intervals = score_intervals(counted)
        rule_sets[name] = {
            "counts": "after the cut" if rules.counts_after_cut else "before the cut",
            "scores": {k: scores[k] for k in ("total", "correct", "miss", "hallucination", *SIDE_BY_SIDE_KEYS)},
            "intervals": {k: intervals.get(k) for k in SIDE_BY_SIDE_KEYS},
        }

    cut, _ = apply_conversation_rules(rows)  # sorted by (session_id, turn_idx), as `before` is
    before = sorted(rows, key=lambda r: (str(r["session_id"]), r["turn_idx"]))
    removed = [b for b, a in zip(before, cut) if a["after_two_wrong"]]
    by_index: dict[int, list[tuple[dict, bool]]] = defaultdict(list)
    for b, a in zip(before, cut):
        by_index[b["turn_idx"]].append((b, a["after_two_wrong"]))
    by_turn = []
    for index in sorted(by_index):
        turns = [b for b, _ in by_index[index]]
        n = len(turns)
        intervals = score_intervals(turns)
        by_turn.append({
            "turn_idx": index, "turns": n,
            "accuracy": sum(t["is_correct"] for t in turns) / n,
            "answered": sum(not t["is_miss"] for t in turns) / n,
            "accuracy_ci": intervals.get("accuracy"),
            "answered_ci": _answered_interval(intervals.get("missing")),
            "cut": sum(was_cut for _, was_cut in by_index[index]),
        })
    return {
        "conversations": len(lengths),
        "turns": len(rows),
        "rule_sets": rule_sets,
        "by_turn": by_turn,
        # the turns the cut turned into misses, by what they were before it
        "early_stop": {
            "conversations": len({str(r["session_id"]) for r in removed}),
            "turns": len(removed),
            "correct": sum(r["is_correct"] for r in removed),
            "hallucination": sum(not r["is_correct"] and not r["is_miss"] for r in removed),
            "miss": sum(r["is_miss"] for r in removed),
        },
    }

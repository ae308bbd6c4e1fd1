"""Per-turn verdicts and the official scores, on plain lists of row dicts, under a rule set.

A turn is a miss when its (truncated) answer says "I don't know" (each rule set words the test
its own way, see evaluator.scoring.rules), an exact match when it equals the ground truth after strip
+ lower-case; otherwise the LLM judge decides. A judge that fails every attempt leaves the turn
incorrect, so it counts as a hallucination (official).

Within a conversation, at the first turn i where turns i-1 and i are both incorrect, every turn
after i becomes a miss (official: two consecutive "I don't know" trigger it too). kddcup2025
counts the turns after that cut; crag-mm counts them before it and uses the cut only for the
conversation score. Either way the official CSVs hold the flags before the cut.
"""
from __future__ import annotations

import math
from collections import defaultdict

import numpy as np

from evaluator.scoring.intervals import breakdown_intervals
from evaluator.scoring.rules import RuleSet, rule_set

# The official turn CSVs: these 18 columns, in this order, with the flags before the cut.
OFFICIAL_TURN_COLUMNS = [
    "session_id", "interaction_id", "turn_idx", "is_ego", "image_quality", "query_category",
    "domain", "dynamism", "query", "ground_truth", "agent_response", "total_turn_count",
    "interaction_id_history", "is_exact_match", "is_correct", "is_miss",
    "is_semantically_correct", "api_response",
]
BASE_COLUMNS = OFFICIAL_TURN_COLUMNS[:13]  # what the generation loop records for a turn
# Our extended CSVs: the official columns holding the flags the scores COUNT (so their sums give
# the scores dictionary under either rule set), then what the official files leave out.
# The label columns breakdowns group by. Where the dataset holds them as class labels, the
# official columns keep the integers (as both harnesses write them) and `<column>_name` the names.
LABEL_COLUMNS = ("domain", "query_category", "dynamism", "image_quality")
LABEL_NAME_COLUMNS = [f"{column}_name" for column in LABEL_COLUMNS]
EXTENDED_TURN_COLUMNS = OFFICIAL_TURN_COLUMNS + [
    "is_hallucination", "multi_turn_conversation_score", "after_two_wrong", "raw_answer",
    "judge_reply", "error", *LABEL_NAME_COLUMNS,
]

SCORE_KEYS = [
    "total", "correct_exact", "correct", "miss", "hallucination", "exact_match", "accuracy",
    "missing", "hallucination_rate", "truthfulness_score", "mean_multi_turn_conversation_score",
]
COUNT_KEYS = SCORE_KEYS[:5]  # the rest are rates and scores, which a set of no turns does not have


def is_miss(answer: str, rules: RuleSet | None = None) -> bool:
    return (rules or rule_set(None)).is_miss(answer)


def is_exact_match(answer: str, ground_truth: str) -> bool:
    return answer.strip().lower() == ground_truth.strip().lower()


def needs_judge(answer: str, ground_truth: str, rules: RuleSet | None = None) -> bool:
    return not is_miss(answer, rules) and not is_exact_match(answer, ground_truth)


def verdict_fields(answer: str, ground_truth: str, verdict: bool | None, rules: RuleSet | None = None,
                   reply: str | None = None) -> dict:
    """The evaluation columns of one turn. `verdict` is the judge's answer, None if it gave none;
    `reply` its text (crag-mm keeps it in api_response as eval_result)."""
    rules = rules or rule_set(None)
    exact = is_exact_match(answer, ground_truth)
    miss = is_miss(answer, rules)
    correct = exact
    semantic = False
    api_response = None
    if not miss and not exact and verdict is not None:
        semantic = correct = bool(verdict)
        api_response = {"accuracy": bool(verdict)}
        if rules.judge_protocol == "result-line":
            api_response["eval_result"] = reply
    if exact:
        semantic = True
    return {
        "is_exact_match": exact,
        "is_correct": correct,
        "is_miss": miss,
        "is_semantically_correct": semantic,
        "api_response": api_response,
    }


def apply_conversation_rules(rows: list[dict]) -> tuple[list[dict], dict[str, float]]:
    """Copies of `rows` sorted by (session_id, turn_idx) with the multi-turn cut applied
    (`after_two_wrong` marks the turns it changed into misses), and each conversation's score."""
    sessions: dict[str, list[dict]] = defaultdict(list)
    for row in sorted(rows, key=lambda r: (r["session_id"], r["turn_idx"])):
        sessions[row["session_id"]].append({**row, "after_two_wrong": False})
    out, conversation_scores = [], {}
    for session_id, turns in sessions.items():
        for i in range(1, len(turns)):
            if not turns[i - 1]["is_correct"] and not turns[i]["is_correct"]:
                for later in turns[i + 1:]:
                    later.update(is_correct=False, is_exact_match=False, is_miss=True,
                                 is_semantically_correct=False, after_two_wrong=True)
                break
        for turn in turns:
            turn["is_hallucination"] = not turn["is_correct"] and not turn["is_miss"]
        n = len(turns)
        score = sum(t["is_correct"] for t in turns) / n - sum(t["is_hallucination"] for t in turns) / n
        for turn in turns:
            turn["multi_turn_conversation_score"] = score
        conversation_scores[session_id] = score
        out.extend(turns)
    return out, conversation_scores


def counted_rows(rows: list[dict], rules: RuleSet | None = None) -> tuple[list[dict], dict[str, float]]:
    """(the rows whose flags the scores count, sorted by session and turn; conversation scores).
    kddcup2025 counts the flags after the multi-turn cut; crag-mm the flags before it, with
    is_hallucination taken from those flags (the cut still gives the conversation score)."""
    rules = rules or rule_set(None)
    cut, conversation_scores = apply_conversation_rules(rows)
    if rules.counts_after_cut:
        return cut, conversation_scores
    before = sorted(rows, key=lambda r: (r["session_id"], r["turn_idx"]))
    counted = []
    for original, after in zip(before, cut):
        counted.append({**original, "after_two_wrong": after["after_two_wrong"],
                        "is_hallucination": not original["is_correct"] and not original["is_miss"],
                        "multi_turn_conversation_score": after["multi_turn_conversation_score"]})
    return counted, conversation_scores


def score_rows(rows: list[dict], rules: RuleSet | None = None) -> tuple[list[dict], dict[str, float]]:
    """(the counted rows, the scores dictionary). An empty table gives NaN rates and a NaN
    conversation score, counts of 0.0 and a truthfulness of 0.0, as the official code does."""
    counted, conversation_scores = counted_rows(rows, rules)
    total = len(counted)
    correct_exact = sum(bool(r["is_exact_match"]) for r in counted)
    correct = sum(bool(r["is_correct"]) for r in counted)
    miss = sum(bool(r["is_miss"]) for r in counted)
    hallucination = total - (correct + miss)

    def rate(count: int) -> float:
        return count / total if total else math.nan

    scores = {
        "total": float(total),
        "correct_exact": float(correct_exact),
        "correct": float(correct),
        "miss": float(miss),
        "hallucination": float(hallucination),
        "exact_match": rate(correct_exact),
        "accuracy": rate(correct),
        "missing": rate(miss),
        "hallucination_rate": rate(hallucination),
        # official: 0.0 unless there are at least two turns
        "truthfulness_score": ((2 * correct + miss) / total) - 1 if total > 1 else 0.0,
        # numpy's mean, as the official code: its pairwise sum can differ from sum() in the last bit
        "mean_multi_turn_conversation_score": (
            float(np.mean(list(conversation_scores.values()))) if conversation_scores else math.nan),
    }
    return counted, {k: float(v) for k, v in scores.items()}


def subset_scores(rows: list[dict], rules: RuleSet | None = None) -> dict:
    """{"all", "ego"}: the official scores of a part of a run's turns (each conversation keeps
    its other turns in order), for run_summary.json: a subset of no turns has its counts (0) and
    None for every rate and score, where score_rows gives NaN and a truthfulness of 0.0."""
    out = {}
    for subset, kept in (("all", rows), ("ego", [r for r in rows if r["is_ego"]])):
        scores = score_rows(kept, rules)[1]
        out[subset] = {k: v if k in COUNT_KEYS or (scores["total"] and not math.isnan(v)) else None
                       for k, v in scores.items()}
    return out


def shown_score(scores: dict, key: str, fmt: str) -> str:
    """A score as a report shows it: "-" where it has no value (a subset of no turns, whose count
    then reads 0; a NaN; a None), else `fmt`."""
    value = scores.get(key)
    if value is None or (isinstance(value, float) and math.isnan(value)) or (
            key not in COUNT_KEYS and not scores.get("total")):
        return "-"
    return fmt.format(value)


def label_of(row: dict, column: str) -> str:
    """What a breakdown shows for the row's `column`: the label's name where the run recorded one
    (a class-label dataset), else the value as the dataset holds it."""
    name = row.get(f"{column}_name")
    return str(name) if name not in (None, "") else str(row.get(column))


def breakdown(rows: list[dict], column: str) -> list[dict]:
    """Count, accuracy, missing, hallucination and truthfulness per label of `column` (counted rows),
    each with its 95% interval (`accuracy_ci`, ...: [low, high], None for a single turn)."""
    groups: dict[str, list[dict]] = defaultdict(list)
    for row in rows:
        groups[label_of(row, column)].append(row)
    table = []
    for value in sorted(groups):
        group = groups[value]
        n = len(group)
        correct = sum(bool(r["is_correct"]) for r in group) / n
        missing = sum(bool(r["is_miss"]) for r in group) / n
        hallucination = sum(bool(r["is_hallucination"]) for r in group) / n
        table.append({column: value, "count": n, "accuracy": correct, "missing": missing,
                      "hallucination": hallucination, "truthfulness": correct - hallucination,
                      **breakdown_intervals(group)})
    return table

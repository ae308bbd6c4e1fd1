"""Per-turn verdicts and the competition's scores, on plain lists of row dicts.

A turn is a miss when its (truncated) answer contains "i don't know", an exact match when it
equals the ground truth after strip + lower-case; otherwise the LLM judge decides. A judge that
fails every attempt leaves the turn incorrect, so it counts as a hallucination (official).

Within a conversation, at the first turn i where turns i-1 and i are both incorrect, every turn
after i becomes a miss (official: two consecutive "I don't know" trigger it too).
"""
from __future__ import annotations

from collections import defaultdict

from agents.base_agent import IDK_ANSWER

TURN_COLUMNS = [
    "session_id", "interaction_id", "turn_idx", "is_ego", "image_quality", "query_category",
    "domain", "dynamism", "query", "ground_truth", "agent_response", "total_turn_count",
    "interaction_id_history", "is_exact_match", "is_correct", "is_miss",
    "is_semantically_correct", "api_response", "is_hallucination", "multi_turn_conversation_score",
]

SCORE_KEYS = [
    "total", "correct_exact", "correct", "miss", "hallucination", "exact_match", "accuracy",
    "missing", "hallucination_rate", "truthfulness_score", "mean_multi_turn_conversation_score",
]


def is_miss(answer: str) -> bool:
    return IDK_ANSWER.lower() in answer.lower()


def is_exact_match(answer: str, ground_truth: str) -> bool:
    return answer.strip().lower() == ground_truth.strip().lower()


def needs_judge(answer: str, ground_truth: str) -> bool:
    return not is_miss(answer) and not is_exact_match(answer, ground_truth)


def verdict_fields(answer: str, ground_truth: str, verdict: bool | None) -> dict:
    """The evaluation columns of one turn. `verdict` is the judge's answer, None if it gave none."""
    exact = is_exact_match(answer, ground_truth)
    miss = is_miss(answer)
    correct = exact
    semantic = False
    api_response = None
    if not miss and not exact and verdict is not None:
        semantic = correct = bool(verdict)
        api_response = {"accuracy": bool(verdict)}
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
    """Copies of `rows` sorted by (session_id, turn_idx) with the multi-turn cut applied, and the
    score of each conversation."""
    sessions: dict[str, list[dict]] = defaultdict(list)
    for row in sorted(rows, key=lambda r: (r["session_id"], r["turn_idx"])):
        sessions[row["session_id"]].append(dict(row))
    out, conversation_scores = [], {}
    for session_id, turns in sessions.items():
        for i in range(1, len(turns)):
            if not turns[i - 1]["is_correct"] and not turns[i]["is_correct"]:
                for later in turns[i + 1:]:
                    later.update(is_correct=False, is_exact_match=False, is_miss=True,
                                 is_semantically_correct=False)
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


def score_rows(rows: list[dict]) -> tuple[list[dict], dict[str, float]]:
    """(rows after the conversation rules, the scores dictionary). An empty subset scores zeros
    (the official code would produce NaN there)."""
    scored, conversation_scores = apply_conversation_rules(rows)
    total = len(scored)
    correct_exact = sum(bool(r["is_exact_match"]) for r in scored)
    correct = sum(bool(r["is_correct"]) for r in scored)
    miss = sum(bool(r["is_miss"]) for r in scored)
    hallucination = total - (correct + miss)

    def rate(count: int) -> float:
        return count / total if total else 0.0

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
        "mean_multi_turn_conversation_score": (
            sum(conversation_scores.values()) / len(conversation_scores) if conversation_scores else 0.0
        ),
    }
    return scored, {k: float(v) for k, v in scores.items()}


def breakdown(rows: list[dict], column: str) -> list[dict]:
    """Count, accuracy, missing, hallucination and truthfulness per value of `column` (scored rows)."""
    groups: dict[str, list[dict]] = defaultdict(list)
    for row in rows:
        groups[str(row.get(column))].append(row)
    table = []
    for value in sorted(groups):
        group = groups[value]
        n = len(group)
        correct = sum(bool(r["is_correct"]) for r in group) / n
        missing = sum(bool(r["is_miss"]) for r in group) / n
        hallucination = sum(bool(r["is_hallucination"]) for r in group) / n
        table.append({column: value, "count": n, "accuracy": correct, "missing": missing,
                      "hallucination": hallucination, "truthfulness": correct - hallucination})
    return table

"""95% intervals on the scores, and paired differences between two runs over the same turns.

Percentile bootstrap over conversations: each resample draws as many conversations as the run
holds, with replacement, and recomputes every score from the drawn conversations' turns. A
multi-turn conversation's turns are drawn together (a cluster), because they share an image and a
history and so succeed or fail together; a single-turn session is a cluster of one, which makes
the bootstrap the ordinary one over turns. The turns resampled are the COUNTED rows
(evaluator.scoring.scores.counted_rows): the multi-turn cut is already applied under kddcup2025,
and each turn carries its conversation's score, so no resample re-runs the cut.

A paired comparison draws the same conversations for both runs in each resample, so what the two
runs have in common (the hard questions) cancels and only their disagreements widen the interval.

The seed and the number of resamples are fixed (BOOTSTRAP_SEED, BOOTSTRAP_RESAMPLES) and written
beside every interval, so the same rows always give the same interval.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

BOOTSTRAP_RESAMPLES = 2000
BOOTSTRAP_SEED = 20250
LEVEL = 0.95
# The official scores that get an interval (scores dictionary keys), then breakdown row keys.
INTERVAL_KEYS = ("accuracy", "missing", "hallucination_rate", "truthfulness_score",
                 "mean_multi_turn_conversation_score")
BREAKDOWN_INTERVAL_KEYS = {"accuracy": "accuracy", "missing": "missing", "hallucination": "hallucination_rate",
                           "truthfulness": "truthfulness_score"}


def method() -> dict:
    """What every interval block records about how it was computed."""
    return {"method": "percentile bootstrap over conversations (a conversation's turns resampled together)",
            "level": LEVEL, "resamples": BOOTSTRAP_RESAMPLES, "seed": BOOTSTRAP_SEED}


@dataclass
class Clusters:
    """Per-conversation sums of the counted flags, conversations in session_id order."""
    session_ids: list[str]
    turns: np.ndarray  # turns per conversation
    correct: np.ndarray
    miss: np.ndarray
    hallucination: np.ndarray
    conversation_score: np.ndarray  # NaN where the rows carry none

    def __len__(self) -> int:
        return len(self.session_ids)


def as_flag(value) -> bool:
    if isinstance(value, str):
        return value.strip().lower() in ("true", "1", "yes")
    return bool(value)


def clusters_of(rows: list[dict]) -> Clusters:
    """Group counted rows (is_correct, is_miss, is_hallucination, session_id and, where the run
    wrote it, multi_turn_conversation_score) by conversation."""
    sessions = sorted({str(r["session_id"]) for r in rows})
    index = {s: i for i, s in enumerate(sessions)}
    which = np.array([index[str(r["session_id"])] for r in rows], dtype=np.int64)
    size = len(sessions)

    def summed(flag: str) -> np.ndarray:
        values = np.array([as_flag(r[flag]) for r in rows], dtype=np.float64)
        return np.bincount(which, weights=values, minlength=size) if rows else np.zeros(0)

    turns = np.bincount(which, minlength=size).astype(np.float64) if rows else np.zeros(0)
    conversation = np.full(size, np.nan)
    for position, row in zip(which, rows):
        value = row.get("multi_turn_conversation_score")
        if value not in (None, ""):
            conversation[position] = float(value)
    hallucination = (summed("is_hallucination") if all("is_hallucination" in r for r in rows)
                     else turns - summed("is_correct") - summed("is_miss"))
    return Clusters(sessions, turns, summed("is_correct"), summed("is_miss"), hallucination, conversation)


def resample_indices(clusters: int, resamples: int = BOOTSTRAP_RESAMPLES, seed: int = BOOTSTRAP_SEED) -> np.ndarray:
    """(resamples, clusters) conversation indices drawn with replacement."""
    return np.random.default_rng(seed).integers(0, clusters, size=(resamples, clusters), dtype=np.int64)


def resampled_scores(c: Clusters, draws: np.ndarray) -> dict[str, np.ndarray]:
    """Each score over each resample (one value per row of `draws`)."""
    total = c.turns[draws].sum(axis=1)
    accuracy = c.correct[draws].sum(axis=1) / total
    missing = c.miss[draws].sum(axis=1) / total
    hallucination = c.hallucination[draws].sum(axis=1) / total
    out = {"accuracy": accuracy, "missing": missing, "hallucination_rate": hallucination,
           "truthfulness_score": accuracy - hallucination}
    if not np.isnan(c.conversation_score).any():
        out["mean_multi_turn_conversation_score"] = c.conversation_score[draws].mean(axis=1)
    return out


def percentile_interval(values: np.ndarray) -> list[float]:
    low, high = np.percentile(values, [50 * (1 - LEVEL), 100 - 50 * (1 - LEVEL)])
    return [float(low), float(high)]


def score_intervals(rows: list[dict], resamples: int = BOOTSTRAP_RESAMPLES, seed: int = BOOTSTRAP_SEED) -> dict:
    """score key -> [low, high] for the counted rows, plus how many conversations were resampled.
    An empty table has no intervals (its rates are NaN); a table of one turn has no spread, and
    its truthfulness is 0.0 by the official rule, so it is left without intervals too."""
    c = clusters_of(rows)
    out: dict = {"conversations": len(c), "turns": int(c.turns.sum())}
    if c.turns.sum() < 2:
        return out
    draws = resample_indices(len(c), resamples, seed)
    for key, values in resampled_scores(c, draws).items():
        out[key] = percentile_interval(values)
    return out


def breakdown_intervals(rows: list[dict]) -> dict:
    """The intervals of one breakdown row, under the breakdown's own keys ("accuracy_ci", ...)."""
    found = score_intervals(rows)
    return {f"{short}_ci": found.get(key) for short, key in BREAKDOWN_INTERVAL_KEYS.items()}


def paired_differences(rows_a: list[dict], rows_b: list[dict], resamples: int = BOOTSTRAP_RESAMPLES,
                       seed: int = BOOTSTRAP_SEED) -> dict:
    """score key -> {"a", "b", "difference" (b - a), "interval" [low, high]} for two runs over the
    same turns: each resample draws the same conversations for both runs. No turns, or one: {}
    (as score_intervals: one turn has no spread, and its truthfulness is 0.0 by the official
    rule, which the resampled accuracy - hallucination would not say)."""
    a, b = clusters_of(rows_a), clusters_of(rows_b)
    if a.session_ids != b.session_ids or not np.array_equal(a.turns, b.turns):
        raise ValueError("the two runs do not hold the same conversations and turns")
    if a.turns.sum() < 2:
        return {}
    every = np.arange(len(a))[None, :]
    point_a, point_b = resampled_scores(a, every), resampled_scores(b, every)
    draws = resample_indices(len(a), resamples, seed)
    spread_a, spread_b = resampled_scores(a, draws), resampled_scores(b, draws)
    out = {}
    for key in INTERVAL_KEYS:
        if key in point_a and key in point_b:
            first, second = float(point_a[key][0]), float(point_b[key][0])
            out[key] = {"a": first, "b": second, "difference": second - first,
                        "interval": percentile_interval(spread_b[key] - spread_a[key])}
    return out

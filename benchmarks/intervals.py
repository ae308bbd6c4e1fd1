"""What the 95% bootstrap intervals cost at the validation split's size.

    python -m benchmarks.intervals [--single 1900 --multi 586]

Builds turn rows in the shape of the synthetic full split (single-turn sessions, and multi-turn
conversations of 2-6 turns), with outcomes drawn at a fixed seed, scores them with the project's
scoring (the multi-turn cut included), then times each piece a finished run computes: the score
intervals of all turns and of the egocentric ones, the breakdown tables (each row's interval), and
one paired comparison of two such runs. Prints seconds per piece.

Fills docs/benchmarks.md, "Bootstrap intervals".
"""
from __future__ import annotations

import argparse
import time

import numpy as np

from benchmarks.machine import machine_header
from evaluator.harness.score_files import BREAKDOWN_COLUMNS
from evaluator.scoring.intervals import BOOTSTRAP_RESAMPLES, paired_differences, score_intervals
from evaluator.scoring.scores import breakdown, score_rows


def synthetic_rows(single: int, multi: int, seed: int) -> list[dict]:
    rng = np.random.default_rng(seed)
    sizes = [1] * single + [2 + i % 5 for i in range(multi)]
    rows = []
    for s, size in enumerate(sizes):
        for t in range(size):
            outcome = rng.choice(["correct", "missed", "hallucinated"], p=[0.4, 0.35, 0.25])
            rows.append({"session_id": f"s{s:05d}", "interaction_id": f"s{s:05d}-{t}", "turn_idx": t,
                         "is_ego": s % 3 == 0, "domain": f"d{s % 13}", "query_category": f"q{t % 7}",
                         "dynamism": f"y{s % 4}", "image_quality": f"i{s % 2}",
                         "is_correct": outcome == "correct", "is_exact_match": False,
                         "is_miss": outcome == "missed", "is_semantically_correct": outcome == "correct"})
    return rows


def timed(label: str, work) -> None:
    start = time.perf_counter()
    work()
    print(f"{label:<44} {time.perf_counter() - start:6.3f} s")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--single", type=int, default=1900)
    parser.add_argument("--multi", type=int, default=586)
    args = parser.parse_args(argv)
    counted_a, _ = score_rows(synthetic_rows(args.single, args.multi, 1))
    counted_b, _ = score_rows(synthetic_rows(args.single, args.multi, 2))
    ego = [r for r in counted_a if r["is_ego"]]
    print(machine_header())
    print(f"{len(counted_a)} turns, {args.single + args.multi} conversations, {BOOTSTRAP_RESAMPLES} resamples")
    timed("score intervals, all turns", lambda: score_intervals(counted_a))
    timed("score intervals, egocentric", lambda: score_intervals(ego))
    timed(f"breakdowns ({len(BREAKDOWN_COLUMNS)} tables, every row)",
          lambda: [breakdown(counted_a, c) for c in BREAKDOWN_COLUMNS])
    timed("paired differences, all turns", lambda: paired_differences(counted_a, counted_b))


if __name__ == "__main__":
    main()

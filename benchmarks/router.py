"""The router on the mini benchmark: the paper's free-text router against the yes/no router that
reads next-token probabilities (`router_mode`), on the same model, the same questions and batches.

Run: HF_HUB_OFFLINE=1 python -m benchmarks.router [--profile cpu] [--batch 8]
Prints, per mode: how often both labels were read, the seconds per turn (median batch), and each
label's agreement with the dataset's own tags, which stand in for the truth: "needs external
info" against every query category but "simple recognition" (the one answered from the photo
alone), "real-time" against dynamism "real-time"; then how often the two modes agree.
Every question of both splits (multi-turn: each turn, without its history).

Fills docs/benchmarks.md, "Router: text or yes/no".
"""
from __future__ import annotations

import argparse
import statistics
import time

from agents.config.loading import load_config
from agents.cruise.stages.s1_route import route_batch
from agents.profiles import REPO_ROOT
from agents.stages.types import Turn
from benchmarks.machine import machine_header

MINI = REPO_ROOT / "data" / "crag-mm-mini"


def questions() -> list[dict]:
    import pandas as pd

    rows = []
    for split in ("single-turn", "multi-turn"):
        for path in sorted((MINI / split).rglob("*.parquet")):
            for turns in pd.read_parquet(path)["turns"]:
                for k in range(len(turns["query"]) if isinstance(turns, dict) else len(turns)):
                    turn = {key: turns[key][k] for key in turns} if isinstance(turns, dict) else turns[k]
                    rows.append(turn)
    return rows


def run_mode(mode: str, rows: list[dict], engine, cfg, batch: int) -> tuple[list, list[float]]:
    cfg = cfg.replace(router_mode=mode)
    routes, seconds = [], []
    for start in range(0, len(rows), batch):
        turns = [Turn(query=r["query"], image=None, history=[]) for r in rows[start:start + batch]]
        began = time.perf_counter()
        routes += route_batch(turns, engine, cfg)
        seconds.append((time.perf_counter() - began) / len(turns))
    return routes, seconds


def share(flags) -> str:
    flags = list(flags)
    return f"{sum(flags)}/{len(flags)} ({100 * sum(flags) / max(len(flags), 1):.0f}%)"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--profile", default="cpu")
    parser.add_argument("--batch", type=int, default=8)
    args = parser.parse_args()
    from agents.engines.base import Ledger
    from agents.factory import build_engines

    cfg = load_config(args.profile, "full")
    engine = build_engines(cfg, Ledger()).router
    rows = questions()
    external_truth = [r.get("query_category") != "simple recognition" for r in rows]
    real_time_truth = [r.get("dynamism") == "real-time" for r in rows]
    print(machine_header())
    print(f"{len(rows)} questions, batch {args.batch}, router {cfg.models.router_model} ({args.profile} profile)")
    print("| router_mode | both labels read | s per turn (median batch) | external = tag | real-time = tag |")
    print("|---|---|---|---|---|")
    results = {}
    for mode in ("text", "yes_no"):
        routes, seconds = run_mode(mode, rows, engine, cfg, args.batch)
        results[mode] = routes
        print(f"| {mode} | {share(r.parsed for r in routes)} | {statistics.median(seconds):.3f} | "
              f"{share(r.needs_external == t for r, t in zip(routes, external_truth))} | "
              f"{share(r.is_real_time == t for r, t in zip(routes, real_time_truth))} |")
    both = [(a, b) for a, b in zip(results["text"], results["yes_no"]) if a.parsed]
    print(f"where the text router was read ({len(both)} questions), the modes agree on external "
          f"{share(a.needs_external == b.needs_external for a, b in both)}, on real-time "
          f"{share(a.is_real_time == b.is_real_time for a, b in both)}")
    print(f"tags: {sum(external_truth)} of {len(rows)} need external info, {sum(real_time_truth)} are real-time")


if __name__ == "__main__":
    main()

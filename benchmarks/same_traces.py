"""Whether two runs' turns came out the same: each turn's trace and answer, timings left out.

Run: python -m benchmarks.same_traces BASE_RUN NEW_RUN

Each is an output folder of `local_evaluation.py` (traces.jsonl, answers.jsonl), e.g. the same
evaluation at two commits with `--set turn_budget_s=0` (no deadline, so that no turn depends on
the machine's speed). A refactor that should change no answer shows every turn equal. Prints one
line: turns whose traces are equal, turns whose answers are equal, and the trace keys that
differ anywhere.
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

# what a run's speed sets, not its chain: the stages' wall times, perception's ms
TIMING_KEYS = frozenset({"stage_ms", "ms", "batch_wall_ms", "wall_ms"})


def without_timings(value):
    if isinstance(value, dict):
        return {k: without_timings(v) for k, v in value.items() if k not in TIMING_KEYS}
    if isinstance(value, list):
        return [without_timings(v) for v in value]
    return value


def by_turn(path: Path) -> dict[tuple, dict]:
    with path.open(encoding="utf-8") as lines:
        return {(r["interaction_id"], r.get("turn_idx")): r for r in map(json.loads, lines)}


def compare(base: Path, new: Path) -> dict:
    """{"turns", "equal_traces", "equal_answers", "differing_keys"} of two runs' folders; a turn
    missing from `new` counts as differing."""
    traces = by_turn(base / "traces.jsonl"), by_turn(new / "traces.jsonl")
    answers = by_turn(base / "answers.jsonl"), by_turn(new / "answers.jsonl")
    differing: set[str] = set()
    equal_traces = 0
    for turn, trace in traces[0].items():
        old, now = without_timings(trace), without_timings(traces[1].get(turn) or {})
        if old == now:
            equal_traces += 1
        else:
            differing |= {key for key in set(old) | set(now) if old.get(key) != now.get(key)}
    equal_answers = sum(row["agent_response"] == answers[1].get(turn, {}).get("agent_response")
                        for turn, row in answers[0].items())
    return {"turns": len(traces[0]), "equal_traces": equal_traces, "equal_answers": equal_answers,
            "differing_keys": sorted(differing)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("base", type=Path)
    parser.add_argument("new", type=Path)
    args = parser.parse_args(argv)
    found = compare(args.base, args.new)
    print(f"traces equal on {found['equal_traces']} of {found['turns']} turns, answers on {found['equal_answers']}; "
          f"keys that differ: {found['differing_keys'] or 'none'}")
    return 0 if found["equal_traces"] == found["turns"] else 1


if __name__ == "__main__":
    raise SystemExit(main())

"""Whether two runs' turns came out the same: each turn's trace and answer, timings left out.

Run: python -m benchmarks.same_traces BASE_RUN NEW_RUN

Each is an output folder of `local_evaluation.py` (traces.jsonl, answers.jsonl), e.g. the same
evaluation at two commits with `--set turn_budget_s=0` (no deadline, so that no turn depends on
the machine's speed). A refactor that should change no answer shows every turn equal. Prints one
line: turns whose traces are equal, whose branches and answers are equal, whose stage times name
the same stages (`stage_ms`' keys: the times differ, the stages timed must not), and the trace keys
that differ anywhere. A key that every trace of NEW has and no trace of BASE has is a field the newer
code added (a release's `faults`): it is named apart and left out of the comparison, so that the
turns read equal when all they gained is that field.
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


def added_keys(base: dict[tuple, dict], new: dict[tuple, dict]) -> set[str]:
    """The keys every trace of `new` has and no trace of `base` has."""
    in_every_new = set.intersection(*(set(trace) for trace in new.values())) if new else set()
    return in_every_new - set().union(*(set(trace) for trace in base.values()))


def compare(base: Path, new: Path) -> dict:
    """{"turns", "equal_traces", "equal_branches", "equal_stage_keys", "equal_answers", "differing_keys",
    "added_keys"} of two runs' folders; a turn missing from `new` counts as differing."""
    traces = by_turn(base / "traces.jsonl"), by_turn(new / "traces.jsonl")
    answers = by_turn(base / "answers.jsonl"), by_turn(new / "answers.jsonl")
    added = added_keys(*traces)
    differing: set[str] = set()
    equal_traces = equal_branches = equal_stage_keys = 0
    for turn, trace in traces[0].items():
        equal_stage_keys += turn in traces[1] and set(trace.get("stage_ms") or {}) == set(
            traces[1][turn].get("stage_ms") or {})
        old = without_timings(trace)
        now = {k: v for k, v in without_timings(traces[1].get(turn) or {}).items() if k not in added}
        equal_branches += turn in traces[1] and old.get("branch") == now.get("branch")
        if old == now:
            equal_traces += 1
        else:
            differing |= {key for key in set(old) | set(now) if old.get(key) != now.get(key)}
    equal_answers = sum(row["agent_response"] == answers[1].get(turn, {}).get("agent_response")
                        for turn, row in answers[0].items())
    return {"turns": len(traces[0]), "equal_traces": equal_traces, "equal_branches": equal_branches,
            "equal_stage_keys": equal_stage_keys, "equal_answers": equal_answers, "differing_keys": sorted(differing), "added_keys": sorted(added)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("base", type=Path)
    parser.add_argument("new", type=Path)
    args = parser.parse_args(argv)
    found = compare(args.base, args.new)
    added = f" (keys only the new run has, left out: {found['added_keys']})" if found["added_keys"] else ""
    print(f"traces equal on {found['equal_traces']} of {found['turns']} turns{added}, branches on "
          f"{found['equal_branches']}, stage times' keys on {found['equal_stage_keys']}, answers on "
          f"{found['equal_answers']}; keys that differ: "
          f"{found['differing_keys'] or 'none'}")
    return 0 if found["equal_traces"] == found["equal_stage_keys"] == found["turns"] else 1


if __name__ == "__main__":
    raise SystemExit(main())

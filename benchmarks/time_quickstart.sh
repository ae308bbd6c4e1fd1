#!/usr/bin/env bash
# Time `bash scripts/quickstart.sh` the way a new user meets it: a fresh clone in a temporary
# folder, an empty pip cache, no .venv and no .cache. Prints how long each step took (the steps
# are the "==> ..." lines that setup.sh and quickstart.sh print), the total, and the machine's
# load before and after, since a busy machine inflates every figure.
#
#   bash benchmarks/time_quickstart.sh [REPO] [-- QUICKSTART_ARGS...]
#
# REPO defaults to this repository (its checked-out branch is cloned as committed, without
# uncommitted changes). The clone,
# its log and the empty pip cache stay in the printed folder; delete it when done.
#
# Fills docs/benchmarks.md, "Quickstart".
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
repo="$here"
if [ $# -gt 0 ] && [ "$1" != "--" ]; then repo="$1"; shift; fi
[ "${1:-}" = "--" ] && shift

work="$(mktemp -d "${TMPDIR:-/tmp}/time-quickstart.XXXXXX")"
log="$work/quickstart.log"
export PIP_CACHE_DIR="$work/pip-cache"   # empty: every wheel is downloaded again
mkdir -p "$PIP_CACHE_DIR"
unset CRUISE_CACHE VIRTUAL_ENV

echo "machine: $(nproc) cores, $(free -g | awk '/Mem:/ {print $2}') GiB; load before: $(uptime | sed 's/.*load average: //')"
start=$(date +%s.%N)
# the branch checked out in REPO (a worktree's branch too), as committed
git clone --quiet --branch "$(git -C "$repo" rev-parse --abbrev-ref HEAD)" "$repo" "$work/repo"
echo "==> git clone" > "$log.marks"
printf '%s\t%s\n' "$start" "git clone" > "$log.times"
cd "$work/repo"

# Every output line gets a monotonic timestamp; "==> step" lines open a new step.
set +e
bash scripts/quickstart.sh "$@" 2>&1 | python3 -u -c '
import sys, time
log = open(sys.argv[1], "w")
times = open(sys.argv[2], "a")
for line in sys.stdin:
    now = time.time()
    log.write(f"{now:.3f} {line}")
    log.flush()
    if line.startswith("==> "):
        times.write(f"{now:.3f}\t{line[4:].strip()}\n")
        times.flush()
        sys.stdout.write(line)
' "$log" "$log.times"
status=${PIPESTATUS[0]}
set -e
end=$(date +%s.%N)
printf '%s\t%s\n' "$end" "(end)" >> "$log.times"

echo
echo "load after: $(uptime | sed 's/.*load average: //')"
python3 - "$log.times" "$start" "$end" "$status" <<'PY'
import sys
rows = [line.rstrip("\n").split("\t", 1) for line in open(sys.argv[1]) if line.strip()]
start, end, status = float(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4])
print(f"| step | seconds |\n|---|---|")
for (t0, name), (t1, _) in zip(rows, rows[1:]):
    print(f"| {name} | {float(t1) - float(t0):.1f} |")
total = end - start
print(f"| **total** | **{total:.1f}** ({int(total // 60)} min {total % 60:.0f} s) |")
print(f"quickstart exit status: {status}")
PY
# Work a busy machine hides: turns the agent's deadline cut short answer "I don't know" fast.
python3 - "$work/repo/outputs" <<'PY'
import json, sys
from pathlib import Path
for kind in ("single-turn", "multi-turn"):
    path = Path(sys.argv[1]) / kind / "run_summary.json"
    if not path.exists():
        print(f"{kind}: no run_summary.json")
        continue
    s = json.loads(path.read_text())
    agent_s = sum(b["wall_ms"] for b in s.get("per_batch", [])) / 1000
    print(f"{kind}: {s.get('turns_answered')} turns in {s.get('batches')} batches, {agent_s:.0f} s inside the agent, "
          f"deadline-cut turns {s.get('deadline_cut_turns')}, batches over budget {s.get('over_budget_count')}, "
          f"not a miss {int(s['scores']['all']['total'] - s['scores']['all']['miss'])}")
    # Each stage's share of the budget, over every batch, and of the worst batch.
    batches = [json.loads(line) for line in (path.parent / "batches.jsonl").read_text().splitlines() if line.strip()]
    budget = sum(b.get("budget_ms") or 0 for b in batches)
    stages = {}
    for b in batches:
        for stage, ms in (b.get("stage_ms") or {}).items():
            stages[stage] = stages.get(stage, 0.0) + ms
    if budget:
        shares = ", ".join(f"{stage} {100 * ms / budget:.0f}%" for stage, ms in stages.items())
        worst = max(batches, key=lambda b: b["wall_ms"] / b["budget_ms"])
        print(f"  share of the budget: {shares}; worst batch {100 * worst['wall_ms'] / worst['budget_ms']:.0f}%")
    traces = [json.loads(line) for line in (path.parent / "traces.jsonl").read_text().splitlines() if line.strip()]
    if traces:
        read = sum(1 for t in traces if t.get("router_parsed"))
        uncut = sum(1 for t in traces if not t.get("deadline_cut"))
        print(f"  turns uncut {uncut}/{len(traces)}, router read {read}/{len(traces)}")
PY
echo "clone, log and pip cache: $work (log: $log)"
exit "$status"

"""In-process engine vs served engine, then 2 evaluator shards against one server vs 1 process.

    python -m benchmarks.served [--turns 16]

Same model (the cpu profile's SmolLM2), same machine: `transformers serve` on a loopback port
(testkit/transformers_serve.py) against the in-process transformers engine, on the first N
single-turn conversations of the shipped mini benchmark (`--exact-conversations`), temperature 0
everywhere (`direct_temperature=0`; transformers serve never samples) and a 60 s turn budget (no
deadline cuts), no judge. Prints wall time per run (process start to exit: model and index
loading included), the agent's own time (the sum of batch wall times), the ratios, and how many
answers agree. Runs one after another; the shards run at the same time.

Fills docs/benchmarks.md, "Served vs in-process".
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from agents.engines.local_models import resolve_model
from benchmarks.machine import machine_header
from testkit.transformers_serve import ServedModel, evaluation_settings, serving_copy

REPO = Path(__file__).resolve().parent.parent
COMMON = ["direct_temperature=0", "turn_budget_s=60"]


def start(out: Path, turns: int, settings: list[str], shard: str | None = None) -> subprocess.Popen:
    env = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY" and not k.startswith("CRUISE_")}
    env.update(HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    args = [sys.executable, "local_evaluation.py", "--profile", "cpu", "--dataset-type", "single-turn",
            "--num-conversations", str(turns), "--exact-conversations", "--eval-model", "None",
            "--output-dir", str(out), "--no_progress"]
    for setting in COMMON + settings:
        args += ["--set", setting]
    if shard:
        args += ["--shard", shard]
    return subprocess.Popen(args, cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)


def finish(procs: list[subprocess.Popen], started: float) -> float:
    for proc in procs:
        _, err = proc.communicate()
        if proc.returncode:
            raise SystemExit(f"a run failed:\n{err[-2000:]}")
    return time.perf_counter() - started


def agent_seconds(out: Path) -> float:
    return sum(json.loads(line)["wall_ms"] for line in (out / "batches.jsonl").read_text().splitlines()) / 1000.0


def answers(*outs: Path) -> dict[str, str]:
    return {r["interaction_id"]: r["raw_answer"] for out in outs
            for r in map(json.loads, (out / "answers.jsonl").read_text().splitlines())}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--turns", type=int, default=16)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bench-served-"))
    server = ServedModel(serving_copy(resolve_model("smollm2"), work / "model"), work / "server.log")
    served = evaluation_settings(server)
    try:
        rows = {}
        t = time.perf_counter()
        rows["in-process engine, 1 process"] = (finish([start(work / "local", args.turns, [])], t), work / "local")
        t = time.perf_counter()
        rows["served engine, 1 process"] = (finish([start(work / "served", args.turns, served)], t), work / "served")
        t = time.perf_counter()
        shards = [start(work / f"shard{i}", args.turns, served, f"{i}/2") for i in range(2)]
        rows["served engine, 2 shards"] = (finish(shards, t), None)
    finally:
        server.stop()

    local = answers(work / "local")
    print(machine_header())
    print(f"mini benchmark, single-turn, first {args.turns} conversations; SmolLM2 via transformers serve 4.57.6")
    print(f"{'run':34} {'wall s':>8} {'agent s':>8} {'answers = in-process':>22}")
    for name, (wall, out) in rows.items():
        outs = [out] if out else [work / "shard0", work / "shard1"]
        got = answers(*outs)
        agent = "+".join(f"{agent_seconds(o):.1f}" for o in outs)
        same = sum(got.get(iid) == answer for iid, answer in local.items())
        print(f"{name:34} {wall:8.1f} {agent:>8} {same:>15}/{len(local)}")
    base, one, two = (rows[k][0] for k in rows)
    print(f"served / in-process wall: {one / base:.2f}; 2 shards / 1 process (served) wall: {two / one:.2f}")
    print(f"agent time served / in-process: {agent_seconds(work / 'served') / agent_seconds(work / 'local'):.2f}")
    print(f"outputs: {work}")


if __name__ == "__main__":
    main()

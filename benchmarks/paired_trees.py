"""One evaluation of the mini benchmark at two checkouts of the project, in turn, paired.

Run: python -m benchmarks.paired_trees BASE_TREE [--rounds 2] [--dataset-type single-turn]
         [--this-set FIELD=VALUE ...] [-- ARGS...]

BASE_TREE is another checkout (e.g. `git worktree add /tmp/base 30fc56a`, with `.venv` and
`.cache` linked to this one's). Each round runs `local_evaluation.py` at the base, then at this
tree (the order swaps every round), each in a process of its own with this tree's Python, so
that a machine whose load changes weighs on both alike. ARGS go to every run; `--this-set` only
to this tree's (a setting the base does not know, e.g. `cpu_weights=float32`).

It prints one row per run: wall seconds of the whole process, the seconds inside the agent (the
batches), each stage's seconds, the worst batch's share of its budget, turns cut, batches over
budget, right / wrong / abstained by the run's judge, and the load average before and after; then
each round's ratio this / base of wall and agent seconds, and how many final answers are equal.
Outputs stay in --work (default a temporary folder). Fills docs/benchmarks.md "Paired against
30fc56a".
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from agents.profiles import REPO_ROOT
from benchmarks.machine import load_average, machine_header


def run_summary(folder: Path) -> dict:
    """The figures of one finished run folder."""
    s = json.loads((folder / "run_summary.json").read_text())
    stages: dict[str, float] = {}
    for batch in s["stage_ms_per_batch"]:
        for name, ms in batch.items():
            stages[name] = stages.get(name, 0.0) + ms / 1000
    worst = max((b["wall_ms"] / b["budget_ms"] for b in s["per_batch"] if b.get("budget_ms")), default=0.0)
    scores = s["scores"]["all"]
    answers = {}
    for line in (folder / "answers.jsonl").read_text().splitlines():
        row = json.loads(line)
        answers[(row["interaction_id"], row["turn_idx"])] = row["agent_response"]
    return dict(agent_s=sum(b["wall_ms"] for b in s["per_batch"]) / 1000, stages=stages, worst_share=worst,
                cut=s["deadline_cut_turns"], over=s["over_budget_count"], right=int(scores["correct"]),
                wrong=int(scores["hallucination"]), abstained=int(scores["miss"]), answers=answers)


def run_once(tree: Path, out: Path, dataset_type: str, extra: list[str]) -> dict:
    before = load_average()
    began = time.monotonic()
    subprocess.run([sys.executable, "local_evaluation.py", "--dataset-type", dataset_type, "--output-dir", str(out),
                    "--no_progress", *extra], cwd=tree, check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)
    return dict(wall_s=time.monotonic() - began, load=f"{before} -> {load_average()}", **run_summary(out))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                     epilog="after --: arguments for every local_evaluation.py run")
    parser.add_argument("base", type=Path, help="the other checkout (the base)")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--dataset-type", default="single-turn")
    parser.add_argument("--work", type=Path, default=None, help="where the run folders go")
    parser.add_argument("--this-set", nargs="+", default=[], metavar="FIELD=VALUE",
                        help="--set for this tree's runs only")
    # what follows `--` goes to every run as it is: split off before argparse, which would match an
    # optional positional right after BASE and then refuse the rest as unrecognised
    argv = list(sys.argv[1:] if argv is None else argv)
    cut = argv.index("--") if "--" in argv else len(argv)
    args = parser.parse_args(argv[:cut])
    args.extra = argv[cut + 1:]
    work = args.work or Path(tempfile.mkdtemp(prefix="paired-trees."))
    trees = {"base": args.base.resolve(), "this": REPO_ROOT}
    print(machine_header(), flush=True)
    print(f"base {trees['base']}, this {trees['this']} {' '.join(args.this_set)}, runs in {work}", flush=True)
    print("| round | tree | wall s | agent s | stages s | worst batch | cut | over | right / wrong / abstained | load |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    rounds = []
    for r in range(args.rounds):
        order = ("base", "this") if r % 2 == 0 else ("this", "base")
        got = {}
        for name in order:
            extra = args.extra + [a for field in args.this_set for a in ("--set", field)] * (name == "this")
            got[name] = f = run_once(trees[name], work / f"{r}-{name}", args.dataset_type, extra)
            stages = ", ".join(f"{k} {v:.1f}" for k, v in f["stages"].items())
            print(f"| {r + 1} | {name} | {f['wall_s']:.1f} | {f['agent_s']:.1f} | {stages} | {f['worst_share']:.0%} | "
                  f"{f['cut']} | {f['over']} | {f['right']} / {f['wrong']} / {f['abstained']} | {f['load']} |", flush=True)
        rounds.append(got)
    for r, got in enumerate(rounds):
        base, this = got["base"], got["this"]
        same = sum(this["answers"].get(k) == v for k, v in base["answers"].items())
        print(f"round {r + 1}: this / base wall {this['wall_s'] / base['wall_s']:.2f}, agent "
              f"{this['agent_s'] / base['agent_s']:.2f}; same final answer {same}/{len(base['answers'])}")
    wall = sum(g["this"]["wall_s"] for g in rounds) / sum(g["base"]["wall_s"] for g in rounds)
    agent = sum(g["this"]["agent_s"] for g in rounds) / sum(g["base"]["agent_s"] for g in rounds)
    print(f"all rounds: this / base wall {wall:.2f}, agent {agent:.2f}")


if __name__ == "__main__":
    main()

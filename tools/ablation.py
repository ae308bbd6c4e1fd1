"""The paper's ablation (its Table 1 rows) on the mini benchmark, runnable on CPU by anyone.

    python -m tools.ablation [--presets full no_cov ...] [--datasets single-turn multi-turn]
                             [--output-dir DIR] [--calibration FILE] [--num-conversations N]

1. the evaluation (`evaluator.evaluate`, tools/runs.py) with `--preset full --shard 0/2` on each dataset: traces of one half of the
   conversations (split by conversation index, as --shard splits them);
2. `python -m tools.calibrate` on those traces: the finalizer's thresholds (the judge is the
   evaluation's own: the offline lexical judge when no LLM judge is configured);
3. the evaluation with `--preset P --calibration FILE` for every preset and dataset, once, on the
   whole dataset;
4. a markdown table, preset x dataset: accuracy, missing, hallucination and truthfulness on the
   held-out half (shard 1/2: the conversations calibration never saw) and on the whole. The half's
   scores come from the whole run's official turn rows, filtered by conversation and counted by
   the evaluator's own `score_rows` under the run's rule set, so no preset runs twice.

`--calibration FILE` skips steps 1-2. `--num-conversations N` evaluates exactly the first N
conversations of each dataset (`--exact-conversations`), for a quick run; the halves are then
halves of those N. Every run folder is kept under --output-dir; a run whose folder already holds
its scores is reused, not repeated. The table (ablation.md) and the figures (ablation.json) say
date, machine, command, judge and calibration. The cpu profile's models are small stand-ins:
these figures test the plumbing and the switches, not CRUISE's quality (docs/benchmarks.md).
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import shlex
import sys
from pathlib import Path

from agents.config.presets import PRESETS
from agents.profiles import REPO_ROOT
from evaluator.harness.dataset import load_split, read_conversations
from evaluator.harness.run_record import read_run_record
from evaluator.scoring.rules import rule_set
from evaluator.scoring.scores import score_rows
from tools.runs import add_run_flags, answering_every_turn, calibrate_on, run_once, run_settings

DEFAULT_PRESETS = ("vision_only", "rag_baseline", "no_cov_no_sc", "no_cov", "full")
DATASETS = ("single-turn", "multi-turn")
HALVES = 2
HELD_OUT = 1  # shard 1/2; shard 0/2 is what calibration sees
FIGURES = (("accuracy", "accuracy"), ("missing", "missing"), ("hallucination", "hallucination_rate"),
           ("truthfulness", "truthfulness_score"))
FLAGS = ("is_exact_match", "is_correct", "is_miss")


def calibrate(args, output_dir: Path) -> Path:
    """Steps 1-2: traces of shard 0/2 of every dataset, then calibration.json from them."""
    trace_dirs = [run_once(run_settings(args, dataset_type, "full", output_dir / "calibration-traces" / dataset_type,
                                        shard=f"{1 - HELD_OUT}/{HALVES}", **answering_every_turn(args.profile, "full")))
                  for dataset_type in args.datasets]
    return calibrate_on(trace_dirs, output_dir / "calibration.json")


def read_turn_rows(run_dir: Path) -> list[dict]:
    """The official turn rows (flags before the multi-turn cut), flags as booleans."""
    import pandas as pd

    rows = pd.read_csv(run_dir / "turn_evaluation_results_all.csv", dtype=str, keep_default_na=False)
    records = rows.to_dict("records")
    for record in records:
        record["turn_idx"] = int(record["turn_idx"])
        for flag in FLAGS:
            record[flag] = record[flag].strip().lower() == "true"
    return records


def conversation_indices(run_dir: Path) -> dict[str, int]:
    """session_id -> the conversation's index in its split (what --shard splits by)."""
    record = read_run_record(run_dir)
    ds, _, _ = load_split(record.dataset, record.revision, record.split or "validation")
    return {conv.session_id: conv.index for conv in read_conversations(ds)}


def run_scores(run_dir: Path) -> dict:
    """{"held_out": scores, "whole": scores, "judge": label} of a finished run."""
    summary = json.loads((run_dir / "run_summary.json").read_text())
    rules = rule_set(summary.get("rules"))
    rows = read_turn_rows(run_dir)
    index = conversation_indices(run_dir)
    held_out = [r for r in rows if index[r["session_id"]] % HALVES == HELD_OUT]
    return {"held_out": score_rows(held_out, rules)[1], "whole": score_rows(rows, rules)[1],
            "judge": summary.get("judge"), "rules": rules.name}


def markdown_table(results: list[dict]) -> str:
    head = ["preset", "dataset"]
    for part in ("held-out", "whole"):
        head += [f"{name} ({part})" for name, _ in FIGURES]
    head += ["turns (held-out / whole)"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for result in results:
        cells = [result["preset"], result["dataset"]]
        for part in ("held_out", "whole"):
            scores = result[part]
            cells += [f"{scores[key]:.3f}" if scores["total"] else "-" for _, key in FIGURES]
        cells.append(f"{result['held_out']['total']:.0f} / {result['whole']['total']:.0f}")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def report(results: list[dict], calibration: Path, argv: list[str]) -> str:
    saved = json.loads(calibration.read_text())
    judges = sorted({str(r["judge"]) for r in results})
    date = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    return "\n".join([
        f"Date: {date}. Machine: {platform.machine()}, {os.cpu_count()} CPU cores, {platform.platform()}.",
        f"Command: `python -m tools.ablation {shlex.join(argv)}`".rstrip() + ".",
        f"Judge: {', '.join(judges)}. Rules: {', '.join(sorted({r['rules'] for r in results}))}.",
        f"Calibration: {calibration} ({saved.get('verdict', 'settings given')}: "
        + ", ".join(f"{k}={v}" for k, v in saved.get("settings", {}).items()) + ").",
        f"Held-out: the conversations with index % {HALVES} == {HELD_OUT} (shard {HELD_OUT}/{HALVES}); "
        "whole: every conversation evaluated. Truthfulness is 0.0 for a cell of at most one turn (the official rule).",
        "",
        markdown_table(results),
        "",
    ])


def parse_args(argv):
    parser = argparse.ArgumentParser(prog="python -m tools.ablation", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--presets", nargs="+", default=list(DEFAULT_PRESETS), choices=sorted(PRESETS))
    parser.add_argument("--datasets", nargs="+", default=list(DATASETS), choices=DATASETS)
    parser.add_argument("--output-dir", type=Path, default=None, help="default: outputs/ablation-<timestamp>")
    parser.add_argument("--calibration", type=Path, default=None, metavar="FILE",
                        help="a calibration.json to use: skips the shard-0 runs and calibration")
    add_run_flags(parser)
    return parser.parse_args(argv)


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = parse_args(argv)
    output_dir = args.output_dir or REPO_ROOT / "outputs" / datetime.datetime.now().strftime("ablation-%Y%m%d-%H%M%S")
    output_dir.mkdir(parents=True, exist_ok=True)
    calibration = args.calibration or calibrate(args, output_dir)
    if not calibration.is_file():
        raise SystemExit(f"--calibration {calibration}: no such file")
    results = []
    for dataset_type in args.datasets:
        for preset in args.presets:
            run_dir = run_once(run_settings(args, dataset_type, preset, output_dir / "runs" / dataset_type / preset,
                                            calibration=str(calibration)))
            results.append({"preset": preset, "dataset": dataset_type, "run_dir": str(run_dir), **run_scores(run_dir)})
    text = report(results, calibration, argv)
    (output_dir / "ablation.md").write_text(text)
    (output_dir / "ablation.json").write_text(json.dumps({"calibration": str(calibration), "results": results},
                                                         indent=1, default=str))
    print("\n" + text)
    print(f"wrote {output_dir / 'ablation.md'} and {output_dir / 'ablation.json'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""The three systems of our seed papers side by side on the same turns: CRUISE (`full`),
QA-Dragon (`qa_dragon`), SAM-RAG (`sam_rag`), and the plain RAG baseline (`rag_baseline`), and any
other system by its name.

    python -m tools.compare_systems [--systems full qa_dragon sam_rag rag_baseline keyword_gate mypkg.system:mine@no_cov]
                                    [--datasets single-turn multi-turn] [--output-dir DIR]
                                    [--num-conversations N] [--profile cpu] [--write-doc docs/benchmarks.md]

1. Each system that has verifiers with thresholds (all but rag_baseline) runs on half the
   conversations (`--shard 0/2`), and `python -m tools.calibrate` fits its own thresholds on its
   own traces (CRUISE: Algorithm 1's; QA-Dragon: its verifier cut and its token-probability gate;
   SAM-RAG: its isSup cut), as tools/ablation.py does for CRUISE.
2. Every system runs on the whole of every dataset with its calibration.
3. A markdown table per dataset: each system's scores with their 95% intervals (bootstrap over
   conversations, as every run's scores_dictionary.json records them), its truthfulness on the
   held-out half (the conversations calibration never saw), batches over budget and deadline-cut
   turns; then each system paired with `full` on the same turns (evaluator/report/paired.py: the
   differences with their paired 95% intervals, and the flip table's changes).

Each of `--systems` is a preset (it says its system: `qa_dragon`; CRUISE's own presets run
`cruise`), or a system by name: registered, an installed package's entry point of
`cruise_agent.systems`, or `MODULE:NAME`, run under the preset `full` or the one after `@`
(`keyword_gate@no_cov`). A system given by name runs with its own settings as declared: it is
not calibrated. Tables name each run by its system, with the preset beside it.

Written to DIR/systems.md and DIR/systems.json; `--write-doc FILE` also puts the tables between
the markers `<!-- systems-comparison:start -->` and `<!-- systems-comparison:end -->` of FILE.
Finished runs under DIR are reused (an interrupted one resumes), as in tools/ablation.py.
`python -m evaluator.report DIR/runs/<dataset>/full DIR/runs/<dataset>/qa_dragon ...` prints the
same pairs with every flipped turn.
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

from agents.config.loading import load_config
from agents.config.presets import PRESETS
from agents.profiles import REPO_ROOT
from evaluator.report.html import load_run, run_intervals
from evaluator.report.paired import OUTCOMES, compare_pair
from tools.ablation import DATASETS, HALVES, HELD_OUT, run_scores
from tools.runs import (
    Entry,
    add_run_flags,
    answering_every_turn,
    calibrate_on,
    entry,
    folder_name,
    run_once,
    run_settings,
)

DEFAULT_SYSTEMS = ("full", "qa_dragon", "sam_rag", "rag_baseline")
BASELINE = "full"
DOC_START = "<!-- systems-comparison:start -->"
DOC_END = "<!-- systems-comparison:end -->"
SCORES = (("accuracy", "accuracy"), ("hallucination", "hallucination_rate"), ("truthfulness", "truthfulness_score"))


def calibrated(profile: str, system: Entry) -> bool:
    """Whether a system has thresholds to calibrate (a preset whose finalizer or verifiers run)."""
    return system.by_preset and load_config(profile, system.preset).answer.use_finalizer


def calibrate_system(args, system: Entry, output_dir: Path) -> Path:
    """Step 1 for one system: its traces on shard 0/2 of every dataset, then its calibration file."""
    target = output_dir / f"calibration-{folder_name(system.key)}.json"
    if target.is_file():
        print(f"reusing {target}")
        return target
    every_turn = answering_every_turn(args.profile, system.preset).get("set", ())
    trace_dirs = [run_once(run_settings(args, dataset_type, system.preset,
                                        output_dir / "calibration-traces" / folder_name(system.key) / dataset_type,
                                        shard=f"{1 - HELD_OUT}/{HALVES}", set=(*system.settings, *every_turn)))
                  for dataset_type in args.datasets]
    return calibrate_on(trace_dirs, target)


def interval(values) -> str:
    return f"[{values[0]:.3f}, {values[1]:.3f}]" if values else ""


def run_row(system: Entry, run_dir: Path) -> dict:
    run = load_run(run_dir)
    scores = run.scores.get("all") or {}
    spread = run_intervals(run).get("all") or {}
    return {
        "system": system.key, "label": system.label, "run_dir": str(run_dir), "turns": scores.get("total", 0),
        "scores": {key: scores.get(key) for _, key in SCORES},
        "intervals": {key: spread.get(key) for _, key in SCORES},
        "correct": scores.get("correct"), "miss": scores.get("miss"), "hallucination": scores.get("hallucination"),
        "held_out_truthfulness": run_scores(run_dir)["held_out"].get("truthfulness_score"),
        "batches": run.summary.get("batches"), "over_budget": run.summary.get("over_budget_count"),
        "deadline_cut_turns": run.summary.get("deadline_cut_turns"), "judge": run.summary.get("judge"),
    }


def paired_row(system: Entry, base_dir: Path, run_dir: Path) -> dict:
    pair = compare_pair(load_run(base_dir), load_run(run_dir))
    if pair.refused:
        return {"system": system.key, "label": system.label, "refused": pair.refused}
    differences = pair.differences.get("all") or {}
    flips = {f"{a}->{b}": n for (a, b), n in pair.flips.items() if a != b and n}
    return {"system": system.key, "label": system.label, "differences": {key: differences.get(key) for _, key in SCORES},
            "flips": flips, "unchanged": sum(n for (a, b), n in pair.flips.items() if a == b), "flags": pair.flags}


def score_cell(row: dict, key: str) -> str:
    value = row["scores"].get(key)
    return "-" if value is None else f"{value:.3f} {interval(row['intervals'].get(key))}".strip()


def difference_cell(found: dict | None) -> str:
    if not found:
        return "-"
    return f"{found['difference']:+.3f} {interval(found['interval'])}"


def tables(results: dict) -> str:
    lines = []
    for dataset_type, found in results.items():
        lines += [f"**{dataset_type}** ({found['rows'][0]['turns']:.0f} turns)", "",
                  "| system | correct / missed / hallucinated | accuracy [95%] | hallucination [95%] "
                  "| truthfulness [95%] | truthfulness, held-out half | batches over budget | deadline-cut turns |",
                  "|---|---|---|---|---|---|---|---|"]
        for row in found["rows"]:
            held = row["held_out_truthfulness"]
            lines.append(f"| `{row['label']}` | {row['correct']:.0f} / {row['miss']:.0f} / {row['hallucination']:.0f} | "
                         f"{score_cell(row, 'accuracy')} | {score_cell(row, 'hallucination_rate')} | "
                         f"{score_cell(row, 'truthfulness_score')} | {'-' if held is None else f'{held:+.3f}'} | "
                         f"{row['over_budget']} of {row['batches']} | {row['deadline_cut_turns']} |")
        base = found["rows"][0]["label"]
        lines += ["", f"Paired with `{base}` on the same turns (difference = system - {base}, paired "
                      f"bootstrap 95% interval; flips: outcome under {base} -> outcome under the system):", "",
                  "| system | accuracy | hallucination | truthfulness | turns that changed outcome |",
                  "|---|---|---|---|---|"]
        for pair in found["pairs"]:
            if pair.get("refused"):
                lines.append(f"| `{pair['label']}` | {pair['refused']} | | | |")
                continue
            d = pair["differences"]
            changed = ", ".join(f"{k} {v}" for k, v in sorted(pair["flips"].items(), key=lambda kv: -kv[1])) or "none"
            lines.append(f"| `{pair['label']}` | {difference_cell(d.get('accuracy'))} | "
                         f"{difference_cell(d.get('hallucination_rate'))} | {difference_cell(d.get('truthfulness_score'))}"
                         f" | {changed} ({pair['unchanged']} unchanged) |")
        lines.append("")
    return "\n".join(lines)


def measured_span(run_dirs: list[Path]) -> tuple[str, str]:
    """When the runs were made (UTC): the first run_config.json written (a run's start), the last
    scores_dictionary.json (a run's end); a table rebuilt from reused runs keeps their dates."""
    def stamp(seconds: float) -> str:
        return datetime.datetime.fromtimestamp(seconds, datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")

    starts = [(d / "run_config.json").stat().st_mtime for d in run_dirs if (d / "run_config.json").exists()]
    ends = [(d / "scores_dictionary.json").stat().st_mtime for d in run_dirs if (d / "scores_dictionary.json").exists()]
    return stamp(min(starts)), stamp(max(ends))


def report(results: dict, calibrations: dict, argv: list[str]) -> str:
    judges = sorted({str(r["judge"]) for found in results.values() for r in found["rows"]})
    runs = [Path(r["run_dir"]) for found in results.values() for r in found["rows"]]
    runs += [Path(run) for path in calibrations.values() for run in json.loads(Path(path).read_text()).get("runs", [])]
    started, finished = measured_span(runs)
    cal_lines = []
    for preset, path in calibrations.items():
        saved = json.loads(Path(path).read_text())
        cal_lines.append(f"- `{preset}`: {saved.get('verdict', 'settings given')}: "
                         + ", ".join(f"{k}={v}" for k, v in saved.get("settings", {}).items()))
    return "\n".join([
        f"Date: runs made {started} to {finished}. Machine: {platform.machine()}, {os.cpu_count()} CPU cores, "
        f"{platform.platform()}.",
        f"Command: `python -m tools.compare_systems {shlex.join(argv)}`".rstrip() + ".",
        f"Judge: {', '.join(judges)}. A turn's outcome is one of: {', '.join(OUTCOMES)}.",
        "Calibration (each system on its own traces of shard 0/2, `python -m tools.calibrate`):",
        *cal_lines,
        f"Held-out half: the conversations with index % {HALVES} == {HELD_OUT}, which calibration never saw.",
        "",
        tables(results),
    ])


def write_doc(path: Path, text: str) -> None:
    doc = path.read_text()
    if DOC_START not in doc or DOC_END not in doc:
        raise SystemExit(f"{path}: no {DOC_START} ... {DOC_END} block to fill")
    head, rest = doc.split(DOC_START, 1)
    _, tail = rest.split(DOC_END, 1)
    path.write_text(f"{head}{DOC_START}\n{text.rstrip()}\n{DOC_END}{tail}")


def parse_args(argv):
    parser = argparse.ArgumentParser(prog="python -m tools.compare_systems", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--systems", nargs="+", default=list(DEFAULT_SYSTEMS), metavar="PRESET|SYSTEM[@PRESET]",
                        help=f"presets ({', '.join(sorted(PRESETS))}) or systems by name (registered, installed, "
                             f"MODULE:NAME) to compare; the first table pairs each with {BASELINE}")
    parser.add_argument("--datasets", nargs="+", default=list(DATASETS), choices=DATASETS)
    parser.add_argument("--output-dir", type=Path, default=None, help="default: outputs/systems-<timestamp>")
    add_run_flags(parser)
    parser.add_argument("--write-doc", type=Path, default=None, metavar="FILE",
                        help=f"also write the tables between {DOC_START} and {DOC_END} in FILE")
    return parser.parse_args(argv)


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = parse_args(argv)
    systems = [entry(name) for name in dict.fromkeys([BASELINE, *args.systems])]
    output_dir = args.output_dir or REPO_ROOT / "outputs" / datetime.datetime.now().strftime("systems-%Y%m%d-%H%M%S")
    output_dir.mkdir(parents=True, exist_ok=True)
    calibrations = {system.key: calibrate_system(args, system, output_dir) for system in systems
                    if calibrated(args.profile, system)}
    results: dict = {}
    for dataset_type in args.datasets:
        run_dirs = {}
        for system in systems:
            calibration = str(calibrations[system.key]) if system.key in calibrations else None
            run_dirs[system.key] = run_once(run_settings(args, dataset_type, system.preset,
                                                         output_dir / "runs" / dataset_type / folder_name(system.key),
                                                         calibration=calibration, set=system.settings))
        results[dataset_type] = {
            "rows": [run_row(system, run_dirs[system.key]) for system in systems],
            "pairs": [paired_row(system, run_dirs[BASELINE], run_dirs[system.key]) for system in systems[1:]],
        }
    text = report(results, {k: str(v) for k, v in calibrations.items()}, argv)
    (output_dir / "systems.md").write_text(text)
    (output_dir / "systems.json").write_text(json.dumps({"calibrations": {k: str(v) for k, v in calibrations.items()},
                                                         "results": results}, indent=1, default=str))
    if args.write_doc:
        write_doc(args.write_doc, text)
    print("\n" + text)
    print(f"wrote {output_dir / 'systems.md'} and {output_dir / 'systems.json'}"
          + (f"; filled {args.write_doc}" if args.write_doc else ""))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Each stage's headroom: a system's plain run on stage-labelled data against its oracle runs.

    python -m tools.oracle_headroom [--systems full qa_dragon sam_rag] [--oracles region entity question]
                                    [--dataset data/crag-mm-mini/diagnostics] [--split test]
                                    [--output-dir DIR] [--profile cpu] [--set FIELD=VALUE ...]
    python -m tools.oracle_headroom --compare PLAIN_RUN ORACLE_RUN [ORACLE_RUN ...]

For each system (a preset, or a system by name: registered, installed or MODULE:NAME, under the
preset `full` or the one after `@`; tools/runs.py `entry`) it runs, one after another, the plain run and one run per oracle
(`local_evaluation.py --oracle STAGE`: the human label of that stage given on every labelled
turn; docs/diagnostics.md), reusing finished runs under DIR and resuming cut ones, then prints:

- each run's stage rates against the labels (its diagnostics.json: grounding, image_retrieval@k,
  identification, knowledge);
- each oracle against the plain run over the same turns (evaluator/report/paired.py): accuracy
  and truthfulness of both, the paired difference with its paired-bootstrap 95% interval, and the
  turns the oracle fixed (not correct -> correct) and broke (correct -> not correct).

Written to DIR/headroom.md and DIR/headroom.json. `--compare` compares finished runs only.
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

from agents.profiles import REPO_ROOT
from evaluator.harness.runner import DIAGNOSTICS
from evaluator.report.html import load_run, system_name
from evaluator.report.paired import compare_pair
from evaluator.settings import ORACLE_STAGES
from tools.runs import Entry, add_run_flags, entry, folder_name, run_once, run_settings

DEFAULT_SYSTEMS = ("full", "qa_dragon", "sam_rag")
DEFAULT_DATASET = REPO_ROOT / "data" / "crag-mm-mini" / "diagnostics"
SCORES = (("accuracy", "accuracy"), ("truthfulness", "truthfulness_score"))


def headroom(plain_dir: Path, oracle_dir: Path) -> dict:
    """One oracle run against its plain run: scores, paired differences and the turns it changed."""
    plain, oracle = load_run(plain_dir), load_run(oracle_dir)
    pair = compare_pair(plain, oracle)
    out = {"plain": str(plain_dir), "oracle_run": str(oracle_dir),
           "oracle": oracle.record.oracle, "refused": pair.refused, "flags": pair.flags}
    if pair.refused:
        return out
    differences = pair.differences["all"]
    out["scores"] = {name: differences[key] for name, key in SCORES if key in differences}
    out["fixed"] = sum(n for (a, b), n in pair.flips.items() if a != "correct" and b == "correct")
    out["broken"] = sum(n for (a, b), n in pair.flips.items() if a == "correct" and b != "correct")
    out["turns"] = len(plain.rows)
    return out


def stage_rates(run_dir: Path) -> dict | None:
    path = Path(run_dir) / DIAGNOSTICS
    return json.loads(path.read_text())["stages"] if path.exists() else None


def stage_table(runs: list[tuple[str, Path]]) -> str:
    rows = [(label, stage_rates(path)) for label, path in runs]
    stages = next((list(r) for _, r in rows if r), [])
    lines = ["| run | " + " | ".join(stages) + " |", "|---|" + "---|" * len(stages)]
    for label, rates in rows:
        cells = [f"{rates[s]['passed']}/{rates[s]['labelled']}" if rates and rates[s]["labelled"] else "-"
                 for s in stages]
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def headroom_table(results: list[dict]) -> str:
    head = ["system", "oracle", "turns", "accuracy plain -> oracle", "difference [95%]",
            "truthfulness plain -> oracle", "difference [95%]", "fixed", "broken"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in results:
        if r.get("refused"):
            lines.append(f"| {r['system']} | {r['oracle']} | {r['refused']} |")
            continue
        cells = [r["system"], r["oracle"], str(r["turns"])]
        for name, _ in SCORES:
            s = r["scores"][name]
            low, high = s["interval"]
            cells += [f"{s['a']:.3f} -> {s['b']:.3f}", f"{s['difference']:+.3f} [{low:+.3f}, {high:+.3f}]"]
        cells += [str(r["fixed"]), str(r["broken"])]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def run_system(args, system: Entry) -> tuple[Path, list[Path]]:
    """The plain run and the oracle runs of one system, one after another."""
    folder = Path(args.output_dir) / folder_name(system.key)
    options = dict(dataset=str(args.dataset), split=args.split, set=(*system.settings, *args.set))
    plain = run_once(run_settings(args, "single-turn", system.preset, folder / "plain", **options))
    oracles = [run_once(run_settings(args, "single-turn", system.preset, folder / stage, oracle=stage, **options))
               for stage in args.oracles]
    return plain, oracles


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_run_flags(parser)
    parser.add_argument("--systems", nargs="+", default=list(DEFAULT_SYSTEMS), metavar="PRESET|SYSTEM[@PRESET]",
                        help="presets, or systems by name (registered, installed, MODULE:NAME)")
    parser.add_argument("--oracles", nargs="+", default=list(ORACLE_STAGES), choices=list(ORACLE_STAGES))
    parser.add_argument("--dataset", type=Path, default=DEFAULT_DATASET, help="a stage-labelled dataset")
    parser.add_argument("--split", default="test")
    parser.add_argument("--set", action="append", default=[], metavar="FIELD=VALUE", help="handed to every run")
    parser.add_argument("--output-dir", type=Path, default=REPO_ROOT / "outputs" / "oracle-headroom")
    parser.add_argument("--compare", nargs="+", type=Path, metavar="RUN",
                        help="compare finished runs only: the plain run, then its oracle runs")
    args = parser.parse_args(argv)
    if args.compare:
        plain, *oracles = args.compare
        run = load_run(plain)
        preset = run.summary.get("preset") or run.record.preset or "?"
        systems = [(f"{system_name(run.record, run.summary)} ({preset})", plain, oracles)]
        out_dir = None
    else:
        systems = [(system.label, *run_system(args, system)) for system in map(entry, args.systems)]
        out_dir = Path(args.output_dir)
    results, runs = [], []
    for system, plain, oracles in systems:
        runs += [(f"{system} plain", plain)] + [(f"{system} {load_run(o).record.oracle}", o) for o in oracles]
        results += [{"system": system, **headroom(plain, o)} for o in oracles]
    text = ("Stages against the human labels (passed / labelled turns):\n\n" + stage_table(runs)
            + "\n\nEach oracle against its plain run (paired over the same turns):\n\n" + headroom_table(results))
    print(text)
    if out_dir:
        (out_dir / "headroom.md").write_text(text + "\n")
        listed = [[label, str(path)] for label, path in runs]
        (out_dir / "headroom.json").write_text(json.dumps({"results": results, "runs": listed}, indent=2))
        print(f"\nwritten to {out_dir / 'headroom.md'} and headroom.json")


if __name__ == "__main__":
    main()

"""tools/compare_systems.py takes any system: a preset, or a system by name (registered, an
installed entry point, MODULE:NAME) with the preset beside it; its tables name each run by its
system; a paired row reads "system minus baseline" on the same turns. (The comparison run end to
end: tests/full/test_compare_systems.py.)

The paired rows are read off two real run folders: local_evaluation.py in this process, with an
agent that answers from a table (testkit/answer_table.py), scored by exact match, over seven
one-turn conversations whose outcomes differ between the two runs in ways set by hand."""
from __future__ import annotations

import contextlib
import datetime
import io
import json
import os
import platform
import re
import shutil
from pathlib import Path
from unittest import mock

import pytest

import local_evaluation
from agents.base_agent import IDK_ANSWER
from agents.runtime.system import Decision, Stage, System, View
from evaluator.report import html
from testkit import answer_table
from testkit.in_process import fresh_environment, offline_env
from tools import compare_systems
from tools.compare_systems import DOC_END, DOC_START, main, paired_row, parse_args, run_row, tables, write_doc
from tools.runs import Entry, entry, folder_name

GATE = System(name="keyword_gate", stages=(Stage("kwgate_look"),), run=lambda *a: ([], []),
              decide=lambda trace, cfg: Decision(IDK_ANSWER, "none"), view=View(funnel=lambda t, c: {}))


def test_a_system_is_named_by_its_name_or_by_a_preset(registered_systems):
    registered_systems(GATE)
    assert parse_args(["--systems", "keyword_gate", "full"]).systems == ["keyword_gate", "full"]
    assert entry("qa_dragon") == Entry("qa_dragon", "qa_dragon", "qa_dragon")
    assert entry("no_cov") == Entry("no_cov", "cruise", "no_cov")
    gate = entry("keyword_gate")
    assert (gate.system, gate.preset, gate.settings, gate.label) == ("keyword_gate", "full", ("system=keyword_gate",),
                                                                     "keyword_gate (full)")
    assert entry("keyword_gate@no_cov").label == "keyword_gate (no_cov)"
    assert folder_name("my_pkg.system:gate@no_cov") == "my_pkg.system_gate@no_cov"


def test_an_unknown_system_or_preset_is_refused_with_the_closest_names(registered_systems):
    registered_systems(GATE)
    with pytest.raises(SystemExit, match=r"^--systems keyword_gat: not a preset .*did you mean 'keyword_gate'\?$"):
        entry("keyword_gat")
    with pytest.raises(SystemExit, match=r"^--systems keyword_gate@no_covv: unknown preset 'no_covv'"):
        entry("keyword_gate@no_covv")




# turn -> (its outcome under the baseline, under the system); each conversation is one turn
OUTCOMES = {"s0-0": ("correct", "hallucinated"), "s1-0": ("missed", "correct"), "s2-0": ("missed", "correct"),
            "s3-0": ("hallucinated", "missed"), "s4-0": ("correct", "correct"), "s5-0": ("missed", "missed"),
            "s6-0": ("hallucinated", "correct")}
# baseline: 2 correct, 3 missed, 2 hallucinated; system: 4 correct, 2 missed, 1 hallucinated


def answer_for(turn: str, outcome: str) -> str:
    return {"correct": f"gold {turn}", "missed": answer_table.IDK, "hallucinated": f"not the gold of {turn}"}[outcome]


@pytest.fixture(scope="module")
def baseline_and_system(tmp_path_factory):
    root = tmp_path_factory.mktemp("paired")
    dataset = answer_table.build(root / "dataset", answer_table.conversations(7, 1))
    runs = {}
    for side, name in enumerate(("baseline", "system")):
        table = answer_table.write_table(root / f"{name}.json", {
            f"question {turn}": answer_for(turn, outcomes[side]) for turn, outcomes in OUTCOMES.items()})
        runs[name] = root / name
        done = answer_table.run(local_evaluation.main, dataset, table, runs[name], "--dataset-type", "single-turn",
                                env=offline_env(root))
        assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    return runs


def test_a_paired_row_gives_each_score_as_system_minus_baseline_with_its_interval_around_it(baseline_and_system):
    row = paired_row(entry("qa_dragon"), baseline_and_system["baseline"], baseline_and_system["system"])
    differences = row["differences"]
    expected = {"accuracy": (2 / 7, 4 / 7), "hallucination_rate": (2 / 7, 1 / 7), "truthfulness_score": (0.0, 3 / 7)}
    for key, (baseline, system) in expected.items():
        found = differences[key]
        assert (found["a"], found["b"]) == (pytest.approx(baseline), pytest.approx(system)), key
        assert found["difference"] == pytest.approx(system - baseline), key
        low, high = found["interval"]
        assert low <= found["difference"] <= high, key


def test_a_paired_row_counts_each_turns_flip_from_its_baseline_outcome_to_its_system_outcome(baseline_and_system):
    row = paired_row(entry("qa_dragon"), baseline_and_system["baseline"], baseline_and_system["system"])
    assert row["flips"] == {"correct->hallucinated": 1, "missed->correct": 2, "hallucinated->missed": 1,
                            "hallucinated->correct": 1}
    assert row["unchanged"] == 2 and row["label"] == "qa_dragon (qa_dragon)"


def test_the_tables_give_each_run_its_counts_and_each_paired_row_signed_differences_and_its_flips(baseline_and_system):
    runs = baseline_and_system
    base, system = entry("full"), entry("qa_dragon")
    rows = [run_row(base, runs["baseline"]), run_row(system, runs["system"])]
    text = tables({"single-turn": {"rows": rows, "pairs": [paired_row(system, runs["baseline"], runs["system"])]}})
    lines = text.splitlines()
    assert lines[0] == "**single-turn** (7 turns)"
    assert lines[4].startswith("| `cruise (full)` | 2 / 3 / 2 | 0.286 [")
    assert lines[5].startswith("| `qa_dragon (qa_dragon)` | 4 / 2 / 1 | 0.571 [")
    assert lines[7] == ("Paired with `cruise (full)` on the same turns (difference = system - cruise (full), paired "
                        "bootstrap 95% interval; flips: outcome under cruise (full) -> outcome under the system):")
    pair = lines[11]
    cells = [cell.strip() for cell in pair.strip("|").split(" | ")]
    assert cells[0] == "`qa_dragon (qa_dragon)`"
    for cell, value in zip(cells[1:4], ("+0.286", "-0.143", "+0.429")):
        assert re.fullmatch(rf"{re.escape(value)} \[-?\d\.\d{{3}}, -?\d\.\d{{3}}\]", cell), cell
    assert cells[4] == ("missed->correct 2, correct->hallucinated 1, hallucinated->missed 1, hallucinated->correct 1 "
                        "(2 unchanged)")


# ---------------------------------------------------------------- the whole tool, in process
@pytest.fixture(scope="module")
def compared(tmp_path_factory):
    """`python -m tools.compare_systems` in this process, at its smallest: CRUISE (`full`,
    calibrated on its own traces of shard 0/2) and rag_baseline over the first two single-turn
    conversations of the cpu profile's mini benchmark, through evaluator.evaluate with the real
    chain on engines that answer at once (testkit.fakes:InstantCruiseAgent), then again over
    the same folder (every run and the calibration reused). report.html is not built."""
    root = tmp_path_factory.mktemp("compared")
    doc = root / "benchmarks.md"
    doc.write_text(f"# Benchmarks\n\nbefore\n{DOC_START}\nold figures\n{DOC_END}\nafter\n")
    out = root / "out"
    argv = ["--agent", "testkit.fakes:InstantCruiseAgent", "--search", "none", "--num-conversations", "2",
            "--systems", "rag_baseline", "--datasets", "single-turn", "--output-dir", str(out), "--write-doc", str(doc)]
    printed = []
    with fresh_environment(offline_env(root)), mock.patch.object(html, "build_report", lambda d: Path(d) / "x"):
        for _ in range(2):
            with contextlib.redirect_stdout(io.StringIO()) as stdout:
                assert main(argv) == 0
            printed.append(stdout.getvalue())
    return out, doc, printed


def test_the_tool_calibrates_the_baseline_runs_each_system_and_writes_its_tables(compared):
    out, doc, printed = compared
    assert sorted(p.name for p in out.iterdir()) == ["calibration-full.json", "calibration-traces", "runs",
                                                     "systems.json", "systems.md"]
    calibration = json.loads((out / "calibration-full.json").read_text())
    assert [Path(run).parent.name for run in calibration["runs"]] == ["full"]  # rag_baseline has no thresholds
    text = (out / "systems.md").read_text()
    lines = text.splitlines()
    assert lines[0].startswith("Date: runs made ") and " UTC to " in lines[0] and "CPU cores" in lines[0]
    assert lines[1] == ("Command: `python -m tools.compare_systems --agent testkit.fakes:InstantCruiseAgent --search "
                        f"none --num-conversations 2 --systems rag_baseline --datasets single-turn --output-dir {out} "
                        f"--write-doc {doc}`.")
    assert lines[2] == ("Judge: offline lexical judge (not the official judge). A turn's outcome is one of: correct, "
                        "missed, hallucinated.")
    assert lines[3] == "Calibration (each system on its own traces of shard 0/2, `python -m tools.calibrate`):"
    assert lines[4] == f"- `full`: {calibration['verdict']}: " + ", ".join(
        f"{k}={v}" for k, v in calibration["settings"].items())
    assert lines[5] == "Held-out half: the conversations with index % 2 == 1, which calibration never saw."
    assert lines[6] == ""
    # the span: the first run's start (its run_config.json, calibration's own runs included) to
    # the last run's end (its scores_dictionary.json), in UTC
    runs = [Path(run) for run in calibration["runs"]] + [out / "runs" / "single-turn" / s for s in ("full", "rag_baseline")]
    stamp = lambda path: datetime.datetime.fromtimestamp(path.stat().st_mtime, datetime.timezone.utc).strftime(  # noqa: E731
        "%Y-%m-%d %H:%M UTC")
    first = min((r / "run_config.json" for r in runs), key=lambda f: f.stat().st_mtime)
    last = max((r / "scores_dictionary.json" for r in runs), key=lambda f: f.stat().st_mtime)
    assert lines[0].startswith(f"Date: runs made {stamp(first)} to {stamp(last)}. Machine: ")
    # calibration's traces: shard 0/2 (the half the held-out scores leave out), every turn answered
    for run in map(Path, calibration["runs"]):
        recorded = json.loads((run / "run_config.json").read_text())
        assert recorded["shard"] == "0/2" and recorded["preset"] == "full"
        assert "skip_decided_turns=false" in recorded["args"]["set"]
    assert "| `cruise (full)` | 0 / 2 / 0 | 0.000 [0.000, 0.000] |" in text
    assert ("| `cruise (rag_baseline)` | +0.000 [0.000, 0.000] | +1.000 [1.000, 1.000] | -1.000 [-1.000, -1.000] | "
            "missed->hallucinated 2 (0 unchanged) |") in text
    assert (out / "systems.json").read_text().startswith('{\n "calibrations": {\n  "full": ')
    results = json.loads((out / "systems.json").read_text())
    assert results["calibrations"] == {"full": str(out / "calibration-full.json")}
    assert [r["system"] for r in results["results"]["single-turn"]["rows"]] == ["full", "rag_baseline"]
    for system in ("full", "rag_baseline"):
        config = json.loads((out / "runs" / "single-turn" / system / "run_config.json").read_text())
        assert config["preset"] == system
        assert config["args"]["calibration"] == (str(out / "calibration-full.json") if system == "full" else None)
    assert doc.read_text() == f"# Benchmarks\n\nbefore\n{DOC_START}\n{text.rstrip()}\n{DOC_END}\nafter\n"
    assert printed[0].endswith(f"wrote {out / 'systems.md'} and {out / 'systems.json'}; filled {doc}\n")


def test_a_second_comparison_in_the_same_folder_reuses_its_calibration_and_runs(compared):
    out, _, printed = compared
    assert f"reusing {out / 'calibration-full.json'}\n" in printed[1]
    for system in ("full", "rag_baseline"):
        assert f"reusing {out / 'runs' / 'single-turn' / system}\n" in printed[1]
    assert "$ " not in printed[1]  # no run started


def test_a_document_without_the_markers_is_refused_and_left_as_it_was(tmp_path):
    doc = tmp_path / "plain.md"
    doc.write_text("# Benchmarks\n")
    with pytest.raises(SystemExit, match=rf"^{re.escape(str(doc))}: no {DOC_START} \.\.\. {DOC_END} block to fill$"):
        write_doc(doc, "table")
    assert doc.read_text() == "# Benchmarks\n"


# ---------------------------------------------------------------- main's wiring, with the runs faked
START = datetime.datetime(2026, 3, 4, 5, 0, tzinfo=datetime.timezone.utc).timestamp()


# `run_once` and `calibrate_on` (tools/runs.py) are what main calls, not what it is: faked here,
# each run's folder is a copy of one of the two real runs above, so that main's own work
# (which systems are calibrated, what each run is handed, the tables, the files) is tested on
# its own, without running the chain once per mutant.
@pytest.fixture
def faked_main(baseline_and_system, tmp_path, monkeypatch, registered_systems):
    registered_systems(GATE)
    runs, calibrated_on = [], []

    def run_once(settings):
        runs.append(settings)
        target = Path(settings.output_dir)
        if settings.shard:  # calibration's traces: a run's config alone, read by the faked calibrate_on
            target.mkdir(parents=True)
            (target / "run_config.json").write_text("{}")
        else:
            shutil.copytree(baseline_and_system["baseline" if target.name == "full" else "system"], target)
        # the n-th run started at minute n past START and ended 30 s later
        os.utime(target / "run_config.json", (START + 60 * len(runs),) * 2)
        if not settings.shard:
            os.utime(target / "scores_dictionary.json", (START + 60 * len(runs) + 30,) * 2)
        return target

    def calibrate_on(trace_dirs, target):
        calibrated_on.append((list(trace_dirs), target))
        target.write_text(json.dumps({"verdict": f"fitted on {len(trace_dirs)}", "settings": {"tau": len(calibrated_on)},
                                      "runs": [str(d) for d in trace_dirs]}))
        return target

    monkeypatch.setattr(compare_systems, "run_once", run_once)
    monkeypatch.setattr(compare_systems, "calibrate_on", calibrate_on)
    monkeypatch.setattr(compare_systems, "REPO_ROOT", tmp_path)

    def call(*argv):
        with contextlib.redirect_stdout(io.StringIO()) as stdout:
            assert main(list(argv)) == 0
        return stdout.getvalue()

    return call, runs, calibrated_on


def test_main_calibrates_each_preset_with_thresholds_on_its_half_and_hands_each_run_its_own_calibration(faked_main, tmp_path):
    call, runs, calibrated_on = faked_main
    out = tmp_path / "cmp"
    call("--systems", "qa_dragon", "keyword_gate", "rag_baseline", "full", "--datasets", "single-turn", "multi-turn",
         "--num-conversations", "3", "--output-dir", str(out))
    # calibration first: full and qa_dragon have thresholds; keyword_gate (a system by name) and
    # rag_baseline (no finalizer) have none; `full` is named once though given twice
    traces = out / "calibration-traces"
    assert calibrated_on == [([traces / "full" / "single-turn", traces / "full" / "multi-turn"], out / "calibration-full.json"),
                             ([traces / "qa_dragon" / "single-turn", traces / "qa_dragon" / "multi-turn"],
                              out / "calibration-qa_dragon.json")]
    # every turn answered where the system skips decided turns (CRUISE; QA-Dragon has no such setting)
    assert [s.set for s in runs[:4]] == [("skip_decided_turns=false",)] * 2 + [()] * 2
    for settings in runs[:4]:
        assert settings.shard == "0/2" and settings.calibration is None and settings.num_conversations == 3 and settings.exact_conversations
    assert [(s.preset, s.dataset_type) for s in runs[:4]] == [("full", "single-turn"), ("full", "multi-turn"),
                                                              ("qa_dragon", "single-turn"), ("qa_dragon", "multi-turn")]
    # then every system on every dataset, the baseline first, each with its own calibration
    systems = ["full", "qa_dragon", "keyword_gate", "rag_baseline"]
    assert [(Path(s.output_dir).parent.name, Path(s.output_dir).name) for s in runs[4:]] == [
        (dataset, system) for dataset in ("single-turn", "multi-turn") for system in systems]
    calibration = {"full": str(out / "calibration-full.json"), "qa_dragon": str(out / "calibration-qa_dragon.json"),
                   "keyword_gate": None, "rag_baseline": None}
    assert [(s.preset, s.calibration, s.set, s.shard) for s in runs[4:8]] == [
        ("full", calibration["full"], (), None), ("qa_dragon", calibration["qa_dragon"], (), None),
        ("full", None, ("system=keyword_gate",), None), ("rag_baseline", None, (), None)]
    assert all(s.num_conversations == 3 and s.profile == "cpu" for s in runs[4:])


def test_main_writes_a_table_per_dataset_pairing_each_system_with_the_baseline_in_both_files(faked_main, tmp_path):
    call, _, _ = faked_main
    out = tmp_path / "cmp"
    doc = tmp_path / "benchmarks.md"
    doc.write_text(f"# Benchmarks\n\nbefore\n{DOC_START}\nold figures\n{DOC_END}\nafter\n")
    printed = call("--systems", "qa_dragon", "keyword_gate", "--datasets", "multi-turn", "single-turn",
                   "--output-dir", str(out), "--write-doc", str(doc))
    text = (out / "systems.md").read_text()
    assert printed == f"\n{text}\nwrote {out / 'systems.md'} and {out / 'systems.json'}; filled {doc}\n"
    assert doc.read_text() == f"# Benchmarks\n\nbefore\n{DOC_START}\n{text.rstrip()}\n{DOC_END}\nafter\n"
    lines = text.splitlines()
    # 4 calibration runs, then 6 runs: the first calibration run's start to the last run's end
    assert lines[0] == (f"Date: runs made 2026-03-04 05:01 UTC to 2026-03-04 05:10 UTC. Machine: {platform.machine()}, "
                        f"{os.cpu_count()} CPU cores, {platform.platform()}.")
    assert lines[1] == (f"Command: `python -m tools.compare_systems --systems qa_dragon keyword_gate --datasets "
                        f"multi-turn single-turn --output-dir {out} --write-doc {doc}`.")
    assert lines[2:4] == ["Judge: disabled. A turn's outcome is one of: correct, missed, "
                          "hallucinated.", "Calibration (each system on its own traces of shard 0/2, `python -m "
                          "tools.calibrate`):"]
    assert lines[4:8] == ["- `full`: fitted on 2: tau=1", "- `qa_dragon`: fitted on 2: tau=2",
                          "Held-out half: the conversations with index % 2 == 1, which calibration never saw.", ""]
    assert lines[8] == "**multi-turn** (7 turns)"
    saved = json.loads((out / "systems.json").read_text())
    assert saved["calibrations"] == {"full": str(out / "calibration-full.json"),
                                     "qa_dragon": str(out / "calibration-qa_dragon.json")}
    assert list(saved["results"]) == ["multi-turn", "single-turn"]
    for dataset, found in saved["results"].items():
        assert [(r["system"], r["label"], r["run_dir"]) for r in found["rows"]] == [
            (s, label, str(out / "runs" / dataset / s)) for s, label in
            (("full", "cruise (full)"), ("qa_dragon", "qa_dragon (qa_dragon)"), ("keyword_gate", "keyword_gate (full)"))]
        # the baseline's copy against the system's: the flips of the hand-set outcomes, system - baseline
        assert [p["system"] for p in found["pairs"]] == ["qa_dragon", "keyword_gate"]
        for pair in found["pairs"]:
            assert pair["flips"] == {"correct->hallucinated": 1, "missed->correct": 2, "hallucinated->missed": 1,
                                     "hallucinated->correct": 1}
            assert pair["differences"]["accuracy"]["difference"] == pytest.approx(2 / 7)
    assert text.index("**multi-turn** (7 turns)") < text.index("**single-turn** (7 turns)")
    assert text.count("| `keyword_gate (full)` | +0.286 [") == 2


def test_main_writes_to_a_new_timestamped_folder_under_outputs_when_none_is_given(faked_main, tmp_path):
    call, runs, _ = faked_main
    call("--systems", "rag_baseline", "--datasets", "single-turn")
    made = list((tmp_path / "outputs").iterdir())
    assert len(made) == 1 and re.fullmatch(r"systems-\d{8}-\d{6}", made[0].name)
    assert sorted(p.name for p in made[0].iterdir()) == ["calibration-full.json", "calibration-traces", "runs",
                                                          "systems.json", "systems.md"]
    assert Path(runs[-1].output_dir) == made[0] / "runs" / "single-turn" / "rag_baseline"


def test_the_tools_defaults_and_help_name_the_three_systems_the_datasets_and_the_documents_markers(capsys):
    args = parse_args([])
    assert (args.systems, args.datasets, args.output_dir, args.write_doc, args.profile) == (
        ["full", "qa_dragon", "sam_rag", "rag_baseline"], ["single-turn", "multi-turn"], None, None, "cpu")
    with pytest.raises(SystemExit) as done:
        parse_args(["--help"])
    shown = "".join(capsys.readouterr().out.split())  # argparse wraps lines, at hyphens too
    assert done.value.code == 0 and shown.startswith("usage:python-mtools.compare_systems")
    for text in ("--systems PRESET|SYSTEM[@PRESET] [PRESET|SYSTEM[@PRESET] ...]", "systems by name (registered, "
                 "installed, MODULE:NAME) to compare; the first table pairs each with full",
                 "--datasets {single-turn,multi-turn} [{single-turn,multi-turn} ...]",
                 "default: outputs/systems-<timestamp>", "--write-doc FILE",
                 f"also write the tables between {DOC_START} and {DOC_END} in FILE",
                 "1. Each system that has verifiers with thresholds"):  # the module's text, as written
        assert "".join(text.split()) in shown, text

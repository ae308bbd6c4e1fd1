"""tools/oracle_headroom.py's reading of an oracle run against its plain run (`headroom`) and the
runs it asks for (`run_system`). The two runs are real run folders: local_evaluation.py in this
process with an agent that answers from a table (testkit/answer_table.py), scored by exact match,
over five one-turn conversations whose outcomes differ between the runs as set by hand. The
whole tool over the diagnostics set: tests/test_diagnostics.py."""
from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

import local_evaluation
from testkit import answer_table
from testkit.in_process import offline_env
from tools import oracle_headroom
from tools.runs import entry

# turn -> (outcome of the plain run, of the oracle run)
OUTCOMES = {"s0-0": ("correct", "correct"), "s1-0": ("missed", "correct"), "s2-0": ("hallucinated", "correct"),
            "s3-0": ("correct", "missed"), "s4-0": ("missed", "missed")}


@pytest.fixture(scope="module")
def plain_and_oracle(tmp_path_factory):
    root = tmp_path_factory.mktemp("oracle")
    dataset = answer_table.build(root / "dataset", answer_table.conversations(len(OUTCOMES), 1))
    answer = {"correct": "gold {}", "missed": answer_table.IDK, "hallucinated": "not the gold of {}"}
    runs = {}
    for side, name in enumerate(("plain", "entity")):
        table = answer_table.write_table(root / f"{name}.json", {
            f"question {turn}": answer[outcomes[side]].format(turn) for turn, outcomes in OUTCOMES.items()})
        runs[name] = root / name
        done = answer_table.run(local_evaluation.main, dataset, table, runs[name], "--dataset-type", "single-turn",
                                env=offline_env(root))
        assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    # the oracle run's record names its oracle, as `--oracle entity` records it
    config = runs["entity"] / "run_config.json"
    config.write_text(json.dumps({**json.loads(config.read_text()), "oracle": "entity"}))
    return runs


def test_an_oracle_runs_headroom_counts_the_turns_it_fixed_and_broke_against_its_plain_run(plain_and_oracle):
    found = oracle_headroom.headroom(plain_and_oracle["plain"], plain_and_oracle["entity"])
    assert (found["plain"], found["oracle_run"], found["oracle"]) == (
        str(plain_and_oracle["plain"]), str(plain_and_oracle["entity"]), "entity")
    assert found["refused"] is None and found["turns"] == 5
    assert (found["fixed"], found["broken"]) == (2, 1)  # missed->correct, hallucinated->correct; correct->missed
    accuracy = found["scores"]["accuracy"]
    assert (accuracy["a"], accuracy["b"]) == (pytest.approx(2 / 5), pytest.approx(3 / 5))
    assert accuracy["difference"] == pytest.approx(1 / 5)
    # truthfulness = accuracy - hallucination: 2/5 - 1/5 against 3/5 - 0
    assert found["scores"]["truthfulness"]["difference"] == pytest.approx(3 / 5 - 1 / 5)
    assert list(found["scores"]) == ["accuracy", "truthfulness"]


def test_a_system_runs_plain_then_each_oracle_in_its_own_folder_with_its_settings(tmp_path, monkeypatch):
    asked = []
    monkeypatch.setattr(oracle_headroom, "run_once", lambda settings: asked.append(settings) or Path(settings.output_dir))
    args = argparse.Namespace(output_dir=str(tmp_path), dataset=Path("data/diag"), split="test", set=["tau_ret=0.5"],
                              oracles=["region", "entity"], profile="cpu", agent="a:B", search="none",
                              dataset_root=None, num_conversations=None)
    plain, oracles = oracle_headroom.run_system(args, entry("qa_dragon"))
    assert plain == tmp_path / "qa_dragon" / "plain" and oracles == [tmp_path / "qa_dragon" / s for s in ("region", "entity")]
    assert [(s.preset, s.oracle, s.dataset, s.split, s.set, s.dataset_type) for s in asked] == [
        ("qa_dragon", oracle, "data/diag", "test", ("tau_ret=0.5",), "single-turn") for oracle in (None, "region", "entity")]


def test_the_tool_runs_each_system_plain_and_under_each_oracle_and_writes_the_headroom_table(
        plain_and_oracle, tmp_path, monkeypatch, capsys):
    """main over faked runs (tools/runs.py `run_once` is what it calls): the plain run is a copy of
    the plain run above, each oracle run a copy of the oracle run, recorded under its oracle."""
    import shutil

    def run_once(settings):
        target = Path(settings.output_dir)
        shutil.copytree(plain_and_oracle["entity" if settings.oracle else "plain"], target)
        config = target / "run_config.json"
        config.write_text(json.dumps({**json.loads(config.read_text()), "oracle": settings.oracle}))
        return target

    monkeypatch.setattr(oracle_headroom, "run_once", run_once)
    out = tmp_path / "headroom"
    oracle_headroom.main(["--systems", "qa_dragon", "--oracles", "region", "entity", "--output-dir", str(out),
                          "--dataset", "data/diag"])
    text = (out / "headroom.md").read_text()
    assert capsys.readouterr().out == f"{text}\nwritten to {out / 'headroom.md'} and headroom.json\n"
    table = text.split("Each oracle against its plain run (paired over the same turns):\n\n")[1].splitlines()
    assert table[0] == ("| system | oracle | turns | accuracy plain -> oracle | difference [95%] | truthfulness plain "
                        "-> oracle | difference [95%] | fixed | broken |")
    for line, oracle in zip(table[2:], ("region", "entity")):
        cells = [c.strip() for c in line.strip("|").split("|")]
        assert cells[:4] == ["qa_dragon (qa_dragon)", oracle, "5", "0.400 -> 0.600"]
        assert cells[4].startswith("+0.200 [") and cells[5] == "0.200 -> 0.600" and cells[7:] == ["2", "1"]
    saved = json.loads((out / "headroom.json").read_text())
    assert [label for label, _ in saved["runs"]] == ["qa_dragon (qa_dragon) plain", "qa_dragon (qa_dragon) region",
                                                     "qa_dragon (qa_dragon) entity"]
    assert [(r["system"], r["oracle"], r["fixed"], r["broken"]) for r in saved["results"]] == [
        ("qa_dragon (qa_dragon)", "region", 2, 1), ("qa_dragon (qa_dragon)", "entity", 2, 1)]
    assert text.startswith("Stages against the human labels (passed / labelled turns):\n\n| run |")


def test_finished_runs_are_compared_without_running_or_writing_anything(plain_and_oracle, tmp_path, capsys):
    oracle_headroom.main(["--compare", str(plain_and_oracle["plain"]), str(plain_and_oracle["entity"]),
                          "--output-dir", str(tmp_path / "unused")])
    printed = capsys.readouterr().out
    # the system is named from the plain run's record: its agent class, under the preset it recorded
    assert "| AnswerTableAgent (full) | entity | 5 | 0.400 -> 0.600 | +0.200 [" in printed
    assert "written to" not in printed and not (tmp_path / "unused").exists()


def test_by_default_the_three_systems_run_under_every_oracle_on_the_test_split_of_the_labelled_set(
        plain_and_oracle, tmp_path, monkeypatch, capsys):
    from evaluator.settings import ORACLE_STAGES

    given = []

    def run_system(args, system):
        given.append((system.key, args))
        return plain_and_oracle["plain"], [plain_and_oracle["entity"]]

    monkeypatch.setattr(oracle_headroom, "run_system", run_system)
    oracle_headroom.main(["--output-dir", str(tmp_path)])
    assert [key for key, _ in given] == ["full", "qa_dragon", "sam_rag"]
    args = given[0][1]
    assert (args.oracles, args.dataset, args.split, args.set, args.compare) == (
        list(ORACLE_STAGES), oracle_headroom.DEFAULT_DATASET, "test", [], None)
    assert oracle_headroom.DEFAULT_DATASET == oracle_headroom.REPO_ROOT / "data" / "crag-mm-mini" / "diagnostics"
    capsys.readouterr()
    with pytest.raises(SystemExit) as done:
        oracle_headroom.main(["--help"])
    shown = " ".join(capsys.readouterr().out.split())
    assert done.value.code == 0 and shown.startswith("usage: ")
    for text in ("--systems PRESET|SYSTEM[@PRESET] [PRESET|SYSTEM[@PRESET] ...]",
                 "presets, or systems by name (registered, installed, MODULE:NAME)", "a stage-labelled dataset",
                 "--set FIELD=VALUE", "handed to every run", "--compare RUN [RUN ...]",
                 "compare finished runs only: the plain run, then its oracle runs",
                 oracle_headroom.__doc__.splitlines()[0]):
        assert text in shown, text

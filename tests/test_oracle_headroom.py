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

"""tools/ablation.py end to end over the real chain with engines that answer at once
(testkit.fakes:InstantCruiseAgent), on the first 4 conversations of each mini benchmark split."""
from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

from agents.profiles import REPO_ROOT
from testkit.in_process import fresh_environment, offline_env
from tools.ablation import conversation_indices, main

AGENT = ["--agent", "testkit.fakes:InstantCruiseAgent", "--search", "none", "--num-conversations", "4"]
PRESETS = ["vision_only", "full"]


@pytest.fixture(scope="module")
def clean_env(tmp_path_factory):
    root = tmp_path_factory.mktemp("ablation")
    with fresh_environment(offline_env(root)):
        yield root


@pytest.fixture(scope="module")
def ablation(clean_env):
    out = clean_env / "out"
    assert main([*AGENT, "--presets", *PRESETS, "--output-dir", str(out)]) == 0
    return out


def same(a: float, b: float) -> bool:
    return (math.isnan(a) and math.isnan(b)) or a == pytest.approx(b)


def test_calibration_sees_only_shard_zero_and_every_run_uses_its_file(ablation):
    calibration = json.loads((ablation / "calibration.json").read_text())
    assert sorted(Path(r).name for r in calibration["runs"]) == ["multi-turn", "single-turn"]
    assert calibration["judge"] == "offline lexical judge (not the official judge)"
    for run in calibration["runs"]:
        index = conversation_indices(Path(run))
        traced = {json.loads(line)["session_id"] for line in (Path(run) / "traces.jsonl").read_text().splitlines()}
        assert traced and all(index[s] % 2 == 0 for s in traced)
    for dataset in ("single-turn", "multi-turn"):
        for preset in PRESETS:
            config = json.loads((ablation / "runs" / dataset / preset / "run_config.json").read_text())
            assert config["preset"] == preset and config["shard"] is None
            assert Path(config["args"]["calibration"]) == ablation / "calibration.json"


def test_the_table_scores_the_whole_as_the_evaluator_and_the_half_as_a_shard_run(ablation, clean_env):
    results = json.loads((ablation / "ablation.json").read_text())["results"]
    assert [(r["dataset"], r["preset"]) for r in results] == [
        (d, p) for d in ("single-turn", "multi-turn") for p in PRESETS]
    table = (ablation / "ablation.md").read_text()
    assert "offline lexical judge (not the official judge)" in table and "python -m tools.ablation" in table
    for result in results:
        assert f"| {result['preset']} | {result['dataset']} |" in table
        official = json.loads((Path(result["run_dir"]) / "scores_dictionary.json").read_text())["all"]
        assert all(same(result["whole"][k], official[k]) for k in official)
        assert 0 < result["held_out"]["total"] < result["whole"]["total"]
    # the held-out half of the full preset's multi-turn run equals a run of shard 1/2 alone
    full = next(r for r in results if r["preset"] == "full" and r["dataset"] == "multi-turn")
    shard_out = clean_env / "shard1"
    subprocess.run([sys.executable, "local_evaluation.py", "--dataset-type", "multi-turn", "--profile", "cpu",
                    "--preset", "full", *AGENT[:4], "--num-conversations", "4", "--exact-conversations",
                    "--shard", "1/2", "--calibration", str(ablation / "calibration.json"),
                    "--output-dir", str(shard_out), "--no_progress"], cwd=REPO_ROOT, check=True,
                   capture_output=True)
    shard_scores = json.loads((shard_out / "scores_dictionary.json").read_text())["all"]
    assert all(same(full["held_out"][k], shard_scores[k]) for k in shard_scores)


def test_a_given_calibration_skips_the_calibration_runs(ablation, clean_env):
    out = clean_env / "given"
    assert main([*AGENT, "--presets", "vision_only", "--datasets", "single-turn", "--output-dir", str(out),
                 "--calibration", str(ablation / "calibration.json")]) == 0
    assert not (out / "calibration-traces").exists() and not (out / "calibration.json").exists()
    assert (out / "runs" / "single-turn" / "vision_only" / "scores_dictionary.json").exists()

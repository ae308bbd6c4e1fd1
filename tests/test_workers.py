"""What `local_evaluation.py --workers N` hands each shard: its arguments, its GPUs and its
environment. The runs on a local Ray: tests/full/test_workers.py."""
from __future__ import annotations

import os

import pytest

from agents.profiles import REPO_ROOT
from evaluator.workers import (
    DRIVER_FLAGS,
    JUDGE_FLAGS,
    gpus_per_worker,
    shard_command,
    shard_env,
    split_flags,
)


def test_a_shard_gets_the_runs_arguments_without_the_drivers_and_the_judges(tmp_path):
    run = ["--dataset-type", "multi-turn", "--workers", "2", "--ray=auto", "--set", "k_recall=7",
           "--output-dir", "out", "--eval-model", "gpt-4o", "--rules", "crag-mm", "--no_progress", "--resume"]
    judge, rest = split_flags(run, JUDGE_FLAGS)
    assert judge == ["--eval-model", "gpt-4o", "--rules", "crag-mm", "--no_progress"]
    assert split_flags(rest, DRIVER_FLAGS)[1] == ["--dataset-type", "multi-turn", "--set", "k_recall=7"]
    command = shard_command(run, 1, 2, tmp_path / "s")
    assert command[2:] == ["--dataset-type", "multi-turn", "--set", "k_recall=7", "--shard", "1/2",
                           "--output-dir", str(tmp_path / "s"), "--eval-model", "None", "--no_progress",
                           "--display-conversations", "0", "--generate-only"]


def test_gpus_per_worker_follow_the_profile_unless_given():
    assert gpus_per_worker(None, "l40s") == 1.0  # its engines load inside the shard
    assert gpus_per_worker(None, "served") == 0.0  # a client of the model servers
    assert gpus_per_worker(None, "cpu") == 0.0
    assert gpus_per_worker(0.5, "l40s") == 0.5
    with pytest.raises(SystemExit):
        gpus_per_worker(-1, "cpu")


def test_a_shard_never_inherits_the_drivers_device_list():
    driver = {"CUDA_VISIBLE_DEVICES": "0,1", "ROCR_VISIBLE_DEVICES": "0", "CRUISE_TAU_LOW": "0.8",
              "HOME": "/root", "PYTHONPATH": "/x"}
    local, remote = shard_env(driver, remote=False), shard_env(driver, remote=True)
    for env in (local, remote):
        assert "CUDA_VISIBLE_DEVICES" not in env and "ROCR_VISIBLE_DEVICES" not in env
        assert env["CRUISE_TAU_LOW"] == "0.8" and env["PYTHONPATH"].split(os.pathsep) == [str(REPO_ROOT), "/x"]
    assert local["HOME"] == "/root" and "HOME" not in remote  # a remote node keeps its own



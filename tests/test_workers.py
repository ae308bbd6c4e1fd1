"""What `local_evaluation.py --workers N` hands each shard: its arguments, its GPUs and its
environment. The runs on a local Ray: tests/full/test_workers.py."""
from __future__ import annotations

import os

import pytest

from agents.profiles import REPO_ROOT
from evaluator.settings import EvaluationSettings
from evaluator.workers import gpus_per_worker, shard_command, shard_env
from local_evaluation import evaluation_parser


def test_a_shard_gets_the_runs_arguments_without_the_drivers_and_the_judges(tmp_path):
    run = ["--dataset-type", "multi-turn", "--workers", "2", "--ray=auto", "--set", "k_recall=7", "--set", "top_k=3",
           "--output-dir", "out", "--eval-model", "gpt-4o", "--rules", "crag-mm", "--no_progress", "--resume",
           "--web-contents"]
    options = vars(evaluation_parser().parse_args(run))
    options.pop("list_models")
    command = shard_command(EvaluationSettings(**options), 1, 2, tmp_path / "s")
    assert command[2:] == ["--eval-model", "None", "--display-conversations", "0", "--no_progress",
                           "--dataset-type", "multi-turn", "--output-dir", str(tmp_path / "s"),
                           "--set", "k_recall=7", "--set", "top_k=3", "--web-contents", "default",
                           "--generate-only", "--shard", "1/2"]


def test_the_flags_written_for_a_settings_record_read_back_as_the_same_record():
    argv = ["--dataset-type", "multi-turn", "--num-conversations", "4", "--exact-conversations", "--set", "a=1",
            "--set", "b=2", "--web-contents", "me/db", "--gpus-per-worker", "0.5", "--no_progress",
            "--judge-timeout", "2.5", "--rules", "crag-mm", "--suppress-image-search-api"]
    options = vars(evaluation_parser().parse_args(argv))
    options.pop("list_models")
    settings = EvaluationSettings(**options)
    from evaluator.settings import command_line

    again = vars(evaluation_parser().parse_args(command_line(settings)))
    again.pop("list_models")
    assert EvaluationSettings(**again) == settings
    assert command_line(EvaluationSettings()) == []


def test_gpus_per_worker_follow_the_profile_unless_given():
    assert gpus_per_worker(None, "l40s") == 1.0  # its engines load inside the shard
    assert gpus_per_worker(None, "served") == 0.0  # a client of the model servers
    assert gpus_per_worker(None, "cpu") == 0.0
    assert gpus_per_worker(0.5, "l40s") == 0.5
    with pytest.raises(ValueError, match="give 0 or more"):
        gpus_per_worker(-1, "cpu")


def test_a_shard_never_inherits_the_drivers_device_list():
    driver = {"CUDA_VISIBLE_DEVICES": "0,1", "ROCR_VISIBLE_DEVICES": "0", "CRUISE_TAU_LOW": "0.8",
              "HOME": "/root", "PYTHONPATH": "/x"}
    local, remote = shard_env(driver, remote=False), shard_env(driver, remote=True)
    for env in (local, remote):
        assert "CUDA_VISIBLE_DEVICES" not in env and "ROCR_VISIBLE_DEVICES" not in env
        assert env["CRUISE_TAU_LOW"] == "0.8" and env["PYTHONPATH"].split(os.pathsep) == [str(REPO_ROOT), "/x"]
    assert local["HOME"] == "/root" and "HOME" not in remote  # a remote node keeps its own



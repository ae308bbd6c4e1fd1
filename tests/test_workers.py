"""What `local_evaluation.py --workers N` hands each shard: its arguments, its GPUs and its
environment. The runs on a local Ray: tests/full/test_workers.py."""
from __future__ import annotations

import os

import pytest

from agents import hardware
from agents.profiles import REPO_ROOT
from evaluator.commands import EvaluationRefused
from evaluator.harness.resolved import resolve_settings
from evaluator.settings import EvaluationSettings
from evaluator.workers import gpus_per_worker, run_on_ray, shard_command, shard_env, shards_of
from local_evaluation import evaluation_parser
from tools.runs import in_own_process

L40S_CARD = ("NVIDIA L40S", 46068 / 1024)


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


def test_gpus_per_worker_follow_the_runs_profile_unless_given():
    def run(profile):
        return resolve_settings(EvaluationSettings(profile=profile))

    assert gpus_per_worker(None, run("l40s")) == 1.0  # its engines load inside the shard
    assert gpus_per_worker(None, run("served")) == 0.0  # a client of the model servers
    assert gpus_per_worker(None, run("cpu")) == 0.0
    assert gpus_per_worker(0.5, run("l40s")) == 0.5
    with pytest.raises(ValueError, match="give 0 or more"):
        gpus_per_worker(-1, run("cpu"))


@pytest.mark.parametrize("card, profile, gpus", [(L40S_CARD, "l40s", 1.0), (None, "cpu", 0.0)])
def test_the_driver_resolves_auto_once_and_every_shard_runs_that_profile(monkeypatch, tmp_path, card, profile, gpus):
    """--profile auto is worked out by the driver, on its own card: each shard is told the profile
    (a node of a cluster would otherwise pick its own) and asks Ray for that profile's GPUs; a
    tool's run (tools/runs.py) goes to a process of its own on the same rule."""
    monkeypatch.setattr(hardware, "visible_gpu", lambda: card)
    settings, asked = shards_of(EvaluationSettings(profile="auto", workers=2))
    assert (settings.profile, asked) == (profile, gpus)
    command = shard_command(settings, 0, 2, tmp_path / "s")
    assert command[command.index("--profile") + 1] == profile
    assert in_own_process(EvaluationSettings(profile="auto", output_dir=str(tmp_path))) is bool(gpus)


def test_a_flag_the_run_cannot_take_is_refused_by_the_driver_before_any_shard(tmp_path):
    with pytest.raises(EvaluationRefused, match="^--set 'no_such_field=1': unknown config field 'no_such_field'"):
        run_on_ray(EvaluationSettings(profile="cpu", workers=2, set=("no_such_field=1",), output_dir=str(tmp_path)), None)
    assert not (tmp_path / "shards").exists()


def test_a_shard_never_inherits_the_drivers_device_list():
    driver = {"CUDA_VISIBLE_DEVICES": "0,1", "ROCR_VISIBLE_DEVICES": "0", "CRUISE_TAU_LOW": "0.8",
              "HOME": "/root", "PYTHONPATH": "/x"}
    local, remote = shard_env(driver, remote=False), shard_env(driver, remote=True)
    for env in (local, remote):
        assert "CUDA_VISIBLE_DEVICES" not in env and "ROCR_VISIBLE_DEVICES" not in env
        assert env["CRUISE_TAU_LOW"] == "0.8" and env["PYTHONPATH"].split(os.pathsep) == [str(REPO_ROOT), "/x"]
    assert local["HOME"] == "/root" and "HOME" not in remote  # a remote node keeps its own



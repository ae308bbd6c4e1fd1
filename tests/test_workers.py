"""`local_evaluation.py --workers N` on a local Ray: one scored run, the same as one process,
also when a worker dies mid-shard (Ray runs the shard again, resumed)."""
from __future__ import annotations

import json

import pandas as pd

from evaluation.harness.workers import DRIVER_FLAGS, JUDGE_FLAGS, shard_command, split_flags
from tests.test_local_evaluation import (  # noqa: F401 - world and full_run are fixtures
    full_run,
    generation_args,
    read_log,
    read_scores,
    run_cli,
    world,
    write_script,
)


def turn_rows(out):
    rows = pd.read_csv(out / "turn_evaluation_results_all.csv", dtype=str)
    return rows.sort_values(["session_id", "turn_idx"]).reset_index(drop=True)


def test_a_shard_gets_the_runs_arguments_without_the_drivers_and_the_judges(tmp_path):
    run = ["--dataset-type", "multi-turn", "--workers", "2", "--ray=auto", "--set", "k_recall=7",
           "--output-dir", "out", "--eval-model", "gpt-4o", "--rules", "crag-mm", "--no_progress", "--resume"]
    judge, rest = split_flags(run, JUDGE_FLAGS)
    assert judge == ["--eval-model", "gpt-4o", "--rules", "crag-mm", "--no_progress"]
    assert split_flags(rest, DRIVER_FLAGS)[1] == ["--dataset-type", "multi-turn", "--set", "k_recall=7"]
    command = shard_command(run, 1, 2, tmp_path / "s")
    assert command[2:] == ["--dataset-type", "multi-turn", "--set", "k_recall=7", "--shard", "1/2",
                           "--output-dir", str(tmp_path / "s"), "--eval-model", "None", "--no_progress",
                           "--display-conversations", "0"]


def test_two_workers_give_the_single_process_run(world, full_run):  # noqa: F811
    out = world["root"] / "two-workers"
    run_cli(world, generation_args(world, out, "--workers", "2"), write_script(world, "two-workers"))
    assert read_scores(out) == read_scores(full_run["out"])
    pd.testing.assert_frame_equal(turn_rows(out), turn_rows(full_run["out"]))
    shards = [out / "shards" / f"{i}-of-2" for i in range(2)]
    sessions = [{row["session_id"] for row in read_log(shard / "answers.jsonl")} for shard in shards]
    assert sessions[0] and sessions[1] and not sessions[0] & sessions[1]  # each its own conversations
    for shard in shards:  # generation only: the judge ran once, in the driver
        assert json.loads((shard / "run_config.json").read_text())["judge_model"] is None


def test_a_worker_killed_mid_shard_is_run_again_resumed(world, full_run):  # noqa: F811
    out = world["root"] / "killed-worker"
    flag = world["root"] / "killed-worker.flag"
    script = write_script(world, "killed-worker", crash_on_call=2, crash_flag=str(flag))
    run_cli(world, generation_args(world, out, "--workers", "2"), script)
    assert flag.exists()  # one shard's process died on its second call (os._exit)
    logs = [(out / "shards" / f"{i}-of-2" / "worker.log").read_text() for i in range(2)]
    attempts = [[line for line in log.splitlines() if line.startswith("$ ")] for log in logs]
    assert sorted(len(a) for a in attempts) == [1, 2]  # the killed shard ran twice, the other once
    retried = max(attempts, key=len)
    assert "--resume" not in retried[0] and retried[1].endswith("--resume")
    assert read_scores(out) == read_scores(full_run["out"])
    pd.testing.assert_frame_equal(turn_rows(out), turn_rows(full_run["out"]))

"""`local_evaluation.py --workers N` on a local Ray: one scored run, the same as one process,
also when a worker dies mid-shard (Ray runs the shard again, resumed), on the mini benchmark too;
each shard on its own GPU; no shard outlives the worker that started it. The driver's runs are
subprocesses, as Ray's shards are; the single-process run they are compared with (`full_run`)
ran in-process."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time

import pandas as pd
import pytest

from agents.profiles import REPO_ROOT
from evaluator.harness.dataset import load_split, read_conversations
from testkit.evaluation_world import UNDECIDED, generation_args, read_log, read_scores, run_cli, write_script


def turn_rows(out):
    rows = pd.read_csv(out / "turn_evaluation_results_all.csv", dtype=str)
    return rows.sort_values(["session_id", "turn_idx"]).reset_index(drop=True)


def test_two_workers_give_the_single_process_run(world, full_run):
    out = world["root"] / "two-workers"
    run_cli(world, generation_args(world, out, "--workers", "2"), write_script(world, "two-workers"),
            expect_rc=UNDECIDED)
    assert read_scores(out) == read_scores(full_run["out"])
    pd.testing.assert_frame_equal(turn_rows(out), turn_rows(full_run["out"]))
    shards = [out / "shards" / f"{i}-of-2" for i in range(2)]
    sessions = [{row["session_id"] for row in read_log(shard / "answers.jsonl")} for shard in shards]
    assert sessions[0] and sessions[1] and not sessions[0] & sessions[1]  # each its own conversations
    for shard in shards:  # generation only: the judge, the scores and the report ran once, in the driver
        assert json.loads((shard / "run_config.json").read_text())["judge_model"] is None
        assert not (shard / "scores_dictionary.json").exists() and not (shard / "report.html").exists()
    # The same command again (as after a driver that stopped once the merge was written): every shard
    # is resumed with nothing left to ask, and the merge already there is scored again, not refused.
    judged = (out / "judgments.jsonl").read_text()
    again = run_cli(world, generation_args(world, out, "--workers", "2"), write_script(world, "two-workers-again"),
                    expect_rc=UNDECIDED)
    assert "already holds the merge of these folders" in " ".join(again.stdout.split())
    assert not (world["root"] / "two-workers-again.log.jsonl").exists()  # no agent was asked anything
    assert read_scores(out) == read_scores(full_run["out"])
    # saved verdicts are reused: only the turns whose judge had failed (the scripted 500) are asked again
    rejudged = (out / "judgments.jsonl").read_text()
    assert rejudged.startswith(judged)
    decided = {j["interaction_id"] for j in map(json.loads, judged.splitlines()) if j["verdict"] is not None}
    asked_again = {j["interaction_id"] for j in map(json.loads, rejudged[len(judged):].splitlines())}
    assert decided and not asked_again & decided


def test_each_worker_gets_a_gpu_of_its_own(world):
    """Two GPUs declared to Ray (this machine has none): each shard's process sees one device,
    the one Ray granted it, even though the driver itself sees both."""
    out = world["root"] / "gpu-workers"
    script = write_script(world, "gpu-workers")
    run_cli(world, generation_args(world, out, "--workers", "2", "--gpus-per-worker", "1"), script,
            env_extra={"CUDA_VISIBLE_DEVICES": "0,1", "RAY_OVERRIDE_RESOURCES": json.dumps({"GPU": 2})},
            expect_rc=UNDECIDED)
    seen = {call["cuda_visible_devices"] for call in read_log(world["root"] / "gpu-workers.log.jsonl")}
    assert seen == {"0", "1"}


def test_a_local_ray_without_the_gpus_asked_for_stops_with_one_line(world):
    out = world["root"] / "no-gpu"
    proc = run_cli(world, generation_args(world, out, "--workers", "2", "--gpus-per-worker", "1"),
                   write_script(world, "no-gpu"), expect_rc=1)
    assert "--gpus-per-worker 0" in proc.stderr and "Traceback" not in proc.stderr


def test_a_shard_dies_with_the_worker_that_started_it(tmp_path):
    """A stand-in for a Ray worker (it starts the shard's process as run_shard does) is killed with
    SIGKILL: the shard's process must not live on, holding its GPU and its folder."""
    pid_file = tmp_path / "shard.pid"
    worker = textwrap.dedent(f"""
        import subprocess, sys
        from evaluator.workers import die_with_parent
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"],
                                 preexec_fn=die_with_parent)
        open({str(pid_file)!r}, "w").write(str(child.pid))
        child.wait()
    """)
    proc = subprocess.Popen([sys.executable, "-c", worker], cwd=REPO_ROOT, env={**os.environ, "PYTHONPATH": str(REPO_ROOT)})
    deadline = time.monotonic() + 60
    while not (pid_file.exists() and pid_file.read_text()) and time.monotonic() < deadline:
        time.sleep(0.05)
    shard_pid = int(pid_file.read_text())
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            os.kill(shard_pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.05)
    os.kill(shard_pid, signal.SIGKILL)
    pytest.fail("the shard's process outlived the worker that started it")


def test_the_mini_benchmark_over_two_workers_is_the_single_process_run(world):
    """The shipped multi-turn mini benchmark, scored by its offline lexical judge: answers right on
    some turns, wrong on others, abstained on the rest (so the early stop and the conversation
    scores matter), one process against two Ray workers."""
    mini = REPO_ROOT / "data" / "crag-mm-mini" / "multi-turn"
    ds, _, _ = load_split(str(mini), None, "validation")
    answers = {}
    for i, turn in enumerate(t for c in read_conversations(ds) for t in c.turns):
        if i % 3 == 0 and turn.ans_accepted:
            answers[turn.query] = turn.ans_accepted[0]
        elif i % 3 == 1:
            answers[turn.query] = "Canberra"
    runs = {}
    for name, extra in (("mini-one", ()), ("mini-two", ("--workers", "2"))):
        out = world["root"] / name
        args = ["--dataset", str(mini), "--dataset-type", "multi-turn", "--profile", "cpu",
                "--agent", "testkit.scripted_agent:ScriptedAgent", "--search", "testkit.scripted_agent:make_fake_search",
                "--suppress-web-search-api", "--output-dir", str(out), *extra]
        run_cli(world, args, write_script(world, name, answers=answers, batch_size=4), key=None, judge=False)
        runs[name] = out
    one, two = (read_scores(runs[n]) for n in ("mini-one", "mini-two"))
    assert one == two
    assert 0 < one["all"]["accuracy"] < 1 and one["all"]["hallucination_rate"] > 0  # a run with something to get wrong
    assert "offline lexical judge" in json.dumps(json.loads((runs["mini-two"] / "run_summary.json").read_text()))
    pd.testing.assert_frame_equal(turn_rows(runs["mini-one"]), turn_rows(runs["mini-two"]))


def test_a_worker_killed_mid_shard_is_run_again_resumed(world, full_run):
    out = world["root"] / "killed-worker"
    flag = world["root"] / "killed-worker.flag"
    script = write_script(world, "killed-worker", crash_on_call=2, crash_flag=str(flag))
    run_cli(world, generation_args(world, out, "--workers", "2"), script, expect_rc=UNDECIDED)
    assert flag.exists()  # one shard's process died on its second call (os._exit)
    logs = [(out / "shards" / f"{i}-of-2" / "worker.log").read_text() for i in range(2)]
    attempts = [[line for line in log.splitlines() if line.startswith("$ ")] for log in logs]
    assert sorted(len(a) for a in attempts) == [1, 2]  # the killed shard ran twice, the other once
    retried = max(attempts, key=len)
    assert "--resume" not in retried[0] and retried[1].endswith("--resume")
    assert read_scores(out) == read_scores(full_run["out"])
    pd.testing.assert_frame_equal(turn_rows(out), turn_rows(full_run["out"]))

"""local_evaluation.py in a real interpreter, on the hand-made world of tests/test_local_evaluation.py
(which runs everything else in-process): the same scores and files as the in-process run, the exit
codes and one-line refusals a shell sees, and a process that dies mid-run, resumed."""
import json

from testkit.evaluation_world import SECRET, UNDECIDED, generation_args, read_log, read_scores, run_cli, write_script


def test_a_subprocess_run_writes_what_the_in_process_run_writes(world, full_run):
    out = world["root"] / "subprocess"
    proc = run_cli(world, generation_args(world, out), write_script(world, "subprocess"), expect_rc=UNDECIDED)
    assert read_scores(out) == read_scores(full_run["out"])
    for name in ("turn_evaluation_results_all.csv", "turn_evaluation_results_ego.csv"):
        assert (out / name).read_text() == (full_run["out"] / name).read_text()
    assert "rules: kddcup2025" in proc.stdout and "Traceback" not in proc.stderr
    assert SECRET not in proc.stdout + proc.stderr


def test_a_refusal_is_one_line_on_stderr_and_exit_code_1(world):
    proc = run_cli(world, generation_args(world, world["root"] / "unforced", "--force"), None, expect_rc=1)
    assert proc.stderr.strip() == "--force only applies to --resume and --rejudge"
    assert not (world["root"] / "unforced").exists()
    proc = run_cli(world, generation_args(world, world["root"] / "badflag", "--no-such-flag"), None, expect_rc=2)
    assert "unrecognized arguments: --no-such-flag" in proc.stderr


def test_a_process_that_dies_mid_run_is_resumed_to_the_same_scores(world, full_run):
    """os._exit(17) on the agent's fourth call: the process ends there, nothing unwinds."""
    out = world["root"] / "crashed"
    script = write_script(world, "crash", crash_on_call=4, crash_flag=str(world["root"] / "crash.flag"))
    run_cli(world, generation_args(world, out), script, expect_rc=17)
    assert not (out / "scores_dictionary.json").exists()
    assert len(read_log(out / "answers.jsonl")) == 6  # three batches of two finished before the crash
    run_cli(world, generation_args(world, out, "--resume"), script, expect_rc=UNDECIDED)
    assert read_scores(out) == read_scores(full_run["out"])
    calls = read_log(world["root"] / "crash.log.jsonl")
    assert [c["queries"] for c in calls[4:]] == [c["queries"] for c in full_run["log"][3:]]
    summary = json.loads((out / "run_summary.json").read_text())
    assert summary["batches"] == 8 and summary["turns_answered"] == 15

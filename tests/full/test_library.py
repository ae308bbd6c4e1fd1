"""evaluator.evaluate called twice in this process against the command line run in processes of
its own (tests/test_library.py compares with the command line run in-process, where a state kept
by the first call would reach both sides alike): each call's agent is built with its own
settings, and each call writes what its command line writes."""
from __future__ import annotations

from evaluator import evaluate
from testkit.evaluation_world import local_evaluation_process
from testkit.in_process import fresh_environment
from testkit.library_runs import K_RECALL, agent_k_recall, local_evaluation_flags, run_env, same_run, two_settings


def test_two_calls_in_one_process_give_what_two_command_lines_in_their_own_give(tmp_path):
    settings = two_settings()
    for i, options in enumerate(settings):
        with fresh_environment(run_env(tmp_path, f"library-{i}")):
            assert evaluate(**options, output_dir=tmp_path / f"library-{i}").exit_status == 0
    for i, options in enumerate(settings):
        argv = local_evaluation_flags({**options, "output_dir": str(tmp_path / f"cli-{i}")})
        proc = local_evaluation_process(argv, run_env(tmp_path, f"cli-{i}"))
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    for i, k_recall in enumerate(K_RECALL):
        # the value each agent held at its batches, on both sides
        assert agent_k_recall(tmp_path, f"library-{i}") == agent_k_recall(tmp_path, f"cli-{i}") == {k_recall}
        same_run(tmp_path / f"library-{i}", tmp_path / f"cli-{i}", i)

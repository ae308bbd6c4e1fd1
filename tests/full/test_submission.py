"""`python -m tools.preflight` on the cpu profile, which loads the run's chat model and the search
models and dry-runs a batch of the mini benchmark: it passes as a user runs it (a subprocess),
with the profile's SmolLM2 and with a tiny random Qwen2.5-VL named by `--model-name` (its dry run
says that model answered); it fails clearly, one FAIL line naming the check, on a batch size out
of range (in this process: testkit/in_process.py). The budgets' verdicts and a broken checkpoint:
tests/test_preflight_run.py; the package's files: tests/test_submission.py.
"""
from __future__ import annotations

import os
import re
import subprocess
import sys

from agents.profiles import REPO_ROOT
from testkit.in_process import run_main
from testkit.tiny_models import build_tiny_qwen2_5_vl
from tools import preflight


def run_preflight(*args):
    return subprocess.run(
        [sys.executable, "-m", "tools.preflight", "--profile", "cpu", *args],
        cwd=REPO_ROOT, capture_output=True, text=True, timeout=600,
        env={**os.environ, "HF_HUB_OFFLINE": "1"},
    )


def assert_passes_but_for_speed(done: subprocess.CompletedProcess) -> str:
    """Every check passes; the dry run's line may fail for time alone: the checks, not this shared
    machine's speed, are under test here (the budgets' verdicts: tests/test_preflight_run.py).
    Returns the dry run's line."""
    for name in ("import", "aicrowd", "requirements", "search", "agent load", "batch size"):
        assert re.search(rf"^PASS\s+{name}\b", done.stdout, re.M), done.stdout
    dry_run = re.search(r"^(PASS|FAIL)\s+dry run\s+(.*)$", done.stdout, re.M)
    assert dry_run, done.stdout
    failed = re.findall(r"^FAIL\s+(\S.*?)\s{2}", done.stdout, re.M)
    assert failed in ([], ["dry run"]), done.stdout
    assert done.returncode == (1 if failed else 0), done.stdout + done.stderr
    if failed:
        assert dry_run.group(2).startswith("OVER the"), done.stdout
    return dry_run.group(2)


def test_preflight_passes_on_the_cpu_profile():
    line = assert_passes_but_for_speed(run_preflight())
    assert re.search(r"; ran \S*smollm2\S* \(route, ", line), line


def test_the_dry_run_runs_the_model_that_is_named(tmp_path):
    """A checkpoint that loads, in a folder named as its family's: the dry run's models are read
    from the agent's own engine calls, and the named one answered the chat stages."""
    folder = build_tiny_qwen2_5_vl(tmp_path / "Qwen2.5-VL-3B-Instruct")
    done = run_preflight("--model-name", folder)
    assert re.search(rf"^PASS\s+agent load\s+agents.user_config:UserAgent loaded with --model-name {re.escape(folder)}$",
                     done.stdout, re.M), done.stdout
    line = assert_passes_but_for_speed(done)
    assert f"; ran {folder} (route, " in line and "smollm2" not in line, line


def test_preflight_fails_clearly_on_a_batch_size_out_of_range():
    done = run_main(preflight.main, ["--profile", "cpu", "--set", "batch_size=32"], env={"HF_HUB_OFFLINE": "1"})
    assert done.returncode == 1, done.stdout + done.stderr
    assert re.search(r"^FAIL\s+batch size\s+32: must be within 1\.\.16$", done.stdout, re.M), done.stdout
    assert "preflight: FAILED" in done.stdout

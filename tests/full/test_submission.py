"""`python -m tools.preflight` on the cpu profile, which loads SmolLM2 and the search models and
dry-runs a batch of the mini benchmark: it passes as a user runs it (a subprocess), and fails
clearly, one FAIL line naming the check, on a batch size out of range and on an agent over its
budget (in this process: testkit/in_process.py). The package's files: tests/test_submission.py.
"""
from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from agents.profiles import REPO_ROOT
from testkit.in_process import run_main
from tools import preflight


def run_preflight(*args):
    return subprocess.run(
        [sys.executable, "-m", "tools.preflight", "--profile", "cpu", *args],
        cwd=REPO_ROOT, capture_output=True, text=True, timeout=600,
        env={**os.environ, "HF_HUB_OFFLINE": "1"},
    )


def test_preflight_passes_on_the_cpu_profile():
    # The checks, not this machine's speed, are under test: SmolLM2 on 2 shared cores can take
    # 30-50 s for the 40 s a batch of 4 gets, so the budget is widened here. That the budget
    # check fails an agent that overruns is tested below (SlowAgent); the real figures are
    # what `python -m tools.preflight` prints.
    done = run_preflight("--turn-budget", "60")
    assert done.returncode == 0, done.stdout + done.stderr
    for name in ("import", "aicrowd", "requirements", "gpu memory", "batch size", "dry run"):
        assert re.search(rf"^PASS\s+{name}\b", done.stdout, re.M), done.stdout


@pytest.mark.parametrize(
    "args, failing",
    [
        (["--set", "batch_size=32"], "batch size"),
        (["--agent", "testkit.slow_agent:SlowAgent", "--turn-budget", "0.2"], "dry run"),
    ],
)
def test_preflight_fails_clearly(args, failing):
    done = run_main(preflight.main, ["--profile", "cpu", *args], env={"HF_HUB_OFFLINE": "1"})
    assert done.returncode == 1, done.stdout + done.stderr
    assert re.search(rf"^FAIL\s+{failing}\b", done.stdout, re.M), done.stdout
    assert "preflight: FAILED" in done.stdout

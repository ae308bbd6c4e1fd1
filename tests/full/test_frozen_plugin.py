"""A package written to the previous release's documented API still runs: tests/full/frozen/ holds
examples/keyword_gate as release 0.1.0 shipped it (`Stage(..., calls_no_model=always)`, the
abstain-first default), frozen; a rename in agents.plugin that breaks it fails here before it
reaches a plugin author. Installed as a user installs it and run by its entry point; the run
succeeds, and each old name is warned about once, naming the new one (docs/changes.md)."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
FROZEN = Path(__file__).resolve().parent / "frozen" / "keyword_gate_0_1"


def test_the_previous_releases_example_package_runs_and_is_told_what_changed(tmp_path):
    site = tmp_path / "site"
    source = shutil.copytree(FROZEN, tmp_path / "source" / "keyword_gate")
    done = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--target", str(site),
                           str(source)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    env = {**os.environ, "PYTHONPATH": str(site), "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    out = tmp_path / "out"
    done = subprocess.run([sys.executable, str(REPO / "local_evaluation.py"), "--profile", "cpu", "--set",
                           "system=keyword_gate", "--set", "min_overlap=2", "--num-conversations", "4", "--eval-model",
                           "None", "--no_progress", "--strict", "--output-dir", str(out)],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    traces = [json.loads(line) for line in (out / "traces.jsonl").open()]
    assert len(traces) >= 4 and all(t["system"] == "keyword_gate" and t["faults"] == [] for t in traces)
    assert all(list(t["stage_ms"]) == ["perceive", "retrieve", "kwgate_overlap", "kwgate_answer"] for t in traces)
    warned = [line for line in done.stderr.splitlines() if "DeprecationWarning" in line]
    assert any("calls_no_model=...) is deprecated" in line for line in warned), done.stderr[-2000:]
    assert any("agents.plugin.always is deprecated" in line for line in warned), done.stderr[-2000:]
    assert all("docs/changes.md" in line for line in warned)

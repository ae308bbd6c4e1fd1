"""The example package, examples/keyword_gate, installed as a user installs it (`pip install`, its
wheel built from its pyproject.toml, into a folder of its own so the project's venv stays as it
was) and run as a user runs it: its own tests against the installed copy, then
`local_evaluation.py` from a folder outside the repository, finding the system by its entry
point, on the cpu profile's small models and the mini benchmark."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "keyword_gate"


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    target = tmp_path_factory.mktemp("site")
    # built from a copy: pip writes build/ and *.egg-info beside the sources it builds
    source = shutil.copytree(EXAMPLE, tmp_path_factory.mktemp("source") / "keyword_gate")
    done = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--target", str(target),
                           str(source)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return target


def run(args: list[str], site: Path, cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(site), "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    return subprocess.run([sys.executable, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=600)


def test_the_installed_package_carries_its_prompt_and_passes_its_own_tests(site, tmp_path):
    assert (site / "keyword_gate" / "prompts" / "kwgate_answer.txt").is_file()
    found = run(["-c", "import keyword_gate; print(keyword_gate.__file__)"], site, tmp_path)
    assert found.stdout.strip() == str(site / "keyword_gate" / "__init__.py")
    done = run(["-m", "pytest", "-q", "-n", "0", "-p", "no:cacheprovider", str(EXAMPLE / "tests")], site, tmp_path)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert "2 passed" in done.stdout


def test_local_evaluation_runs_it_by_its_entry_point_and_a_misspelled_setting_names_the_right_one(site, tmp_path):
    out = tmp_path / "out"
    common = [str(REPO / "local_evaluation.py"), "--profile", "cpu", "--set", "system=keyword_gate",
              "--num-conversations", "6", "--eval-model", "None", "--no_progress", "--strict"]
    done = run([*common, "--set", "min_overlap=2", "--output-dir", str(out)], site, tmp_path)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    traces = [json.loads(line) for line in (out / "traces.jsonl").open()]
    assert traces and all(t["system"] == "keyword_gate" and t["errors"] == [] for t in traces)
    assert all(list(t["stage_ms"]) == ["perceive", "retrieve", "kwgate_overlap", "kwgate_answer"] for t in traces)
    assert all(t["final_answer"] == "I don't know" for t in traces if t["overlap"] < 2)
    assert "keyword_gate" in (out / "report.html").read_text(encoding="utf-8")

    wrong = run([*common, "--set", "min_overlapp=3", "--output-dir", str(tmp_path / "wrong")], site, tmp_path)
    assert wrong.returncode == 1
    assert "min_overlapp" in wrong.stderr and "min_overlap" in wrong.stderr.replace("min_overlapp", "")

"""The submission package: aicrowd.json, requirements, Dockerfile, and the preflight check."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from agents.config import load_config
from tools import preflight

REPO = Path(__file__).resolve().parent.parent


def test_aicrowd_json_lists_exactly_the_l40s_models():
    doc = json.loads((REPO / "aicrowd.json").read_text())
    assert doc == preflight.aicrowd_document(doc["challenge_id"])
    cfg = load_config("l40s")
    assert {m["repo_id"] for m in doc["hf_models"]} == {cfg.router_model, cfg.vlm_model, cfg.reranker_model}
    assert preflight.check_aicrowd(REPO / "aicrowd.json").ok


def test_aicrowd_check_names_a_missing_model(tmp_path):
    doc = json.loads((REPO / "aicrowd.json").read_text())
    doc["hf_models"] = [m for m in doc["hf_models"] if "Vision" not in m["repo_id"]]
    path = tmp_path / "aicrowd.json"
    path.write_text(json.dumps(doc))
    check = preflight.check_aicrowd(path)
    assert not check.ok and "meta-llama/Llama-3.2-11B-Vision-Instruct" in check.detail


def test_requirements_cover_every_agent_import(tmp_path):
    assert preflight.check_requirements(REPO / "requirements.txt").ok
    trimmed = tmp_path / "requirements.txt"
    trimmed.write_text("\n".join(line for line in (REPO / "requirements.txt").read_text().splitlines()
                                 if not line.lower().startswith("flagembedding")))
    check = preflight.check_requirements(trimmed)
    assert not check.ok and "FlagEmbedding" in check.detail


def test_gpu_requirements_pin_a_vllm_that_serves_mllama():
    pins = dict(re.findall(r"^([A-Za-z0-9_.-]+)==(\S+)", (REPO / "requirements.txt").read_text(), re.M))
    assert tuple(int(x) for x in pins["vllm"].split(".")[:3]) < (0, 10, 2)  # Mllama removed in 0.10.2
    assert int(pins["transformers"].split(".")[0]) < 5  # cragmm-search-pipeline breaks on 5.x
    cpu = (REPO / "requirements-cpu.txt").read_text()
    assert re.search(r"^torch==2\.13\.0$", cpu, re.M)


def test_dockerfile_structure():
    text = (REPO / "Dockerfile").read_text()
    lines = [line.strip() for line in text.splitlines() if line.strip() and not line.strip().startswith("#")]
    assert re.match(r"FROM nvidia/cuda:[\w.\-]+-runtime-", lines[0])
    assert re.search(r"HF_HUB_OFFLINE=1", text)
    assert re.search(r"pip install .*-r /tmp/requirements\.txt", text)
    assert any(line.startswith("COPY . .") for line in lines)
    run_steps = " ".join(line for line in lines if line.startswith("RUN") or line.startswith("&&"))
    for forbidden in ("huggingface-cli", "snapshot_download", "from_pretrained", "hf_hub_download", "wget", "curl"):
        assert forbidden not in run_steps, f"the image build must not download models ({forbidden})"
    ignored = (REPO / ".dockerignore").read_text().split()
    assert {".venv/", ".cache/", "outputs/"} <= set(ignored)


def test_gpu_memory_plan_fits_and_reacts_to_utilization():
    from tools.memory_plan import format_plan, plan_l40s

    assert preflight.check_gpu_memory().ok
    plan = plan_l40s(load_config("l40s"))
    assert plan.fits and [r.role for r in plan.rows] == ["vlm", "router"]
    vlm = plan.rows[0]
    assert vlm.kv_bytes_per_token == 40 * 2 * 8 * 128 * 2
    assert 19 < vlm.weights_gb < 21 and vlm.full_length_seqs >= 1
    assert "Llama-3.2-11B-Vision-Instruct" in format_plan(plan)
    greedy = load_config("l40s", vlm_gpu_memory_utilization=0.95, router_gpu_memory_utilization=0.3)
    assert not plan_l40s(greedy).fits
    assert not plan_l40s(load_config("l40s", vlm_gpu_memory_utilization=0.95)).fits
    assert not plan_l40s(load_config("l40s", vlm_gpu_memory_utilization=0.45)).fits  # no room for KV


def run_preflight(*args, env=None):
    return subprocess.run(
        [sys.executable, "-m", "tools.preflight", "--profile", "cpu", *args],
        cwd=REPO, capture_output=True, text=True, timeout=600,
        env={**os.environ, "HF_HUB_OFFLINE": "1", **(env or {})},
    )


@pytest.mark.slow  # the dry run loads SmolLM2
def test_preflight_passes_on_the_cpu_profile():
    done = run_preflight()
    assert done.returncode == 0, done.stdout + done.stderr
    for name in ("import", "aicrowd", "requirements", "gpu memory", "batch size", "dry run"):
        assert re.search(rf"^PASS\s+{name}\b", done.stdout, re.M), done.stdout


@pytest.mark.slow  # the dry run loads SmolLM2
@pytest.mark.parametrize(
    "args, failing",
    [
        (["--set", "batch_size=32"], "batch size"),
        (["--agent", "tests.slow_agent:SlowAgent", "--turn-budget", "0.2"], "dry run"),
    ],
)
def test_preflight_fails_clearly(args, failing):
    done = run_preflight(*args)
    assert done.returncode == 1, done.stdout + done.stderr
    assert re.search(rf"^FAIL\s+{failing}\b", done.stdout, re.M), done.stdout
    assert "preflight: FAILED" in done.stdout

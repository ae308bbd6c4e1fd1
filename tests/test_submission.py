"""The submission package: aicrowd.json, requirements, Dockerfile, and the preflight's checks that
load no model. Its dry run (SmolLM2): tests/full/test_submission.py."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from agents.config.loading import load_config
from evaluator.harness.resolved import resolve_settings
from evaluator.settings import EvaluationSettings
from tools import preflight

REPO = Path(__file__).resolve().parent.parent
L40S = resolve_settings(EvaluationSettings(profile="l40s"))


def test_aicrowd_json_lists_exactly_the_l40s_models():
    from evaluator.search.pipeline import search_config

    doc = json.loads((REPO / "aicrowd.json").read_text())
    assert doc == preflight.aicrowd_document(doc["challenge_id"], L40S)
    cfg, search = load_config("l40s"), search_config("l40s")
    # The agent's models and the search pipeline's: the offline container holds nothing else.
    assert {m["repo_id"] for m in doc["hf_models"]} == {
        cfg.models.router_model, cfg.models.vlm_model, cfg.models.reranker_model, search.image_model, search.text_model}
    assert {"openai/clip-vit-large-patch14-336", "BAAI/bge-large-en-v1.5"} <= {m["repo_id"] for m in doc["hf_models"]}
    assert preflight.check_aicrowd(REPO / "aicrowd.json", L40S).ok


@pytest.mark.parametrize("model", [m["repo_id"] for m in json.loads((REPO / "aicrowd.json").read_text())["hf_models"]])
def test_aicrowd_check_names_a_missing_model(tmp_path, model):
    doc = json.loads((REPO / "aicrowd.json").read_text())
    doc["hf_models"] = [m for m in doc["hf_models"] if m["repo_id"] != model]
    path = tmp_path / "aicrowd.json"
    path.write_text(json.dumps(doc))
    check = preflight.check_aicrowd(path, L40S)
    assert not check.ok and check.detail == f"models missing from hf_models: {model}"


def test_aicrowd_check_says_whether_the_named_model_is_listed(tmp_path):
    """The shipped aicrowd.json lists the paper's models: a run of another checkpoint fails it,
    naming that checkpoint; the document written for that run passes it."""
    qwen = "Qwen/Qwen2.5-VL-7B-Instruct"
    run = resolve_settings(EvaluationSettings(profile="l40s", model_name=qwen))
    check = preflight.check_aicrowd(REPO / "aicrowd.json", run)
    assert check.ok is False
    assert check.detail == f"models missing from hf_models: {qwen}; the named model {qwen} is NOT listed"
    written = tmp_path / "aicrowd.json"
    assert preflight.main(["--model-name", qwen, "--aicrowd", str(written), "--write-aicrowd"]) == 0  # auto: l40s
    assert qwen in {m["repo_id"] for m in json.loads(written.read_text())["hf_models"]}
    check = preflight.check_aicrowd(written, run)
    assert check.ok and check.detail.endswith(f"; the named model {qwen} is listed")
    # a folder of this machine is no hub id: said, and the cpu run loads nothing from the hub
    folder = tmp_path / "Qwen2.5-VL-3B-Instruct"
    folder.mkdir()
    local = preflight.check_aicrowd(REPO / "aicrowd.json", resolve_settings(
        EvaluationSettings(profile="cpu", model_name=str(folder))))
    assert local.ok and f"the named model {folder} is a folder on this machine, not a hub id" in local.detail


def test_requirements_cover_every_agent_import(tmp_path):
    assert preflight.check_requirements(REPO / "requirements.txt").ok
    trimmed = tmp_path / "requirements.txt"
    trimmed.write_text("\n".join(line for line in (REPO / "requirements.txt").read_text().splitlines()
                                 if not line.lower().startswith("sentence-transformers")))
    check = preflight.check_requirements(trimmed)
    assert not check.ok and "sentence-transformers" in check.detail


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


def test_gpu_memory_plan_fits_with_three_gib_spare_and_counts_what_vllm_counts():
    from tools import memory_plan as mp

    assert preflight.check_gpu_memory(L40S).ok
    plan = mp.plan_l40s(load_config("l40s"))
    assert plan.fits and plan.spare_gib >= 3.0 and [e.role for e in plan.engines] == ["vlm", "router"]
    vlm = plan.engines[0]
    assert mp.kv_bytes_per_token(mp.VLM_TEXT) == 40 * 2 * 8 * 128 * 2  # every layer, cross-attention too
    assert mp.image_encoder_tokens(mp.VLM_VISION, 4) == 4 * 1601
    # One planned image request: 4 x 1601 cross-attention tokens plus the prompt, whole blocks of 16.
    assert vlm.request_tokens == 6416 + mp.PLANNED_VLM_DECODER_TOKENS
    assert 19 < vlm.weights_gib < 21 and vlm.concurrent_requests >= vlm.max_num_seqs == 8
    assert vlm.kv_tokens >= vlm.max_model_len >= 6404  # vLLM checks one image's encoder tokens against it
    # Outside both budgets: the CUDA context, both search models at fp32, the reranker.
    assert plan.outside["search: openai/clip-vit-large-patch14-336 (fp32)"] == pytest.approx(1.59, abs=0.01)
    assert plan.outside["search: BAAI/bge-large-en-v1.5 (fp32)"] == pytest.approx(1.25, abs=0.01)
    assert plan.total_gib == pytest.approx(sum(e.budget_gib for e in plan.engines) + sum(plan.outside.values()))
    assert "Llama-3.2-11B-Vision-Instruct" in mp.format_plan(plan)


def test_gpu_memory_plan_vision_profiling_grows_with_max_num_seqs():
    from tools import memory_plan as mp

    one = mp.vision_profile_bytes(mp.VLM_VISION, mp.VLM_TEXT, 1)
    assert mp.vision_profile_bytes(mp.VLM_VISION, mp.VLM_TEXT, 8) == 8 * one
    assert 0.3 * mp.GIB < one < 0.6 * mp.GIB  # the 6432 x 6432 mask alone is 79 MiB per image
    sixteen = mp.plan_l40s(load_config("l40s", max_num_seqs=16))
    assert sixteen.engines[0].profile_gib > 2 * mp.plan_l40s(load_config("l40s")).engines[0].profile_gib - 0.1
    assert not sixteen.fits  # 16 image requests at once no longer fit the VLM's KV cache


@pytest.mark.parametrize("change, problem", [
    (dict(vlm_gpu_memory_utilization=0.80), "GiB spare"),
    (dict(router_gpu_memory_utilization=0.15), "GiB spare"),
    (dict(vlm_gpu_memory_utilization=0.55), "vlm: KV cache"),
    (dict(max_num_seqs=16), "vlm: KV cache holds"),
])
def test_gpu_memory_plan_refuses_what_does_not_fit(change, problem):
    from tools.memory_plan import plan_l40s

    plan = plan_l40s(load_config("l40s", **change))
    assert not plan.fits and any(problem in p for p in plan.problems())
    run = resolve_settings(EvaluationSettings(profile="l40s", set=tuple(f"{k}={v}" for k, v in change.items())))
    check = preflight.check_gpu_memory(run, gpu=None)  # the run as `preflight --set` resolves it
    assert not check.ok and problem in check.detail



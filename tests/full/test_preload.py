"""Before anything loads, `local_evaluation.py` checks that every model and dataset it is about to
load is there, and says what is missing in one message instead of a traceback from deep inside a
model load or a retry loop of a dataset download. Run as a user runs it: a subprocess with a
temporary Hugging Face cache (huggingface_hub reads HF_HOME, HF_ENDPOINT and the offline switch
once, at import). The model lists themselves: tests/test_preload.py.
"""
from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from agents.profiles import REPO_ROOT
from evaluator.harness.agent_setup import setup_agent
from evaluator.harness.models import loaded_models
from evaluator.harness.resolved import resolve_run
from evaluator.search.pipeline import search_config

L40S_MODELS = loaded_models(resolve_run("l40s", setup_agent("agents.user_config:UserAgent", profile="l40s")))
L40S_DATASETS = ["crag-mm-2025/crag-mm-single-turn-public", search_config("l40s").image_index,
                 search_config("l40s").web_index]
COMMIT = "0" * 40


def hub_model(cache: Path, repo_id: str) -> None:
    """A model as huggingface_hub's cache holds it: refs/main -> a snapshot with config.json."""
    folder = cache / ("models--" + repo_id.replace("/", "--"))
    (folder / "snapshots" / COMMIT).mkdir(parents=True)
    (folder / "snapshots" / COMMIT / "config.json").write_text("{}")
    (folder / "refs").mkdir()
    (folder / "refs" / "main").write_text(COMMIT)


def hub_dataset(cache: Path, repo_id: str) -> None:
    (cache / ("datasets--" + repo_id.replace("/", "--")) / "snapshots" / COMMIT).mkdir(parents=True)


def run_evaluator(hf_home: Path, tmp_path: Path, *args: str, offline: bool = True, extra_env=None):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "TRANSFORMERS_", "CRUISE_"))}
    env.update(HF_HOME=str(hf_home), **(extra_env or {}))
    if offline:
        env.update(HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", HF_DATASETS_OFFLINE="1")
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "local_evaluation.py", "--output-dir", str(tmp_path / "out"), *args],
                          cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=300)
    return proc, time.perf_counter() - start


def test_an_empty_cache_gives_one_message_naming_every_model_and_dataset(tmp_path):
    proc, _ = run_evaluator(tmp_path / "hf", tmp_path, "--profile", "l40s")
    assert proc.returncode == 1
    assert "Traceback" not in proc.stderr + proc.stdout
    message = proc.stderr
    assert message.startswith(f"cannot start: {len(L40S_MODELS)} of the {len(L40S_MODELS)} models that the "
                              f"l40s profile loads are not in the Hugging Face cache ({tmp_path / 'hf' / 'hub'})")
    for model in L40S_MODELS:
        assert f"\n  {model}" in message
    # one download route: tools.fetch, which skips the files nothing loads (the 11B model's original/)
    assert "\n  python -m tools.fetch --profile l40s\n" in message and "huggingface-cli download" not in message
    assert "meta-llama/Llama-3.2-11B-Vision-Instruct  (gated)" in message and "HF_TOKEN" in message
    for dataset in L40S_DATASETS:
        assert f"cannot load the dataset '{dataset}'" in message
    assert f"{L40S_DATASETS[0]}' (revision v0.1.2): it is not in the Hugging Face cache, and the hub is switched " \
           "off (HF_HUB_OFFLINE / HF_DATASETS_OFFLINE); fetch it with: python -m tools.fetch --profile l40s " \
           "--task single-turn" in message
    assert f"{L40S_DATASETS[1]}': it is not in the Hugging Face cache, and the hub is switched off (HF_HUB_OFFLINE " \
           "/ HF_DATASETS_OFFLINE); fetch it with: python -m tools.fetch --profile l40s\n" in message
    assert "Loading" not in proc.stdout  # nothing was loaded


def test_a_vllm_that_cannot_serve_llama_vision_is_named_before_anything_loads(tmp_path):
    """The version is read from the installed package's metadata, as a pip-installed vLLM leaves it
    (a dist-info folder on the path; vLLM itself is never imported)."""
    site = tmp_path / "site"
    (site / "vllm-0.11.0.dist-info").mkdir(parents=True)
    (site / "vllm-0.11.0.dist-info" / "METADATA").write_text("Metadata-Version: 2.1\nName: vllm\nVersion: 0.11.0\n")
    proc, _ = run_evaluator(tmp_path / "hf", tmp_path, "--profile", "l40s",
                            extra_env={"PYTHONPATH": os.pathsep.join([str(site), str(REPO_ROOT)])})
    assert proc.returncode == 1 and "Traceback" not in proc.stderr + proc.stdout
    assert proc.stderr.startswith("cannot start: vLLM 0.11.0 cannot serve Llama-3.2-Vision")
    assert "Loading" not in proc.stdout


def test_a_cache_that_lacks_one_model_names_that_model_only(tmp_path):
    cache = tmp_path / "hf" / "hub"
    missing = "openai/clip-vit-large-patch14-336"
    for model in L40S_MODELS:
        if model != missing:
            hub_model(cache, model)
    for dataset in L40S_DATASETS:
        hub_dataset(cache, dataset)
    proc, _ = run_evaluator(tmp_path / "hf", tmp_path, "--profile", "l40s")
    assert proc.returncode == 1 and "Traceback" not in proc.stderr + proc.stdout
    lines = proc.stderr.strip().splitlines()
    assert lines[0].startswith(f"cannot start: 1 of the {len(L40S_MODELS)} models")
    assert lines[1:4] == [f"  {missing}", "Fetch them into that cache (on a machine with network access), then run again:",
                          "  python -m tools.fetch --profile l40s"]
    assert len(lines) == 4  # no gated note, no dataset line: everything else is there


def test_task1_needs_no_text_model_and_no_web_index(tmp_path):
    cache = tmp_path / "hf" / "hub"
    text_model, web_index = search_config("l40s").text_model, search_config("l40s").web_index
    for model in L40S_MODELS:
        if model != text_model:
            hub_model(cache, model)
    for dataset in L40S_DATASETS:
        if dataset != web_index:
            hub_dataset(cache, dataset)
    # Everything Task 1 needs is "there" (fake files), so the check passes and the run goes on to
    # load the dataset, which the fake cache cannot serve: that error is the evaluator's own.
    proc, _ = run_evaluator(tmp_path / "hf", tmp_path, "--profile", "l40s", "--suppress-web-search-api")
    assert "cannot start" not in proc.stderr and web_index not in proc.stderr
    assert "Loading crag-mm-2025/crag-mm-single-turn-public" in proc.stdout


def test_an_unreachable_dataset_is_one_line_without_a_retry_storm(tmp_path):
    with socket.socket() as sock:  # a port on this machine that nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    proc, seconds = run_evaluator(tmp_path / "hf", tmp_path, "--profile", "cpu", "--search", "none",
                                  "--dataset", "someone/missing-dataset", offline=False,
                                  extra_env={"HF_ENDPOINT": f"http://127.0.0.1:{port}"})
    assert proc.returncode == 1 and "Traceback" not in proc.stderr + proc.stdout
    assert proc.stderr.strip() == ("cannot load the dataset 'someone/missing-dataset' (revision v0.1.2): it is not "
                                   "in the Hugging Face cache, and the hub cannot be reached (one try, 5 s timeout)")
    assert seconds < 20  # start-up and one refused connection, not a round of retries


def test_offline_the_hub_is_not_asked(tmp_path):
    with socket.socket() as hub:  # a loopback "hub" that takes connections and never answers
        hub.bind(("127.0.0.1", 0))
        hub.listen(8)
        hub.settimeout(0.0)
        proc, seconds = run_evaluator(tmp_path / "hf", tmp_path, "--profile", "cpu", "--search", "none",
                                      "--dataset", "someone/missing-dataset",
                                      extra_env={"HF_ENDPOINT": f"http://127.0.0.1:{hub.getsockname()[1]}"})
        with pytest.raises(BlockingIOError):
            hub.accept()  # nobody knocked
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert proc.stderr.strip().endswith("and the hub is switched off (HF_HUB_OFFLINE / HF_DATASETS_OFFLINE)")
    assert seconds < 20

"""The whole mini benchmark with a hosted VLM (full tier): `--profile cpu --model-name gpt-5-mini
--set vlm_base_url=URL`, the laptop's search and reranker, against a stand-in that follows OpenAI's
documented rules for reasoning models (testkit/hosted_standin.py). Both splits complete with no
rejected request, no stage fault, no empty reply, and the key in no output file.
(docs/models.md's tokens per turn come from `python -m benchmarks.hosted_tokens`, the same run.)
"""
from __future__ import annotations

import json

import pytest

from testkit.hosted_standin import STAND_IN_KEY, StandInProvider


@pytest.mark.parametrize("dataset_type", ["single-turn", "multi-turn"])
def test_the_mini_benchmark_through_openais_rules(dataset_type, tmp_path, monkeypatch):
    import local_evaluation

    monkeypatch.setenv("OPENAI_API_KEY", STAND_IN_KEY)
    monkeypatch.setenv("HF_DATASETS_CACHE", str(tmp_path / "hf-datasets"))
    out = tmp_path / dataset_type
    with StandInProvider("openai") as server:
        local_evaluation.main(["--profile", "cpu", "--model-name", "gpt-5-mini", "--set", f"vlm_base_url={server.url}",
                               "--dataset-type", dataset_type, "--eval-model", "None", "--output-dir", str(out),
                               "--no_progress", "--display-conversations", "0"])
    summary = json.loads((out / "run_summary.json").read_text())
    assert server.rejected() == [], [e.reason for e in server.rejected()][:3]
    assert server.empty_replies() == []
    assert summary["complete"] and summary["turns_answered"] == summary["turns_expected"]
    assert summary["stage_fault_turns"] == 0 and summary["agent_error_turns"] == 0
    assert summary["tokens"]["empty_replies"] == 0 and summary["refused_turns"] == 0
    assert summary["tokens"]["total"]["requests"] == len(server.posts())
    for path in out.rglob("*"):
        if path.is_file():
            assert STAND_IN_KEY.encode() not in path.read_bytes(), path

"""The whole mini benchmark with a hosted VLM (full tier): `--profile cpu --model-name gpt-5-mini
--set vlm_base_url=URL`, the laptop's search and reranker, against a stand-in that follows OpenAI's
documented rules for reasoning models (testkit/hosted_standin.py); Claude and Gemini on the
single-turn split's first 24 sessions (three batches: every stage's request) against theirs. Every run completes with no rejected request, no stage fault,
no empty reply, and the key in no output file.
(docs/models.md's tokens per turn come from `python -m benchmarks.hosted_tokens`, the same run.)
"""
from __future__ import annotations

import json

import pytest

from testkit.hosted_standin import STAND_IN_KEY, StandInProvider

# The provider's rules show on every request, so only OpenAI's run takes the whole single-turn
# split; the multi-turn run takes the split's first 11 conversations (37 turns), Claude and Gemini
# the first 24 single-turn sessions, to keep CI's time in bounds.
WHOLE = []
FIRST_24 = ["--num-conversations", "24", "--exact-conversations"]
RUNS = [("openai", "gpt-5-mini", "single-turn", WHOLE),
        ("openai", "gpt-5-mini", "multi-turn", ["--num-conversations", "11", "--exact-conversations"]),
        ("anthropic", "claude-sonnet-4-6", "single-turn", FIRST_24),
        ("gemini", "gemini-2.5-flash", "single-turn", FIRST_24)]


@pytest.mark.parametrize("dialect, model, dataset_type, conversations", RUNS,
                         ids=lambda v: v if isinstance(v, str) else (v[1] if v else "all"))
def test_the_mini_benchmark_through_the_providers_rules(dialect, model, dataset_type, conversations, tmp_path,
                                                        monkeypatch):
    import local_evaluation

    for variable in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY"):
        monkeypatch.setenv(variable, STAND_IN_KEY)
    monkeypatch.setenv("HF_DATASETS_CACHE", str(tmp_path / "hf-datasets"))
    out = tmp_path / dataset_type
    with StandInProvider(dialect) as server:
        local_evaluation.main(["--profile", "cpu", "--model-name", model, "--set", f"vlm_base_url={server.url}",
                               "--dataset-type", dataset_type, "--eval-model", "None", "--output-dir", str(out),
                               "--no_progress", "--display-conversations", "0", *conversations])
    summary = json.loads((out / "run_summary.json").read_text())
    assert server.rejected() == [], [e.reason for e in server.rejected()][:3]
    assert server.empty_replies() == []
    assert summary["complete"] and summary["turns_answered"] == summary["turns_expected"]
    assert summary["stage_fault_turns"] == 0 and summary["agent_error_turns"] == 0, summary["stage_faults"]
    assert summary["tokens"]["empty_replies"] == 0 and summary["refused_turns"] == 0
    # requests the batch deadline left no time to send (a loaded machine) are counted but not sent
    assert 0 < len(server.posts()) <= summary["tokens"]["total"]["requests"]
    for path in out.rglob("*"):
        if path.is_file():
            assert STAND_IN_KEY.encode() not in path.read_bytes(), path

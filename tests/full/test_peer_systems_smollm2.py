"""QA-Dragon and SAM-RAG on the cpu profile's real models (SmolLM2, MiniLM, perception, the mini
benchmark's indices), through local_evaluation.py in process: a single-turn batch and two
multi-turn conversations each, within the 10 s-per-turn budget, every turn traced with the
system's own steps."""
from __future__ import annotations

import json

import pytest

QA_DRAGON_STEPS = {"domain", "draft"}  # always asked: the pre-answer runs on every turn
SAM_RAG_STEPS = {"summarize", "retrieve", "rank"}


# Each system on one split (the other split is covered by tools.compare_systems' whole-benchmark
# run, docs/benchmarks.md): QA-Dragon on single-turn turns, SAM-RAG on conversations with history.
@pytest.mark.parametrize("system, branches, first_steps, dataset_type, conversations", [
    ("qa_dragon", {"direct_output", "search_verify", "rag", "error"}, QA_DRAGON_STEPS, "single-turn", 8),
    ("sam_rag", {"supported", "supported_after_regeneration", "unsupported", "not_useful", "not_checked",
                 "abstained", "error"}, SAM_RAG_STEPS, "multi-turn", 2),
])
def test_a_peer_system_answers_the_mini_benchmark_within_budget(system, branches, first_steps, dataset_type,
                                                                conversations, tmp_path, monkeypatch):
    import local_evaluation

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    out = tmp_path / system
    local_evaluation.main(["--dataset-type", dataset_type, "--profile", "cpu", "--preset", system,
                           "--num-conversations", str(conversations), "--exact-conversations", "--eval-model", "None",
                           "--output-dir", str(out), "--no_progress", "--display-conversations", "0"])
    summary = json.loads((out / "run_summary.json").read_text())
    assert summary["over_budget_count"] == 0 and summary["agent_error_turns"] == 0
    assert summary["agent_summary"]["system"] == system
    traces = [json.loads(line) for line in (out / "traces.jsonl").read_text().splitlines()]
    assert len(traces) == summary["turns_answered"] > 0
    for trace in traces:
        assert trace["system"] == system and trace["branch"] in branches
        assert trace["funnel"] and all(isinstance(v, bool) for v in trace["funnel"].values())
        assert trace["perception"] is not None  # SmolLM2 cannot see: the picture reaches it as text
    timed = set().union(*(t["stage_ms"] for t in traces))
    assert first_steps <= timed

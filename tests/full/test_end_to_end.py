"""The real chain on the cpu profile (SmolLM2, MiniLM, the mini benchmark's offline indices)
through local_evaluation.py, single-turn and multi-turn: scores and a full trace for every turn."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

import local_evaluation
from agents.profiles import REPO_ROOT
from evaluator.scoring.scores import SCORE_KEYS
from testkit.in_process import run_main

TRACE_FIELDS = {
    "preset", "needs_external", "is_real_time", "router_raw", "summary", "retrieval_query", "retrieved",
    "web_query", "chunks", "theta", "kept_chunks", "context", "retrieval_score", "rag_answer", "direct_answer",
    "consistent", "consistency_raw", "cov_confidence", "cov_raw", "branch", "final_answer", "stage_ms",
    "deadline_cut", "errors",
}


@pytest.mark.parametrize("dataset_type, conversations, in_process", [("single-turn", 5, False), ("multi-turn", 2, True)])
def test_cpu_profile_runs_the_full_chain(tmp_path, dataset_type, conversations, in_process):
    """The single-turn run as a user starts it (a subprocess); the multi-turn one in this process
    (testkit/in_process.py), which spares a second interpreter start-up."""
    out = tmp_path / "out"
    argv = ["--profile", "cpu", "--dataset-type", dataset_type, "--num-conversations", str(conversations),
            "--exact-conversations", "--eval-model", "None", "--output-dir", str(out), "--no_progress"]
    offline = dict(HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    if in_process:
        proc = run_main(local_evaluation.main, argv, env=offline)
    else:
        env = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY" and not k.startswith("CRUISE_")}
        proc = subprocess.run([sys.executable, "local_evaluation.py", *argv], cwd=REPO_ROOT, env={**env, **offline},
                              capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    scores = json.loads((out / "scores_dictionary.json").read_text())
    assert set(SCORE_KEYS) <= set(scores["all"]) and scores["all"]["total"] >= conversations
    answers = [json.loads(line) for line in (out / "answers.jsonl").read_text().splitlines()]
    traces = {json.loads(line)["interaction_id"]: json.loads(line) for line in (out / "traces.jsonl").read_text().splitlines()}
    assert {a["interaction_id"] for a in answers} == set(traces)
    for a in answers:
        trace = traces[a["interaction_id"]]
        assert TRACE_FIELDS <= set(trace), TRACE_FIELDS - set(trace)
        assert trace["preset"] == "full" and a["raw_answer"] == trace["final_answer"]
        if trace["chunks"]:
            assert all(0.0 <= c["score"] <= 1.0 for c in trace["chunks"])
    # Image search ran through the real pipeline for at least one turn that needed it.
    assert any(item["source"] == "image" for t in traces.values() for item in t["retrieved"])
    summary = json.loads((out / "run_summary.json").read_text())
    assert summary["engine_calls_per_batch"] and max(summary["engine_calls_per_batch"]) <= 6
    # Evidence coverage, recomputed here from the traces; the shipped benchmark adds answer recall.
    coverage = summary["evidence_coverage"]
    assert coverage["turns"] == len(answers)
    assert coverage["retrieved_share"] == round(sum(bool(t["retrieved"]) for t in traces.values()) / len(answers), 4)
    assert coverage["context_share"] == round(sum(bool(t["kept_chunks"]) for t in traces.values()) / len(answers), 4)
    assert coverage["mean_kept_chunks"] <= 3
    assert {"answer_recall_kg", "answer_recall_web", "answer_recall_kg_web"} <= set(coverage)
    assert "Evidence coverage" in proc.stdout

"""Offline calibration replays Algorithm 1 over saved traces with other thresholds."""
from __future__ import annotations

import json

import pandas as pd

from evaluation.calibrate import PAPER, calibrate, load_turns, main, rag_correctness, replay


def trace(iid, rag, *, context=True, consistent=True, cov=0.95, real_time=False, s_ret=0.8, preset="full"):
    return {"interaction_id": iid, "preset": preset, "rag_answer": rag, "context": "[Info 1] x" if context else "",
            "consistent": consistent, "cov_confidence": cov, "is_real_time": real_time, "retrieval_score": s_ret}


def write_run(folder, traces, truths):
    folder.mkdir()
    (folder / "traces.jsonl").write_text("\n".join(json.dumps(t) for t in traces) + "\n")
    pd.DataFrame([{"interaction_id": i, "query": f"q {i}", "ground_truth": g} for i, g in truths.items()]).to_csv(
        folder / "turn_evaluation_results_all.csv", index=False)


TRACES = [
    trace("a", "Camden", cov=0.8),  # correct, but below the paper's tau_low
    trace("b", "Paris", cov=0.8),  # correct
    trace("c", "Rome", cov=0.7),  # wrong: rejected unless tau_low <= 0.7
    trace("d", "Oslo", context=False, cov=1.0),  # wrong, no context, full confidence
    trace("e", "Lima", real_time=True, s_ret=0.3, cov=1.0),  # correct, real-time, weak retrieval
]
TRUTHS = {"a": "camden", "b": "paris", "c": "milan", "d": "bergen", "e": "lima"}


def test_replay_with_the_paper_thresholds():
    correct = {"a": True, "b": True, "c": False, "d": False, "e": True}
    row = replay([dict(t) for t in TRACES], correct, **PAPER)
    # a, b below 0.9; c below; d accepted (no context, 1.0) and wrong; e blocked by tau_ret.
    assert (row["correct"], row["hallucination"], row["miss"]) == (0, 1, 4)
    assert row["truthfulness"] == (2 * 0 + 4) / 5 - 1


def test_grid_finds_the_best_thresholds(tmp_path):
    write_run(tmp_path / "run", TRACES, TRUTHS)
    turns = load_turns(tmp_path / "run")
    correct = rag_correctness(turns, judge=None)  # exact match (case-insensitive) only
    assert correct == {"a": True, "b": True, "c": False, "d": False, "e": True}
    best = calibrate(turns, correct)[0]
    # Accept a, b (tau_low <= 0.8, > 0.7), reject d (tau_high > 1.0), accept e (tau_ret <= 0.3).
    assert (best["correct"], best["hallucination"], best["miss"]) == (3, 0, 2)
    assert 0.7 < best["tau_low"] <= 0.8 and best["tau_high"] > 1.0 and best["tau_ret"] <= 0.3


def test_cli_writes_calibration_json(tmp_path, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    write_run(tmp_path / "run", TRACES, TRUTHS)
    assert main([str(tmp_path / "run"), "--eval-model", "None"]) == 0
    saved = json.loads((tmp_path / "run" / "calibration.json").read_text())
    assert saved["best"]["truthfulness"] > saved["paper"]["truthfulness"]


def test_switched_off_stages_pass_as_the_agent_treats_them():
    t = trace("x", "Paris", consistent=None, cov=None, preset="no_cov_no_sc")
    assert replay([t], {"x": True}, **PAPER)["correct"] == 1
    t_full = trace("x", "Paris", consistent=None, cov=None, preset="full")
    assert replay([t_full], {"x": True}, **PAPER)["miss"] == 1

"""Calibrate Algorithm 1's thresholds offline, from a finished run's traces; no model runs again.

    python -m evaluation.calibrate outputs/single-turn [--eval-model gpt-4o-mini] [--eval-base-url URL]

Every trace keeps the RAG answer a', the router's real-time label, whether there was context,
the consistency verdict, the CoV confidence and S_ret. The judge (cached, as in the evaluation)
decides whether each a' is correct; then every (tau_ret, tau_low, tau_high) of a grid is replayed
through the finalizer and scored with the single-turn truthfulness (2*correct + miss)/n - 1.
Multi-turn early stopping is not replayed. The best settings go to calibration.json, for use as
`--set tau_ret=... --set tau_low=... --set tau_high=...`.
"""
from __future__ import annotations

import argparse
import itertools
import json
from pathlib import Path

from agents.base_agent import IDK_ANSWER
from agents.config import PRESETS, CruiseConfig
from agents.cruise.stages.s9_finalize import decide_from_trace
from evaluation.judge import DEFAULT_EVAL_MODEL, Judge, JudgeItem, find_api_key
from evaluation.runner import read_jsonl
from evaluation.scoring import is_exact_match, is_miss, needs_judge

GRID = {
    "tau_ret": [round(0.1 * i, 1) for i in range(11)],
    "tau_low": [0.5, 0.6, 0.7, 0.8, 0.9, 1.0],
    "tau_high": [0.8, 0.9, 1.0, 1.01],  # 1.01: never accept an answer without context
}
PAPER = {"tau_ret": 0.5, "tau_low": 0.9, "tau_high": 1.0}


def load_turns(run_dir: Path) -> list[dict]:
    """Traces joined with their questions and ground truths (from the run's answers file)."""
    import pandas as pd

    truth = pd.read_csv(run_dir / "turn_evaluation_results_all.csv", dtype=str).set_index("interaction_id")
    turns = []
    for trace in read_jsonl(run_dir / "traces.jsonl"):
        iid = trace.get("interaction_id")
        if iid in truth.index and trace.get("rag_answer") is not None:
            turns.append({**trace, "query": truth.at[iid, "query"], "ground_truth": truth.at[iid, "ground_truth"]})
    return turns


def rag_correctness(turns: list[dict], judge: Judge | None) -> dict[str, bool]:
    """interaction_id -> is the RAG answer correct (exact match, else the judge, else False)."""
    correct = {t["interaction_id"]: is_exact_match(t["rag_answer"], t["ground_truth"]) for t in turns}
    asking = [t for t in turns if needs_judge(t["rag_answer"], t["ground_truth"])]
    if judge is not None and asking:
        items = [JudgeItem(t["interaction_id"], t["query"], t["ground_truth"], t["rag_answer"]) for t in asking]
        for key, outcome in judge.judge_all(items).items():
            correct[key] = bool(outcome.verdict)
    return correct


def replay(turns: list[dict], correct: dict[str, bool], tau_ret: float, tau_low: float, tau_high: float) -> dict:
    right = wrong = missed = 0
    thresholds = dict(tau_ret=tau_ret, tau_low=tau_low, tau_high=tau_high)
    for t in turns:
        # The agent's own finalizer, with the preset the turn ran under and the trial thresholds.
        cfg = CruiseConfig(**PRESETS.get(t.get("preset"), {}), **thresholds)
        answer = decide_from_trace(t, cfg).answer
        if answer == IDK_ANSWER or is_miss(answer):
            missed += 1
        elif correct[t["interaction_id"]]:
            right += 1
        else:
            wrong += 1
    n = max(len(turns), 1)
    return {"tau_ret": tau_ret, "tau_low": tau_low, "tau_high": tau_high, "correct": right,
            "hallucination": wrong, "miss": missed, "truthfulness": (2 * right + missed) / n - 1}


def calibrate(turns: list[dict], correct: dict[str, bool]) -> list[dict]:
    rows = [replay(turns, correct, *values) for values in itertools.product(*GRID.values())]
    # Best truthfulness first; among equals, prefer the stricter settings (fewer answers risked).
    return sorted(rows, key=lambda r: (-r["truthfulness"], -r["tau_low"], -r["tau_high"], -r["tau_ret"]))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m evaluation.calibrate", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("run_dir", type=Path, help="output folder of a local_evaluation.py run (full preset)")
    parser.add_argument("--eval-model", default=DEFAULT_EVAL_MODEL, help="'None': exact match only")
    parser.add_argument("--eval-base-url", default=None)
    parser.add_argument("--top", type=int, default=10)
    args = parser.parse_args(argv)

    turns = load_turns(args.run_dir)
    if not turns:
        raise SystemExit(f"{args.run_dir} holds no traces with RAG answers to calibrate on")
    key = find_api_key()
    judge = None
    if args.eval_model.lower() != "none" and (key or args.eval_base_url):
        judge = Judge(args.eval_model, args.eval_base_url, key)
    else:
        print("no judge: only exact matches count as correct RAG answers")
    correct = rag_correctness(turns, judge)
    rows = calibrate(turns, correct)
    paper = replay(turns, correct, **PAPER)
    print(f"{len(turns)} turns; the paper's thresholds, then the best {args.top} of {len(rows)} settings:")
    print("tau_ret tau_low tau_high  correct halluc  miss  truthfulness")
    for r in [paper] + rows[: args.top]:
        print(f"{r['tau_ret']:7.1f} {r['tau_low']:7.2f} {r['tau_high']:8.2f}  {r['correct']:7d} {r['hallucination']:6d} "
              f"{r['miss']:5d}  {r['truthfulness']:+.4f}")
    (args.run_dir / "calibration.json").write_text(json.dumps({"best": rows[0], "paper": paper, "grid": rows}, indent=1))
    print(f"wrote {args.run_dir / 'calibration.json'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""From saved answers to the output files: judge, score, write (`finalize`).

Works only from the output folder (answers.jsonl, judgments.jsonl, batches.jsonl, traces.jsonl,
run_config.json), so the same code finishes a normal run, a resumed one, `--rejudge` (no agent,
no dataset) and `merge` of shard folders (harness/merge.py). The steps each live apart: the
verdicts (harness/judging.py: with no LLM judge, turns whose data carries accepted answer forms
are decided by the offline lexical judge, evaluator/scoring/lexical_judge.py), the rows, scores
and the official and extended files (harness/score_files.py), the turns left without a verdict
(harness/unjudged.py), the deadline's cuts (harness/deadline_cuts.py), the faults
(harness/faults.py) and run_summary.json (harness/run_summary.py).
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from evaluator.harness.deadline_cuts import deadline_cut_report
from evaluator.harness.faults import systemic_fault
from evaluator.harness.judging import judge_turns, judged_by
from evaluator.harness.run_record import RunRecord, read_run_record, record_run_judge
from evaluator.harness.run_summary import (
    run_notices,
    summary_of_judging,
    summary_of_run,
    summary_of_scores,
    summary_of_turns,
)
from evaluator.harness.runner import BATCHES, TRACES, latest_per_batch, latest_per_turn, read_jsonl, saved_answers
from evaluator.harness.score_files import build_rows, score_turns, write_diagnostics, write_scores
from evaluator.harness.unjudged import unjudged_report
from evaluator.scoring.judge import Judge, judges_of_label
from evaluator.scoring.official_judge import OfficialJudge
from evaluator.scoring.rules import RuleSet, rule_set


@dataclass
class Results:
    rows_all: list[dict]
    rows_ego: list[dict]
    scores: dict
    summary: dict


def finalize(output_dir: Path, judge: Judge | None, *, rules: RuleSet | None = None, progress: bool = True,
             notices: list[str] | None = None, official: OfficialJudge | None = None) -> Results:
    """Judge, score and write the folder's outputs. `official`: the judge prompt read with
    --judge-prompt-from (or the run's own), against which a scoring without a judge checks the
    verdicts saved in the folder before it keeps them."""
    output_dir = Path(output_dir)
    found = read_run_record(output_dir)
    run = found or RunRecord()  # a folder without a record (made elsewhere) is scored under the defaults
    rules = rules or rule_set(run.rules)
    records = list(saved_answers(output_dir).values())
    if judge is not None:  # a rejudge's (or merge's) judge becomes the run's: a later --rejudge without flags asks it again
        found = record_run_judge(output_dir, found, judge.model, judge.base_url)
    verdicts, replies, judge_counts = judge_turns(records, output_dir, judge, progress, rules, official)
    kept_judges = judge_counts.get("kept_verdict_judges") or {}
    if len(kept_judges) == 1:  # no judge now: the scores rest on the saved verdicts, so their judge is the run's
        model, base_urls, _ = judges_of_label(next(iter(kept_judges)))
        found = record_run_judge(output_dir, found, model, base_urls[-1])
    scored = score_turns(build_rows(records, verdicts, replies, rules), rules)
    judged = judged_by(judge, judge_counts, records, scored.rows, rules, official)
    write_scores(output_dir, scored, judged, rules)
    unjudged = unjudged_report(scored.rows, {iid for iid, verdict in verdicts.items() if verdict is None}, rules,
                               output_dir, judge_counts, llm_judge=judge is not None,
                               judge_model=judge.model if judge else None, judge_base_url=judge.base_url if judge else None)
    traces = latest_per_turn(read_jsonl(output_dir / TRACES), {r["interaction_id"] for r in records})
    cut = deadline_cut_report(scored.rows, traces, rules)
    notices = run_notices(list(notices or []), scored, judged, judge_counts, unjudged, cut, run)
    fault = systemic_fault(records, traces)  # every turn (or every turn of one stage) faulted
    notices = ([fault["notice"]] if fault else []) + notices
    diagnostics = write_diagnostics(output_dir, records, scored.counted_all, traces, run.oracle)
    batches = latest_per_batch(read_jsonl(output_dir / BATCHES))
    summary = {
        **summary_of_run(run, rules, batches),
        **summary_of_judging(judged, judge_counts, unjudged),
        **summary_of_turns(run, records, traces, cut, batches),
        **summary_of_scores(scored, records, traces, run, diagnostics),
        "systemic_fault": fault,
        "notices": notices,
    }
    (output_dir / "run_summary.json").write_text(json.dumps(summary, indent=2, default=str))
    # traces.jsonl is one of the five outputs even when the agent reports nothing
    (output_dir / TRACES).touch()
    return Results(scored.counted_all, scored.counted_ego, scored.scores, summary)

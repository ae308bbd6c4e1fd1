"""The turns' rows, their scores and the files that hold them.

The official files carry exactly what the official evaluator writes:
turn_evaluation_results_all.csv and turn_evaluation_results_ego.csv (its 18 columns, the flags
before the multi-turn cut, rows sorted by session and turn) and scores_dictionary.json (keys
"all" and "ego", its 11 scores; NaN rates for an empty subset; beside them our own key
"intervals_95", the 95% bootstrap intervals of evaluator.scoring.intervals, and "judge" where
the offline lexical judge decided turns). Our own: turn_evaluation_results_all_extended.csv /
_ego_extended.csv (the official columns holding the flags the scores count, then
is_hallucination, multi_turn_conversation_score, after_two_wrong, raw_answer, judge_reply,
error), under `--rules crag-mm` response.jsonl (the official CSVs' first 13 columns), and on a
dataset with stage labels diagnostics.json (evaluator/scoring/diagnostics.py).
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from evaluator.harness.judging import JudgedBy
from evaluator.harness.runner import DIAGNOSTICS, append_jsonl
from evaluator.scoring.diagnostics import diagnose
from evaluator.scoring.intervals import method, score_intervals
from evaluator.scoring.lexical_judge import OFFLINE_JUDGE_LABEL
from evaluator.scoring.rules import RuleSet
from evaluator.scoring.scores import (
    BASE_COLUMNS,
    EXTENDED_TURN_COLUMNS,
    LABEL_COLUMNS,
    LABEL_NAME_COLUMNS,
    OFFICIAL_TURN_COLUMNS,
    score_rows,
    verdict_fields,
)

BREAKDOWN_COLUMNS = LABEL_COLUMNS
# scores_dictionary.json's key of our own beside the official "all" and "ego": the 95% intervals
INTERVALS_KEY = "intervals_95"
OFFICIAL_FILES = ("turn_evaluation_results_all.csv", "turn_evaluation_results_ego.csv", "scores_dictionary.json")
EXTENDED_FILES = ("turn_evaluation_results_all_extended.csv", "turn_evaluation_results_ego_extended.csv")


def build_rows(records: list[dict], verdicts: dict, replies: dict, rules: RuleSet) -> list[dict]:
    """One row per turn, sorted by (session_id, turn_idx) as the official files are: the 18
    official columns with the flags before the multi-turn cut, plus raw_answer, judge_reply,
    error and the label names for the extended files."""
    rows = []
    for record in sorted(records, key=lambda r: (r["session_id"], r["turn_idx"])):
        iid = record["interaction_id"]
        row = {c: record.get(c) for c in BASE_COLUMNS}
        row.update(verdict_fields(record["agent_response"], record["ground_truth"], verdicts.get(iid),
                                  rules, replies.get(iid)))
        row.update(raw_answer=record.get("raw_answer"), judge_reply=replies.get(iid), error=record.get("error"))
        row.update({c: record.get(c) for c in LABEL_NAME_COLUMNS})  # absent in runs from before them
        row["abstain_expected"] = record.get("abstain_expected")  # for the offline judge's abstention counts
        rows.append(row)
    return rows


def write_csv(rows: list[dict], path: Path, columns: list[str]) -> None:
    import pandas as pd

    pd.DataFrame(rows, columns=columns).to_csv(path, index=False)


@dataclass
class Scored:
    """The turns' rows (official columns and our extras), the rows the scores count (the flags
    after the multi-turn cut), the scores and their intervals, for all turns and the egocentric."""
    rows: list[dict]
    ego: list[dict]
    counted_all: list[dict]
    counted_ego: list[dict]
    scores: dict
    intervals: dict


def score_turns(rows: list[dict], rules: RuleSet) -> Scored:
    ego = [r for r in rows if r["is_ego"]]
    counted_all, scores_all = score_rows(rows, rules)
    counted_ego, scores_ego = score_rows(ego, rules)
    intervals = {**method(), "all": score_intervals(counted_all), "ego": score_intervals(counted_ego)}
    return Scored(rows, ego, counted_all, counted_ego, {"all": scores_all, "ego": scores_ego}, intervals)


def write_scores(output_dir: Path, scored: Scored, judged: JudgedBy, rules: RuleSet) -> None:
    """The official files (CSVs, scores_dictionary.json), the extended CSVs and, where the rule
    set's harness writes one, its file of generated turns."""
    write_csv(scored.rows, output_dir / OFFICIAL_FILES[0], OFFICIAL_TURN_COLUMNS)
    write_csv(scored.ego, output_dir / OFFICIAL_FILES[1], OFFICIAL_TURN_COLUMNS)
    # the official keys as they are; intervals and an offline judge's label under keys of their own
    written = {**scored.scores, INTERVALS_KEY: scored.intervals}
    if judged.offline:
        written["judge"] = {"name": OFFLINE_JUDGE_LABEL, "official": False, **judged.offline_figures}
    (output_dir / OFFICIAL_FILES[2]).write_text(json.dumps(written, indent=2))
    write_csv(scored.counted_all, output_dir / EXTENDED_FILES[0], EXTENDED_TURN_COLUMNS)
    write_csv(scored.counted_ego, output_dir / EXTENDED_FILES[1], EXTENDED_TURN_COLUMNS)
    if rules.turn_data_file:
        path = output_dir / rules.turn_data_file
        path.unlink(missing_ok=True)
        append_jsonl(path, [{c: row[c] for c in BASE_COLUMNS} for row in scored.rows])


def write_diagnostics(output_dir: Path, records: list[dict], counted_all: list[dict], traces: list[dict],
                      oracle: str | None) -> dict | None:
    """diagnostics.json: each stage against the dataset's human stage labels, where it has them
    (none: no file)."""
    diagnostics = diagnose(records, counted_all, traces, oracle)
    if diagnostics:
        (output_dir / DIAGNOSTICS).write_text(json.dumps(diagnostics, indent=2))
    else:
        (output_dir / DIAGNOSTICS).unlink(missing_ok=True)
    return diagnostics

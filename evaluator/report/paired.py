"""Paired comparison of two runs over the same turns: what `python -m evaluator.report A B`
prints and compare.html shows for each run against the first.

Two runs are compared only when the comparison means something: the same turns (interaction
ids, in the same conversations) scored under the same rule set. Otherwise the pair is refused with
one line saying why. A different judge is flagged, not refused: rejudging the same answers is a
legitimate study, but then the flips are the judge's, and the line says so. So are turns the
judge did not decide (run_summary.json's unjudged_turns): the official scores
count them as hallucinations, and the flag keeps them apart from wrong answers.

For a compared pair: each score of both runs, the difference B - A and its paired-bootstrap 95%
interval (evaluator.scoring.intervals.paired_differences), the flip table (each turn's outcome
in A against its outcome in B) and the turns whose outcome changed.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field

from evaluator.scoring.intervals import paired_differences
from evaluator.scoring.official_judge import origin_identity, origin_text
from evaluator.scoring.rules import DEFAULT_RULES

OUTCOMES = ("correct", "missed", "hallucinated")
JUDGE_IDENTITY = ("name", "official")  # the keys of scores_dictionary.json's "judge" that name the judge


def outcome_of(row: dict) -> str:
    if row["is_correct"]:
        return "correct"
    return "missed" if row["is_miss"] else "hallucinated"


@dataclass
class PairedComparison:
    a: str  # the runs' labels
    b: str
    refused: str | None = None  # why the pair is not compared (one line), or None
    flags: list[str] = field(default_factory=list)  # compared, but read with care
    differences: dict = field(default_factory=dict)  # "all" / "ego" -> paired_differences(...)
    flips: dict = field(default_factory=dict)  # (outcome in A, outcome in B) -> turns
    flipped: list[dict] = field(default_factory=list)  # turns whose outcome changed, session order

    def flip_rows(self) -> list[dict]:
        """The flip table as rows: every change first (most turns first), then the unchanged."""
        rows = [{"a": a, "b": b, "turns": self.flips.get((a, b), 0)} for a in OUTCOMES for b in OUTCOMES]
        return sorted(rows, key=lambda r: (r["a"] == r["b"], -r["turns"]))


def rules_of(run) -> str:
    return run.summary.get("rules") or run.record.rules


def judge_line(summary: dict) -> str:
    """Which judge gave a run's scores, as every place that shows them says it: the judge (model,
    endpoint, protocol), where its prompt came from and the rule set."""
    if "judge_prompt" in summary:
        prompt = summary["judge_prompt"] or "none (no LLM judge)"
    else:  # a run summarised before the record existed: every LLM judge then used our wording
        prompt = origin_text(None) if " @ " in str(summary.get("judge", "")) else "none (no LLM judge)"
    return f"judge {summary.get('judge', 'unknown')}; judge prompt {prompt}; rules {summary.get('rules') or DEFAULT_RULES}"


def prompt_of(run) -> dict | None:
    """The judge prompt's origin record (None: this package's wording, or no LLM judge)."""
    return run.summary.get("judge_prompt_origin") or run.record.judge_prompt


def judge_of(run) -> str:
    """The judge as the run recorded it: its label in run_summary.json, with the model and endpoint
    of its record (run_config.json) and any judge block the scores dictionary carries."""
    parts = [str(run.summary.get("judge", "unknown")), str(run.record.judge_model),
             str(run.record.judge_base_url)]
    if isinstance(run.scores.get("judge"), dict):
        # which judge it was, not what it found: the block also counts the run's own answers
        # (abstain_expected_answered, ...), which differ between any two agents
        identity = {k: v for k, v in run.scores["judge"].items() if k in JUDGE_IDENTITY}
        parts.append(json.dumps(identity, sort_keys=True))
    return " | ".join(parts)


def refusal(a, b) -> str | None:
    """Why runs a and b cannot be compared turn by turn, in one line, or None."""
    turns_a = {r["interaction_id"] for r in a.rows}
    turns_b = {r["interaction_id"] for r in b.rows}
    if turns_a != turns_b:
        return (f"not compared: {b.label} and {a.label} are over different turns ({len(turns_b - turns_a)} only in "
                f"{b.label}, {len(turns_a - turns_b)} only in {a.label})")
    sessions_a = {r["interaction_id"]: r["session_id"] for r in a.rows}
    if any(sessions_a[r["interaction_id"]] != r["session_id"] for r in b.rows):
        return f"not compared: {b.label} and {a.label} put the same turns in different conversations"
    if rules_of(a) != rules_of(b):
        return f"not compared: {b.label} was scored under --rules {rules_of(b)}, {a.label} under {rules_of(a)}"
    return None


def compare_pair(a, b, link=None) -> PairedComparison:
    """B against A. `link(run, row)` gives a turn's page address (or None) for the flipped list."""
    pair = PairedComparison(a.label, b.label, refused=refusal(a, b))
    if pair.refused:
        return pair
    if judge_of(a) != judge_of(b):
        pair.flags.append(f"judged differently ({b.label}: {b.summary.get('judge')}; {a.label}: "
                          f"{a.summary.get('judge')}): flips may be the judge's, not the agent's")
    if origin_identity(prompt_of(a)) != origin_identity(prompt_of(b)):
        pair.flags.append(f"not comparable: judged with different prompts ({b.label}: {origin_text(prompt_of(b))}; "
                          f"{a.label}: {origin_text(prompt_of(a))}): the scores differ by the judge's words too")
    for run in (a, b):
        # unjudged_turns holds the judge's failures too; a run scored before it did counted them apart
        undecided = max(int(run.summary.get("judge_failures") or 0), int(run.summary.get("unjudged_turns") or 0))
        if undecided:
            pair.flags.append(f"{run.label}: {undecided} turns the judge did not decide (failed or not asked) "
                              f"count as hallucinated; a flip on such a turn is not the agent's")
    try:
        pair.differences = {
            "all": paired_differences(a.rows, b.rows),
            "ego": paired_differences([r for r in a.rows if r["is_ego"]], [r for r in b.rows if r["is_ego"]]),
        }
    except ValueError:  # the same turns, but not the same egocentric ones
        return PairedComparison(a.label, b.label, refused=f"not compared: {b.label} and {a.label} mark different "
                                                           f"turns egocentric")
    rows_b = {r["interaction_id"]: r for r in b.rows}
    for row_a in sorted(a.rows, key=lambda r: (r["session_id"], r["turn_idx"])):
        row_b = rows_b[row_a["interaction_id"]]
        key = (outcome_of(row_a), outcome_of(row_b))
        pair.flips[key] = pair.flips.get(key, 0) + 1
        if key[0] != key[1]:
            pair.flipped.append({
                "interaction_id": row_a["interaction_id"], "session_id": row_a["session_id"],
                "turn_idx": row_a["turn_idx"], "query": row_a.get("query"), "ground_truth": row_a.get("ground_truth"),
                "a_outcome": key[0], "b_outcome": key[1], "a_answer": row_a.get("agent_response"),
                "b_answer": row_b.get("agent_response"),
                "a_link": link(a, row_a) if link else None, "b_link": link(b, row_b) if link else None})
    return pair


def compare_to_first(runs: list, link=None) -> list[PairedComparison]:
    """Each run after the first against the first."""
    return [compare_pair(runs[0], other, link) for other in runs[1:]]

"""Turns left without a verdict: said wherever a score is shown, never silent.

A turn the judge had to decide (neither a miss nor an exact match) and did not decide counts as
not correct, so as a hallucination. That is the official arithmetic, kept so that the numbers
stay comparable: facebookresearch/CRAG-MM's `evaluation/llm_judge.py` returns None once its
3 attempts have failed (it prints each failure in red and goes on), and `evaluator.py` then
leaves `is_correct` at the exact-match flag, False. What we add is that the run says so where a
reader looks: how many turns lack a verdict and why, the scores with those turns left out, and
the command that judges them again. `run_summary.json` holds it under "unjudged" (with a notice),
the console prints it under the scores table, report.html in a banner, and a run whose LLM judge
left any turn undecided exits with UNJUDGED_EXIT_CODE once everything is written.

The left-out scores are `subset_scores` over the remaining turns: each conversation keeps its other
turns in order and the multi-turn rules apply to them as to any conversation.
"""
from __future__ import annotations

import shlex
from pathlib import Path

from evaluator.scoring.rules import RuleSet
from evaluator.scoring.scores import shown_score, subset_scores

# The exit code of a run (or --rejudge, or merge) whose LLM judge left turns without a verdict:
# the scores are written, but counted with those turns as not correct. 1 and 2 are taken
# (a refused start, a bad flag).
UNJUDGED_EXIT_CODE = 3
# what the notice and the banner show of the left-out scores
SHOWN_SCORES = (("accuracy", "accuracy", "{:.1%}"), ("hallucination_rate", "hallucination rate", "{:.1%}"),
                ("missing", "missing", "{:.1%}"), ("truthfulness_score", "truthfulness", "{:+.3f}"))


def rejudge_command(output_dir: Path, model: str | None = None, base_url: str | None = None) -> str:
    """The command that judges the run's undecided turns again, with the flags of the judge that
    left them (`model` None: the rule set's own; `base_url` None: OpenAI's API): run as printed,
    it asks the same judge, never silently another one or none."""
    words = ["python local_evaluation.py --rejudge --output-dir", shlex.quote(str(output_dir))]
    words += ["--eval-model", shlex.quote(model)] if model else []
    words += ["--eval-base-url", shlex.quote(base_url)] if base_url else []
    return " ".join(words)


def scores_without(rows: list[dict], unjudged: set[str], rules: RuleSet) -> dict:
    """The official scores of the turns that have a verdict (or needed none), all and egocentric."""
    return subset_scores([r for r in rows if r["interaction_id"] not in unjudged], rules)


def scores_text(scores: dict) -> str:
    """'all N turns: accuracy ..., ...; egocentric M turns: ...' (a subset without turns left out;
    "0 turns" where no turn is left)."""
    parts = []
    for subset, label in (("all", "all"), ("ego", "egocentric")):
        values = scores.get(subset) or {}
        if not values.get("total"):
            continue
        figures = ", ".join(f"{name} {shown_score(values, key, fmt)}" for key, name, fmt in SHOWN_SCORES)
        parts.append(f"{label} {values['total']:.0f} turns: {figures}")
    return "; ".join(parts) or "0 turns"


def cause_text(counts: dict, llm_judge: bool) -> str:
    if not llm_judge:
        return "no LLM judge was set"
    causes = []
    if counts.get("judge_failures"):
        causes.append(f"the judge failed every attempt on {counts['judge_failures']}")
    if counts.get("judge_not_asked"):
        causes.append(f"{counts['judge_not_asked']} were not sent to it after it gave up")
    return "; ".join(causes) or "the judge gave no verdict"


def unjudged_report(rows: list[dict], unjudged: set[str], rules: RuleSet, output_dir: Path, counts: dict, *,
                    llm_judge: bool, judge_model: str | None = None, judge_base_url: str | None = None) -> dict | None:
    """run_summary.json's "unjudged": the count, why, the scores without those turns, the rejudge
    command (with the judge's model where it is not the rule set's, and its URL) and the notice
    that says it all in one paragraph; None when every turn has its verdict."""
    if not unjudged:
        return None
    left_out = scores_without(rows, unjudged, rules)
    command = rejudge_command(output_dir, judge_model if judge_model != rules.judge_model else None, judge_base_url)
    how = command if llm_judge else f"set OPENAI_API_KEY (or add --eval-base-url URL), then {command}"
    cause = cause_text(counts, llm_judge)
    notice = (f"{len(unjudged)} of {counts.get('needing_judge', len(unjudged))} turns that needed the judge have "
              f"no verdict ({cause}). They count as not correct (hallucinated), as the official evaluator "
              f"counts a failed judgement: accuracy and truthfulness are lower bounds, the hallucination rate "
              f"an upper one. With them left out: {scores_text(left_out)}. Judge them again: {how}")
    return {"turns": len(unjudged), "cause": cause, "gave_up": counts.get("judge_gave_up"),
            "scores_without_unjudged": left_out, "rejudge_command": command, "llm_judge": llm_judge,
            "notice": notice}


def exit_code(summary: dict) -> int:
    """UNJUDGED_EXIT_CODE when an LLM judge left turns without a verdict, else 0. A run with the
    judge switched off (no key, --eval-model None) asked for no verdict: its notice says how many
    turns lack one, and it exits 0."""
    unjudged = summary.get("unjudged") or {}
    return UNJUDGED_EXIT_CODE if unjudged.get("turns") and unjudged.get("llm_judge") else 0

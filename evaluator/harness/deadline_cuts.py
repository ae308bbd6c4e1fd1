"""Turns the per-batch deadline cut: said at the top of what a reader looks at, never only as a count.

A turn is cut when the agent's deadline skipped a stage before it started or stopped its engine
call part-way (the trace's `deadline_cut`, with `deadline_cut_before` / `deadline_cut_during`
naming the stage). Such a turn is usually answered "I don't know": it was abstained for time,
not for want of evidence, and a score table that mixes it with the chain's own abstentions reads
as a chain that chose to abstain. So `run_summary.json` holds, under "deadline_cut", how many turns
were cut and at which stage, the scores of the cut turns and of the others apart (each conversation
keeps its other turns in order, as `unjudged.scores_without` does), and a notice; the console
prints it above the scores and report.html in a banner above them.
"""
from __future__ import annotations

from collections import Counter

from agents.base_agent import budget_text
from evaluator.harness.unjudged import scores_text
from evaluator.scoring.rules import RuleSet
from evaluator.scoring.scores import subset_scores

# How to run the same turns without the budget: the agent's setting for "no per-turn budget".
NO_BUDGET_FLAG = "--set turn_budget_s=0"


def cut_stages(traces: list[dict]) -> dict[str, int]:
    """'before <stage>' / 'during <stage>' -> cut turns, most first ('unnamed stage' where an
    agent's trace says only that the turn was cut)."""
    where = Counter()
    for trace in traces:
        if trace.get("deadline_cut") is not True:
            continue
        if trace.get("deadline_cut_during"):
            where[f"during {trace['deadline_cut_during']}"] += 1
        elif trace.get("deadline_cut_before"):
            where[f"before {trace['deadline_cut_before']}"] += 1
        else:
            where["unnamed stage"] += 1
    return dict(where.most_common())


def turn_budgets(traces: list[dict]) -> list[float]:
    """The per-turn budgets (seconds, 0 = none) the agent's traces say the turns ran under."""
    return sorted({t["turn_budget_s"] for t in traces
                   if isinstance(t, dict) and isinstance(t.get("turn_budget_s"), (int, float))})


def deadline_cut_report(rows: list[dict], traces: list[dict], rules: RuleSet) -> dict | None:
    """run_summary.json's "deadline_cut": the cut turns' count, where the deadline cut them, the
    scores of the cut turns and of the others, and the notice saying it in one paragraph; None
    when no turn was cut."""
    cut = {t["interaction_id"] for t in traces if t.get("deadline_cut") is True and t.get("interaction_id")}
    cut_rows = [r for r in rows if r["interaction_id"] in cut]
    if not cut_rows:
        return None
    kept_rows = [r for r in rows if r["interaction_id"] not in cut]
    stages = cut_stages([t for t in traces if t.get("interaction_id") in cut])
    budgets = turn_budgets(traces)
    budget = "; ".join(map(budget_text, budgets)) or "the agent's budget (its traces do not say which)"
    cut_scores, kept_scores = subset_scores(cut_rows, rules), subset_scores(kept_rows, rules)
    answered = int(cut_scores["all"]["correct"] + cut_scores["all"]["hallucination"])
    notice = (f"The deadline cut {len(cut_rows)} of {len(rows)} turns, at {budget}: "
              + ", ".join(f"{where} {n}" for where, n in stages.items())
              + f". {len(cut_rows) - answered} of them were abstained for time, not for want of evidence, so the "
              f"scores above mix the chain's own abstentions with the machine's speed. Turns not cut: "
              f"{scores_text(kept_scores)}. Run the same turns without the budget: add {NO_BUDGET_FLAG} "
              "(the competition's 10 s a turn then no longer holds).")
    return {"turns": len(cut_rows), "of_turns": len(rows), "where": stages, "cut_answered": answered,
            "turn_budget_s": budgets, "budget": budget, "scores_cut": cut_scores, "scores_not_cut": kept_scores,
            "no_budget_flag": NO_BUDGET_FLAG, "notice": notice}

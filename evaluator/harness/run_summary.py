"""run_summary.json, part by part: what ran (`summary_of_run`, from the run record), who judged
(`summary_of_judging`), how the turns went and what the batches took (`summary_of_turns`,
`batch_summary`, `token_summary`), the scores and what they break down into
(`summary_of_scores`), and the notices a reader must know, most important first (`run_notices`).
"""
from __future__ import annotations

import math

from evaluator.harness.faults import FAULT_ROWS_KEPT, fault_table, fault_turns
from evaluator.harness.judging import JudgedBy, kept_verdict_notices
from evaluator.harness.run_record import RunRecord
from evaluator.harness.score_files import BREAKDOWN_COLUMNS, INTERVALS_KEY, Scored
from evaluator.harness.trace_view import agent_summary
from evaluator.scoring.coverage import evidence_coverage
from evaluator.scoring.lexical_judge import OFFLINE_JUDGE_LABEL
from evaluator.scoring.multi_turn import multi_turn_figures
from evaluator.scoring.official_judge import origin_text
from evaluator.scoring.rules import RuleSet
from evaluator.scoring.scores import breakdown


def _percentile(values: list[float], q: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    position = (len(ordered) - 1) * q / 100.0
    low, high = math.floor(position), math.ceil(position)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def batch_summary(batches: list[dict]) -> dict:
    walls = [float(b["wall_ms"]) for b in batches]
    over = [b for b in batches if float(b["wall_ms"]) > float(b["budget_ms"])]
    return {
        "batches": len(batches),
        "budget_rule": "10 s x agent batch size per batch_generate_response call",
        "wall_ms_max": max(walls) if walls else 0.0,
        "wall_ms_p50": _percentile(walls, 50),
        "wall_ms_p95": _percentile(walls, 95),
        "over_budget_count": len(over),
        "per_batch": [{"batch": b["batch"], "shard": b.get("shard"), "turns": b["turns"],
                       "wall_ms": b["wall_ms"], "budget_ms": b["budget_ms"],
                       "run_budget_ms": b.get("run_budget_ms")} for b in batches],
        "engine_calls_per_batch": [b.get("engine_calls") for b in batches if b.get("engine_calls") is not None],
        "stage_ms_per_batch": [b.get("stage_ms") for b in batches if b.get("stage_ms") is not None],
    }


TOKEN_KINDS = ("prompt", "completion", "reasoning")


def token_summary(batches: list[dict]) -> dict:
    """What the run's model calls read and wrote, from each batch's `stage_tokens`: per stage the
    requests, tokens (prompt; completion = the answer text; reasoning = hidden reasoning, billed as
    output), replies with no text and refused requests, and the same per turn; None where no
    batch reported engine calls."""
    reported = [b for b in batches if isinstance(b.get("stage_tokens"), dict)]
    if not reported:
        return {"per_stage": None, "per_turn": None, "turns": 0}
    per_stage: dict[str, dict[str, int]] = {}
    for batch in reported:
        for stage, counts in batch["stage_tokens"].items():
            totals = per_stage.setdefault(stage, dict.fromkeys(("requests", *TOKEN_KINDS, "empty", "refused"), 0))
            for name in totals:
                totals[name] += int((counts or {}).get(name) or 0)
    turns = sum(int(b.get("turns") or 0) for b in reported)
    totals = {name: sum(c[name] for c in per_stage.values()) for name in ("requests", *TOKEN_KINDS, "empty", "refused")}
    return {
        "per_stage": per_stage,
        "total": totals,
        "turns": turns,
        "per_turn": {name: round(totals[name] / turns, 1) if turns else 0.0 for name in ("requests", *TOKEN_KINDS)},
        "empty_replies": totals["empty"],
        "refused_requests": totals["refused"],
    }


def run_notices(given: list[str], scored: Scored, judged: JudgedBy, judge_counts: dict, unjudged: dict | None,
                cut: dict | None, run: RunRecord) -> list[str]:
    """What a reader must know, most important first: the turns the deadline cut (every score is
    read through them), the turns left without a verdict, what the run said, then the judging's
    and the resumes' notes."""
    notices = ([cut["notice"]] if cut else []) + ([unjudged["notice"]] if unjudged else []) + given
    if not scored.ego:
        notices.append("no egocentric turns in this run: the 'ego' rates are NaN (as the official "
                       "evaluator writes them), not measurements")
    notices += kept_verdict_notices(judge_counts)
    if judged.offline:
        notices.append(f"no LLM judge: the {OFFLINE_JUDGE_LABEL} decided {judge_counts['offline_judged_turns']} "
                       "turns against the data's accepted answer forms; these scores are not comparable "
                       "with LLM-judged ones")
    if judge_counts["judge_rate_limit_waits"]:
        notices.append(f"the judge answered HTTP 429/5xx and was waited out {judge_counts['judge_rate_limit_waits']} "
                       f"times (at most {judge_counts['judge_waited_s_max_turn']:.1f} s for one turn)")
    return notices + [f"resumed with --force ({f['at']}) from another system: " + "; ".join(f["differences"])
                      for f in run.forced_resumes]


def summary_of_run(run: RunRecord, rules: RuleSet, batches: list[dict]) -> dict:
    """run_summary.json's opening: what ran, on what, under which rules and tokenizer."""
    tokenizers = sorted({b["tokenizer"] for b in batches if b.get("tokenizer")})
    return {
        "run_config": run.args,
        "dataset": run.dataset,
        "dataset_type": run.dataset_type,
        "revision": run.revision,
        "split": run.split,
        "agent": run.agent,
        "profile": run.profile,
        "preset": run.preset,
        "imported": run.imported,  # another harness's run: its name, model and task
        "shard": run.shard,
        "oracle": run.oracle,
        "merged_from": run.merged_from,
        "rules": rules.name,
        "resume_forced": bool(run.forced_resumes),
        "forced_resumes": run.forced_resumes,
        "tokenizer": " + ".join(tokenizers) or run.tokenizer or "unknown",
        "conversation_selection": run.conversation_selection,
        "image_url_updates": run.image_url_updates,
    }


def summary_of_judging(judged: JudgedBy, judge_counts: dict, unjudged: dict | None) -> dict:
    return {
        "judge": judged.label,
        # where the judge's prompt came from (evaluator/scoring/official_judge.py): the text to
        # show, and the record (official: folder, git commit, sha256); null without an LLM judge
        "judge_prompt": origin_text(judged.prompt_origin) if judged.prompt_origin is not None else None,
        "judge_prompt_origin": judged.prompt_origin,
        **judge_counts,
        # the turns without a verdict: the scores with them left out and the command that judges them
        "unjudged": unjudged,
        **judged.offline_figures,
    }


def summary_of_turns(run: RunRecord, records: list[dict], traces: list[dict], cut: dict | None,
                     batches: list[dict]) -> dict:
    """How the turns went: answered, failed, cut, refused, and the batches' time and tokens."""
    errors = [r for r in records if r.get("error")]
    expected = run.expected_turns
    faults = fault_table(records, traces)
    return {
        "turns_expected": expected,
        "turns_answered": len(records),
        "complete": expected is None or len(records) == expected,
        "agent_error_turns": len(errors),
        "agent_errors": sorted({r["error"] for r in errors})[:20],
        "deadline_cut_turns": sum(1 for t in traces if t.get("deadline_cut") is True),
        # where the deadline cut them and the scores of the cut turns and the others apart
        "deadline_cut": cut,
        # turns a stage fault turned into "I don't know" (a model server gone, an engine error)
        "stage_fault_turns": sum(1 for t in traces if t.get("branch") == "error"),
        "stage_faults": sorted({e for t in traces if t.get("branch") == "error" for e in t.get("errors") or []})[:20],
        # every turn that faulted (an agent error, a stage or the rule raised), and the faults'
        # table by stage, exception and place in the system's code (harness/faults.py)
        "fault_turns": fault_turns(records, traces),
        "faults": faults[:FAULT_ROWS_KEPT],
        "fault_rows_left_out": max(0, len(faults) - FAULT_ROWS_KEPT),
        # turns a hosted provider refused a request of (content policy, an image it would not
        # take), answered "I don't know" and counted apart from the faults
        "refused_turns": sum(1 for t in traces if t.get("branch") == "refused"),
        "refusals": sorted({e for t in traces if t.get("branch") == "refused" for e in t.get("errors") or []})[:20],
        "image_load_failures": [e for b in batches for e in (b.get("image_errors") or [])],
        **batch_summary(batches),
        "tokens": token_summary(batches),
    }


def summary_of_scores(scored: Scored, records: list[dict], traces: list[dict], run: RunRecord,
                      diagnostics: dict | None) -> dict:
    """The scores and what they break down into: intervals, breakdowns, conversations, evidence,
    the agent's own figures, the stage diagnostics."""
    return {
        "scores": scored.scores,
        INTERVALS_KEY: scored.intervals,
        "breakdowns": {c: breakdown(scored.counted_all, c) for c in BREAKDOWN_COLUMNS},
        # both rule sets' figures, by turn index and the early stop's toll; None for single turns
        "multi_turn": multi_turn_figures(scored.rows),
        "evidence_coverage": evidence_coverage(traces, records, run.dataset),
        # the agent's own figures over its traces (harness/trace_view.py)
        "agent_summary": agent_summary(run, traces),
        # diagnostics.json's stage rates (null: no turn carries stage labels)
        "diagnostics": {stage: {k: v for k, v in figures.items() if k != "by_category"}
                        for stage, figures in diagnostics["stages"].items()} if diagnostics else None,
    }

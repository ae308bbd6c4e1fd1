"""Which judge a command asks, and with which prompt and rule set.

A run takes its flags; a rejudge and a merge take the run's own judge, rules and prompt (its
record and run_summary.json) unless the flags name others (`saved_*`). Without an API key or an
endpoint no LLM judge is built, and a panel says so.
"""
from __future__ import annotations

import json
from pathlib import Path

from rich.console import Console

from evaluator.commands.result import EvaluationRefused
from evaluator.harness.run_record import RunRecord
from evaluator.report.terminal import loud_notice
from evaluator.scoring.judge import Judge, find_api_key
from evaluator.scoring.official_judge import (
    JudgePromptError,
    OfficialJudge,
    judged_with,
    load_judge_prompt,
    prompt_change,
    saved_prompt_folder,
)
from evaluator.scoring.rules import RuleSet, rule_set
from evaluator.settings import EvaluationSettings, ScoringSettings


def read_judge_prompt(folder: str | None, rules: RuleSet) -> OfficialJudge | None:
    """The checkout's judge (--judge-prompt-from), read before anything else: a bad folder stops
    with one line."""
    try:
        return load_judge_prompt(folder, rules)
    except JudgePromptError as exc:
        raise EvaluationRefused(str(exc)) from None


def build_judge(model: str | None, base_url: str | None, settings: ScoringSettings, console: Console,
                rules: RuleSet, official: OfficialJudge | None = None, *, announce: bool = True) -> Judge | None:
    """The LLM judge, or None with a panel that says so (`announce` False: a rejudge or merge,
    whose report says instead which saved verdicts stood in for it)."""
    if model is not None and model.strip().lower() == "none":
        if announce:
            loud_notice(console, "ATTENTION", "SEMANTIC EVALUATION IS DISABLED (--eval-model None).\n"
                        "No LLM judge will be asked: only exact string matches count as correct.")
        return None
    key = find_api_key()
    if not key and not base_url:
        if announce:
            loud_notice(console, "ATTENTION", "NO JUDGE: neither OPENAI_API_KEY (environment or .env) nor "
                        "--eval-base-url is set.\nSemantic evaluation is OFF: only exact string matches count "
                        "as correct, so accuracy is a lower bound.\nWhere the data carries accepted answer forms "
                        "(the mini benchmark), the offline lexical judge (not the official judge) decides instead.")
        return None
    # no --eval-model: the checkout's default judge, else the rule set's (Judge decides)
    return Judge(model, base_url, key, rules=rules, num_workers=settings.num_workers,
                 timeout_s=settings.judge_timeout, backoff_s=settings.judge_retry_wait, max_wait_s=settings.judge_max_wait,
                 give_up_after=settings.judge_give_up_after, official=official)


def refuse_prompt_change(output_dir: Path, judge: Judge | None, settings: EvaluationSettings) -> None:
    """A rejudged run whose verdicts came from one judge prompt is not judged with another unless
    --force (its run_summary.json says which prompt judged it; a resume compares the fingerprint's
    judge_prompt instead)."""
    summary_path = output_dir / "run_summary.json"
    if judge is None or not summary_path.exists():
        return
    summary = json.loads(summary_path.read_text())
    if summary.get("rules") != judge.rules.name:  # another rule set asks in other words anyway
        return
    judged, origin = judged_with(summary)
    line = judged and prompt_change(origin, judge.prompt_origin)
    if line and not settings.force:
        raise EvaluationRefused(f"cannot judge {output_dir} with another prompt ({line}); pass --force to do so anyway")


def saved_prompt(settings: ScoringSettings, output_dir: Path, record: RunRecord, rules: RuleSet) -> str | None:
    """The judge prompt's checkout for rejudge/merge: the flag, else the one the run was judged with."""
    summary_path = output_dir / "run_summary.json"
    summary = json.loads(summary_path.read_text()) if summary_path.exists() else {}
    origin = summary.get("judge_prompt_origin") or record.judge_prompt
    return saved_prompt_folder(settings.judge_prompt_from, origin, rules.name == record.rules)


def saved_rules(settings: ScoringSettings, record: RunRecord) -> RuleSet:
    """Rule set for rejudge/merge: --rules if given, else the run's own (kddcup2025 if unrecorded)."""
    return rule_set(settings.rules or record.rules)


def saved_judge_choice(settings: ScoringSettings, record: RunRecord) -> tuple[str | None, str | None]:
    """Judge for rejudge/merge: the flags if given, else the judge the run used (if any); a
    different --rules than the run's brings that rule set's default judge model."""
    if settings.eval_model is not None or settings.eval_base_url is not None:
        return settings.eval_model, settings.eval_base_url
    if settings.rules and settings.rules != record.rules:
        return None, record.judge_base_url
    return record.judge_model, record.judge_base_url

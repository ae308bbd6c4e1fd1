"""`--rejudge`: the saved answers of a run judged and scored again, by the run's own judge, rules
and prompt unless the flags name others. No agent loads, no dataset is read.
"""
from __future__ import annotations

from pathlib import Path

from rich.console import Console

from evaluator.commands.judging import (
    build_judge,
    read_judge_prompt,
    refuse_prompt_change,
    saved_judge_choice,
    saved_prompt,
    saved_rules,
)
from evaluator.commands.result import EvaluationRefused, EvaluationResult, finish
from evaluator.harness.run_record import RunRecord, read_run_record
from evaluator.harness.runner import ANSWERS
from evaluator.settings import EvaluationSettings


def rejudge(settings: EvaluationSettings, output_dir: Path, console: Console) -> EvaluationResult:
    """The saved answers of `output_dir` judged and scored again, by the run's judge and rules
    unless the flags name others."""
    if not (output_dir / ANSWERS).exists():
        raise EvaluationRefused(f"{output_dir} holds no saved answers to rejudge")
    record = read_run_record(output_dir) or RunRecord()
    rules = saved_rules(settings, record)
    official = read_judge_prompt(saved_prompt(settings, output_dir, record, rules), rules)
    judge = build_judge(*saved_judge_choice(settings, record), settings, console, rules, official, announce=False)
    refuse_prompt_change(output_dir, judge, settings)
    return finish(settings, output_dir, judge, console, [], rules, official, judge_announced=False)

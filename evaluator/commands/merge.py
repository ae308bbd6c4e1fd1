"""`merge`: shard folders of one system gathered into one run and scored
(evaluator/api.py `merge`).
"""
from __future__ import annotations

from pathlib import Path

from rich.console import Console
from rich.markup import escape

from evaluator.commands.judging import build_judge, read_judge_prompt, saved_judge_choice, saved_prompt, saved_rules
from evaluator.commands.result import EvaluationRefused, EvaluationResult, finish
from evaluator.harness.fingerprint import differences
from evaluator.harness.merge import merge_runs
from evaluator.harness.run_record import RunRecord, read_run_record
from evaluator.settings import MergeSettings


def refuse_mixed_shards(sources: list[Path]) -> None:
    """Folders merged into one run must come from one system (folders without a fingerprint pass)."""
    prints = [(read_run_record(src) or RunRecord()).fingerprint for src in sources]
    changed = [f"  {src}: {line}" for src, fingerprint in zip(sources[1:], prints[1:]) if prints[0] and fingerprint
               for line in differences(prints[0], fingerprint)]
    if changed:
        raise EvaluationRefused(f"cannot merge: these folders used another system than {sources[0]}:\n" + "\n".join(changed))


def run_merge(settings: MergeSettings, console: Console) -> EvaluationResult:
    """The shard folders gathered into one and scored (evaluator/api.py `merge`)."""
    output_dir = Path(settings.output_dir)
    sources = [Path(d) for d in settings.dirs]
    refuse_mixed_shards(sources)
    try:
        notices = merge_runs(sources, output_dir)
    except ValueError as exc:
        raise EvaluationRefused(f"cannot merge: {exc}") from None
    for notice in notices:
        console.print(f"[yellow]{escape(notice)}[/yellow]")
    record = read_run_record(output_dir)
    rules = saved_rules(settings, record)
    model, base_url = saved_judge_choice(settings, record)
    official = read_judge_prompt(saved_prompt(settings, output_dir, record, rules), rules)
    judge = build_judge(model, base_url, settings, console, rules, official, announce=False)
    return finish(settings, output_dir, judge, console, notices, rules, official, judge_announced=False)

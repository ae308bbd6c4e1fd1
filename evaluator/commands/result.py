"""What a command returns, and how a scored folder becomes it.

`EvaluationRefused`: a run that cannot start or go on, in one line. `finish` judges and scores
the folder (harness/outputs.py `finalize`), prints the report, writes report.html and returns
the `EvaluationResult`, the files' figures and the exit status.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from rich.console import Console
from rich.markup import escape

from evaluator.harness.faults import exit_code
from evaluator.harness.outputs import finalize
from evaluator.report.terminal import print_report
from evaluator.scoring.judge import Judge
from evaluator.scoring.official_judge import OfficialJudge
from evaluator.scoring.rules import RuleSet
from evaluator.settings import ScoringSettings


class EvaluationRefused(Exception):
    """A run that cannot start or go on, in one line (the command line prints it and exits 1)."""


@dataclass
class EvaluationResult:
    """What a run, rejudge or merge wrote, as the files hold it."""

    output_dir: Path
    scores: dict  # scores_dictionary.json's "all" and "ego" (empty after --generate-only)
    rows: list[dict]  # one per turn: the official columns, the flags the scores count, our extras
    rows_ego: list[dict]  # the egocentric turns among them
    notices: list[str]  # what the run said a reader must know (run_summary.json "notices")
    # what local_evaluation.py exits with: 0; 3 when the judge left turns undecided; 4 when every
    # turn (or every turn of one stage) faulted; 5 under --strict when any turn faulted
    # (evaluator/harness/faults.py)
    exit_status: int
    summary: dict  # run_summary.json (empty after --generate-only)


def finish(settings: ScoringSettings, output_dir: Path, judge: Judge | None, console: Console, notices: list[str],
           rules: RuleSet, official: OfficialJudge | None = None, *, judge_announced: bool = True) -> EvaluationResult:
    results = finalize(output_dir, judge, rules=rules, progress=not settings.no_progress, notices=notices,
                       official=official)
    print_report(console, results, settings.display_conversations, judge_announced=judge_announced)
    console.print(f"[bold green]outputs written to {escape(str(output_dir))}[/bold green]")
    try:  # the scores are already written: a report that cannot be built must not fail the run
        from evaluator.report.html import build_report

        console.print(f"[bold green]report: {escape(str(build_report(output_dir)))}[/bold green]")
    except Exception as exc:  # noqa: BLE001
        console.print(f"[yellow]report.html not written: {escape(f'{type(exc).__name__}: {exc}')}[/yellow]")
    # everything is written; a script must still notice a systemic fault or undecided turns (the exit status)
    return EvaluationResult(output_dir, results.scores, results.rows_all, results.rows_ego,
                            list(results.summary["notices"]), exit_code(results.summary, strict=settings.strict), results.summary)

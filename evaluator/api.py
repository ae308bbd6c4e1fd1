"""The evaluator called from Python: `evaluate(**options)` and `merge(dirs, **options)`.

`local_evaluation.py` maps its flags onto these and nothing else, so a script, a notebook or a
sweep gets what the command line gets: the same files in the output folder, and the same
figures back as an `EvaluationResult`. A run that cannot start or go on raises
`EvaluationRefused` with the one line the command line prints.
"""
from __future__ import annotations

import dataclasses
import inspect

from rich.console import Console

from evaluator.commands import EvaluationRefused, EvaluationResult, run_evaluation, run_merge
from evaluator.settings import EvaluationSettings, MergeSettings

__all__ = ["EvaluationRefused", "EvaluationResult", "EvaluationSettings", "MergeSettings", "evaluate", "merge"]


def evaluate(settings: EvaluationSettings | None = None, /, **options) -> EvaluationResult:
    """Evaluate an agent on CRAG-MM as `python local_evaluation.py` does, in this process.

    Each keyword is a command-line option, named as its argparse destination, with the same
    default (`python local_evaluation.py --help` says what each means): `dataset_type`,
    `num_conversations`, `exact_conversations`, `agent` ("MODULE:CLASS", or the class itself),
    `profile`, `preset`, `set` (a list of "FIELD=VALUE"; or typed: a dict, a settings dataclass
    instance, a System record as a value: `set={"system": MY_SYSTEM, "my_rounds": 2}`),
    `calibration`, `search`, `output_dir`, `eval_model` ("None": no LLM judge), `rules`,
    `no_progress`, `strict` (any faulted turn fails the run: exit_status 5), ... Or pass one `EvaluationSettings`. Typed options are recorded as the command
    line would give them (evaluator/settings.py), so `evaluate(agent=MyAgent)` runs, records and
    resumes as `evaluate(agent="my_module:MyAgent")`.

    The mode follows from the options, as on the command line:
      a run (default)          generate answers with the agent, judge, score, report;
      resume=True              continue the run in output_dir (force=True: from another system);
      rejudge=True             judge the saved answers of output_dir again, then rescore;
      generate_only=True       answers and traces only (scores and rows come back empty);
      shard="I/N"              only conversations with index % N == I (score them with `merge`);
      workers=N (or ray=ADDR)  the shards on Ray, then one merge, judge and score.

    Returns an EvaluationResult: `scores` (scores_dictionary.json's "all" and "ego"), `rows`
    (one per turn) and `rows_ego`, `output_dir`, `notices`, `summary` (run_summary.json) and
    `exit_status` (0; 3 when the judge left turns without a verdict: the scores count them as
    not correct; 4 when every turn, or every turn that reached one stage, faulted: the summary's
    "systemic_fault" says where and why; 5 with `strict=True` when any turn faulted: the
    summary's "faults" table says which stage or rule, how many turns, the exception and where). Raises EvaluationRefused (one line) where the command line exits with 1, and
    TypeError for an option the command line does not have.
    """
    settings = _settings(EvaluationSettings, settings, options)
    console = Console()
    if settings.workers or settings.ray:
        from evaluator.workers import run_on_ray

        return run_on_ray(dataclasses.replace(settings, workers=settings.workers or 1), console)
    return run_evaluation(settings, console)


def merge(dirs, /, *, output_dir, **options) -> EvaluationResult:
    """Gather the output folders of a sharded run into `output_dir` and score them as one run,
    as `python local_evaluation.py merge DIR ... --output-dir OUT` does. The other keywords are the
    judge's and the report's options of `evaluate` (`eval_model`, `rules`, `no_progress`, `strict`, ...).
    Returns an EvaluationResult; raises EvaluationRefused (one line) where the command exits 1."""
    settings = _settings(MergeSettings, None, {**options, "dirs": tuple(dirs), "output_dir": output_dir})
    return run_merge(settings, Console())


def _settings(kind, given, options: dict):
    if given is not None:
        if options:
            raise TypeError("pass either an EvaluationSettings or keyword options, not both")
        return given
    known = {f.name for f in dataclasses.fields(kind)}
    unknown = sorted(set(options) - known)
    if unknown:
        raise TypeError(f"unknown option{'s' if len(unknown) > 1 else ''} {', '.join(unknown)} "
                        f"(the options are local_evaluation.py's flags: {', '.join(sorted(known))})")
    try:
        return kind(**options)
    except ValueError as exc:
        raise EvaluationRefused(str(exc)) from None


def _keyword_signature(kind, head: list[inspect.Parameter]) -> inspect.Signature:
    """help() shows every option with its default, read from the settings record."""
    fields = [f for f in dataclasses.fields(kind) if f.name not in {p.name for p in head}]
    return inspect.Signature([*head, *(inspect.Parameter(f.name, inspect.Parameter.KEYWORD_ONLY, default=f.default,
                                                         annotation=f.type) for f in fields)],
                             return_annotation="EvaluationResult")


evaluate.__signature__ = _keyword_signature(EvaluationSettings, [inspect.Parameter(
    "settings", inspect.Parameter.POSITIONAL_ONLY, default=None, annotation="EvaluationSettings | None")])
merge.__signature__ = _keyword_signature(MergeSettings, [
    inspect.Parameter("dirs", inspect.Parameter.POSITIONAL_ONLY),
    inspect.Parameter("output_dir", inspect.Parameter.KEYWORD_ONLY)])

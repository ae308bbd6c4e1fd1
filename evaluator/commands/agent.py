"""The agent a run asks: its search pipeline built from the resolved run, the agent built over
it, and its batch size (a resumed run takes it from the run it continues).
"""
from __future__ import annotations

from rich.console import Console
from rich.markup import escape

from evaluator.commands.result import EvaluationRefused
from evaluator.harness.agent_setup import import_object
from evaluator.harness.batching import clip_batch_size
from evaluator.harness.resolved import ResolvedRun
from evaluator.harness.run_record import RunRecord
from evaluator.settings import EvaluationSettings


def build_search(settings: EvaluationSettings, run: ResolvedRun):
    if run.search is None:
        return None
    from evaluator.search.index_check import SearchIndexError
    from evaluator.search.pipeline import build_search_pipeline  # loads cragmm_search

    if run.builds_default_search:
        try:
            pipeline = build_search_pipeline(run.search, web=run.web)
        except SearchIndexError as exc:
            raise EvaluationRefused(f"cannot search: {exc}") from None
    else:
        pipeline = import_object(run.search_spec)(run.search, web=run.web)
    if settings.suppress_image_search_api:
        from evaluator.search.pipeline import WithoutImageSearch

        return WithoutImageSearch(pipeline)
    return pipeline


def load_agent(settings: EvaluationSettings, run: ResolvedRun, console: Console):
    pipeline = build_search(settings, run)
    profile = run.profile
    try:
        agent = run.agent.build(pipeline)
    except OSError as exc:  # a model or file the agent names is not there: one line, not a loader's traceback
        first_line = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        raise EvaluationRefused(f"cannot build the agent {settings.agent}: {type(exc).__name__}: {first_line} "
                                f"(a model or file it loads is not there; the pre-flight, python -m tools.preflight "
                                f"--profile {profile}, lists what is missing)") from None
    config = run.agent.description.get("config") if isinstance(run.agent.description.get("config"), dict) else {}
    system = f"system {config['system']} (preset {run.agent.preset or 'full'}), " if config.get("system") else ""
    console.print(f"{escape(system)}agent {escape(settings.agent)}, batch size {clip_batch_size(agent.get_batch_size())}, "
                  f"profile {profile}")
    return agent


def agent_and_batch_size(settings: EvaluationSettings, run: ResolvedRun, earlier: RunRecord | None, console: Console):
    """(the agent or None, the batch size). The official stopping rule depends on the batch size,
    which only the agent knows; a resumed run takes it from the run it continues, so a finished
    run is rescored without loading the agent."""
    if earlier is not None and earlier.batch_size is not None:
        return None, earlier.batch_size
    agent = load_agent(settings, run, console)
    return agent, clip_batch_size(agent.get_batch_size())

"""A run resolved once: its machine, its search and its agent, in one record.

`resolve_settings(settings)` is the one way from an evaluation's options (evaluator/settings.py:
--agent, --profile, --preset, --model-name, --set, --calibration, --search, --indices,
--web-contents, --suppress-web-search-api) to the run they name: the profile ("auto" worked out
on this machine), the agent's configuration (harness/agent_setup.py) and what the run searches
(evaluator/search/pipeline.py `search_config`). The evaluation (evaluator/commands/), the
pre-flight (tools/preflight.py), tools.fetch, the Ray driver (evaluator/workers.py) and
tools/runs.py all call it, so each of them means the same run by the same flags; the
fingerprint (`fingerprint.py`), the models' list and the pre-load check (`models.py`) read the
`ResolvedRun` it returns, never the profile again. `resolve_run(profile, agent, ...)` builds
the record from parts already worked out (a benchmark that wants a profile's search only).
"""
from __future__ import annotations

import shlex
from dataclasses import dataclass
from pathlib import Path

from evaluator.harness.agent_setup import AgentSetup, setup_agent
from evaluator.search.fetch_route import FETCH_COMMAND
from evaluator.search.pipeline import SearchConfig, search_config
from evaluator.settings import EvaluationSettings, command_line


@dataclass(frozen=True)
class ResolvedRun:
    profile: str  # a profile's name (never "auto": agents/hardware.py resolved it)
    # the agent class and its configuration (what its engines load and what stops them); None
    # where only the search is wanted (a benchmark, the CRAG-MM harness entry point)
    agent: AgentSetup | None = None
    search_spec: str = "default"  # "default", "none", or a MODULE:FUNC factory handed `search`
    web: bool = True  # web search on (Tasks 2-3; off: --suppress-web-search-api)
    indices: str | None = None  # --indices as given (None: the published default)
    search: SearchConfig | None = None  # None: search_spec "none"

    @property
    def builds_default_search(self) -> bool:
        """The evaluator builds the search pipeline itself (and so loads its models)."""
        return self.search_spec == "default"

    @property
    def web_contents(self) -> str | None:
        """The full-content database the run's web hits are read from (None: snippets only)."""
        return self.search.web_contents if self.search is not None and self.web else None

    @property
    def gpus_per_worker(self) -> float:
        """What a `--workers` shard of this run asks Ray for: its profile's (agents/profiles.py)."""
        from agents.profiles import get_profile

        return get_profile(self.profile).gpus_per_worker

    def options(self) -> EvaluationSettings:
        """The evaluation's options that give this run, the profile as it was resolved."""
        agent = self.agent
        told = {} if agent is None else dict(agent=agent.spec, preset=agent.preset, model_name=agent.model_name,
                                             set=agent.settings, calibration=agent.calibration)
        return EvaluationSettings(profile=self.profile, search=self.search_spec, suppress_web_search_api=not self.web,
                                  indices=self.indices, web_contents=self.web_contents, **told)

    def fetch_command(self) -> str:
        """The command that fetches everything this run loads: tools.fetch with the run's own flags
        (it resolves them as the run did), so a --set, --preset or --model-name that changes what
        the run loads changes what is fetched."""
        return shlex.join([*FETCH_COMMAND.split(), *command_line(self.options())])


def resolve_run(profile: str, agent: AgentSetup | None = None, *, search: str = "default", web: bool = True,
                indices: str | None = None, web_contents: str | None = None) -> ResolvedRun:
    """The run of `profile` with these flags; an unknown --indices raises ValueError in one line."""
    config = None if search == "none" else search_config(profile, indices, web_contents)
    return ResolvedRun(profile, agent, search, web, indices, config)


def resolve_settings(settings: EvaluationSettings) -> ResolvedRun:
    """The run an evaluation's options name. ValueError in one line for a flag the run cannot
    take: an unknown profile or --indices, an agent that does not import, settings it refuses."""
    from agents.profiles import resolve_profile

    profile = resolve_profile(settings.profile)
    calibration = str(Path(settings.calibration).resolve()) if settings.calibration else None
    setup = setup_agent(settings.agent, profile=profile, preset=settings.preset, settings=settings.set,
                        calibration=calibration, model_name=settings.model_name)
    return resolve_run(profile, setup, search=settings.search, web=not settings.suppress_web_search_api,
                       indices=settings.indices, web_contents=settings.web_contents)

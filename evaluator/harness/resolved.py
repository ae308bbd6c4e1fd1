"""A run resolved once: its machine, its search and its agent, in one record.

`resolve_run(profile, agent, search=..., web=..., indices=..., web_contents=...)` works out what a
run searches (evaluator/search/pipeline.py `search_config`: the profile's models and indices, the
published pair `--indices` picks, the full-content database `--web-contents` adds) once; the
command (evaluator/commands.py), the fingerprint (`fingerprint.py`), the models' list and the
pre-load check (`models.py`), and the tools and benchmarks that need a profile's search read the
`ResolvedRun` it returns, never the profile again.
"""
from __future__ import annotations

from dataclasses import dataclass

from evaluator.harness.agent_setup import AgentSetup
from evaluator.search.pipeline import SearchConfig, search_config


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


def resolve_run(profile: str, agent: AgentSetup | None = None, *, search: str = "default", web: bool = True,
                indices: str | None = None, web_contents: str | None = None) -> ResolvedRun:
    """The run of `profile` with these flags; an unknown --indices raises ValueError in one line."""
    config = None if search == "none" else search_config(profile, indices, web_contents)
    return ResolvedRun(profile, agent, search, web, indices, config)

"""CruiseAgent as facebookresearch/CRAG-MM's published evaluator builds its agents.

That harness picks an agent class by a keyword of `--model-name` (`MODEL_KEYWORD_TO_AGENT` in its
`example_agents/user_config.py`, first keyword contained in the lower-cased name wins), builds it
as `UserAgent(model_name=..., is_multi_turn=...)` with no search pipeline, runs its own retrieval
and calls `batch_generate_response(queries, images, histories, rag_context_list=..., domains=...)`.
Register ours there (first in the mapping) and pass e.g. `--model-name cruise-cpu`:

    from crag_mm_harness import MODEL_KEYWORD, CragMMHarnessAgent
    MODEL_KEYWORD_TO_AGENT = {MODEL_KEYWORD: CragMMHarnessAgent, ...}

The model name chooses our profile: `cruise-<profile>` (`cruise-cpu`, `cruise-l40s`), or plain
`cruise` for CRUISE_PROFILE / auto-detection (that harness builds the agent itself, so this is
the AIcrowd-like boundary where the environment may speak). With no pipeline passed, the agent
builds its own from the profile's search models and indices (agents/profiles.py, built by our
evaluator's search layer), so that `harness_context="merge"` reranks our retrieval together with
the harness's; with `harness_context="only"` it builds none. Our evaluator's package is named
`evaluator`, theirs `evaluation`: both import side by side.
"""
from __future__ import annotations

import logging
import os

from agents.config.loading import config_from_environment, load_config
from agents.cruise_agent import CruiseAgent
from agents.profiles import PROFILES

log = logging.getLogger(__name__)

MODEL_KEYWORD = "cruise"


def profile_from_model_name(model_name: str | None) -> str | None:
    """"cruise-cpu" / "cruise/l40s" -> that profile; "cruise" (or no name) -> None: CRUISE_PROFILE
    or auto-detection decides."""
    name = (model_name or "").strip().lower()
    if MODEL_KEYWORD in name:
        name = name.split(MODEL_KEYWORD, 1)[1]
    name = name.strip("-_/: ")
    if not name:
        return None
    if name not in PROFILES:
        raise ValueError(f"model name {model_name!r}: expected {MODEL_KEYWORD!r} or "
                         f"{MODEL_KEYWORD}-<profile> with a profile of {sorted(PROFILES)}")
    return name


def build_own_pipeline(profile: str, web: bool):
    """The profile's search pipeline, as our evaluator builds it (evaluator/search/pipeline.py)."""
    from evaluator.harness.resolved import resolve_run
    from evaluator.search.pipeline import build_search_pipeline

    return build_search_pipeline(resolve_run(profile).search, web=web)


class CragMMHarnessAgent(CruiseAgent):
    def __init__(self, model_name: str | None = None, is_multi_turn: bool = False, search_pipeline=None,
                 **overrides):
        profile = overrides.pop("profile", None) or profile_from_model_name(model_name)
        engines = overrides.pop("engines", None)
        preset = overrides.pop("preset", None)
        if preset or overrides:  # built from Python with settings
            cfg = load_config(profile, preset, **overrides)
        else:  # built by that harness from a model name: the profile is the name's, the rest the environment's
            cfg = config_from_environment({**os.environ, **({"CRUISE_PROFILE": profile} if profile else {})})
        self.model_name = model_name
        self.is_multi_turn = is_multi_turn
        self.search_error: str | None = None
        if search_pipeline is None and cfg.retrieval.harness_context != "only":
            try:
                search_pipeline = build_own_pipeline(cfg.profile, web=cfg.retrieval.use_web_search)
            except Exception as exc:  # noqa: BLE001 - the harness's own retrieval still reaches us
                self.search_error = f"{type(exc).__name__}: {exc}"
                log.warning("CruiseAgent could not build its own search pipeline (%s); answering from the "
                            "harness's retrieval only", self.search_error)
        super().__init__(search_pipeline, cfg, engines=engines)

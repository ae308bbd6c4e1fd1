"""What the run's engine can give the stages, and what it refuses, asked of its record
(agents/engines/registry.py) for a configuration (agents/config/ calls these while it builds one;
this module reads the configuration by its flat names and imports none of it).

A stage that reads token probabilities (the yes/no router, the yes/no consistency check, the
yes/no CoV, the token gate) is switched to its text mode where the engine returns none, and the
switch is said in one line of `mode_fallbacks` (run_config.json and every trace record them).
"""
from __future__ import annotations

from agents.engines.registry import CHAT_ENGINES


def engine_setting_problem(cfg) -> str | None:
    """What the run's engine refuses, in one line (engine hosted without hosted_provider: the
    model's name must say its provider); None where it takes the settings."""
    kind = CHAT_ENGINES.get(cfg.models.engine)
    return kind.problem_in(cfg.models) if kind is not None else None


def role_reads_no_probabilities(cfg, role: str) -> bool:
    """Whether a role's engine returns no token probabilities: every hosted provider (none is asked
    for), and an OpenAI reasoning model behind engine "openai" (its API refuses `logprobs`). An
    unknown engine is refused right after, by validate_config."""
    kind = CHAT_ENGINES.get(cfg.models.engine)
    return kind is not None and not kind.returns_probabilities(cfg.models, role)


def logprob_fallbacks(cfg):
    """The stages that read token probabilities, switched to their text modes where the engine
    returns none: the yes/no router, the yes/no consistency check, the yes/no CoV, and the token
    gate (off). Each switch is one line in `mode_fallbacks`."""
    changes, notes = {}, []
    router_blind, vlm_blind = (role_reads_no_probabilities(cfg, role) for role in ("router", "vlm"))
    why = "the engine returns no token probabilities"
    if router_blind and cfg.has("router_mode") and cfg.value("router_mode") == "yes_no":
        changes["router_mode"] = "text"
        notes.append(f"router_mode yes_no -> text ({why}): the router writes both labels")
    if vlm_blind and cfg.answer.consistency_mode == "yes_no":
        changes["consistency_mode"] = "text"
        notes.append(f"consistency_mode yes_no -> text ({why}): the verdict is written")
    if vlm_blind and cfg.answer.cov_mode == "yes_no":
        changes["cov_mode"] = "text"
        notes.append(f"cov_mode yes_no -> text ({why}): CoV writes its CONFIDENCE line")
    if vlm_blind and cfg.answer.min_token_prob > 0:
        changes["min_token_prob"] = 0.0
        notes.append(f"min_token_prob {cfg.answer.min_token_prob:g} -> 0 ({why}): the token gate is off")
    return cfg.replace(**changes, mode_fallbacks=tuple(notes))

"""The checks a built configuration passes before a run uses it: each group against its
annotations and ranges (agents/settings.py), the switches that contradict each other, and what
the run's engine refuses (agents/engine_capabilities.py)."""
from __future__ import annotations

from agents.config.cruise_config import CruiseConfig
from agents.engine_capabilities import engine_setting_problem
from agents.settings import SettingError, check_settings

# (check, what it needs): a check switched on while what it reads or what reads it is switched off.
# A rule whose fields the running system does not hold does not apply to it.
REQUIRED_SWITCHES = (
    ("use_self_consistency", "use_dual_path", "self-consistency compares the RAG answer with the non-RAG answer"),
    ("use_self_consistency", "use_finalizer", "only the finalizer reads the consistency verdict"),
    ("use_cov", "use_finalizer", "only the finalizer reads the CoV confidence"),
    ("min_token_prob", "use_finalizer", "only the finalizer applies the token-probability gate"),
    ("use_tool_route", "use_router", "the router picks the search"),
    ("use_decompose", "use_router", "the router marks the multi-hop and comparison questions"),
)


def validate_config(cfg: CruiseConfig) -> CruiseConfig:
    """Each group against its annotations and ranges, then the switches that contradict each
    other, with a message naming both fields (a check that is on while its input, or its only
    reader, is off would silently reject or ignore every answer). Its system was found when it
    was given (agents/config/loading.py with_system)."""
    check_settings(cfg)
    for group in cfg.groups():
        check_settings(group)
    for check, needed, why in REQUIRED_SWITCHES:
        if cfg.has(check) and cfg.has(needed) and cfg.value(check) and not cfg.value(needed):
            raise SettingError(f"{check}={cfg.value(check)} needs {needed}=True ({why}); "
                               f"switch {check} off or {needed} on")
    problem = engine_setting_problem(cfg)
    if problem:
        raise SettingError(problem)
    return cfg

"""The ablation presets: named switch settings (`--preset`), the rows of the paper's Table 1 and
more, applied over a profile's settings and joined by "+" (left to right)."""
from __future__ import annotations

from agents.config.cruise_config import CruiseConfig, own_field_names
from agents.config.fields import field_default, field_names
from agents.config.groups import PEER_SWITCHES
from agents.registry import suggestion
from agents.settings import SettingError

# What Algorithm 1 and the CoV reading decide with (the paper_finalizer preset resets them).
FINALIZER_FIELDS = ("cov_mode", "tau_ret_scope", "tau_ret", "tau_low", "tau_high", "min_token_prob")

# The rows of the paper's Table 1, as switch settings.
PRESETS: dict[str, dict] = {
    "vision_only": dict(
        use_router=False, use_summary=False, use_retrieval=False, use_dual_path=False,
        use_self_consistency=False, use_cov=False, use_finalizer=False, min_token_prob=0.0,
    ),
    # the straightforward RAG agent: our retrieval, one answer in the relaunched repository's prompt
    # layout for the model's family (answer_prompts), no verification
    "rag_baseline": dict(
        use_router=False, use_summary=True, use_retrieval=True, use_dual_path=False,
        use_self_consistency=False, use_cov=False, use_finalizer=False, min_token_prob=0.0,
        answer_prompts="baseline",
    ),
    "no_cov_no_sc": dict(use_self_consistency=False, use_cov=False),
    "no_cov": dict(use_cov=False),
    "full": dict(),
    # full + the six peer stages (not a row of the paper's table)
    "extended": dict.fromkeys(PEER_SWITCHES, True),
    # The paper's CoV reading and Algorithm 1 thresholds over whatever a profile's model stack
    # chose (the cpu stack's grounding verifier and calibrated thresholds): for a chat model that
    # writes CoV's "CONFIDENCE: x" line in place of the stack's own, e.g. a scripted one in tests.
    # (Read off the running system's settings class `own`: a system without tau_ret gets none.)
    "paper_finalizer": lambda own: {name: field_default(name, own) for name in FINALIZER_FIELDS
                                    if name in field_names() or name in own_field_names(own)},
    # The peer systems whole, not as switches on CRUISE (docs/chain.md, "QA-Dragon" and "SAM-RAG"):
    # their settings hold no CRUISE router, dual path, self-consistency or CoV. QA-Dragon's image
    # search agent crops the asked-about object and checks each entity (seed 001, 3.4.2 and 3.4.4).
    "qa_dragon": dict(system="qa_dragon", use_crop_search=True, use_entity_check=True),
    "sam_rag": dict(system="sam_rag"),
}
PRESET_JOIN = "+"  # "no_cov+paper_finalizer": presets applied left to right


def preset_settings(preset: str, settings_of=lambda system: None) -> dict:
    """The switch settings of a preset, or of several joined by "+" (applied left to right). A
    preset read off the defaults (a callable) is handed the settings class of the system the
    presets before it leave running (`settings_of(name)`; the default system where none names one)."""
    settings = {}
    for name in preset.split(PRESET_JOIN):
        if name not in PRESETS:
            raise SettingError(f"unknown preset {name!r}; choose one of {sorted(PRESETS)} "
                               f"(or several joined by {PRESET_JOIN!r}){suggestion(name, PRESETS)}")
        found = PRESETS[name]
        running = settings.get("system", CruiseConfig.system)
        settings.update(found(settings_of(running)) if callable(found) else found)  # a callable: read when asked
    return settings

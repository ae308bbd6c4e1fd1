"""How a SAM-RAG turn's final answer is decided from its trace (the chain decides through this,
and tools/calibrate.py replays saved traces through it with another `tau_low`):

    the answer (regenerated, if isUse failed once) is "I don't know"  -> "I don't know"
    isUse not passed (after one regeneration), or never asked         -> "I don't know"
    isSup not checked, or below tau_low                               -> "I don't know"
    otherwise                                                         -> the answer
"""
from __future__ import annotations

from agents.base_agent import IDK_ANSWER
from agents.config.cruise_config import CruiseConfig
from agents.stages.types import Decision
from agents.stages.verdicts import support_gate


def decide_from_trace(trace: dict, cfg: CruiseConfig) -> Decision:
    """Decision.branch: the path the turn took (the trace's "branch"). A failed turn and an answer
    that is already "I don't know" are decided before this rule (agents/runtime/batch.py
    `decide_turn`: "error", "abstained")."""
    answer = trace["rag_answer"]
    if not cfg.answer.use_finalizer:
        return Decision(answer, "no_finalizer")
    use = trace.get("is_use")
    if use is None:
        return Decision(IDK_ANSWER, "not_checked")
    if use is False:
        return Decision(IDK_ANSWER, "not_useful")
    gated = support_gate(trace.get("is_sup_confidence"), cfg, unchecked="not_checked", rejected="unsupported")
    if gated:
        return gated
    return Decision(answer, "supported_after_regeneration" if trace.get("regenerated") else "supported")

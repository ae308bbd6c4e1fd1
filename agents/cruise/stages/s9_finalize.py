"""Stage 9: the paper's rule-based finalizer (Algorithm 1).

    if real-time and S_ret < tau_ret                    -> "I don't know"
    elif C non-empty and consistent and S_CoV >= tau_low  -> a'
    elif C empty and consistent and S_CoV >= tau_high     -> a'
    else                                                -> "I don't know"

`decide_from_trace` reads Algorithm 1's inputs from a turn's trace record (the same keys
agents/cruise/trace.py writes): the chain decides through it, and evaluation/calibrate.py
replays saved traces through it with other thresholds, so both apply one rule set.
"""
from __future__ import annotations

from agents.base_agent import IDK_ANSWER
from agents.config import CruiseConfig
from agents.cruise.types import Answers, Decision, Evidence, Route, Verification


def decide(
    rag_answer: str,
    *,
    is_real_time: bool,
    has_context: bool,
    consistent: bool,
    cov_confidence: float,
    retrieval_score: float,
    tau_ret: float,
    tau_low: float = 0.9,
    tau_high: float = 1.0,
) -> Decision:
    if is_real_time and retrieval_score < tau_ret:
        return Decision(IDK_ANSWER, "real_time_weak_retrieval")
    if has_context and consistent and cov_confidence >= tau_low:
        return Decision(rag_answer, "context_verified")
    if not has_context and consistent and cov_confidence >= tau_high:
        return Decision(rag_answer, "no_context_verified")
    if has_context and not consistent:
        return Decision(IDK_ANSWER, "context_inconsistent")
    return Decision(IDK_ANSWER, "not_verified")


def decision_inputs(route: Route, evidence: Evidence, answers: Answers, check: Verification) -> dict:
    """Algorithm 1's inputs for one turn, under the names the trace records them."""
    return {
        "rag_answer": answers.rag,
        "is_real_time": route.is_real_time,
        "context": evidence.context,
        "consistent": check.consistent,
        "cov_confidence": check.cov_confidence,
        "retrieval_score": evidence.retrieval_score,
    }


def decide_from_trace(trace: dict, cfg: CruiseConfig) -> Decision:
    if not cfg.use_finalizer:  # vision_only and rag_baseline return the answer as it is
        return Decision(trace["rag_answer"], "no_finalizer")
    # A stage switched off by an ablation does not veto: its check counts as passed.
    return decide(
        trace["rag_answer"],
        is_real_time=bool(trace.get("is_real_time")),
        has_context=bool(trace.get("context")),
        consistent=bool(trace.get("consistent")) if cfg.use_self_consistency else True,
        cov_confidence=(trace.get("cov_confidence") or 0.0) if cfg.use_cov else 1.0,
        retrieval_score=trace.get("retrieval_score") or 0.0,
        tau_ret=cfg.tau_ret,
        tau_low=cfg.tau_low,
        tau_high=cfg.tau_high,
    )

"""Stage 9: the paper's rule-based finalizer (Algorithm 1).

    if real-time and S_ret < tau_ret                    -> "I don't know"
       (tau_ret_scope "context", ours: also any turn with context C and S_ret < tau_ret)
    elif gate on and min token prob of a' < min_token_prob -> "I don't know"   (ours, off by default)
    elif C non-empty and consistent and S_CoV >= tau_low  -> a'
    elif C empty and consistent and S_CoV >= tau_high     -> a'
    else                                                -> "I don't know"

`decide_from_trace` reads Algorithm 1's inputs from a turn's trace record (the same keys
agents/cruise/trace.py writes): the chain decides through it, and tools/calibrate.py
replays saved traces through it with other thresholds, so both apply one rule set.

The token-probability gate is QA-Dragon's white-box verifier (its section 3.7.2) reduced to one
threshold on the RAG answer's least likely token; `min_token_prob=0` switches it off. A check that
a preset switched off counts as passed, or as failed with `disabled_check_fails` (docs/chain.md, Presets).
"""
from __future__ import annotations

from agents.base_agent import IDK_ANSWER
from agents.config.cruise_config import CruiseConfig
from agents.runtime.system import Stage
from agents.stages.types import Answers, Decision, Evidence, Route, Verification


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
    token_prob: float | None = None,
    min_token_prob: float = 0.0,
    tau_ret_scope: str = "real_time",
) -> Decision:
    weak = weak_retrieval(is_real_time=is_real_time, has_context=has_context, retrieval_score=retrieval_score,
                          tau_ret=tau_ret, tau_ret_scope=tau_ret_scope)
    if weak:
        return Decision(IDK_ANSWER, weak)
    # The gate, when on, rejects an answer without token probabilities too: it cannot vouch for it.
    if min_token_prob > 0 and (token_prob is None or token_prob < min_token_prob):
        return Decision(IDK_ANSWER, "low_token_prob")
    if has_context and consistent and cov_confidence >= tau_low:
        return Decision(rag_answer, "context_verified")
    if not has_context and consistent and cov_confidence >= tau_high:
        return Decision(rag_answer, "no_context_verified")
    if has_context and not consistent:
        return Decision(IDK_ANSWER, "context_inconsistent")
    return Decision(IDK_ANSWER, "not_verified")


def weak_retrieval(*, is_real_time: bool, has_context: bool, retrieval_score: float, tau_ret: float,
                   tau_ret_scope: str) -> str | None:
    """Algorithm 1's first two rules: the branch of a turn whose retrieval is too weak to answer
    from, else None. They read only the route, the context and S_ret."""
    if is_real_time and retrieval_score < tau_ret:
        return "real_time_weak_retrieval"
    if tau_ret_scope == "context" and has_context and retrieval_score < tau_ret:
        return "weak_retrieval"
    return None


def decided_before_answer(route: Route, evidence: Evidence, cfg: CruiseConfig) -> bool:
    """Whether the finalizer will say "I don't know" whatever the answers and checks say
    (`skip_decided_turns`): it runs, and its first two rules decide the turn."""
    score = evidence.retrieval_score or 0.0  # nothing retrieved: as weak as a score of 0
    return cfg.answer.use_finalizer and weak_retrieval(
        is_real_time=route.is_real_time, has_context=bool(evidence.context), retrieval_score=score,
        tau_ret=cfg.own.tau_ret, tau_ret_scope=cfg.own.tau_ret_scope) is not None


def decision_inputs(route: Route, evidence: Evidence, answers: Answers, check: Verification) -> dict:
    """Algorithm 1's inputs for one turn, under the names the trace records them."""
    return {
        "rag_answer": answers.rag,
        "is_real_time": route.is_real_time,
        "context": evidence.context,
        "consistent": check.consistent,
        "cov_confidence": check.cov_confidence,
        "retrieval_score": evidence.retrieval_score,
        "rag_min_token_prob": answers.rag_min_token_prob,
    }


def decide_from_trace(trace: dict, cfg: CruiseConfig) -> Decision:
    if not cfg.answer.use_finalizer:  # vision_only and rag_baseline return the answer as it is
        return Decision(trace["rag_answer"], "no_finalizer")
    # A check switched off by a preset does not veto (passed), unless disabled_check_fails.
    passed = not cfg.own.disabled_check_fails
    return decide(
        trace["rag_answer"],
        is_real_time=bool(trace.get("is_real_time")),
        has_context=bool(trace.get("context")),
        consistent=bool(trace.get("consistent")) if cfg.own.use_self_consistency else passed,
        cov_confidence=(trace.get("cov_confidence") or 0.0) if cfg.own.use_cov else float(passed),
        retrieval_score=trace.get("retrieval_score") or 0.0,
        tau_ret=cfg.own.tau_ret,
        tau_low=cfg.answer.tau_low,
        tau_high=cfg.own.tau_high,
        token_prob=trace.get("rag_min_token_prob"),
        min_token_prob=cfg.answer.min_token_prob,
        tau_ret_scope=cfg.own.tau_ret_scope,
    )


STAGE = Stage("finalize", switch="use_finalizer", writes=("branch", "final_answer"))

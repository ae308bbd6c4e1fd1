"""How a QA-Dragon turn's final answer is decided from its trace (the chain decides through this,
and tools/calibrate.py replays saved traces through it with other thresholds):

    Direct Output                                   -> the draft answer, unchecked (Table 1)
    Search Verify or RAG:
      post-answer "I don't know"                    -> "I don't know"
      verifier not run (deadline) or < tau_low      -> "I don't know"   (MLLM-based verifier)
      gate on and least Answer-token prob < min_token_prob -> "I don't know"   (white-box verifier)
      otherwise                                     -> the post-answer
"""
from __future__ import annotations

from agents.base_agent import IDK_ANSWER
from agents.config.cruise_config import CruiseConfig
from agents.stages.types import Decision
from agents.stages.verdicts import support_gate


def decide_from_trace(trace: dict, cfg: CruiseConfig) -> Decision:
    """Decision.branch says which rule decided (the trace's "decision"). A failed turn and an
    answer that is already "I don't know" are decided before this rule (agents/runtime/batch.py
    `decide_turn`: "error", "abstained")."""
    branch = trace.get("branch")
    answer = trace["rag_answer"]
    if branch == "direct_output":
        return Decision(answer, "direct_output")
    if not cfg.answer.use_finalizer:
        return Decision(answer, "no_finalizer")
    gated = support_gate(trace.get("verifier_confidence"), cfg, unchecked="not_verified", rejected="verifier_rejected")
    if gated:
        return gated
    token_prob = trace.get("rag_min_token_prob")
    if cfg.answer.min_token_prob > 0 and (token_prob is None or token_prob < cfg.answer.min_token_prob):
        return Decision(IDK_ANSWER, "low_token_prob")
    return Decision(answer, "verified")

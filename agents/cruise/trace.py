"""One JSON-ready record per turn: every signal the chain produced, so that Algorithm 1 and the
MAD filter can be re-decided offline with other thresholds without running a model again."""
from __future__ import annotations

from agents.cruise.types import Answers, Decision, Evidence, Retrieval, Route, Verification


def turn_trace(
    *,
    preset: str,
    route: Route,
    retrieval: Retrieval,
    evidence: Evidence,
    answers: Answers,
    check: Verification,
    decision: Decision,
    stage_ms: dict[str, float],
    deadline_cut: str | None,
    errors: list[str],
) -> dict:
    return {
        "preset": preset,
        "needs_external": route.needs_external,
        "is_real_time": route.is_real_time,
        "router_parsed": route.parsed,
        "router_raw": route.raw,
        "summary": retrieval.summary,
        "retrieval_query": retrieval.query,
        "web_query": retrieval.web_query,
        "retrieved": retrieval.items,
        "chunks": [
            {"text": text, "source": source, "score": score}
            for text, source, score in zip(retrieval.chunks, retrieval.chunk_sources, evidence.chunk_scores)
        ],
        "theta": evidence.theta,
        "kept_chunks": evidence.kept,
        "context": evidence.context,
        "retrieval_score": evidence.retrieval_score,
        "rag_answer": answers.rag,
        "rag_raw": answers.rag_raw,
        "direct_answer": answers.direct,
        "direct_raw": answers.direct_raw,
        "consistent": check.consistent,
        "consistency_raw": check.consistency_raw,
        "cov_confidence": check.cov_confidence,
        "cov_raw": check.cov_raw,
        "branch": decision.branch,
        "final_answer": decision.answer,
        "stage_ms": stage_ms,
        "deadline_cut": deadline_cut is not None,
        "deadline_cut_before": deadline_cut,
        "errors": errors + retrieval.errors,
    }

"""One JSON-ready record per turn: every signal the chain produced, so that Algorithm 1 and the
MAD filter can be re-decided offline with other thresholds without running a model again."""
from __future__ import annotations

from agents.cruise.stages.s9_finalize import decision_inputs
from agents.cruise.types import Answers, Decision, Evidence, Retrieval, Route, Summary, Turn, Verification

# The stages whose model output a parser reads, in chain order.
PARSED_STAGES = ("route", "summarize", "answer", "consistency", "verify")


def parse_outcomes(route: Route, summary: Summary, answers: Answers, check: Verification) -> dict[str, bool]:
    """stage -> was its output read, for the stages that produced an output for this turn."""
    parsed = {"route": route.parsed, "summarize": summary.parsed, "answer": answers.rag_parsed,
              "consistency": check.consistency_parsed, "verify": check.cov_parsed}
    return {stage: ok for stage, ok in parsed.items() if ok is not None}


def parse_failure_counts(traces: list[dict]) -> dict:
    """run_summary.json's `parse_failures` (stage -> unreadable outputs) and `parsed_outputs`
    (stage -> outputs a parser read or tried to read): a silent default becomes a visible rate."""
    failures = dict.fromkeys(PARSED_STAGES, 0)
    outputs = dict.fromkeys(PARSED_STAGES, 0)
    for trace in traces:
        for stage in trace.get("parsed_stages") or []:
            outputs[stage] = outputs.get(stage, 0) + 1
        for stage in trace.get("parse_failures") or []:
            failures[stage] = failures.get(stage, 0) + 1
    return {"parse_failures": failures, "parsed_outputs": outputs}


def turn_trace(
    *,
    preset: str,
    turn: Turn,
    route: Route,
    summary: Summary,
    retrieval: Retrieval,
    evidence: Evidence,
    answers: Answers,
    check: Verification,
    decision: Decision,
    stage_ms: dict[str, float],
    deadline_cut: str | None,
    errors: list[str],
) -> dict:
    parsed = parse_outcomes(route, summary, answers, check)
    return {
        "preset": preset,
        # what the harness passed besides the question: its domain name (steers nothing yet) and
        # how many passages of its own retrieval (None: it handed none over)
        "harness_domain": turn.domain,
        "harness_passages": None if turn.passages is None else len(turn.passages),
        "needs_external": route.needs_external,
        "router_parsed": route.parsed,
        "router_raw": route.raw,
        "summary": retrieval.summary,
        "summary_raw": summary.raw,
        "retrieval_query": retrieval.query,
        "web_query": retrieval.web_query,
        "retrieved": retrieval.items,
        "chunks": [
            {"text": text, "source": source, "score": score}
            for text, source, score in zip(retrieval.chunks, retrieval.chunk_sources, evidence.chunk_scores)
        ],
        "theta": evidence.theta,
        "kept_chunks": evidence.kept,
        # Algorithm 1's inputs, under the names decide_from_trace reads back (calibration re-decides from them).
        **decision_inputs(route, evidence, answers, check),
        "rag_raw": answers.rag_raw,
        "direct_answer": answers.direct,
        "direct_raw": answers.direct_raw,
        "direct_sampled": answers.direct_sampled,
        "rag_mean_token_prob": answers.rag_mean_token_prob,
        "consistency_rule": check.consistency_rule,
        "consistency_raw": check.consistency_raw,
        "cov_raw": check.cov_raw,
        "parsed_stages": sorted(parsed, key=PARSED_STAGES.index),
        "parse_failures": [stage for stage in PARSED_STAGES if parsed.get(stage) is False],
        "branch": decision.branch,
        "final_answer": decision.answer,
        "stage_ms": stage_ms,
        "deadline_cut": deadline_cut is not None,
        "deadline_cut_before": deadline_cut,
        "errors": errors + retrieval.errors,
    }

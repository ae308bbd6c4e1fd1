"""One JSON-ready record per turn: every signal the chain produced, so that Algorithm 1 and the
MAD filter can be re-decided offline with other thresholds without running a model again."""
from __future__ import annotations

from agents.config.groups import PEER_SWITCHES
from agents.cruise.stages import STAGES
from agents.cruise.stages.s9_finalize import decision_inputs
from agents.engines.base import TOKEN_COUNT
from agents.runtime.trace import not_idk, stage_counts
from agents.stages.s3_retrieve import regions_trace
from agents.stages.types import (
    Answers,
    CropPlan,
    Decision,
    Evidence,
    Retrieval,
    Route,
    SubQueries,
    Summary,
    Turn,
    Verification,
)

# The stages whose model output a parser reads, in chain order; the peer stages' (off in the
# paper's presets) are counted only in runs where they ran.
ALL_PARSED_STAGES = tuple(dict.fromkeys(s.parsed for s in STAGES if s.parsed))
PEER_PARSED_STAGES = tuple(dict.fromkeys(s.parsed for s in STAGES if s.parsed and s.switch in PEER_SWITCHES))
PARSED_STAGES = tuple(s for s in ALL_PARSED_STAGES if s not in PEER_PARSED_STAGES)


def parse_outcomes(route: Route, summary: Summary, answers: Answers, check: Verification,
                   sub_queries: SubQueries | None = None, crops: CropPlan | None = None,
                   retrieval: Retrieval | None = None, evidence: Evidence | None = None) -> dict[str, bool]:
    """stage -> was its output read, for the stages that produced an output for this turn."""
    parsed = {"route": route.parsed, "route_extras": route.extras_parsed, "summarize": summary.parsed,
              "decompose": sub_queries.parsed if sub_queries else None, "crop": crops.parsed if crops else None,
              "entity_check": retrieval.entity_check_parsed if retrieval else None,
              "relevance": evidence.relevance_parsed if evidence else None,
              "answer": answers.rag_parsed, "consistency": check.consistency_parsed, "verify": check.cov_parsed}
    return {stage: ok for stage, ok in parsed.items() if ok is not None}


def parse_failure_counts(traces: list[dict]) -> dict:
    """run_summary.json's `parse_failures` (stage -> unreadable outputs) and `parsed_outputs`
    (stage -> outputs a parser read or tried to read): a silent default becomes a visible rate.
    The peer stages appear only in runs where they produced an output."""
    failures, outputs = stage_counts(traces, PARSED_STAGES)
    for stage in PEER_PARSED_STAGES:
        if outputs.get(stage):
            failures.setdefault(stage, 0)
    return {"parse_failures": failures, "parsed_outputs": outputs}


def peer_stage_counts(traces: list[dict]) -> dict:
    """run_summary.json's `peer_stages`: what the peers' stages did over the run (zeros and an
    empty route tally when they were off)."""
    def total(key):
        return sum(len(t.get(key) or []) if isinstance(t.get(key), (list, dict)) else int(t.get(key) or 0)
                   for t in traces)

    searches: dict[str, int] = {}
    domains: dict[str, int] = {}
    types: dict[str, int] = {}
    for t in traces:
        if t.get("router_extras_parsed") is not None:
            searches[str(t.get("route_search") or "unread")] = searches.get(str(t.get("route_search") or "unread"), 0) + 1
            kind = str(t.get("question_type") or "unread")
            types[kind] = types.get(kind, 0) + 1
        if t.get("domain"):
            domains[str(t["domain"])] = domains.get(str(t["domain"]), 0) + 1
    return {
        "route_search": searches,
        "question_type": types,
        "domain": domains,
        "turns_with_domain_notes": sum(1 for t in traces if t.get("domain_notes")),
        "turns_decomposed": sum(1 for t in traces if t.get("sub_queries")),
        "sub_queries": total("sub_queries"),
        "turns_cropped": sum(1 for t in traces if t.get("crops_searched")),
        "crops_searched": total("crops_searched"),
        "entities_checked": total("entity_verdicts"),
        "entities_rejected": total("entities_rejected"),
        "chunks_dropped_entity": total("chunks_dropped_entity"),
        "chunks_judged_relevance": total("relevance"),
        "chunks_dropped_irrelevant": total("chunks_dropped_irrelevant"),
        "turns_context_emptied_by_relevance": sum(1 for t in traces if t.get("relevance") and not t.get("context")),
    }


def turn_trace(
    *,
    turn: Turn,
    route: Route,
    summary: Summary,
    retrieval: Retrieval,
    evidence: Evidence,
    answers: Answers,
    check: Verification,
    decision: Decision,
    sub_queries: SubQueries | None = None,
    crops: CropPlan | None = None,
    domain_notes: bool = False,
) -> tuple[dict, dict[str, bool]]:
    """(CRUISE's own fields of one turn's trace, its parse outcomes): agents/runtime/trace.py
    `record` adds what every system records."""
    parsed = parse_outcomes(route, summary, answers, check, sub_queries, crops, retrieval, evidence)
    return {
        "needs_external": route.needs_external,
        "router_parsed": route.parsed,
        "router_raw": route.raw,
        "summary": retrieval.summary,
        "summary_raw": summary.raw,
        "retrieval_query": retrieval.query,
        "web_query": retrieval.web_query,
        # a follow-up only: its photo's image hits were an earlier turn's (no search ran)
        **({"image_hits_reused": retrieval.image_hits_reused} if turn.history else {}),
        "retrieved": retrieval.items,
        # score None: the coarse step (coarse_score, when it ran) left the chunk out
        "chunks": [
            {"text": text, "source": source, "score": score, **({"last_modified": date} if date else {}),
             **({"coarse_score": coarse} if coarse is not None else {})}
            for text, source, score, date, coarse in zip(retrieval.chunks, retrieval.chunk_sources, evidence.chunk_scores,
                                                         retrieval.chunk_dates or [""] * len(retrieval.chunks),
                                                         evidence.coarse_scores or [None] * len(retrieval.chunks))
        ],
        # how many chunks the coarse step passed to the reranker; None: it did not run
        "coarse_kept": sum(s is not None for s in evidence.chunk_scores) if evidence.coarse_scores else None,
        "theta": evidence.theta,
        "kept_chunks": evidence.kept,
        # Algorithm 1's inputs, under the names decide_from_trace reads back (calibration re-decides from them).
        **decision_inputs(route, evidence, answers, check),
        "rag_raw": answers.rag_raw,
        "direct_answer": answers.direct,
        "direct_raw": answers.direct_raw,
        "direct_sampled": answers.direct_sampled,
        "rag_mean_token_prob": answers.rag_mean_token_prob,
        # how the engine counted the tokens behind rag_min/mean_token_prob (calibration checks it)
        "token_count": TOKEN_COUNT,
        "consistency_rule": check.consistency_rule,
        "consistency_raw": check.consistency_raw,
        "cov_raw": check.cov_raw,
        "branch": decision.branch,
        "final_answer": decision.answer,
        **peer_trace(route, retrieval, evidence, sub_queries, crops, domain_notes),
    }, parsed


def peer_trace(route: Route, retrieval: Retrieval, evidence: Evidence, sub_queries: SubQueries | None,
               crops: CropPlan | None, domain_notes: bool) -> dict:
    """The peer stages' trace keys (docs/chain.md "Stages from the peer systems"): present on every
    trace, empty or None where a stage was off."""
    return {
        "route_search": route.search,
        "question_type": route.question_type,
        "domain": route.domain,
        "domain_source": route.domain_source,
        "domain_notes": domain_notes,
        "router_extras_parsed": route.extras_parsed,
        "searches_run": retrieval.searches,
        "crop_object": crops.object_name if crops else "",
        "crop_boxes": crops.crops if crops else [],
        "crop_raw": crops.raw if crops else "",
        "crops_searched": retrieval.crops_searched,
        "regions_searched": regions_trace(retrieval),
        "sub_queries": retrieval.sub_queries,
        "decompose_raw": sub_queries.raw if sub_queries else "",
        "entity_verdicts": retrieval.entity_verdicts,
        "entities_rejected": [name for name, shown in retrieval.entity_verdicts.items() if shown is False],
        "entity_check_raw": retrieval.entity_check_raw,
        "chunks_dropped_entity": retrieval.chunks_dropped_entity,
        "relevance": evidence.relevance,
        "chunks_dropped_irrelevant": evidence.dropped_irrelevant,
        "relevance_raw": evidence.relevance_raw,
    }


def funnel_flags(trace: dict, cfg) -> dict[str, bool]:
    """The report's funnel for one turn: each check of the chain in order, passed or not, at the
    thresholds and switches this run used (a check the preset switched off counts as passed).
    The harness appends "answered" and "correct"."""
    steps = {"routed to retrieval": trace.get("needs_external") is True}
    if cfg.peer_stages.use_tool_route:
        steps["tool router chose a search"] = trace.get("route_search") != "none"
    steps["retrieved"] = bool(trace.get("retrieved"))
    if cfg.peer_stages.use_entity_check:
        steps["chunks left after the entity check"] = bool(trace.get("chunks"))
    if cfg.peer_stages.use_relevance_filter:
        steps["context after the MAD filter"] = bool(trace.get("context") or trace.get("chunks_dropped_irrelevant"))
    steps["non-empty context"] = bool(trace.get("context"))
    steps["RAG answer not IDK"] = not_idk(trace.get("rag_answer"))
    steps["consistent"] = trace.get("consistent") is True or not cfg.own.use_self_consistency
    threshold = cfg.answer.tau_low if trace.get("context") else cfg.own.tau_high
    confidence = trace.get("cov_confidence")
    steps[f"CoV >= {cfg.answer.tau_low:g} with context, >= {cfg.own.tau_high:g} without"] = (
        not cfg.own.use_cov or (confidence is not None and float(confidence) >= threshold))
    return steps

"""QA-Dragon's trace: one JSON-ready record per turn with every step's output, so that a reader
sees each turn's branch and what decided it, and tools/calibrate.py can replay decide.py; its
funnel; and the run's figures for the report (System.view, system.py)."""
from __future__ import annotations

from agents.engines.base import TOKEN_COUNT
from agents.peers.qa_dragon.types import (
    BRANCHES,
    DomainRoute,
    Draft,
    PostAnswer,
    PostCheck,
    Reranked,
    SearchRoute,
    ToolChoice,
)
from agents.runtime.trace import not_idk, tally
from agents.stages.s3_retrieve import regions_trace
from agents.stages.types import CropPlan, Decision, Retrieval, SubQueries, Turn


def parse_outcomes(domain: DomainRoute, draft: Draft, tool: ToolChoice, rephrased: SubQueries, crops: CropPlan,
                   retrieval: Retrieval, post: PostAnswer, check: PostCheck) -> dict[str, bool]:
    parsed = {"domain": domain.parsed, "draft": draft.parsed, "tool_route": tool.parsed, "rephrase": rephrased.parsed,
              "crop": crops.parsed, "entity_check": retrieval.entity_check_parsed, "post_answer": post.parsed,
              "verify": check.parsed}
    return {stage: ok for stage, ok in parsed.items() if ok is not None}


def turn_trace(*, turn: Turn, domain: DomainRoute, draft: Draft, route: SearchRoute, tool: ToolChoice,
               rephrased: SubQueries, crops: CropPlan, retrieval: Retrieval, reranked: Reranked, post: PostAnswer,
               check: PostCheck, candidate: str, decision: Decision) -> tuple[dict, dict[str, bool]]:
    """(QA-Dragon's own fields of one turn's trace, its parse outcomes): agents/runtime/trace.py
    `record` adds what every system records."""
    evidence = reranked.evidence
    parsed = parse_outcomes(domain, draft, tool, rephrased, crops, retrieval, post, check)
    direct = route.branch == "direct_output"
    return {
        # pre-answer
        "domain": domain.domain,
        "domain_source": domain.source,
        "domain_raw": domain.raw,
        "draft_object": draft.object_name,
        "draft_steps": draft.steps,
        "draft_answer": draft.answer,
        "draft_raw": draft.raw,
        # search router and tool router
        "branch": route.branch,
        "router_reason": route.reason,
        "router_features": route.features,
        "tool_search": None if direct else tool.search,
        "tool_image_check": tool.image_check,
        "tool_text_check": tool.text_check,
        "tool_rule": tool.rule,
        # search agents
        "rephrased_queries": rephrased.queries,
        "rephrase_raw": rephrased.raw,
        "retrieval_query": retrieval.query,
        "web_query": retrieval.web_query,
        # a follow-up only: its photo's image hits were an earlier turn's (no search ran)
        **({"image_hits_reused": retrieval.image_hits_reused} if turn.history else {}),
        "searches_run": retrieval.searches,
        "retrieved": retrieval.items,
        "crop_object": crops.object_name,
        "crop_boxes": crops.crops,
        "crops_searched": retrieval.crops_searched,
        "regions_searched": regions_trace(retrieval),
        "sub_queries": retrieval.sub_queries,
        "entity_verdicts": retrieval.entity_verdicts,
        "entities_rejected": [name for name, shown in retrieval.entity_verdicts.items() if shown is False],
        "chunks_dropped_entity": retrieval.chunks_dropped_entity,
        # coarse-to-fine reranker
        "chunks": [{"text": text, "source": source, "score": score, "fine": fine,
                    **({"last_modified": date} if date else {})}
                   for text, source, score, fine, date in zip(
                       retrieval.chunks, retrieval.chunk_sources, evidence.chunk_scores,
                       reranked.fine or [None] * len(retrieval.chunks),
                       retrieval.chunk_dates or [""] * len(retrieval.chunks))],
        "fine_rerank_ran": reranked.fine_ran,
        "theta": evidence.theta,
        "kept_chunks": evidence.kept,
        "context": evidence.context,
        "retrieval_score": evidence.retrieval_score,
        # post-answer
        "post_answer": None if direct else post.answer,
        "post_reason": post.reason,
        "post_raw": post.raw,
        # the answer the verifiers judge (decide.py; calibration judges it too)
        "rag_answer": candidate,
        "rag_min_token_prob": post.min_token_prob,
        "rag_mean_token_prob": post.mean_token_prob,
        "reply_min_token_prob": post.reply_min_token_prob,
        "token_count": TOKEN_COUNT,
        "verifier_confidence": check.confidence,
        "verifier_raw": check.raw,
        "decision": decision.branch,
        "final_answer": decision.answer,
    }, parsed


def funnel_flags(trace: dict, cfg) -> dict[str, bool]:
    """Where a turn's answer can be lost, in order; a check its branch skips counts as passed."""
    direct = trace.get("branch") == "direct_output"
    steps = {"answer written (not I don't know)": not_idk(trace.get("rag_answer"))}
    confidence = trace.get("verifier_confidence")
    steps[f"verifier >= {cfg.answer.tau_low:g} (Direct Output: not checked)"] = (
        direct or (confidence is not None and float(confidence) >= cfg.answer.tau_low))
    if cfg.answer.min_token_prob > 0:
        token_prob = trace.get("rag_min_token_prob")
        steps[f"least likely answer token >= {cfg.answer.min_token_prob:g} (Direct Output: not checked)"] = (
            direct or (token_prob is not None and token_prob >= cfg.answer.min_token_prob))
    return steps


def summarize(traces: list[dict]) -> dict:
    """run_summary.json's agent_summary for a QA-Dragon run."""
    by_branch = {b: {"turns": 0, "answered": 0} for b in BRANCHES}
    for t in traces:
        if t.get("branch") in by_branch:
            by_branch[t["branch"]]["turns"] += 1
            by_branch[t["branch"]]["answered"] += not_idk(t.get("final_answer"))
    return {
        "qa_dragon": {
            "branches": by_branch,
            "router_reasons": tally(traces, "router_reason"),
            "decisions": tally(traces, "decision"),
            "domains": tally(traces, "domain"),
            "tool_searches": tally([t for t in traces if t.get("tool_search") is not None], "tool_search"),
            "tool_rules": tally([t for t in traces if t.get("tool_rule")], "tool_rule"),
            "turns_with_context": sum(1 for t in traces if t.get("context")),
            "fine_rerank_turns": sum(1 for t in traces if t.get("fine_rerank_ran")),
        },
    }


def report_sections(summary: dict) -> list[dict]:
    figures = summary.get("qa_dragon") or {}
    branches = figures.get("branches") or {}
    sections = [{"title": "QA-Dragon: the search router's branches", "id": "qa-dragon-branches",
                 "header": ["branch", "turns", "answered (not I don't know)"],
                 "rows": [[b, v.get("turns", 0), v.get("answered", 0)] for b, v in branches.items()]}]
    rows = [[f"router: {k}", v] for k, v in (figures.get("router_reasons") or {}).items()]
    rows += [[f"decision: {k}", v] for k, v in (figures.get("decisions") or {}).items()]
    rows += [[f"domain: {k}", v] for k, v in (figures.get("domains") or {}).items()]
    rows += [[f"tool router: {k}", v] for k, v in (figures.get("tool_searches") or {}).items()]
    rows += [[f"tool rule: {k}", v] for k, v in (figures.get("tool_rules") or {}).items()]
    rows += [["turns with context", figures.get("turns_with_context", 0)],
             ["turns the fine reranker scored", figures.get("fine_rerank_turns", 0)]]
    sections.append({"title": "QA-Dragon: what its steps did", "id": "qa-dragon-steps", "header": ["what", "turns"],
                     "rows": rows})
    return sections

"""How the evaluator's report shows CruiseAgent's traces (the TRACE_VIEW of agents/base_agent.py).

- `summarize(traces)`: run_summary.json's "agent_summary": the parsers' unreadable outputs per
  stage and what the peers' stages did (agents/cruise/trace.py);
- `report_sections(agent_summary)`: those figures as the report's tables;
- `prepare_turn(trace)`: what the turn template reads besides the trace (the chunks best first,
  each marked kept or not);
- `TURN_TEMPLATE` with the macro `trace_details(t)`: every stage of one turn, as table rows;
  `SHOWN_TRACE_KEYS`: the keys it lays out (the report lists any other key as it is).

A run of a peer system (CruiseConfig.system qa_dragon or sam_rag, agents/peers/) has its own
summary, tables and turn rows: its traces say which system wrote them ("system").

Only the standard library and the trace modules are imported: the report runs without the
agent's models.
"""
from __future__ import annotations

from pathlib import Path

from agents.cruise.trace import parse_failure_counts, peer_stage_counts
from agents.peers.qa_dragon import trace as qa_dragon_trace
from agents.peers.sam_rag import trace as sam_rag_trace

# The trace modules of the peer systems, by the "system" their traces and summaries carry.
PEER_VIEWS = {"qa_dragon": qa_dragon_trace, "sam_rag": sam_rag_trace}

TURN_TEMPLATE = Path(__file__).with_name("report_turn.html.j2")

SHOWN_TRACE_KEYS = {
    "interaction_id", "session_id", "turn_idx", "preset", "needs_external", "is_real_time", "router_parsed",
    "router_raw", "summary", "retrieval_query", "retrieved", "chunks", "theta", "kept_chunks", "context",
    "retrieval_score", "rag_answer", "rag_raw", "direct_answer", "direct_raw", "consistent", "consistency_raw",
    "cov_confidence", "cov_raw", "branch", "final_answer", "stage_ms", "deadline_cut", "deadline_cut_before",
    "errors", "funnel", "turn_budget_s", "mode_fallbacks",
    # the peer stages (shown in their own rows)
    "route_search", "question_type", "domain", "domain_source", "domain_notes", "router_extras_parsed",
    "searches_run", "crop_object", "crop_boxes", "crop_raw", "crops_searched", "sub_queries", "decompose_raw",
    "entity_verdicts", "entities_rejected", "entity_check_raw", "chunks_dropped_entity", "relevance",
    "chunks_dropped_irrelevant", "relevance_raw",
    # perception for a text-only VLM (its own row)
    "perception",
    # a follow-up turn's standalone question and reuse (one row, every system)
    "standalone_question", "standalone_carried", "standalone_raw", "standalone_fallback", "image_hits_reused",
    # the peer systems' own steps (agents/cruise/peer_turns.html.j2)
    "system", "domain_raw", "draft_object", "draft_steps", "draft_answer", "draft_raw", "router_reason",
    "router_features", "tool_search", "tool_image_check", "tool_text_check", "tool_rule", "rephrased_queries",
    "rephrase_raw", "fine_rerank_ran", "post_answer", "post_reason", "post_raw", "reply_min_token_prob",
    "rag_min_token_prob", "verifier_confidence", "verifier_raw", "decision", "summary_raw", "relevance_rounds",
    "relevance_judged", "first_answer", "first_raw", "is_use_first", "is_use_first_raw", "regenerated",
    "regenerated_answer", "regenerated_raw", "is_use_second", "is_use", "is_sup_confidence", "is_sup_raw", "skipped_for_time",
}


def summarize(traces: list[dict]) -> dict:
    systems = {t.get("system") for t in traces} & set(PEER_VIEWS)
    if len(systems) == 1:
        return {**PEER_VIEWS[systems.pop()].summarize(traces), "run_settings": run_settings(traces)}
    return {**parse_failure_counts(traces), "peer_stages": peer_stage_counts(traces),
            "run_settings": run_settings(traces)}


def run_settings(traces: list[dict]) -> dict:
    """The per-turn budgets the turns ran under (seconds; 0 = none) and the stages switched to
    their text modes for an engine without token probabilities, as the traces recorded them."""
    budgets = sorted({t["turn_budget_s"] for t in traces if isinstance(t.get("turn_budget_s"), (int, float))})
    fallbacks = sorted({line for t in traces for line in t.get("mode_fallbacks") or []})
    return {"turn_budget_s": budgets, "mode_fallbacks": fallbacks,
            "refused_turns": sum(1 for t in traces if t.get("branch") == "refused")}


def budget_line(budgets: list[float]) -> str:
    """What the report says of the per-turn budget."""
    from agents.base_agent import TURN_BUDGET_S

    def one(seconds: float) -> str:
        if seconds <= 0:
            return "none (turn_budget_s 0: the relaunched benchmark has no time limit; these timings are not the competition's)"
        if seconds == TURN_BUDGET_S:
            return f"{seconds:g} s a turn, the competition's"
        return f"{seconds:g} s a turn, widened from the competition's {TURN_BUDGET_S:g} s"
    return "; ".join(one(b) for b in budgets) or "not recorded"


def prepare_turn(trace: dict) -> dict:
    kept = set(trace.get("kept_chunks") or [])
    chunks = [{**c, "kept": c.get("text") in kept} for c in trace.get("chunks") or [] if isinstance(c, dict)]
    return {"chunks": sorted(chunks, key=lambda c: -(c.get("score") or 0.0))}


def report_sections(agent_summary: dict) -> list[dict]:
    """Tables for the report: {"title", "header", "rows"}; none for figures that are all zero."""
    sections = []
    view = PEER_VIEWS.get(agent_summary.get("system"))
    failures = agent_summary.get("parse_failures") if isinstance(agent_summary.get("parse_failures"), dict) else {}
    read = agent_summary.get("parsed_outputs") if isinstance(agent_summary.get("parsed_outputs"), dict) else {}
    if failures:
        sections.append({"title": "Parsers: unreadable model outputs per stage", "id": "parsers",
                         "header": ["stage", "unreadable", "read"],
                         "rows": [[stage, count, read.get(stage, 0)] for stage, count in failures.items()]})
    settings = agent_summary.get("run_settings") if isinstance(agent_summary.get("run_settings"), dict) else {}
    if settings:
        rows = [["the agent's per-turn budget", budget_line(settings.get("turn_budget_s") or [])]]
        rows += [["stage switched to its text mode", line] for line in settings.get("mode_fallbacks") or []]
        rows.append(["turns a hosted provider refused (answered I don't know)", settings.get("refused_turns", 0)])
        sections.append({"title": "Budget and model modes", "id": "run-settings", "header": ["what", "setting"],
                         "rows": rows})
    if view is not None:
        return sections + view.report_sections(agent_summary)
    peer = peer_rows(agent_summary.get("peer_stages") or {})
    if peer:
        sections.append({"title": "What the added stages did", "id": "peer-stages", "header": ["what", "how many"],
                         "rows": [list(row) for row in peer]})
    return sections


def peer_rows(counts: dict) -> list[tuple[str, str]]:
    """The "added stages" table: (what, how many) from the summary's peer_stages."""
    if not any(v for v in counts.values()):
        return []

    def tally(name):
        return ", ".join(f"{k} {v}" for k, v in sorted((counts.get(name) or {}).items(), key=lambda kv: -kv[1])) or "-"

    return [
        ("search chosen by the tool router", tally("route_search")),
        ("question type (decomposition)", tally("question_type")),
        ("domain", tally("domain")),
        ("turns whose answer prompt got domain notes", str(counts.get("turns_with_domain_notes", 0))),
        ("turns decomposed / sub-queries searched", f"{counts.get('turns_decomposed', 0)} / {counts.get('sub_queries', 0)}"),
        ("turns cropped / crops searched", f"{counts.get('turns_cropped', 0)} / {counts.get('crops_searched', 0)}"),
        ("entities checked / rejected", f"{counts.get('entities_checked', 0)} / {counts.get('entities_rejected', 0)}"),
        ("chunks dropped with rejected entities", str(counts.get("chunks_dropped_entity", 0))),
        ("chunks judged / dropped as irrelevant", f"{counts.get('chunks_judged_relevance', 0)} / "
                                                  f"{counts.get('chunks_dropped_irrelevant', 0)}"),
        ("turns whose context the relevance filter emptied", str(counts.get("turns_context_emptied_by_relevance", 0))),
    ]

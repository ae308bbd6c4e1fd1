"""CRUISE's view for the report (System.view, agents/cruise/system.py): its figures over a run
(`summarize`: the parsers' unreadable outputs per stage and what the peers' stages did,
agents/cruise/trace.py), its table of the added stages (`report_sections`), and its turn page
(report_turn.html.j2).

Runs recorded before each system was a record name this module as their trace view: the
protocol's names below are the view over every registered system (agents/runtime/trace_view.py),
so that those runs' reports still show each turn by its own system's page.
"""
from __future__ import annotations

from agents.cruise.trace import parse_failure_counts, peer_stage_counts

TURN_PAGE = "report_turn.html.j2"  # beside agents/cruise/system.py, which registers CRUISE


PROTOCOL = ("SHOWN_TRACE_KEYS", "TURN_TEMPLATE", "prepare_turn", "report_sections", "summarize")


def __getattr__(name: str):
    """The view protocol's names, for runs recorded before (see the module's docstring)."""
    if name in PROTOCOL:
        from agents.runtime import trace_view

        return getattr(trace_view, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def cruise_summary(traces: list[dict]) -> dict:
    return {**parse_failure_counts(traces), "peer_stages": peer_stage_counts(traces)}


def cruise_sections(agent_summary: dict) -> list[dict]:
    peer = peer_rows(agent_summary.get("peer_stages") or {})
    if not peer:
        return []
    return [{"title": "What the added stages did", "id": "peer-stages", "header": ["what", "how many"],
             "rows": [list(row) for row in peer]}]


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

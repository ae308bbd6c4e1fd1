"""How the evaluator's report shows the traces of any registered system (the TRACE_VIEW of
agents/cruise_agent.py; the protocol is agents/base_agent.py's):

- `summarize(traces)`: run_summary.json's "agent_summary": the figures of the system that wrote the
  traces (its View.summarize), the parse record, the turns per branch (every one the system's view
  names, then any other) and the run's settings;
- `report_sections(agent_summary)`: the parsers' and the budget's tables, then the system's own;
- `prepare_turn(trace)`: what the turn page reads besides the trace (the chunks best first, each
  marked kept or not, the system's own page, and the keys that page lays out: `shown_keys`);
- `TURN_TEMPLATE` (agents/report_turn.html.j2): each turn by its system's own page, found beside
  the module that registered the system and named `PACKAGE:PATH` (agents/runtime/package_files.py
  `page_name`), so a system's page may live in its own installed package;
  `SHOWN_TRACE_KEYS`: the keys the pages lay out, each page's read off the page itself (the
  report lists any other key of a turn's trace as it is).

Each trace names the system that wrote it ("system"). Only the registry and the systems' view and
trace modules are imported: the report runs without the agent's models.
"""
from __future__ import annotations

import re
from functools import cache
from pathlib import Path

from agents.runtime.package_files import package_file, page_name
from agents.runtime.system import System, registered, system_named
from agents.runtime.trace import parse_summary

AGENTS_DIR = Path(__file__).resolve().parent.parent  # where the rows the pages share are named from
TURN_TEMPLATE = AGENTS_DIR / "report_turn.html.j2"
# Traces and summaries written before each named its system are all CRUISE's.
UNNAMED_SYSTEM = "cruise"
# The keys the harness and agents/runtime/trace.py record for every turn of every system that the
# turn pages lay out; the others of them the report lists as they are.
RECORDED_KEYS = {
    "interaction_id", "session_id", "turn_idx", "preset", "system", "stage_ms", "deadline_cut", "deadline_cut_before",
    "skipped_for_time", "errors", "perception", "funnel", "turn_budget_s", "mode_fallbacks",
}


# Trace keys the report shows for every system outside its page: the final answer (its own row)
# and the context (the kept chunks of the chunk table that prepare_turn makes).
SHOWN_ELSEWHERE = {"final_answer", "context"}
# How a turn page reads a trace key: `tr.get("key")`, `tr.key`, `tr["key"]` (`tr` the trace, as
# every page names it), `t.trace.get("key")`, or `t.key` for what prepare_turn makes of the key of
# that name (t.chunks, t.branch); and the pages it imports (PACKAGE:PATH, or named from agents/).
READS_KEY = re.compile(r"""\b(?:tr|t\.trace)(?:\.get\(\s*["'](\w+)["']|\[["'](\w+)["']\]|\.(?!get\b)(\w+))"""
                       r"""|\bt\.(?!get\b)(\w+)""")
IMPORTS_PAGE = re.compile(r"""\{%-?\s*(?:from|import)\s+["']([^"']+)["']""")


@cache
def page_keys(template: str) -> frozenset[str]:
    """The trace keys a turn page lays out (`PACKAGE:PATH`, or a page named from agents/), read
    off the page itself and the pages it imports, so that a key no page reads is listed by the
    report as it is."""
    path = package_file(template) if ":" in template else AGENTS_DIR / template
    if path is None or not path.is_file():  # the report's own macros (_turn.html.j2) read no trace key by name
        return frozenset()
    text = path.read_text(encoding="utf-8")
    keys = {key for match in READS_KEY.finditer(text) for key in match.groups() if key}
    for imported in IMPORTS_PAGE.findall(text):
        keys |= page_keys(imported)
    return frozenset(keys)


def system_shown_keys(system: System) -> frozenset[str]:
    """What a system's page lays out: the keys it reads (and those its view says the report shows
    by another name). A key it does not read, a new stage's trace field among them, is listed by
    the report as it is; a system without a page has all its fields listed so."""
    keys = RECORDED_KEYS | SHOWN_ELSEWHERE
    page = page_name(system)
    if page is not None:
        keys |= page_keys(page) | system.view.shown_keys
    return frozenset(keys)


def shown_keys() -> set[str]:
    """What the pages of every registered system lay out (a turn's own system's: prepare_turn)."""
    return set().union(*(system_shown_keys(system) for system in registered().values()))


def __getattr__(name: str):
    # SHOWN_TRACE_KEYS is read when the report asks, so that it covers every system registered by then
    if name == "SHOWN_TRACE_KEYS":
        return frozenset(shown_keys())
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def system_of(record: dict) -> System | None:
    """The registered system that wrote a trace or a summary (None: one not registered here)."""
    try:
        return system_named(str(record.get("system") or UNNAMED_SYSTEM))
    except ValueError:
        return None


def summarize(traces: list[dict]) -> dict:
    names = {t.get("system") or UNNAMED_SYSTEM for t in traces}
    name = names.pop() if len(names) == 1 else UNNAMED_SYSTEM
    system = system_of({"system": name})
    own = system.view.summarize(traces) if system is not None and system.view.summarize else {}
    parsed = parse_summary(traces, system.parsed_stages()) if system is not None else {}
    branches = dict.fromkeys(system.view.branches, 0) if system is not None else {}
    for t in traces:
        branches[str(t.get("branch"))] = branches.get(str(t.get("branch")), 0) + 1
    return {**parsed, **own, "system": name, "branches": branches, "run_settings": run_settings(traces)}


def run_settings(traces: list[dict]) -> dict:
    """The per-turn budgets the turns ran under (seconds; 0 = none) and the stages switched to
    their text modes for an engine without token probabilities, as the traces recorded them."""
    budgets = sorted({t["turn_budget_s"] for t in traces if isinstance(t.get("turn_budget_s"), (int, float))})
    fallbacks = sorted({line for t in traces for line in t.get("mode_fallbacks") or []})
    return {"turn_budget_s": budgets, "mode_fallbacks": fallbacks,
            "refused_turns": sum(1 for t in traces if t.get("branch") == "refused")}


def budget_line(budgets: list[float]) -> str:
    """What the report says of the per-turn budget."""
    from agents.base_agent import budget_text

    return "; ".join(budget_text(b) for b in budgets) or "not recorded"


def prepare_turn(trace: dict) -> dict:
    kept = set(trace.get("kept_chunks") or [])
    chunks = [{**c, "kept": c.get("text") in kept} for c in trace.get("chunks") or [] if isinstance(c, dict)]
    system = system_of(trace)
    return {"chunks": sorted(chunks, key=lambda c: -(c.get("score") or 0.0)),
            "turn_template": page_name(system) if system is not None else None,
            "shown_keys": system_shown_keys(system) if system is not None else frozenset(RECORDED_KEYS)}


def report_sections(agent_summary: dict) -> list[dict]:
    """Tables for the report: {"title", "header", "rows"}; none for figures that are all zero."""
    sections = []
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
    system = system_of(agent_summary)
    if system is not None and system.view.report_sections:
        sections += system.view.report_sections(agent_summary)
    return sections

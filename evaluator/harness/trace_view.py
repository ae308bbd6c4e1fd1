"""The agent's own view of its traces, for the run summary and the report (agents/base_agent.py).

A run records the module its agent named (`TRACE_VIEW`) in run_config.json as "trace_view"; a
run recorded before it did is asked through its agent class. The module may provide:
- `summarize(traces) -> dict`: figures over the run's traces (run_summary.json "agent_summary");
- `report_sections(agent_summary) -> list[{"title", "header", "rows"}]`: tables for the report;
- `TURN_TEMPLATE`: a Jinja file with a macro `trace_details(t)` that shows one turn's trace; a
  page it imports is found beside it, among the report's templates, or, named `PACKAGE:PATH`, in
  that package (evaluator/report/html.py `package_template`).
An agent without one gets neither: its traces are shown key by key.
"""
from __future__ import annotations

import importlib
from types import ModuleType

from agents.registry import load_object
from evaluator.harness.run_record import RunRecord


def load_trace_view(run: RunRecord) -> ModuleType | None:
    name = run.trace_view
    if not name and ":" in str(run.agent):
        try:
            name = load_object(str(run.agent)).TRACE_VIEW
        except Exception:  # noqa: BLE001 - an agent that cannot be imported here, or names none, has no view
            return None
    if not name:
        return None
    try:
        return importlib.import_module(name)
    except ImportError:
        return None


def agent_summary(run: RunRecord, traces: list[dict]) -> dict:
    view = load_trace_view(run)
    summarize = getattr(view, "summarize", None)
    return summarize(traces) if summarize else {}

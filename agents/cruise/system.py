"""CRUISE as a registered System (agents/runtime/system.py): its stages in order (stages/__init__.py),
its chain (chain.py), Algorithm 1 as its decision rule (stages/s9_finalize.py) and its view for the
report (trace.py's funnel, trace_view.py's figures and tables, report_turn.html.j2)."""
from __future__ import annotations

from agents.cruise.chain import run_chain
from agents.cruise.settings import CruiseSettings
from agents.cruise.stages import STAGES
from agents.cruise.stages.s9_finalize import decide_from_trace
from agents.cruise.trace import funnel_flags
from agents.cruise.trace_view import TURN_PAGE, cruise_sections, cruise_summary
from agents.cruise.warmup import warm_up
from agents.runtime.system import System, View, register

BRANCHES = ("real_time_weak_retrieval", "weak_retrieval", "low_token_prob", "context_verified", "no_context_verified",
            "context_inconsistent", "not_verified", "no_finalizer", "error", "refused")

CRUISE = register(System(
    name="cruise",
    stages=STAGES,
    run=run_chain,
    decide=decide_from_trace,
    view=View(funnel=funnel_flags, summarize=cruise_summary, report_sections=cruise_sections, branches=BRANCHES,
              turn_template=TURN_PAGE),
    settings=CruiseSettings,
    # Algorithm 1 decides every turn, an "I don't know" too (not_verified, ...): no abstain_on.
    warm_up=warm_up,
))

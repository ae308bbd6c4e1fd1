"""SAM-RAG as a registered System (agents/runtime/system.py): its steps in order, its chain
(chain.py), isUse and isSup as its decision rule (decide.py) and its view for the report
(trace.py, report_turn.html.j2)."""
from __future__ import annotations

from agents.peers.sam_rag.chain import STAGES, run_sam_rag
from agents.peers.sam_rag.decide import decide_from_trace
from agents.peers.sam_rag.settings import SamRagSettings
from agents.peers.sam_rag.trace import OUTCOMES, funnel_flags, report_sections, summarize
from agents.runtime.system import System, View, register
from agents.stages import s0a_perceive

SHOWN = frozenset({"summary", "summary_raw", "first_answer", "first_raw", "rag_answer", "rag_min_token_prob",
                   "token_count", "retrieval_query", "web_query", "searches_run", "retrieved"})

SAM_RAG = register(System(
    name="sam_rag",
    stages=(s0a_perceive.STAGE, *STAGES),
    run=run_sam_rag,
    decide=decide_from_trace,
    view=View(funnel=funnel_flags, summarize=summarize, report_sections=report_sections, branches=OUTCOMES,
              turn_template="report_turn.html.j2", shown_keys=SHOWN),
    settings=SamRagSettings,
    # an answer that is already "I don't know" is decided before isUse and isSup
    abstain_on="rag_answer",
))

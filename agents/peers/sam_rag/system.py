"""SAM-RAG as a registered System (agents/runtime/system.py): its steps in order, its chain
(chain.py), isUse and isSup as its decision rule (decide.py) and its view for the report
(trace.py, report_turn.html.j2)."""
from __future__ import annotations

import dataclasses

from agents.peers.sam_rag.chain import run_sam_rag
from agents.peers.sam_rag.decide import decide_from_trace
from agents.peers.sam_rag.relevance import IS_REL, RANK
from agents.peers.sam_rag.settings import SamRagSettings
from agents.peers.sam_rag.support import IS_SUP
from agents.peers.sam_rag.trace import OUTCOMES, funnel_flags, report_sections, summarize
from agents.peers.sam_rag.usefulness import IS_USE, REGENERATE
from agents.runtime.system import System, View, register
from agents.stages import s0a_perceive, s1c_standalone, s2_summarize, s3_retrieve, s6_answer

# CRUISE's summary is its caption and CRUISE's RAG answer its generation, run whatever CRUISE's
# switches say, with their parse outcomes under SAM-RAG's names.
CAPTION = dataclasses.replace(s2_summarize.STAGE, switch=None, parsed="caption")
GENERATE = dataclasses.replace(s6_answer.STAGE, parsed="generate")
SHOWN = frozenset({"summary", "summary_raw", "first_answer", "first_raw", "rag_answer", "rag_min_token_prob",
                   "token_count", "retrieval_query", "web_query", "searches_run", "retrieved"})

SAM_RAG = register(System(
    name="sam_rag",
    stages=(s0a_perceive.STAGE, s1c_standalone.STAGE, CAPTION, dataclasses.replace(s3_retrieve.STAGE, switch=None), RANK, IS_REL, GENERATE,
            IS_USE, REGENERATE, IS_SUP),
    run=run_sam_rag,
    decide=decide_from_trace,
    view=View(funnel=funnel_flags, summarize=summarize, report_sections=report_sections, branches=OUTCOMES,
              turn_template="report_turn.html.j2", shown_keys=SHOWN),
    settings=SamRagSettings,
))

"""QA-Dragon as a registered System (agents/runtime/system.py): its steps in order, its chain
(chain.py), its verifiers as its decision rule (decide.py) and its view for the report (trace.py,
report_turn.html.j2)."""
from __future__ import annotations

from agents.peers.qa_dragon.chain import STAGES, run_qa_dragon
from agents.peers.qa_dragon.decide import decide_from_trace
from agents.peers.qa_dragon.settings import QaDragonSettings
from agents.peers.qa_dragon.trace import funnel_flags, report_sections, summarize
from agents.peers.qa_dragon.types import BRANCHES
from agents.runtime.system import System, View, register
from agents.stages import s0a_perceive

# What its turn page lays out besides its stages' own fields.
SHOWN = frozenset({"branch", "router_reason", "router_features", "retrieval_query", "web_query", "searches_run",
                   "retrieved", "crop_object", "crop_boxes", "crops_searched", "sub_queries", "entity_verdicts",
                   "entities_rejected", "chunks_dropped_entity"})

QA_DRAGON = register(System(
    name="qa_dragon",
    stages=(s0a_perceive.STAGE, *STAGES),
    run=run_qa_dragon,
    decide=decide_from_trace,
    view=View(funnel=funnel_flags, summarize=summarize, report_sections=report_sections,
              branches=BRANCHES, turn_template="report_turn.html.j2", shown_keys=SHOWN),
    settings=QaDragonSettings,
    # a post-answer that is already "I don't know" is decided before its verifiers
    abstain_on="rag_answer",
))

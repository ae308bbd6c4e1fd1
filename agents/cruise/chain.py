"""The CRUISE chain over one batch, top to bottom:

    turn -> [perceive] -> route -> summarize -> retrieve + chunk -> rerank -> answer twice -> consistency
         -> verify (CoV) -> finalize (Algorithm 1)

The peers' optional stages (docs/chain.md "Stages from the peer systems", all off in the paper's
presets) slot in as `sNx` files that run right after stage N: decompose (s2a) and crop (s2b)
before retrieval, the entity check (s3a) before reranking, the relevance filter (s5a) after it;
tool and domain routing (s1a, s1b) are read from the router's reply. Perception (s0a) runs first
when the VLM cannot see: the turns then carry their picture as text into every prompt. A stage that is off makes
no engine call and passes its input on unchanged.

The order is CRUISE's stage list (stages/__init__.py `STAGES`): `run_stages` runs each stage's
step over the batch in flight (`ChainState`), this module's for CRUISE's own stages and the
stage's own (`Stage.step`) for one added to the list. Each model stage is one batched engine call
for all the turns that need it, under the batch guards every system runs on
(agents/runtime/batch.py: the deadline, the fault retry, refusals, per-stage timing).
"""
from __future__ import annotations

from dataclasses import dataclass, field

from agents.base_agent import IDK_ANSWER
from agents.config.cruise_config import CruiseConfig
from agents.cruise.stages import STAGES
from agents.cruise.stages.s1_route import route_batch
from agents.cruise.stages.s7_consistency import consistency_batch, needs_consistency_check
from agents.cruise.stages.s8_verify import verify_batch
from agents.cruise.stages.s9_finalize import decided_before_answer, decision_inputs
from agents.cruise.trace import turn_trace
from agents.engines.base import Engines
from agents.runtime.batch import BatchRun, BatchState, decide_turn, keep, open_batch
from agents.runtime.deadline import StageCosts
from agents.stages.s1b_domain_route import domain_notes
from agents.stages.s2_summarize import summarize_batch
from agents.stages.s2a_decompose import decompose_batch
from agents.stages.s2b_crop import crop_batch
from agents.stages.s3_retrieve import retrieve_batch, web_search_enabled
from agents.stages.s3a_entity_check import entity_check_batch
from agents.stages.s5_rerank import rerank_batch
from agents.stages.s5a_relevance import relevance_batch
from agents.stages.s6_answer import answer_batch
from agents.stages.types import (
    Answers,
    CropPlan,
    Evidence,
    Retrieval,
    Route,
    SubQueries,
    Summary,
    Turn,
    Verification,
)


@dataclass
class ChainState(BatchState):
    """One batch in flight through CRUISE's stages: each reads the records before it and writes its
    own, one entry per turn. A stage added to CRUISE's list with a step of its own (Stage.step)
    reads and writes here too: it may replace a record (a check that lowers `checks`' confidence
    vetoes through Algorithm 1), and `added[its name]` holds its trace fields per turn."""

    routes: list[Route] = field(default_factory=list)
    summaries: list[Summary] = field(default_factory=list)
    sub_queries: list[SubQueries] = field(default_factory=list)
    crops: list[CropPlan] = field(default_factory=list)
    retrievals: list[Retrieval] = field(default_factory=list)
    evidence: list[Evidence] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # the domain's lines for the answer prompt ("" for none)
    answers: list[Answers] = field(default_factory=list)
    checks: list[Verification] = field(default_factory=list)

    def __post_init__(self):
        super().__post_init__()
        n = len(self.turns)
        self.sub_queries = [SubQueries() for _ in range(n)]
        self.crops = [CropPlan() for _ in range(n)]
        self.notes = [""] * n


# How the chain runs each of its stages over the batch in flight (the optional ones only when
# their switch is on); a turn a stage did not reach (deadline, fault) keeps what it had.
def route(s: ChainState) -> None:
    s.routes = s.run.stage("route", route_batch, [s.turns], (s.engines.router, s.cfg),
                           lambda: Route(needs_external=True, is_real_time=False, parsed=None))


def domain_route(s: ChainState) -> None:
    s.notes = [domain_notes(r, s.cfg) for r in s.routes]


def summarize(s: ChainState) -> None:
    s.summaries = s.run.stage("summarize", _summarize, [s.turns, s.routes, s.perceptions], (s.engines.vlm, s.cfg),
                              Summary)


def decompose(s: ChainState) -> None:
    if s.cfg.peer_stages.use_decompose:
        web = s.pipeline is not None and web_search_enabled(s.pipeline)
        s.sub_queries = s.run.stage("decompose", decompose_batch, [s.turns, s.routes, s.summaries],
                                    (s.engines.vlm, s.cfg, web), SubQueries)


def crop(s: ChainState) -> None:
    if s.cfg.peer_stages.use_crop_search:
        s.crops = s.run.stage("crop", crop_batch, [s.turns, s.routes], (s.engines.vlm, s.cfg), CropPlan)


def retrieve(s: ChainState) -> None:
    s.retrievals = s.run.stage("retrieve", _retrieve,
                               [s.turns, s.routes, [x.text for x in s.summaries], s.crops, s.sub_queries],
                               (s.pipeline, s.cfg), Retrieval)


def entity_check(s: ChainState) -> None:
    if s.cfg.peer_stages.use_entity_check:
        s.retrievals = keep(s.retrievals, s.run.stage("entity_check", entity_check_batch, [s.turns, s.retrievals],
                                                      (s.engines.vlm, s.cfg), lambda: None))


def rerank(s: ChainState) -> None:
    s.evidence = s.run.stage("rerank", rerank_batch, [s.retrievals], (s.engines.reranker, s.cfg, s.engines.coarse),
                             Evidence)


def relevance(s: ChainState) -> None:
    if s.cfg.peer_stages.use_relevance_filter:
        s.evidence = keep(s.evidence, s.run.stage("relevance", relevance_batch, [s.turns, s.evidence],
                                                  (s.engines.vlm, s.cfg), lambda: None))


def answer(s: ChainState) -> None:
    decided = [s.cfg.own.skip_decided_turns and decided_before_answer(r, e, s.cfg) for r, e in zip(s.routes, s.evidence)]
    if not all(decided):
        s.answers = s.run.stage("answer", _answer, [s.turns, s.evidence, s.notes, decided], (s.engines.vlm, s.cfg),
                                lambda: Answers(rag=IDK_ANSWER), asked=[not d for d in decided])
    else:  # nothing to ask: no engine call, and the stage is not timed as one
        s.answers = [Answers(rag=IDK_ANSWER) for _ in s.turns]


def consistency(s: ChainState) -> None:
    # expected and timed over the turns it may ask (an "I don't know" answer is never checked)
    s.checks = s.run.stage("consistency", consistency_batch, [s.turns, s.evidence, s.answers], (s.engines.vlm, s.cfg),
                           Verification, asked=[needs_consistency_check(a, s.cfg) for a in s.answers])


def verify(s: ChainState) -> None:
    # a turn the verify stage did not reach keeps its consistency result
    s.checks = keep(s.checks, s.run.stage("verify", verify_batch, [s.turns, s.evidence, s.answers, s.checks],
                                          (s.engines.vlm, s.cfg), lambda: None))


STEPS = {"route": route, "domain_route": domain_route, "summarize": summarize,
         "decompose": decompose, "crop": crop, "retrieve": retrieve, "entity_check": entity_check, "rerank": rerank,
         "relevance": relevance, "answer": answer, "consistency": consistency, "verify": verify}


def run_stages(state: ChainState, stages) -> ChainState:
    """Each stage in order: its own step (Stage.step: perception, an added stage), else the chain's
    for it; a stage with neither (the tool router, read from the router's reply; Algorithm 1, run
    per turn after), or a shared step that opened the batch already, has nothing to run here."""
    for stage in stages:
        step = stage.step or STEPS.get(stage.name)
        if step is not None and stage.name not in state.opened:
            step(state)
    return state


def gather_evidence(turns: list[Turn], engines: Engines, pipeline, cfg: CruiseConfig, run: BatchRun,
                    stages=STAGES) -> ChainState:
    """The stages up to the context each turn's answer will see (route, summarize, retrieve and
    rerank, and the peer stages that are on) under `run`'s guards. benchmarks.peer_stages measures
    this part alone."""
    names = [s.name for s in stages]
    return run_stages(ChainState(run, engines, pipeline, cfg, turns), stages[: names.index("relevance") + 1])


def run_chain(system, turns: list[Turn], engines: Engines, pipeline, cfg: CruiseConfig, costs: StageCosts,
              started: float | None = None) -> tuple[list[str], list[dict]]:
    """Answers and traces for one batch of turns, its stages in `system`'s order (CRUISE's record,
    agents/cruise/system.py); the batch's budget runs from `started` (time.monotonic; default now)."""
    s = run_stages(open_batch(system, turns, engines, pipeline, cfg, costs, started, state=ChainState), system.stages)
    final, traces = [], []
    for i in range(len(turns)):
        decision = decide_turn(system, decision_inputs(s.routes[i], s.evidence[i], s.answers[i], s.checks[i]), cfg,
                               s.run, i)
        final.append(decision.answer)
        own, parsed = turn_trace(
            turn=s.turns[i], route=s.routes[i], summary=s.summaries[i], retrieval=s.retrievals[i],
            evidence=s.evidence[i], answers=s.answers[i], check=s.checks[i], decision=decision,
            sub_queries=s.sub_queries[i], crops=s.crops[i], domain_notes=bool(s.notes[i]))
        traces.append(s.trace(i, own, parsed, errors=s.retrievals[i].errors))
    return final, traces


def _summarize(turns, routes, perceptions, engine, cfg):
    return summarize_batch(turns, routes, engine, cfg, perceptions)


def _retrieve(turns, routes, summaries, crops, sub_queries, pipeline, cfg):
    return retrieve_batch(turns, routes, summaries, pipeline, cfg, crops, sub_queries)


def _answer(turns, evidence, notes, decided, engine, cfg):
    """The answers of the turns Algorithm 1 has not decided yet; a decided turn gets "I don't
    know" and no direct answer, so neither check asks about it."""
    asked = [i for i, d in enumerate(decided) if not d]
    answers = answer_batch([turns[i] for i in asked], [evidence[i] for i in asked], engine, cfg,
                           [notes[i] for i in asked])
    out = [Answers(rag=IDK_ANSWER) for _ in turns]
    for i, a in zip(asked, answers):
        out[i] = a
    return out

"""SAM-RAG over one batch (seed 002, its Figure 2 and Table 1), top to bottom:

    turn -> [perceive] -> caption (the photo aligned to text)          (modality alignment)
         -> retrieve (image KG, web) -> rank by similarity             (document retrieval)
         -> isRel per document, in rounds, until one is relevant        (relevance verification)
         -> generate from C -> isUse -> [regenerate once -> isUse]      (answer generation)
         -> isSup -> the answer, or "I don't know"                      (answer verification)

The caption is CRUISE's question-aware summary (s2_summarize; what perception read, for a model
that cannot see), and q' = question + caption searches as in CRUISE (s3_retrieve, every search
the pipeline has); both steps, and the generation, keep CRUISE's stage names ("summarize",
"answer") so that a profile's stage-cost priors apply to them. No router, dual path, self-consistency or CoV: those are CRUISE's. Each model
step is one batched engine call for the turns that need it, under the batch guards every system
runs on (agents/runtime/batch.py `BatchRun`, and `Room` for the isRel rounds and the
regeneration), and each turn leaves one trace (trace.py).
"""
from __future__ import annotations

from agents.base_agent import IDK_ANSWER
from agents.config.cruise_config import CruiseConfig
from agents.engines.base import Engines
from agents.peers.sam_rag.relevance import is_rel_round, rank_batch, searching
from agents.peers.sam_rag.support import is_sup_batch
from agents.peers.sam_rag.trace import turn_trace
from agents.peers.sam_rag.types import RelevanceSearch, SupportCheck, UseCheck
from agents.peers.sam_rag.usefulness import is_use_batch, regenerate_batch
from agents.runtime.batch import Room, decide_turn, keep, open_batch, run_steps
from agents.runtime.deadline import StageCosts
from agents.stages.s2_summarize import summarize_batch
from agents.stages.s3_retrieve import retrieve_batch
from agents.stages.s5_rerank import context_block
from agents.stages.s6_answer import answer_batch
from agents.stages.types import Answers, Evidence, Retrieval, Route, Summary, Turn


def relevant_evidence(retrieval: Retrieval, state: RelevanceSearch) -> Evidence:
    """C as the answer prompt reads it: the relevant documents in rank order."""
    kept = state.kept
    chunks = [retrieval.chunks[i] for i in kept]
    dates = [retrieval.chunk_dates[i] for i in kept] if retrieval.chunk_dates else []
    return Evidence(chunk_scores=list(state.scores), kept=chunks, kept_dates=dates, context=context_block(chunks, dates),
                    retrieval_score=max(state.scores, default=0.0))


# What the answer needs after the relevance rounds.
ANSWER_STEPS = ("answer", "is_use", "is_sup")


def run_sam_rag(system, turns: list[Turn], engines: Engines, pipeline, cfg: CruiseConfig, costs: StageCosts,
                started: float | None = None) -> tuple[list[str], list[dict]]:
    """Answers and traces for one batch (`system`: SAM-RAG's record, system.py); the budget runs
    from `started` (time.monotonic)."""
    n = len(turns)
    # the stages of its list that state their own step (the standalone question) run right after
    # the opening every system has (perception)
    opened = run_steps(open_batch(system, turns, engines, pipeline, cfg, costs, started), system.stages)
    run, turns, perceptions = opened.run, opened.turns, opened.perceptions
    scfg = cfg.replace(use_retrieval=True, use_summary=True)
    routes = [Route(needs_external=True, is_real_time=False, parsed=None) for _ in turns]
    summaries = run.stage("summarize", _caption, [turns, routes, perceptions], (engines.vlm, scfg), Summary)
    retrievals = run.stage("retrieve", _retrieve, [turns, routes, [s.text for s in summaries]], (pipeline, scfg),
                           Retrieval)
    # A step no turn needs is not started (the deadline would otherwise weigh a step with nothing
    # to do), an optional one only when it leaves room for the answer (Room).
    room = Room(run)

    states = [RelevanceSearch() for _ in turns]
    if any(r.chunks for r in retrievals):
        states = run.stage("rank", rank_batch, [retrievals], (engines.reranker, cfg), RelevanceSearch)
    for _ in range(max(cfg.own.sam_rag_rounds, 0)):
        if not any(searching(s, cfg) for s in states) or run.cut_before or run.cut_during:
            break
        if not room("is_rel", ANSWER_STEPS):
            break
        judged = run.stage("is_rel", is_rel_round, [turns, summaries, retrievals, states], (engines.vlm, cfg),
                           lambda: None)
        states = [j if j is not None else s for j, s in zip(judged, states)]
    evidence = [relevant_evidence(r, s) for r, s in zip(retrievals, states)]
    answers = run.stage("answer", answer_batch, [turns, evidence], (engines.vlm, cfg),
                        lambda: Answers(rag=IDK_ANSWER))
    uses = [UseCheck() for _ in turns]
    if any(a.rag != IDK_ANSWER for a in answers):
        uses = keep(uses, run.stage("is_use", is_use_batch, [turns, answers, uses], (engines.vlm, cfg), lambda: None))
    if any(u.first is not None and u.first.passed is False for u in uses) and room("regenerate", ("is_use", "is_sup")):
        uses = keep(uses, run.stage("regenerate", regenerate_batch, [turns, evidence, answers, uses],
                                     (engines.vlm, cfg), lambda: None))
        uses = keep(uses, run.stage("is_use", is_use_batch, [turns, answers, uses], (engines.vlm, cfg), lambda: None))
    candidates = [u.regenerated if u.regenerated is not None else a.rag for u, a in zip(uses, answers)]
    # isSup judges only answers that passed isUse (Table 1: isUse true leads to isSup)
    checked = [c if u.passed else IDK_ANSWER for c, u in zip(candidates, uses)]
    supports = [SupportCheck() for _ in turns]
    if any(c != IDK_ANSWER for c in checked):
        supports = run.stage("is_sup", is_sup_batch, [turns, evidence, checked], (engines.vlm, cfg), SupportCheck)

    final, traces = [], []
    for i in range(n):
        inputs = {"rag_answer": candidates[i], "is_use": uses[i].passed, "is_sup_confidence": supports[i].confidence,
                  "regenerated": uses[i].regenerated is not None}
        decision = decide_turn(system, inputs, cfg, run, i)
        final.append(decision.answer)
        own, parsed = turn_trace(
            turn=turns[i], summary=summaries[i], retrieval=retrievals[i], relevance=states[i],
            context=evidence[i].context, answers=answers[i], use=uses[i], support=supports[i],
            candidate=candidates[i], decision=decision)
        traces.append(opened.trace(i, own, parsed, errors=retrievals[i].errors, skipped_for_time=room.skipped))
    return final, traces


def _caption(turns, routes, perceptions, engine, cfg):
    return summarize_batch(turns, routes, engine, cfg, perceptions)


def _retrieve(turns, routes, summaries, pipeline, cfg):
    return retrieve_batch(turns, routes, summaries, pipeline, cfg)

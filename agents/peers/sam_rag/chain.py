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

import dataclasses

from agents.base_agent import IDK_ANSWER
from agents.peers.sam_rag.relevance import IS_REL, RANK, searching
from agents.peers.sam_rag.support import IS_SUP
from agents.peers.sam_rag.trace import turn_trace
from agents.peers.sam_rag.types import RelevanceSearch, UseCheck, column
from agents.peers.sam_rag.usefulness import IS_USE, REGENERATE
from agents.run_stages import BatchState, switched_on
from agents.runtime.batch import Room
from agents.stages import s1c_standalone, s2_summarize, s3_retrieve, s6_answer
from agents.stages.s5_rerank import context_block
from agents.stages.types import Evidence, Retrieval

# CRUISE's summary is its caption and CRUISE's RAG answer its generation, run whatever CRUISE's
# switches say, with their parse outcomes under SAM-RAG's names.
CAPTION = dataclasses.replace(s2_summarize.STAGE, switch=None, parsed="caption")
RETRIEVE = dataclasses.replace(s3_retrieve.STAGE, switch=None)
GENERATE = dataclasses.replace(s6_answer.STAGE, parsed="generate")
STAGES = (s1c_standalone.STAGE, CAPTION, RETRIEVE, RANK, IS_REL, GENERATE, IS_USE, REGENERATE, IS_SUP)


def relevant_evidence(retrieval: Retrieval, state: RelevanceSearch) -> Evidence:
    """C as the answer prompt reads it: the relevant documents in rank order."""
    kept = state.kept
    chunks = [retrieval.chunks[i] for i in kept]
    dates = [retrieval.chunk_dates[i] for i in kept] if retrieval.chunk_dates else []
    return Evidence(chunk_scores=list(state.scores), kept=chunks, kept_dates=dates, context=context_block(chunks, dates),
                    retrieval_score=max(state.scores, default=0.0))


# What the answer needs after the relevance rounds.
ANSWER_STEPS = ("answer", "is_use", "is_sup")


def run_sam_rag(s: BatchState) -> tuple[list[str], list[dict]]:
    """Answers and traces for one opened batch of SAM-RAG (its record: system.py)."""
    run, f, cfg = s.run, s.fields, s.cfg
    # the standalone question runs right after the opening every system has (perception)
    if switched_on(s1c_standalone.STAGE, s):
        s.call(s1c_standalone.STAGE)
    scfg = cfg.replace(use_retrieval=True, use_summary=True)
    # every turn searches (no router): the route every record reads where none was written
    s.call(CAPTION, cfg=scfg)
    s.call(RETRIEVE, cfg=scfg)
    # A step no turn needs is not started (the deadline would otherwise weigh a step with nothing
    # to do), an optional one only when it leaves room for the answer (Room).
    room = Room(run)

    if any(r.chunks for r in column(f, "retrieval")):
        s.call(RANK)
    for _ in range(max(cfg.own.sam_rag_rounds, 0)):
        if not any(searching(state, cfg) for state in column(f, "relevance")) or run.cut_before or run.cut_during:
            break
        if not room("is_rel", ANSWER_STEPS):
            break
        s.call(IS_REL)
    for fields, retrieval, state in zip(f, column(f, "retrieval"), column(f, "relevance")):
        fields["evidence"] = relevant_evidence(retrieval, state)
    s.call(GENERATE)
    answers = column(f, "answers")
    for fields in f:
        fields["use"] = UseCheck()
    if any(a.rag != IDK_ANSWER for a in answers):
        s.call(IS_USE)
    if any(u.first is not None and u.first.passed is False for u in column(f, "use")) and room("regenerate", ("is_use", "is_sup")):
        s.call(REGENERATE)
        s.call(IS_USE)
    uses = column(f, "use")
    candidates = [u.regenerated if u.regenerated is not None else a.rag for u, a in zip(uses, answers)]
    # isSup judges only answers that passed isUse (Table 1: isUse true leads to isSup)
    for fields, c, u in zip(f, candidates, uses):
        fields["checked"] = c if u.passed else IDK_ANSWER
    if any(fields["checked"] != IDK_ANSWER for fields in f):
        s.call(IS_SUP)

    def signals(i: int) -> dict:
        use, support = uses[i], column([f[i]], "support")[0]
        return {"rag_answer": candidates[i], "is_use": use.passed, "is_sup_confidence": support.confidence,
                "regenerated": use.regenerated is not None}

    def traced(i: int, decision) -> tuple[dict, dict]:
        summary, retrieval, relevance, answer, support = (column([f[i]], name)[0] for name in (
            "summary", "retrieval", "relevance", "answers", "support"))
        own, parsed = turn_trace(
            turn=s.turns[i], summary=summary, retrieval=retrieval, relevance=relevance, context=f[i]["evidence"].context,
            answers=answer, use=uses[i], support=support, candidate=candidates[i], decision=decision)
        standalone = {k: f[i][k] for k in s1c_standalone.FIELDS if k in f[i]}
        return {**own, **standalone, "errors": retrieval.errors}, parsed

    return s.finish(signals=signals, trace=traced, skipped_for_time=room.skipped)

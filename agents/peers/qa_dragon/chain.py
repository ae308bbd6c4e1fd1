"""QA-Dragon over one batch (seed 001, Figure 1), top to bottom:

    turn -> [perceive] -> domain router -> D-CoT draft + trace          (pre-answer, 3.1)
         -> search router: Direct Output | Search Verify | RAG          (3.2, a rule: search_router.py)
         -> tool router (RAG: image / text / both / neither)            (3.3)
         -> query rephrasing, object crop, image + fused text search, entity selection (3.4, 3.5)
         -> coarse reranker -> fine reranker                           (3.6)
         -> post-answer -> verifier + token-probability gate            (3.7)

Direct Output turns stop after the router with their draft; the others go on. No dual path and no
Chain-of-Verification: those are CRUISE's. Each model step is one batched engine call for the
turns that need it, run under the batch guards every system runs on (agents/runtime/batch.py
`BatchRun`: the deadline, the fault retry, per-stage timing; `Room`: an optional step only when it
leaves the answer its time), and each turn leaves one trace (trace.py).
"""
from __future__ import annotations

import dataclasses

from agents.peers.qa_dragon import domain_router, draft, post_answer, rephrase, tool_router, verifier
from agents.peers.qa_dragon.rephrase import enhance_sub_queries
from agents.peers.qa_dragon.rerank import COARSE, FINE, coarse_pick
from agents.peers.qa_dragon.search_agents import query_subject, search_agent_settings, search_routes
from agents.peers.qa_dragon.search_router import route_batch
from agents.peers.qa_dragon.tool_router import planned_tools, unasked_tools
from agents.peers.qa_dragon.trace import turn_trace
from agents.peers.qa_dragon.types import PostAnswer, PostCheck, Reranked, SearchRoute, column
from agents.peers.qa_dragon.verifier import needs_check
from agents.run_stages import BatchState, switched_on
from agents.runtime.batch import Room
from agents.stages import s1c_standalone, s2b_crop, s3_retrieve, s3a_entity_check
from agents.stages.s3_retrieve import retrieve_batch, web_search_enabled
from agents.stages.types import CropPlan, Retrieval, SubQueries, searched_for_oracle

# What the answer needs after the searches: the post-answer and its verifier; and before them,
# the search and the coarse reranker.
ANSWER_STEPS = ("post_answer", "verify")
SEARCH_THEN = ("retrieve", "rerank", *ANSWER_STEPS)


def fused_search(batch) -> list[dict]:
    """The search agents' retrieval (3.4, 3.5): image and fused text search as each turn's `route`
    (its tool choice) says, for q' = question + the draft's `subject`, with its object `crops` and
    its `rephrased` queries."""
    found = retrieve_batch(batch.turns, column(batch.reads, "route"), [r["subject"] for r in batch.reads],
                           batch.pipeline, batch.cfg, column(batch.reads, "crops"), column(batch.reads, "rephrased"))
    return [{"retrieval": r} for r in found]


# QA-Dragon's search: the shared retrieval stage's record (its name, switch and prior), over its
# own inputs.
RETRIEVE = dataclasses.replace(s3_retrieve.STAGE, batch_fn=fused_search, reads=("route", "subject", "crops", "rephrased"))
STAGES = (s1c_standalone.STAGE, domain_router.STAGE, draft.STAGE, tool_router.STAGE, rephrase.STAGE, s2b_crop.STAGE,
          RETRIEVE, s3a_entity_check.STAGE, COARSE, FINE, post_answer.STAGE, verifier.STAGE)


def set_all(s: BatchState, name: str, values: list) -> None:
    for fields, value in zip(s.fields, values):
        fields[name] = value


def run_qa_dragon(s: BatchState) -> tuple[list[str], list[dict]]:
    """Answers and traces for one opened batch of QA-Dragon (its record: system.py)."""
    n, run, cfg, pipeline = len(s.turns), s.run, s.cfg, s.pipeline
    # the standalone question runs right after the opening every system has (perception)
    if switched_on(s1c_standalone.STAGE, s):
        s.call(s1c_standalone.STAGE)
    s.call(domain_router.STAGE)
    s.call(draft.STAGE)
    drafts, domains = column(s.fields, "draft"), column(s.fields, "domain")
    routes = route_batch(s.turns, drafts, domains)
    set_all(s, "search_route", routes)
    web = web_search_enabled(pipeline)
    # A step no turn needs is not started (the deadline would otherwise weigh a step with nothing
    # to do), an optional one only when it leaves room for the answer (Room); a turn a step did not
    # reach keeps what it had.
    room = Room(run)

    set_all(s, "tool", planned_tools(routes, web))
    if any(r.branch == "rag" for r in routes):
        if room("tool_route", SEARCH_THEN):
            s.call(tool_router.STAGE)
        else:
            set_all(s, "tool", unasked_tools(routes, domains, column(s.fields, "tool"), web))
    set_all(s, "rephrased", [SubQueries() for _ in range(n)])
    tools = column(s.fields, "tool")
    if cfg.own.qa_dragon_rephrase_queries > 0 and any(t.text for t in tools) and room("rephrase", SEARCH_THEN):
        s.call(rephrase.STAGE)
    # 3.5.1's sub-question enhancement: each rephrased query gets the referents the shared
    # standalone step carried from the conversation
    set_all(s, "rephrased", [enhance_sub_queries(r, f.get("standalone_carried") or [])
                             for r, f in zip(column(s.fields, "rephrased"), s.fields)])
    scfg = search_agent_settings(cfg)
    set_all(s, "route", search_routes(tools))
    set_all(s, "crops", [CropPlan() for _ in range(n)])
    if (cfg.peer_stages.use_crop_search and any(t.image and turn.image is not None for t, turn in zip(tools, s.turns))
            and room("crop", SEARCH_THEN)):
        s.call(s2b_crop.STAGE, cfg=scfg)
    set_all(s, "subject", [query_subject(d) for d in drafts])
    set_all(s, "retrieval", [Retrieval() for _ in range(n)])
    if any(r.needs_external for r in column(s.fields, "route")) or any(map(searched_for_oracle, s.turns)):
        s.call(RETRIEVE, cfg=scfg)
    retrievals = column(s.fields, "retrieval")
    if (cfg.peer_stages.use_entity_check and any(r.chunk_entities for r in retrievals)
            and room("entity_check", ("rerank", *ANSWER_STEPS))):
        s.call(s3a_entity_check.STAGE)
    set_all(s, "reranked", [Reranked() for _ in range(n)])
    if any(r.chunks for r in column(s.fields, "retrieval")):
        s.call(COARSE)
    if any(coarse_pick(r.evidence.chunk_scores, cfg) for r in column(s.fields, "reranked")) and room("fine_rerank", ANSWER_STEPS):
        s.call(FINE)
    set_all(s, "post", [PostAnswer() for _ in range(n)])
    if any(r.branch != "direct_output" for r in routes):
        s.call(post_answer.STAGE)
    set_all(s, "post_check", [PostCheck() for _ in range(n)])
    if any(needs_check(p) for p in column(s.fields, "post")):
        s.call(verifier.STAGE)

    def route_of(i: int) -> SearchRoute:
        return routes[i] if i not in run.failed else SearchRoute("error", "a stage failed on this turn")

    def candidate_of(i: int) -> str:
        return column([s.fields[i]], "draft")[0].answer if route_of(i).branch == "direct_output" else s.fields[i]["post"].answer

    def signals(i: int) -> dict:
        post, check = s.fields[i]["post"], s.fields[i]["post_check"]
        return {"branch": route_of(i).branch, "rag_answer": candidate_of(i), "verifier_confidence": check.confidence,
                "rag_min_token_prob": post.min_token_prob}

    def traced(i: int, decision) -> tuple[dict, dict]:
        f = s.fields[i]
        own, parsed = turn_trace(
            turn=s.turns[i], domain=column([f], "domain")[0], draft=column([f], "draft")[0], route=route_of(i),
            tool=f["tool"], rephrased=f["rephrased"], crops=f["crops"], retrieval=f["retrieval"],
            reranked=f["reranked"], post=f["post"], check=f["post_check"], candidate=candidate_of(i), decision=decision)
        standalone = {k: f[k] for k in s1c_standalone.FIELDS if k in f}
        return {**own, **standalone, "errors": f["retrieval"].errors}, parsed

    return s.finish(signals=signals, trace=traced, skipped_for_time=room.skipped)

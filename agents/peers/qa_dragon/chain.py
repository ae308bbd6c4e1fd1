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

from agents.config.cruise_config import CruiseConfig
from agents.engines.base import Engines
from agents.peers.qa_dragon.domain_router import domain_batch
from agents.peers.qa_dragon.draft import draft_batch
from agents.peers.qa_dragon.post_answer import post_answer_batch
from agents.peers.qa_dragon.rephrase import enhance_sub_queries, rephrase_batch
from agents.peers.qa_dragon.rerank import coarse_batch, coarse_pick, fine_batch
from agents.peers.qa_dragon.search_agents import query_subject, search_agent_settings, search_routes
from agents.peers.qa_dragon.search_router import route_batch
from agents.peers.qa_dragon.tool_router import planned_tools, tool_batch, unasked_tools
from agents.peers.qa_dragon.trace import turn_trace
from agents.peers.qa_dragon.types import (
    DomainRoute,
    Draft,
    PostAnswer,
    PostCheck,
    Reranked,
    SearchRoute,
)
from agents.peers.qa_dragon.verifier import needs_check, verify_batch
from agents.runtime.batch import Room, decide_turn, keep, open_batch, run_steps
from agents.runtime.deadline import StageCosts
from agents.stages.s2b_crop import crop_batch
from agents.stages.s3_retrieve import retrieve_batch, web_search_enabled
from agents.stages.s3a_entity_check import entity_check_batch
from agents.stages.types import CropPlan, Retrieval, SubQueries, Turn, searched_for_oracle

# What the answer needs after the searches: the post-answer and its verifier; and before them,
# the search and the coarse reranker.
ANSWER_STEPS = ("post_answer", "verify")
SEARCH_THEN = ("retrieve", "rerank", *ANSWER_STEPS)


def run_qa_dragon(system, turns: list[Turn], engines: Engines, pipeline, cfg: CruiseConfig, costs: StageCosts,
                  started: float | None = None) -> tuple[list[str], list[dict]]:
    """Answers and traces for one batch (`system`: QA-Dragon's record, system.py); the budget runs
    from `started` (time.monotonic)."""
    n = len(turns)
    # the stages of its list that state their own step (the standalone question) run right after
    # the opening every system has (perception)
    opened = run_steps(open_batch(system, turns, engines, pipeline, cfg, costs, started), system.stages)
    run, turns = opened.run, opened.turns
    domains = run.stage("domain", domain_batch, [turns], (engines.router, cfg), DomainRoute)
    drafts = run.stage("draft", draft_batch, [turns, domains], (engines.vlm, cfg), Draft)
    routes = route_batch(turns, drafts, domains)
    web = pipeline is not None and web_search_enabled(pipeline)
    # A step no turn needs is not started (the deadline would otherwise weigh a step with nothing
    # to do), an optional one only when it leaves room for the answer (Room); a turn a step did not
    # reach keeps what it had.
    room = Room(run)

    tools = planned_tools(routes, web)
    if any(r.branch == "rag" for r in routes):
        if room("tool_route", SEARCH_THEN):
            tools = keep(tools, run.stage("tool_route", tool_batch, [turns, drafts, routes, domains, tools],
                                           (engines.vlm, cfg, web), lambda: None))
        else:
            tools = unasked_tools(routes, domains, tools, web)
    rephrased = [SubQueries() for _ in turns]
    if cfg.own.qa_dragon_rephrase_queries > 0 and any(t.text for t in tools) and room("rephrase", SEARCH_THEN):
        rephrased = keep(rephrased, run.stage("rephrase", rephrase_batch, [turns, drafts, tools], (engines.vlm, cfg),
                                               lambda: None))
    # 3.5.1's sub-question enhancement: each rephrased query gets the referents the shared
    # standalone step carried from the conversation
    carried = [fields.get("standalone_carried") or [] for fields in opened.added.get("standalone") or [{}] * n]
    rephrased = [enhance_sub_queries(r, c) for r, c in zip(rephrased, carried)]
    scfg = search_agent_settings(cfg)
    sroutes = search_routes(tools)
    crops = [CropPlan() for _ in turns]
    if (cfg.peer_stages.use_crop_search and any(t.image and turn.image is not None for t, turn in zip(tools, turns))
            and room("crop", SEARCH_THEN)):
        crops = keep(crops, run.stage("crop", crop_batch, [turns, sroutes], (engines.vlm, scfg), lambda: None))
    subjects = [query_subject(d) for d in drafts]
    retrievals = [Retrieval() for _ in turns]
    if any(r.needs_external for r in sroutes) or any(map(searched_for_oracle, turns)):
        retrievals = keep(retrievals, run.stage("retrieve", _retrieve, [turns, sroutes, subjects, crops, rephrased],
                                                 (pipeline, scfg), lambda: None))
    if (cfg.peer_stages.use_entity_check and any(r.chunk_entities for r in retrievals)
            and room("entity_check", ("rerank", *ANSWER_STEPS))):
        retrievals = keep(retrievals, run.stage("entity_check", entity_check_batch, [turns, retrievals],
                                                 (engines.vlm, cfg), lambda: None))
    reranked = [Reranked() for _ in turns]
    if any(r.chunks for r in retrievals):
        reranked = keep(reranked, run.stage("rerank", coarse_batch, [retrievals], (engines.reranker, cfg),
                                             lambda: None))
    if any(coarse_pick(r.evidence.chunk_scores, cfg) for r in reranked) and room("fine_rerank", ANSWER_STEPS):
        reranked = keep(reranked, run.stage("fine_rerank", fine_batch, [retrievals, reranked], (engines.vlm, cfg),
                                             lambda: None))
    posts = [PostAnswer() for _ in turns]
    if any(r.branch != "direct_output" for r in routes):
        posts = keep(posts, run.stage("post_answer", post_answer_batch, [turns, drafts, routes, reranked],
                                       (engines.vlm, cfg), lambda: None))
    checks = [PostCheck() for _ in turns]
    if any(needs_check(p) for p in posts):
        checks = keep(checks, run.stage("verify", verify_batch, [turns, posts, reranked], (engines.vlm, cfg),
                                         lambda: None))

    final, traces = [], []
    for i in range(n):
        route = routes[i] if i not in run.failed else SearchRoute("error", "a stage failed on this turn")
        candidate = drafts[i].answer if route.branch == "direct_output" else posts[i].answer
        inputs = {"branch": route.branch, "rag_answer": candidate, "verifier_confidence": checks[i].confidence,
                  "rag_min_token_prob": posts[i].min_token_prob}
        decision = decide_turn(system, inputs, cfg, run, i)
        final.append(decision.answer)
        own, parsed = turn_trace(
            turn=turns[i], domain=domains[i], draft=drafts[i], route=route, tool=tools[i], rephrased=rephrased[i],
            crops=crops[i], retrieval=retrievals[i], reranked=reranked[i], post=posts[i], check=checks[i],
            candidate=candidate, decision=decision)
        traces.append(opened.trace(i, own, parsed, errors=retrievals[i].errors, skipped_for_time=room.skipped))
    return final, traces


def _retrieve(turns, routes, subjects, crops, rephrased, pipeline, cfg):
    return retrieve_batch(turns, routes, subjects, pipeline, cfg, crops, rephrased)

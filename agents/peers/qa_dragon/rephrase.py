"""The text search agent's query rephrasing (seed 001, 3.5.1): from the question, the object the
D-CoT named and its reasoning, the VLM writes up to `qa_dragon_rephrase_queries` self-contained
web queries, one part of a many-part question each, with the thing's name in place of "this" or
"it" (prompts/qa_dragon_rephrase.txt; one engine call for the turns whose text search runs). Each
runs as one more web search beside the fused query (s3_retrieve). Text only: the reasoning
carries what the photo showed. The paper's sub-question enhancement, which clarifies "parts with
unclear referents or lacking context", is done without a second request: a follow-up turn is
rephrased from its standalone question (the shared step, agents/stages/s1c_standalone.py), and
each of its queries that lacks a term carried from the conversation gets it (`enhance_sub_queries`).
A reply without a usable query leaves the turn with its fused query alone.
"""
from __future__ import annotations

import dataclasses

from agents.config.cruise_config import CruiseConfig
from agents.engines.base import ChatEngine, ChatRequest, Sampling
from agents.peers.qa_dragon.types import Draft, ToolChoice, column
from agents.runtime.system import Stage
from agents.stages.prompts import load_prompt
from agents.stages.s1c_standalone import content_words
from agents.stages.s2a_decompose import read_sub_queries
from agents.stages.types import SubQueries, Turn, search_question


def rephrase_batch(turns: list[Turn], drafts: list[Draft], tools: list[ToolChoice], engine: ChatEngine,
                   cfg: CruiseConfig) -> list[SubQueries]:
    out = [SubQueries() for _ in turns]
    limit = cfg.own.qa_dragon_rephrase_queries
    wanted = [i for i, tool in enumerate(tools) if tool.text and limit > 0]
    if not wanted:
        return out
    prompt = load_prompt("qa_dragon_rephrase")
    requests = [ChatRequest(prompt.messages(turns[i].history, query=search_question(turns[i]),
                                            object=drafts[i].object_name or "(not named)",
                                            reasoning=drafts[i].reasoning or "(none)", max_queries=str(limit)))
                for i in wanted]
    results = engine.generate(requests, Sampling(max_tokens=cfg.own.qa_dragon_rephrase_max_tokens,
                                                 seed=cfg.models.seed),
                              stage="rephrase")
    for i, result in zip(wanted, results):
        out[i] = read_sub_queries(result.text, turns[i].query, limit)
    return out


def enhance_sub_queries(sub_queries: SubQueries, carried: list[str]) -> SubQueries:
    """Each query completed with the terms carried from the conversation (`carried`, the shared
    step's) that it does not already hold: a follow-up's unclear referents; unchanged without."""
    if not carried or not sub_queries.queries:
        return sub_queries
    completed = []
    for query in sub_queries.queries:
        held = set(content_words(query))
        completed.append(" ".join([query, *(t for t in carried if not set(content_words(t)) <= held)]))
    return dataclasses.replace(sub_queries, queries=completed)


def rephrase(batch) -> list[dict]:
    found = rephrase_batch(batch.turns, column(batch.reads, "draft"), column(batch.reads, "tool"), batch.engines.vlm,
                           batch.cfg)
    return [{"rephrased": q} for q in found]


STAGE = Stage("rephrase", batch_fn=rephrase, reads=("draft", "tool"), writes=("rephrased",), parsed="rephrase",
              prompts=("qa_dragon_rephrase",))

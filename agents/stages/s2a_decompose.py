"""Stage 2a (QA-Dragon's query decomposition, `use_decompose`): for a question the router
labels multi-hop or comparison, the VLM writes up to `decompose_max_queries` self-contained web
queries (one engine call for the batch); the retrieve stage runs each through web search and
their chunks join the pool the reranker scores.

The label is one more line of the router's extended reply (`Question Type:`). A reply without a
usable query leaves the turn with its one web query, as without the switch.
"""
from __future__ import annotations

import re

from agents.config.cruise_config import CruiseConfig
from agents.engines.base import ChatEngine, Sampling
from agents.runtime.system import Prior, Stage
from agents.stages.parsing import content_lines, labelled_choice
from agents.stages.prompts import ask_vlm
from agents.stages.s1a_tool_route import searches_allowed
from agents.stages.s3_retrieve import web_search_enabled
from agents.stages.types import Route, SubQueries, Summary, Turn, column, search_question

QUESTION_TYPES = ("simple", "multi-hop", "comparison")
DECOMPOSED_TYPES = ("multi-hop", "comparison")
_TYPE_WORDS = (
    ("comparison", re.compile(r"compar|versus|\bvs\b", re.I)),
    ("multi-hop", re.compile(r"multi[\s_-]*hop|multi[\s_-]*step|several\s+steps", re.I)),
    ("simple", re.compile(r"simple|single|one[\s_-]*hop|direct", re.I)),
)
_LABELS = ("sub-query", "sub query", "subquery", "search query", "query", "search")
_QUOTES = "\"'“”‘’"
_MAX_QUERY_CHARS = 200


def read_question_type(text: str) -> str | None:
    return labelled_choice(text, r"question[\s_-]*type|type", _TYPE_WORDS)


def read_sub_queries(text: str, question: str, limit: int) -> SubQueries:
    """Up to `limit` distinct queries, one per line, past labels ("Query 2:"), numbering,
    bullets and quotes; a line repeating the question or holding one word is no query."""
    queries: list[str] = []
    seen = {" ".join(question.lower().split())}
    for line in content_lines(text, _LABELS):
        line = re.sub(r"^(?:\d+[.)]|[-*•])\s*", "", line)
        line = re.sub(r"^(?:sub[\s-]*)?query\s*\d*\s*[:=.)-]\s*", "", line, flags=re.I)
        line = line.strip(_QUOTES).strip()[:_MAX_QUERY_CHARS]
        key = " ".join(line.lower().split())
        if len(key.split()) < 2 or key in seen or line.endswith(":"):
            continue
        seen.add(key)
        queries.append(line)
        if len(queries) >= limit:
            break
    return SubQueries(queries, text, parsed=bool(queries))


def wants_decomposition(route: Route, cfg: CruiseConfig) -> bool:
    return (cfg.peer_stages.use_decompose and cfg.retrieval.use_retrieval and cfg.retrieval.use_web_search and route.needs_external
            and route.question_type in DECOMPOSED_TYPES and searches_allowed(route, cfg)[1])


def decompose_batch(
    turns: list[Turn], routes: list[Route], summaries: list[Summary], engine: ChatEngine, cfg: CruiseConfig,
    web_available: bool = True,
) -> list[SubQueries]:
    """Sub-queries for the turns that want them; no request where the pipeline has no web search."""
    wanted = [i for i, r in enumerate(routes) if web_available and wants_decomposition(r, cfg)]
    out = [SubQueries() for _ in turns]
    replies = ask_vlm(
        engine, "decompose", turns, wanted,
        lambda i: dict(query=search_question(turns[i]), summary=summaries[i].text or "(no description)",
                       max_queries=str(cfg.peer_stages.decompose_max_queries)),
        Sampling(max_tokens=cfg.peer_stages.decompose_max_tokens, seed=cfg.models.seed),
    )
    for i, text in zip(wanted, replies):
        out[i] = read_sub_queries(text, turns[i].query, cfg.peer_stages.decompose_max_queries)
    return out


def decompose(batch) -> list[dict]:
    web = web_search_enabled(batch.pipeline)
    found = decompose_batch(batch.turns, column(batch.reads, "route"), column(batch.reads, "summary"),
                            batch.engines.vlm, batch.cfg, web)
    return [{"sub_queries": q} for q in found]


STAGE = Stage("decompose", batch_fn=decompose, reads=("route", "summary"), writes=("sub_queries",),
              switch="use_decompose", parsed="decompose",
              prior=Prior("summarize", max_tokens=lambda cfg: cfg.peer_stages.decompose_max_tokens),
              prompts=("decompose",))

"""Stage 1: the router model labels each question `needs_external` and `is_real_time`.

With any of the router-fed peer stages on (tool routing s1a, domain routing s1b, decomposition
s2a), the router gets `prompts/route_extended.txt` instead, which also asks for the search to use,
the question type and the domain, in the same single engine call; the two labels above are read
from it exactly as before, and a reply without the new lines behaves as without the switches.
"""
from __future__ import annotations

import re

from agents.config import CruiseConfig
from agents.cruise.parsing import strip_markdown
from agents.cruise.prompts import load_prompt
from agents.cruise.stages.s1a_tool_route import read_search_route
from agents.cruise.stages.s1b_domain_route import DOMAINS, read_domain, route_domain
from agents.cruise.stages.s2a_decompose import read_question_type
from agents.cruise.types import Route, Turn
from agents.engines.base import ChatEngine, ChatRequest, Sampling

# The label, then ":" or "=" (or " - "), possibly a newline, then the value, in any case and
# through markdown emphasis: "Needs External Info: yes", "**Is Real-Time:**\nNo", "is_real_time = true".
_VALUE = r"\s*(?:[:=]|-(?=\s))\s*[\[(\"']?\s*(yes|no|true|false)\b"
_EXTERNAL = re.compile(r"external[^:=\n]{0,30}?" + _VALUE, re.IGNORECASE)
_REAL_TIME = re.compile(r"real[\s_-]*time[^:=\n]{0,30}?" + _VALUE, re.IGNORECASE)


def _says_yes(match: re.Match) -> bool:
    return match.group(1).lower() in ("yes", "true")


def parse_route(text: str) -> Route:
    """Read both labels. An unreadable `needs_external` counts as yes (retrieve rather than guess);
    an unreadable `is_real_time` counts as no (the finalizer's other checks still apply)."""
    plain = strip_markdown(text)
    external = _EXTERNAL.search(plain)
    real_time = _REAL_TIME.search(plain)
    return Route(
        needs_external=external is None or _says_yes(external),
        is_real_time=real_time is not None and _says_yes(real_time),
        raw=text,
        parsed=external is not None and real_time is not None,
    )


def extended_router(cfg: CruiseConfig) -> bool:
    """Whether the router is asked the extra labels (search, question type, domain)."""
    return cfg.use_tool_route or cfg.use_decompose or cfg.use_domain_route


def read_route_extras(route: Route, text: str, cfg: CruiseConfig) -> Route:
    """The extended labels the switches on need; extras_parsed says whether all of those were read."""
    wanted = []
    if cfg.use_tool_route:
        route.search = read_search_route(text)
        wanted.append(route.search)
    if cfg.use_decompose:
        route.question_type = read_question_type(text)
        wanted.append(route.question_type)
    if cfg.use_domain_route:
        route.domain = read_domain(text)
        wanted.append(route.domain)
    route.extras_parsed = all(value is not None for value in wanted)
    return route


def route_batch(turns: list[Turn], engine: ChatEngine, cfg: CruiseConfig) -> list[Route]:
    if not cfg.use_router:
        # Without a router every question is treated as needing retrieval, none as real-time.
        routes = [Route(needs_external=cfg.use_retrieval, is_real_time=False, raw="", parsed=None) for _ in turns]
        return [route_domain(r, t, cfg) for r, t in zip(routes, turns)]
    extended = extended_router(cfg)
    prompt = load_prompt("route_extended" if extended else "route")
    values = dict(domains=", ".join(DOMAINS)) if extended else {}
    requests = [ChatRequest(prompt.messages(t.history, query=t.query, **values)) for t in turns]
    max_tokens = cfg.router_extended_max_tokens if extended else cfg.router_max_tokens
    results = engine.generate(requests, Sampling(max_tokens=max_tokens, seed=cfg.seed), stage="route")
    routes = [parse_route(r.text) for r in results]
    if extended:
        routes = [read_route_extras(route, r.text, cfg) for route, r in zip(routes, results)]
    return [route_domain(r, t, cfg) for r, t in zip(routes, turns)]

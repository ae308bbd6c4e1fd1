"""Stage 1: the router model labels each question `needs_external` and `is_real_time`.

With any of the router-fed peer stages on (tool routing s1a, domain routing s1b, decomposition
s2a), the router gets `prompts/route_extended.txt` instead, which also asks for the search to use,
the question type and the domain, in the same single engine call; the two labels above are read
from it exactly as before, and a reply without the new lines behaves as without the switches.

`router_mode`: "text" is the paper's router, which writes both labels as two lines of text.
"yes_no" asks the two questions apart (prompts/route_external.txt, route_real_time.txt), two
requests per turn in one engine call, and reads each answer from the model's next-token
probabilities of "yes" and "no" (`Sampling.choices`): one forward pass per request instead of a
generated reply, and a label is read whatever the model would have written. The extended router
stays "text" (its other labels are free text).
"""
from __future__ import annotations

import math
import re

from agents.config.cruise_config import CruiseConfig
from agents.engines.base import ChatEngine, ChatRequest, Sampling
from agents.runtime.system import Prior, Stage
from agents.stages.parsing import strip_markdown
from agents.stages.prompts import load_prompt
from agents.stages.s1a_tool_route import read_search_route
from agents.stages.s1b_domain_route import DOMAINS, read_domain, route_domain
from agents.stages.s2a_decompose import read_question_type
from agents.stages.types import Route, Turn

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
    return cfg.peer_stages.use_tool_route or cfg.peer_stages.use_decompose or cfg.peer_stages.use_domain_route


def read_route_extras(route: Route, text: str, cfg: CruiseConfig) -> Route:
    """The extended labels the switches on need; extras_parsed says whether all of those were read."""
    wanted = []
    if cfg.peer_stages.use_tool_route:
        route.search = read_search_route(text)
        wanted.append(route.search)
    if cfg.peer_stages.use_decompose:
        route.question_type = read_question_type(text)
        wanted.append(route.question_type)
    if cfg.peer_stages.use_domain_route:
        route.domain = read_domain(text)
        wanted.append(route.domain)
    route.extras_parsed = all(value is not None for value in wanted)
    return route


def route_batch(turns: list[Turn], engine: ChatEngine, cfg: CruiseConfig) -> list[Route]:
    if not cfg.own.use_router:
        # Without a router every question is treated as needing retrieval, none as real-time.
        routes = [Route(needs_external=cfg.retrieval.use_retrieval, is_real_time=False, raw="",
                        parsed=None) for _ in turns]
        return [route_domain(r, t, cfg) for r, t in zip(routes, turns)]
    extended = extended_router(cfg)
    if cfg.own.router_mode == "yes_no" and not extended:
        return [route_domain(r, t, cfg) for r, t in zip(route_yes_no(turns, engine, cfg), turns)]
    prompt = load_prompt("route_extended" if extended else "route")
    values = dict(domains=", ".join(DOMAINS)) if extended else {}
    requests = [ChatRequest(prompt.messages(t.history, query=t.query, **values), turn=i) for i, t in enumerate(turns)]
    max_tokens = cfg.peer_stages.router_extended_max_tokens if extended else cfg.own.router_max_tokens
    results = engine.generate(requests, Sampling(max_tokens=max_tokens, seed=cfg.models.seed), stage="route")
    routes = [parse_route(r.text) for r in results]
    if extended:
        routes = [read_route_extras(route, r.text, cfg) for route, r in zip(routes, results)]
    return [route_domain(r, t, cfg) for r, t in zip(routes, turns)]


YES_NO = ("yes", "no")
ROUTE_QUESTIONS = (("route_external", "Needs External Info"), ("route_real_time", "Is Real-Time"))


def route_yes_no(turns: list[Turn], engine: ChatEngine, cfg: CruiseConfig) -> list[Route]:
    """Both labels from next-token probabilities: 2 requests per turn, one engine call. An
    answer that is neither word (an engine without the probabilities, a cut request) is
    unreadable, with the same defaults as `parse_route`."""
    requests = [ChatRequest(load_prompt(name).messages(t.history, query=t.query), turn=i)
                for name, _ in ROUTE_QUESTIONS for i, t in enumerate(turns)]
    results = engine.generate(requests, Sampling(max_tokens=1, seed=cfg.models.seed, choices=YES_NO), stage="route")
    n = len(turns)
    routes = []
    for i in range(n):
        p_external, p_real_time = yes_share(results[i]), yes_share(results[n + i])
        route = Route(needs_external=p_external is None or p_external >= cfg.answer.router_external_min_p,
                      is_real_time=p_real_time is not None and p_real_time >= cfg.own.router_real_time_min_p,
                      parsed=p_external is not None and p_real_time is not None)
        route.raw = "\n".join(
            f"{label}: {'yes' if value else 'no'} ({_shown(share, raw.text)})"
            for (_, label), value, share, raw in zip(ROUTE_QUESTIONS, (route.needs_external, route.is_real_time),
                                                    (p_external, p_real_time), (results[i], results[n + i])))
        routes.append(route)
    return routes


def yes_share(result) -> float | None:
    """P(yes) / (P(yes) + P(no)) of a yes/no answer (1 or 0 from an engine that gave only the
    word); None when it is neither."""
    if result.choice_logprobs and set(YES_NO) <= set(result.choice_logprobs):
        yes, no = (math.exp(result.choice_logprobs[w]) for w in YES_NO)
        return yes / (yes + no)
    word = result.text.strip().lower()
    return {"yes": 1.0, "no": 0.0}.get(word)


def _shown(share: float | None, text: str) -> str:
    """Why the trace's label is what it is: the model's odds, or what it said instead."""
    if share is None:
        return f"unreadable: {text!r}"
    return f"P(yes)/(P(yes)+P(no)) = {share:.2f}"


def route(batch) -> list[dict]:
    return [{"route": r} for r in route_batch(batch.turns, batch.engines.router, batch.cfg)]


STAGE = Stage("route", batch_fn=route, writes=("route",), switch="use_router", parsed="route",
              prior=Prior("route", max_tokens=lambda cfg: cfg.own.router_max_tokens),
              prompts=("route", "route_extended", "route_external", "route_real_time"))

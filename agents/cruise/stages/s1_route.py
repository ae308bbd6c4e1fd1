"""Stage 1: the router model labels each question `needs_external` and `is_real_time`."""
from __future__ import annotations

import re

from agents.config import CruiseConfig
from agents.cruise.parsing import strip_markdown
from agents.cruise.prompts import load_prompt
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


def route_batch(turns: list[Turn], engine: ChatEngine, cfg: CruiseConfig) -> list[Route]:
    if not cfg.use_router:
        # Without a router every question is treated as needing retrieval, none as real-time.
        return [Route(needs_external=cfg.use_retrieval, is_real_time=False, raw="", parsed=None) for _ in turns]
    prompt = load_prompt("route")
    requests = [ChatRequest(prompt.messages(t.history, query=t.query)) for t in turns]
    results = engine.generate(
        requests, Sampling(max_tokens=cfg.router_max_tokens, seed=cfg.seed), stage="route"
    )
    return [parse_route(r.text) for r in results]

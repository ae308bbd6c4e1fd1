"""Stage 1a (QA-Dragon's tool router, `use_tool_route`): the router's extended reply also says
which search can find what the question lacks, and the retrieve stage obeys it:

- image: the object is not named yet, a look-alike photo would identify it;
- web: the object is named (question, visible text) and facts about it are missing;
- both: identify first, then look facts up; none: no search helps (reading, arithmetic).

No engine call of its own: the label is one more line of the router's reply (s1_route). A reply
without a readable `Search:` line leaves `Route.search` None, and retrieval then runs every
search it can, exactly as without the switch.
"""
from __future__ import annotations

import re

from agents.config.cruise_config import CruiseConfig
from agents.runtime.system import Stage
from agents.stages.parsing import labelled_choice
from agents.stages.types import Route

SEARCH_ROUTES = ("image", "web", "both", "none")
# What a model writes for each route, checked in this order ("image and web" is both, "no search" none).
_ROUTE_WORDS = (
    ("both", re.compile(r"\bboth\b|\bimage\b.*\b(?:web|text)\b|\b(?:web|text)\b.*\bimage\b", re.I)),
    ("none", re.compile(r"\b(?:none|neither|no\s+search|nothing)\b|^\s*no\b", re.I)),
    ("image", re.compile(r"\b(?:image|photo|visual|picture)\b", re.I)),
    ("web", re.compile(r"\b(?:web|text|internet|online)\b", re.I)),
)


def read_search_route(text: str) -> str | None:
    """"Search: image" -> "image"; None when there is no readable Search line."""
    return labelled_choice(text, r"search(?:[\s_-]*(?:tool|type|route))?|tool", _ROUTE_WORDS)


def searches_allowed(route: Route, cfg: CruiseConfig) -> tuple[bool, bool]:
    """(image search, web search) as the tool router allows them; both when it is off or unread."""
    if not cfg.peer_stages.use_tool_route or route.search is None:
        return True, True
    return route.search in ("image", "both"), route.search in ("web", "both")


STAGE = Stage("tool_route", switch="use_tool_route", parsed="route_extras",
              writes=("route_search", "question_type", "router_extras_parsed"))

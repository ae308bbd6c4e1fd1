"""Stage 1b (QA-Dragon's domain router, `use_domain_route`): the router's extended reply also
names the question's domain, one of the dataset's 14 (facebookresearch/CRAG-MM README). A domain
may bring its own lines for the answer prompt: `prompts/domains/<domain in snake case>.txt`
(arithmetic for Math and science, currency for Shopping, ...); a domain without a file adds
nothing.

Where the harness passes a domain label (`Turn.domain`), it stands instead of the router's guess.
No engine call of its own: the label is one more line of the router's reply (s1_route).
"""
from __future__ import annotations

import re

from agents.config.cruise_config import CruiseConfig
from agents.runtime.system import Stage
from agents.stages.parsing import labelled_value
from agents.stages.prompts import load_prompt_lines
from agents.stages.types import Route, Turn

DOMAINS = (
    "Book", "Food", "General object recognition", "Math and science", "Nature", "Pets", "Plants and Gardening",
    "Shopping", "Sightseeing", "Sports and games", "Style and fashion", "Text understanding", "Vehicles", "Others",
)
# Short forms a model writes, first match wins (more specific words first).
_ALIASES = (
    ("Math and science", r"math|maths|mathematics|science|physics|chemistry|arithmetic"),
    ("Plants and Gardening", r"plant|garden|gardening|flower|tree"),
    ("Sports and games", r"sport|game"),
    ("Style and fashion", r"style|fashion|clothing|clothes"),
    ("Text understanding", r"text|ocr|reading"),
    ("General object recognition", r"general|object"),
    ("Vehicles", r"vehicle|car|truck|automotive"),
    ("Book", r"book"),
    ("Food", r"food|dish|drink|cuisine"),
    ("Nature", r"nature|animal|wildlife|landscape"),
    ("Pets", r"pet|dog|cat"),
    ("Shopping", r"shop|product|price"),
    ("Sightseeing", r"sightseeing|landmark|travel|building"),
    ("Others", r"other"),
)


def canonical_domain(label) -> str | None:
    """A domain name as DOMAINS spells it, read from a model's or a harness's label; None when
    nothing fits."""
    text = " ".join(str(label or "").replace("_", " ").split()).strip(" .")
    if not text:
        return None
    for name in DOMAINS:
        if text.lower() == name.lower():
            return name
    for name, words in _ALIASES:
        if re.search(rf"\b(?:{words})s?\b", text, re.IGNORECASE):
            return name
    return None


def read_domain(text: str) -> str | None:
    return canonical_domain(labelled_value(text, r"domain|topic|category"))


def route_domain(route: Route, turn: Turn, cfg: CruiseConfig) -> Route:
    """The route with its domain: the harness's label where it passes one (whatever the switch:
    it costs nothing), else the router's (only with `use_domain_route`)."""
    if turn.domain is not None and str(turn.domain).strip():
        route.domain = canonical_domain(turn.domain) or str(turn.domain).strip()
        route.domain_source = "harness"
    elif not cfg.peer_stages.use_domain_route:
        route.domain, route.domain_source = None, None
    elif route.domain is not None:
        route.domain_source = "router"
    return route


def domain_slug(domain: str) -> str:
    return "_".join(re.findall(r"[a-z0-9]+", domain.lower()))


def domain_notes(route: Route, cfg: CruiseConfig) -> str:
    """The lines the answer prompt gets for this turn's domain ("" for none)."""
    if not cfg.peer_stages.use_domain_route or not route.domain:
        return ""
    return load_prompt_lines(f"domains/{domain_slug(route.domain)}")


STAGE = Stage("domain_route", switch="use_domain_route", parsed="route_extras",
              writes=("domain", "domain_source", "domain_notes"))

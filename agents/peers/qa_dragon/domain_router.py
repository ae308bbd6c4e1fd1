"""Pre-answer, step 1: the domain router (seed 001, 3.1.1). The paper fine-tunes BLIP-2 on the
dataset's domain labels; training-free, the router model is asked to name one of the 14 domains
(prompts/qa_dragon_domain.txt), which `canonical_domain` reads. A harness that passes the turn's
domain label is believed instead, with no request. The domain picks the D-CoT's in-domain lines
(prompts/domains/<domain>.txt) and two of the tool router's rules.
"""
from __future__ import annotations

from agents.config.cruise_config import CruiseConfig
from agents.engines.base import ChatEngine, ChatRequest, Sampling
from agents.peers.qa_dragon.types import DomainRoute
from agents.runtime.system import Stage
from agents.stages.parsing import content_lines, labelled_value
from agents.stages.prompts import load_prompt
from agents.stages.s1b_domain_route import DOMAINS, canonical_domain
from agents.stages.types import Turn


def read_domain_reply(text: str) -> str | None:
    """"Domain: Food", "Food.", "**Vehicles**" -> the domain as DOMAINS spells it; None if none fits."""
    labelled = labelled_value(text, r"domain|topic|category")
    if labelled:
        return canonical_domain(labelled)
    lines = content_lines(text)
    return canonical_domain(lines[0]) if lines else None


def domain_batch(turns: list[Turn], engine: ChatEngine, cfg: CruiseConfig) -> list[DomainRoute]:
    out: list[DomainRoute] = []
    wanted = []
    for i, turn in enumerate(turns):
        label = canonical_domain(turn.domain) if turn.domain else None
        if label:
            out.append(DomainRoute(label, "harness"))
        else:
            out.append(DomainRoute())
            wanted.append(i)
    if not wanted:
        return out
    prompt = load_prompt("qa_dragon_domain")
    requests = [ChatRequest(prompt.messages(turns[i].history, turns[i].picture, query=turns[i].query,
                                            domains=", ".join(DOMAINS))) for i in wanted]
    results = engine.generate(requests, Sampling(max_tokens=cfg.own.qa_dragon_domain_max_tokens,
                                                 seed=cfg.models.seed),
                              stage="domain")
    for i, result in zip(wanted, results):
        domain = read_domain_reply(result.text)
        out[i] = DomainRoute(domain, "router" if domain else None, result.text, parsed=domain is not None)
    return out


def route_domains(batch) -> list[dict]:
    return [{"domain": d} for d in domain_batch(batch.turns, batch.engines.router, batch.cfg)]


STAGE = Stage("domain", batch_fn=route_domains, writes=("domain",), parsed="domain", prompts=("qa_dragon_domain",))

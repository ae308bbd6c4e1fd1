"""Which chain answers a batch, and which rule decides a turn from its trace, for each system
(`CruiseConfig.system`): CRUISE's, QA-Dragon's or SAM-RAG's. The agent runs `chain_for`; the
calibration tool replays `decide_from_trace`."""
from __future__ import annotations

from typing import Callable

from agents.config import CruiseConfig
from agents.cruise.types import Decision


def chain_for(cfg: CruiseConfig) -> Callable:
    """run(turns, engines, pipeline, cfg, costs, started=None) -> (answers, traces)."""
    if cfg.system == "qa_dragon":
        from agents.peers.qa_dragon.chain import run_qa_dragon

        return run_qa_dragon
    if cfg.system == "sam_rag":
        from agents.peers.sam_rag.chain import run_sam_rag

        return run_sam_rag
    from agents.cruise.chain import run_chain

    return run_chain


def decide_from_trace(trace: dict, cfg: CruiseConfig) -> Decision:
    """The final answer of a traced turn under cfg's thresholds, by cfg's system's own rule."""
    if cfg.system == "qa_dragon":
        from agents.peers.qa_dragon.decide import decide_from_trace as decide
    elif cfg.system == "sam_rag":
        from agents.peers.sam_rag.decide import decide_from_trace as decide
    else:
        from agents.cruise.stages.s9_finalize import decide_from_trace as decide
    return decide(trace, cfg)


def uses_mad_filter(cfg: CruiseConfig) -> bool:
    """Whether the system's context comes from CRUISE's MAD filter (so that another `mad_lambda`
    can change it): the peers rank and keep chunks by their own rules."""
    return cfg.system == "cruise"


# The steps of each peer chain, as its BatchRun names them (CRUISE's names where a step is CRUISE's
# stage, so that a profile's priors for those apply).
PEER_STAGES = {
    "qa_dragon": ("perceive", "domain", "draft", "tool_route", "rephrase", "crop", "retrieve", "entity_check",
                  "rerank", "fine_rerank", "post_answer", "verify"),
    "sam_rag": ("perceive", "summarize", "retrieve", "rank", "is_rel", "answer", "is_use", "regenerate", "is_sup"),
}


def stage_priors_for(cfg: CruiseConfig) -> dict[str, float]:
    """The deadline's expected seconds per turn of each stage before it is timed
    (agents/cruise/deadline.py). CRUISE's come from the profile (chain.stage_priors). A peer
    step the profile gives none starts at 0: it runs once and is timed. Without that, an untimed
    step is charged the dearest request measured so far, which in a peer chain is its long
    chain-of-thought draft, so every cheaper step after it (a one-token verdict, a search) would
    be skipped in every batch and never timed. The budget still holds: every engine stops at
    the deadline."""
    from agents.cruise.chain import stage_priors

    priors = stage_priors(cfg)
    for stage in PEER_STAGES.get(cfg.system, ()):
        priors.setdefault(stage, 0.0)
    return priors

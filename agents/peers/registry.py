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

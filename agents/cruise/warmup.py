"""Warm-up at load: one dummy batch through every stage the config runs, before the first scored
batch.

Why: on the H100 the first batch after load took 1.3-2x a steady one: kernels and
attention plans are built per new shape, the allocator grows its pools, the search models load
their weights lazily. The competition gives time to load; spending it here keeps that cost out of
the first batch's 10 s-per-turn budget. The dummy batch has the configured batch size and a
photo large enough for the VLM's full tile count; it goes through CRUISE's stage list in order
(stages/__init__.py `STAGES`, each stage's own step), and every model stage is forced to run (the
route says "needs external info", the two answers differ, the check passes: `FORCED`), whatever
the models answer. It runs outside the batch guards (`WarmRun`): nothing reaches the agent's StageCosts
(the deadline learns from scored batches only), and the engine calls it makes are drained from
the ledger before the first scored batch (CruiseAgent.batch_generate_response).
"""
from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field

from PIL import Image

from agents.config import CruiseConfig
from agents.cruise.chain import ChainState, run_stages
from agents.cruise.stages import STAGES
from agents.engines.base import Engines
from agents.stages.s0_inputs import prepare_turns
from agents.stages.types import Answers, Evidence, Retrieval, Route, Verification

log = logging.getLogger(__name__)

QUESTION = "What is the name of the building in this photo, and when was it built?"
PASSAGES = [
    "The Palace of Westminster is the meeting place of the Parliament of the United Kingdom, in London.",
    "Construction of the present building began in 1840 after a fire destroyed most of the old palace.",
    "Its clock tower, often called Big Ben, was completed in 1859.",
]


def warm_up_image(side: int) -> Image.Image:
    """A 4:3 gradient photo whose long side is `side` (the largest the chain passes on)."""
    width, height = side, side * 3 // 4
    gradient = Image.linear_gradient("L").resize((width, height))
    return Image.merge("RGB", (gradient, gradient.transpose(Image.Transpose.FLIP_LEFT_RIGHT), gradient))


@dataclass
class WarmRun:
    """Stands in for the batch guards during the warm-up: each stage runs on every turn, a stage
    that raises is logged and its turns keep its fallback (the scored batches have their own
    fault guards), and its seconds are kept; no deadline, nothing learned."""

    size: int
    seconds: dict[str, float] = field(default_factory=dict)

    def stage(self, name, fn, lists, fixed, fallback):
        start = time.perf_counter()
        try:
            return fn(*lists, *fixed)
        except Exception as exc:  # noqa: BLE001 - a warm-up failure must not stop the agent loading
            log.warning("warm-up: stage %s failed: %s: %s", name, type(exc).__name__, exc)
            return [fallback() for _ in range(self.size)]
        finally:
            self.seconds[name] = round(time.perf_counter() - start, 3)


CONTEXT = "\n".join(f"[Info {m}] {p}" for m, p in enumerate(PASSAGES, 1))


def stand_in_chunks(s: ChainState) -> None:
    if not any(r.chunks for r in s.retrievals):
        # No search pipeline (or it found nothing): rerank stand-in chunks of a usual size.
        s.retrievals = [Retrieval(query=QUESTION, chunks=PASSAGES * 10) for _ in s.turns]


# What the dummy batch says each stage found, so that every model stage after it has work whatever
# the models answer: the route needs external info, the context holds the passages, the two
# answers differ and the consistency check passes.
FORCED = {
    "route": lambda s: setattr(s, "routes", [Route(needs_external=True, is_real_time=False) for _ in s.turns]),
    "retrieve": stand_in_chunks,
    "rerank": lambda s: setattr(s, "evidence", [Evidence(kept=list(PASSAGES), context=CONTEXT, retrieval_score=0.9)
                                                for _ in s.turns]),
    "answer": lambda s: setattr(s, "answers", [Answers(rag="The Palace of Westminster.", direct="A church.")
                                               for _ in s.turns]),
    "consistency": lambda s: setattr(s, "checks", [Verification(consistent=True, consistency_rule="vlm")
                                                   for _ in s.turns]),
}
WARMED_ELSEWHERE = ("perceive",)  # its models load at build time (s0a_perceive.warm_up_perception)


def warm_up(engines: Engines, pipeline, cfg: CruiseConfig, stages=STAGES) -> dict[str, float]:
    """Run one dummy batch through every stage of `stages` (CRUISE's list, in its order) that the
    config runs; seconds per stage."""
    n = cfg.run.batch_size
    turns = prepare_turns([QUESTION] * n, [warm_up_image(cfg.inputs.image_max_side)] * n, [[] for _ in range(n)], cfg)
    run = WarmRun(n)
    state = ChainState(run, engines, pipeline, cfg, turns)
    state.routes = [Route(needs_external=True, is_real_time=False) for _ in turns]
    for stage in stages:
        if stage.name not in WARMED_ELSEWHERE:
            run_stages(state, (stage,))
            FORCED.get(stage.name, lambda s: None)(state)
    return run.seconds

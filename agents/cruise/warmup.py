"""CRUISE's warm-up at load (agents/warmup.py says why there is one): the dummy batch goes
through CRUISE's stage list in order (its System record's, as its chain calls each), and every model
stage is forced to run (the route says "needs external info", the two answers differ, the check
passes: `FORCED`), whatever the models answer. It runs outside the batch guards (`WarmRun`).
"""
from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field

from agents.config.cruise_config import CruiseConfig
from agents.cruise.chain import run_stages
from agents.engines.base import Engines
from agents.run_stages import BatchState
from agents.stages.types import Answers, Evidence, Retrieval, Route, Verification, column
from agents.warmup import QUESTION

log = logging.getLogger(__name__)

PASSAGES = [
    "The Palace of Westminster is the meeting place of the Parliament of the United Kingdom, in London.",
    "Construction of the present building began in 1840 after a fire destroyed most of the old palace.",
    "Its clock tower, often called Big Ben, was completed in 1859.",
]


@dataclass
class WarmRun:
    """Stands in for the batch guards during the warm-up: each stage runs on every turn, a stage
    that raises is logged and its turns keep what they had (the scored batches have their own
    fault guards), and its seconds are kept; no deadline, nothing learned."""

    size: int
    seconds: dict[str, float] = field(default_factory=dict)
    errors: list[list[str]] = field(default_factory=list)  # per turn, a stage's notes (BatchState.call writes them)

    def __post_init__(self):
        self.errors = [[] for _ in range(self.size)]

    def alive(self) -> list[int]:
        return list(range(self.size))

    def guarded(self, name, fn, positions, code=None) -> dict:
        start = time.perf_counter()
        try:
            return dict(zip(positions, fn(positions)))
        except Exception as exc:  # noqa: BLE001 - a warm-up failure must not stop the agent loading
            log.warning("warm-up: stage %s failed: %s: %s", name, type(exc).__name__, exc)
            return {}
        finally:
            self.seconds[name] = round(time.perf_counter() - start, 3)


CONTEXT = "\n".join(f"[Info {m}] {p}" for m, p in enumerate(PASSAGES, 1))


def every_turn(s: BatchState, name: str, make) -> None:
    for fields in s.fields:
        fields[name] = make()


def stand_in_chunks(s: BatchState) -> None:
    if not any(r.chunks for r in column(s.fields, "retrieval")):
        # No search pipeline (or it found nothing): rerank stand-in chunks of a usual size.
        every_turn(s, "retrieval", lambda: Retrieval(query=QUESTION, chunks=PASSAGES * 10))


# What the dummy batch says each stage found, so that every model stage after it has work whatever
# the models answer: the route needs external info, the context holds the passages, the two
# answers differ and the consistency check passes.
FORCED = {
    "route": lambda s: every_turn(s, "route", lambda: Route(needs_external=True, is_real_time=False)),
    "retrieve": stand_in_chunks,
    "rerank": lambda s: every_turn(s, "evidence", lambda: Evidence(kept=list(PASSAGES), context=CONTEXT,
                                                                   retrieval_score=0.9)),
    "answer": lambda s: every_turn(s, "answers", lambda: Answers(rag="The Palace of Westminster.", direct="A church.")),
    "consistency": lambda s: every_turn(s, "check", lambda: Verification(consistent=True, consistency_rule="vlm")),
}
WARMED_ELSEWHERE = ("perceive",)  # its models load at build time (s0a_perceive.warm_up_perception)


def warm_up(system, engines: Engines, pipeline, cfg: CruiseConfig, turns) -> dict[str, float]:
    """Run the dummy batch `turns` through every stage of `system`'s list (CRUISE's, in its order)
    that the config runs; seconds per stage."""
    run = WarmRun(len(turns))
    state = BatchState(run, engines, pipeline, cfg, list(turns), system)
    FORCED["route"](state)
    for stage in system.stages:
        if stage.name not in WARMED_ELSEWHERE:
            run_stages(state, (stage,))
            FORCED.get(stage.name, lambda s: None)(state)
    return run.seconds

"""Warm-up at load: one dummy batch through a system's stages before the first scored batch.

Why: on the H100 the first batch after load took 1.3-2x a steady one (kernels and attention plans
are built per new shape, the allocator grows its pools, the search models load their weights
lazily). The competition gives time to load; spending it here keeps that cost out of the first
batch's 10 s-per-turn budget. The dummy batch has the configured batch size and a photo large
enough for the VLM's full tile count (`warm_up_image`, `QUESTION`), made ready by the caller as it
makes a scored batch's turns ready (agents/cruise_agent.py), so that the runtime needs no stage.

A system whose record names its own warm-up (CRUISE: agents/cruise/warmup.py forces every model
stage to run, whatever the models answer) uses it; any other system answers the dummy batch with
its own chain (`warm_by_answering`), so its stages warm as far as its verdicts on that batch take
it. Either way nothing reaches the agent's StageCosts (the deadline learns from scored batches
only), and the agent drains the warm-up's engine calls from the ledger.
"""
from __future__ import annotations

import logging

from PIL import Image

from agents.run_stages import answer_batch
from agents.runtime.deadline import StageCosts
from agents.runtime.package_files import own_files

log = logging.getLogger(__name__)

QUESTION = "What is the name of the building in this photo, and when was it built?"


def warm_up_image(side: int) -> Image.Image:
    """A 4:3 gradient photo whose long side is `side` (the largest the chain passes on)."""
    width, height = side, side * 3 // 4
    gradient = Image.linear_gradient("L").resize((width, height))
    return Image.merge("RGB", (gradient, gradient.transpose(Image.Transpose.FLIP_LEFT_RIGHT), gradient))


def warm_by_answering(system, engines, pipeline, cfg, turns) -> dict[str, float]:
    """Seconds per stage of the dummy batch `turns` answered by `system`'s own chain, with the
    deadline lifted (a stage cut for time would stay cold) and costs of its own (nothing learned)."""
    unbounded = cfg.replace(turn_budget_s=0.0)  # 0: no per-turn budget
    try:
        _, traces = answer_batch(system, turns, engines, pipeline, unbounded, StageCosts())
    except Exception as exc:  # noqa: BLE001 - a warm-up failure must not stop the agent loading
        log.warning("warm-up: system %s failed: %s: %s", system.name, type(exc).__name__, exc)
        return {}
    return {name: round(ms / 1000.0, 3) for name, ms in traces[0].get("stage_ms", {}).items()}


def warm_up(system, engines, pipeline, cfg, turns) -> dict[str, float]:
    """Seconds per stage of `system`'s warm-up over the dummy batch `turns`: its record's own
    warm-up, else its chain's answer; its stages read its own package's prompts, as its scored
    batches do (agents/runtime/package_files.py)."""
    with own_files(system):
        return (system.warm_up or warm_by_answering)(system, engines, pipeline, cfg, turns)

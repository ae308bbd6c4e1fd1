"""Warm-up at load: one dummy batch through every stage the config runs, before the first scored
batch.

Why: on the H100 the first batch after load took 1.3-2x a steady one: kernels and
attention plans are built per new shape, the allocator grows its pools, the search models load
their weights lazily. The competition gives time to load; spending it here keeps that cost out of
the first batch's 10 s-per-turn budget. The dummy batch has the configured batch size and a
photo large enough for the VLM's full tile count, and every model stage is forced to run (the
route says "needs external info", the two answers differ, the check passes), whatever the
models answer. It calls the stage functions directly: nothing reaches the agent's StageCosts
(the deadline learns from scored batches only), and the engine calls it makes are drained from
the ledger before the first scored batch (CruiseAgent.batch_generate_response).
"""
from __future__ import annotations

import logging
import time

from PIL import Image

from agents.config import CruiseConfig
from agents.cruise.stages.s1_route import route_batch
from agents.cruise.stages.s7_consistency import consistency_batch
from agents.cruise.stages.s8_verify import verify_batch
from agents.engines.base import Engines
from agents.stages.s0_inputs import prepare_turns
from agents.stages.s2_summarize import summarize_batch
from agents.stages.s3_retrieve import retrieve_batch
from agents.stages.s5_rerank import rerank_batch
from agents.stages.s6_answer import answer_batch
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


def warm_up(engines: Engines, pipeline, cfg: CruiseConfig) -> dict[str, float]:
    """Run one dummy batch through every stage; seconds per stage. A stage that raises is logged
    and skipped (the scored batches have their own fault guards)."""
    n = cfg.batch_size
    turns = prepare_turns([QUESTION] * n, [warm_up_image(cfg.image_max_side)] * n, [[] for _ in range(n)], cfg)
    routes = [Route(needs_external=True, is_real_time=False) for _ in turns]
    seconds: dict[str, float] = {}

    def timed(name, fn, *args, fallback=None):
        start = time.perf_counter()
        try:
            return fn(*args)
        except Exception as exc:  # noqa: BLE001 - a warm-up failure must not stop the agent loading
            log.warning("warm-up: stage %s failed: %s: %s", name, type(exc).__name__, exc)
            return fallback
        finally:
            seconds[name] = round(time.perf_counter() - start, 3)

    timed("route", route_batch, turns, engines.router, cfg)
    summaries = timed("summarize", summarize_batch, turns, routes, engines.vlm, cfg, fallback=[])
    texts = [s.text for s in summaries] if summaries else [""] * n
    retrievals = timed("retrieve", retrieve_batch, turns, routes, texts, pipeline, cfg, fallback=None)
    if not retrievals or not any(r.chunks for r in retrievals):
        # No search pipeline (or it found nothing): rerank stand-in chunks of a usual size.
        retrievals = [Retrieval(query=QUESTION, chunks=PASSAGES * 10) for _ in turns]
    timed("rerank", rerank_batch, retrievals, engines.reranker, cfg)
    context = "\n".join(f"[Info {m}] {p}" for m, p in enumerate(PASSAGES, 1))
    evidence = [Evidence(kept=list(PASSAGES), context=context, retrieval_score=0.9) for _ in turns]
    timed("answer", answer_batch, turns, evidence, engines.vlm, cfg)
    # Two different answers and a passed check, so that both checks ask the VLM.
    answers = [Answers(rag="The Palace of Westminster.", direct="A church.") for _ in turns]
    timed("consistency", consistency_batch, turns, evidence, answers, engines.vlm, cfg)
    checks = [Verification(consistent=True, consistency_rule="vlm") for _ in turns]
    timed("verify", verify_batch, turns, evidence, answers, checks, engines.vlm, cfg)
    return seconds

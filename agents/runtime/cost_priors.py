"""Stage cost priors: seconds per turn each stage is expected to take on one L40S before the
deadline has timed it (agents/runtime/deadline.py), derived from a measurement.

The measurement: the chain on one H100 80 GB with the project's own transformers
engine and reranker, random bf16 weights at the real sizes (so every generation ran to its
max_tokens: the worst case), the l40s token limits, batch 8. Per stage, the median seconds of a
batch, and at engine level: 65-71 ms to encode one 4-tile image, 31-38 ms a decode step at
batch 8.

Projection to the L40S, part by part:
    L40S seconds = compute part x (H100 bf16 matmul / L40S bf16)    = x 800 / 362   (~2.21)
                 + decode part  x (H100 copy / L40S memory bandwidth) = x 3020 / 864  (~3.50)
The H100 ceilings are what the H100 run measured (~800 TFLOP/s bf16 matmul, ~3,020 GB/s device
copy); the L40S's are its data sheet (362 TFLOP/s dense bf16, 864 GB/s). Of a stage's H100 time,
the decode part is its decode steps x the measured step time (steps = that stage's max_tokens
in the config, so the prior follows the generation lengths); the compute part is the rest
(image encoding, prefill, host work), with image encoding counted per image: a batch of 8 with
photos encodes 40 (summary 8, answer 16, consistency 8, verify 8). Both ratios overstate the
L40S's time where the H100 run was held back by launch overhead rather than by the hardware
(eager decode at batch 8 ran at ~4x the bandwidth floor), which is the side a prior should err
on: a measured stage replaces it from the first batch on.
"""
from __future__ import annotations

# --- the H100 measurement ---------------------------------------------------------------------
H100_BATCH = 8
H100_STAGE_MEDIAN_S = {  # seconds per batch of 8, median over the mini benchmark's batches
    "route": 0.66, "summarize": 4.30, "rerank": 1.43, "answer": 8.80, "consistency": 1.67, "verify": 12.17,
}
# The verify median still held transformers' per-call StopStringCriteria rebuild, 5-8 s per call
# with the 128k Llama vocabulary, gone since (StopOnText, agents/engines/stopping.py);
# the low end is taken off, keeping the prior on the slow side.
H100_VERIFY_STOP_STRING_REBUILD_S = 5.0
H100_IMAGE_ENCODE_S = 0.071  # one 4-tile image (65-71 ms measured; the slow end)
H100_DECODE_STEP_S = 0.038  # one decode step of the 11B VLM at batch 8 (31-38 ms; the slow end)
# The token limits of that run (the l40s profile's: CruiseConfig defaults).
H100_MAX_TOKENS = {"route": 24, "summarize": 64, "answer": 64, "consistency": 8, "verify": 64}

# --- the ceilings of the two machines ---------------------------------------------------------
H100_BF16_FLOPS, L40S_BF16_FLOPS = 800e12, 362e12
H100_COPY_BPS, L40S_COPY_BPS = 3020e9, 864e9
COMPUTE_RATIO = H100_BF16_FLOPS / L40S_BF16_FLOPS
BANDWIDTH_RATIO = H100_COPY_BPS / L40S_COPY_BPS

# Images each stage encodes per turn with a photo (answer: the RAG and the non-RAG request).
IMAGES_PER_TURN = {"route": 0, "summarize": 1, "rerank": 0, "answer": 2, "consistency": 1, "verify": 1}
# Not measured on the H100 (the run used a fixed stand-in for search): CLIP-L and bge-large
# embed one image and one query per turn, then two vector-index lookups, one turn at a time.
RETRIEVE_S_PER_TURN = 0.25


# A stage is priced by its record's `prior` (agents/runtime/system.py `Prior`): `like` names the
# measured stage of the same shape, `max_tokens(cfg)` its own generation length under the config
# and `requests_per_turn(cfg)` its requests. The peer stages (docs/chain.md "Stages from the peer
# systems") were not in the H100 run: crop and decompose are priced like the summary (one image
# request that writes a line or a few), the entity check and the relevance filter like the
# consistency check (one image request reading a few lines, answering yes/no), each at its own
# length and requests. Estimates by analogue, replaced by measurement from the first batch on like
# every prior.
MEASURED_STAGES = ("route", "summarize", "retrieve", "rerank", "answer", "consistency", "verify")


def projected_stage_s(stage: str, max_tokens: int | None) -> tuple[float, float]:
    """(compute seconds, decode seconds) of one batch of 8 on the L40S of measured stage `stage`
    at `max_tokens` (None: the measured run's)."""
    measured = H100_STAGE_MEDIAN_S[stage]
    max_tokens = H100_MAX_TOKENS.get(stage) if max_tokens is None else max_tokens
    if stage == "verify":
        measured -= H100_VERIFY_STOP_STRING_REBUILD_S
    if stage == "rerank":
        return measured * COMPUTE_RATIO, 0.0
    if stage == "route":
        # The 1B router's steps were not timed apart: all of it counts as decode, per token.
        return 0.0, measured / H100_MAX_TOKENS["route"] * max_tokens * BANDWIDTH_RATIO
    images = IMAGES_PER_TURN[stage] * H100_BATCH * H100_IMAGE_ENCODE_S
    rest = max(0.0, measured - images - H100_MAX_TOKENS[stage] * H100_DECODE_STEP_S)
    return (images + rest) * COMPUTE_RATIO, max_tokens * H100_DECODE_STEP_S * BANDWIDTH_RATIO


def l40s_stage_s(stage, cfg) -> float | None:
    """Seconds per turn of a stage (a `Stage` record) on one L40S at the generation length `cfg`
    gives it; None for a stage with no cost prior."""
    prior = stage.prior
    if prior is None:
        return None
    if prior.like == "retrieve":
        return RETRIEVE_S_PER_TURN
    tokens = prior.max_tokens(cfg) if prior.max_tokens is not None else None
    compute, decode = projected_stage_s(prior.like, tokens)
    return round(prior.requests_per_turn(cfg) * (compute + decode) / H100_BATCH, 4)


def l40s_stage_cost_priors(system, cfg) -> dict[str, float]:
    """Seconds per turn for each of `system`'s priced stages on one L40S (see the module's
    docstring), at the generation lengths of `cfg`, the CruiseConfig in force (`cost_priors =
    "l40s"`). Every stage is priced, switched on or not: the priors are set with the profile,
    before a preset such as `extended` switches a stage on, and a stage that does not run never
    reads its prior."""
    priced = ((stage.name, l40s_stage_s(stage, cfg)) for stage in system.stages)
    return {name: seconds for name, seconds in priced if seconds is not None}


def priors_table(system, cfg) -> str:
    """The table of a system's priors that docs/engines.md shows for CRUISE (tests/test_stage_cost_priors.py
    checks the page against it): the stages `cfg` switches on and their total, then the others."""
    priors = l40s_stage_cost_priors(system, cfg)
    on = [s.name for s in system.stages if s.name in priors and (s.switch is None or callable(s.switch)
                                                               or cfg.value(s.switch))]
    lines = ["| stage | s per turn | s per batch of 8 |", "|---|---|---|"]
    for stage in on:
        lines.append(f"| {stage} | {priors[stage]:.2f} | {priors[stage] * H100_BATCH:.1f} |")
    total = sum(priors[stage] for stage in on)
    lines.append(f"| total | {total:.2f} | {total * H100_BATCH:.1f} |")
    for stage in (name for name in priors if name not in on):  # switched off: not in the total
        lines.append(f"| {stage} | {priors[stage]:.2f} | {priors[stage] * H100_BATCH:.1f} |")
    return "\n".join(lines)


def stage_priors(system, cfg) -> dict[str, float]:
    """Seconds per turn each of `system`'s priced stages is expected to take before it is timed:
    the config's prior model at the config's own generation lengths for the stages it prices (each
    Stage's `prior`), and the stages the config sets outright (`stage_cost_priors_s`). A stage
    without a prior is priced by the deadline from what the ledger shows (agents/runtime/deadline.py
    `StageCosts.expect`: 0 until it is seen to call a model)."""
    priors = l40s_stage_cost_priors(system, cfg) if cfg.run.cost_priors == "l40s" else {}
    priors.update(cfg.run.stage_cost_priors_s)
    return priors

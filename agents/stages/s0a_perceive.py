"""Stage 0a: perception for a VLM that cannot see. Each turn's image becomes one text block,
"What the picture shows" (prompts/perception.txt): the ImageNet classifier's likeliest objects
with their probabilities, and the text an OCR reads in it, line by line in reading order with
its confidence. The block goes into every prompt that carries the image (answers, consistency, CoV:
agents/stages/prompts.py), in place of the image the engine drops. The summary stage does not ask
such a VLM to describe a photo it cannot see: the summary s is what was read (`picture_summary`).

When: cfg.inputs.perception "auto" runs it only when the VLM role is text-only (its engine's
`supports_images` is False: SmolLM2 on the cpu profile, a text-only served model), "on" always,
"off" never; with a VLM that sees, the prompts are unchanged.

Once per image: results are kept by the image's content (its pixels), so the same photo asked
about again in a later turn of a conversation, or twice in one batch, runs no model again. A
missing, tiny or unreadable image gives an empty block and the turn goes on without it.
"""
from __future__ import annotations

import dataclasses
import hashlib
import time
from collections import OrderedDict

from PIL import Image

from agents.config.cruise_config import CruiseConfig
from agents.engines import image_classifier, ocr
from agents.runtime.system import Stage
from agents.runtime.trace import perception_trace
from agents.stages.prompts import load_prompt_lines
from agents.stages.s0_inputs import given_entity_line
from agents.stages.types import Perception, Turn

# Smaller than this on a side, an image holds no legible text nor a recognisable object.
MIN_IMAGE_SIDE = 16


def perception_wanted(cfg: CruiseConfig, vlm) -> bool:
    """Whether the chain perceives for the VLM: "auto" exactly when the VLM's engine drops images."""
    if cfg.inputs.perception == "auto":
        return not getattr(vlm, "supports_images", False)
    return cfg.inputs.perception == "on"


class PerceptionCache:
    """The raw readings (all top-k labels, all OCR lines) of the last `size` distinct images."""

    def __init__(self, size: int = 64):
        self.size = size
        self.entries: OrderedDict[tuple, tuple[list, list]] = OrderedDict()

    def get(self, key: tuple):
        if key in self.entries:
            self.entries.move_to_end(key)
            return self.entries[key]
        return None

    def put(self, key: tuple, value: tuple[list, list]) -> None:
        self.entries[key] = value
        self.entries.move_to_end(key)
        while len(self.entries) > max(self.size, 0):
            self.entries.popitem(last=False)


# One per process: the agent serves one conversation after another, and a key is the image's
# content, so readings are safe to share between batches and agents.
SHARED_CACHE = PerceptionCache()


def image_key(image: Image.Image, cfg: CruiseConfig) -> tuple:
    """The image's content and the settings its raw readings depend on."""
    digest = hashlib.blake2b(image.tobytes(), digest_size=16).hexdigest()
    return digest, image.size, image.mode, cfg.inputs.perception_top_k, cfg.inputs.perception_ocr_max_side


def reading_order(found: list[tuple[list[list[float]], str, float]]) -> list[tuple[str, float]]:
    """OCR boxes as lines, top to bottom, then left to right: a box joins the line above when
    its vertical centre lies within that line's height; a line's confidence is its weakest box's."""
    boxes = []
    for box, text, score in found:
        ys = [y for _, y in box]
        xs = [x for x, _ in box]
        boxes.append((min(ys), max(ys), min(xs), text.strip(), score))
    boxes.sort(key=lambda b: (b[0], b[2]))
    rows: list[list[tuple]] = []
    for box in boxes:
        centre = (box[0] + box[1]) / 2
        row = rows[-1] if rows else None
        if row is not None and min(b[0] for b in row) <= centre <= max(b[1] for b in row):
            row.append(box)
        else:
            rows.append([box])
    lines = []
    for row in rows:
        parts = [b for b in sorted(row, key=lambda b: b[2]) if b[3]]
        if parts:
            lines.append((" ".join(b[3] for b in parts), min(b[4] for b in parts)))
    return lines


def warm_up_perception(cfg: CruiseConfig) -> None:
    """Load both models and run them once on a blank picture: their first run costs seconds
    (weights, ONNX sessions, kernel set-up), which the agent pays when it is built."""
    read_image(Image.new("RGB", (64, 64), "white"), cfg)


def read_image(image: Image.Image, cfg: CruiseConfig) -> tuple[list, list]:
    """(labels, lines) of one image: one classifier run and one OCR run."""
    labels = image_classifier.top_labels(image, cfg.inputs.perception_top_k)[0]
    lines = reading_order(ocr.read_text(image, cfg.inputs.perception_ocr_max_side))
    return labels, lines


def passing(labels: list[tuple[str, float]], lines: list[tuple[str, float]], cfg: CruiseConfig):
    """(labels, lines) that pass the perception thresholds, lines cut to the first few."""
    shown = [(name, p) for name, p in labels if p >= cfg.inputs.perception_min_label_p]
    text = [(t, s) for t,
            s in lines if s >= cfg.inputs.perception_min_ocr_score][: max(cfg.inputs.perception_max_ocr_lines, 0)]
    return shown, text


def picture_block(labels: list[tuple[str, float]], lines: list[tuple[str, float]], cfg: CruiseConfig) -> str:
    """The prompt block of what passed the thresholds ("" when nothing did)."""
    shown, text = passing(labels, lines, cfg)
    parts = []
    if shown:
        parts.append("objects: " + ", ".join(f"{name} ({p:.0%})" for name, p in shown))
    if text:
        parts.append("text, top to bottom:")
        parts += [f'"{t}" ({s:.0%})' for t, s in text]
    if not parts:
        return ""
    template = load_prompt_lines("perception")
    return template.replace("$content", "\n".join(parts)) if template else "\n".join(parts)


def picture_summary(perception: Perception | None, cfg: CruiseConfig) -> str:
    """What was read, in one line without the confidences: the image summary s of the retrieval
    query q' = q + s (stage 2) for a VLM that cannot see. Such a VLM, asked to describe the photo,
    could only rephrase its picture block, at the price of a generation per turn."""
    if perception is None or not perception.block:
        return ""
    shown, text = passing(perception.labels, perception.lines, cfg)
    return " ".join([name for name, _ in shown[:1]] + [t for t, _ in text])[: cfg.inputs.perception_summary_max_chars]


def perceive_batch(turns: list[Turn], cfg: CruiseConfig, cache: PerceptionCache | None = None) -> list[Perception]:
    """One Perception per turn; models run once per distinct image not already in `cache`."""
    cache = SHARED_CACHE if cache is None else cache
    cache.size = cfg.inputs.perception_cache_size
    out = []
    for turn in turns:
        image = turn.image
        if image is None:
            out.append(Perception())
            continue
        try:
            if min(image.size) < MIN_IMAGE_SIDE:
                out.append(Perception(error=f"image too small to read ({image.size[0]}x{image.size[1]})"))
                continue
            key = image_key(image, cfg)
            readings = cache.get(key)
            if readings is not None:
                labels, lines = readings
                out.append(Perception(labels, lines, picture_block(labels, lines, cfg), cached=True))
                continue
            start = time.perf_counter()
            labels, lines = read_image(image, cfg)
            ms = round((time.perf_counter() - start) * 1000.0, 1)
        except Exception as exc:  # noqa: BLE001 - an unreadable image costs its block, not the turn
            out.append(Perception(error=f"{type(exc).__name__}: {exc}"))
            continue
        cache.put(key, (labels, lines))
        out.append(Perception(labels, lines, picture_block(labels, lines, cfg), ms=ms))
    return out


def picture_text(perception: Perception, cfg: CruiseConfig) -> str:
    """What passed the thresholds as plain lines: the labels, then the OCR lines ("" when the
    block is empty)."""
    if not perception.block:
        return ""
    shown, text = passing(perception.labels, perception.lines, cfg)
    return "\n".join([name for name, _ in shown] + [t for t, _ in text])


def with_pictures(turns: list[Turn], perceptions: list[Perception], cfg: CruiseConfig) -> list[Turn]:
    """The turns carrying their picture blocks and readings (new records; the inputs are not
    changed)."""
    return [dataclasses.replace(t, picture="\n\n".join(filter(None, [p.block, given_entity_line(t)])),
                                picture_text=picture_text(p, cfg), perception=p)
            for t, p in zip(turns, perceptions)]


def perceive(batch) -> list[dict]:
    """Each turn's picture read as text; the later stages get the turn carrying its block
    ("turn") and read what was seen ("perception", as the trace holds it)."""
    turns = with_pictures(batch.turns, perceive_batch(batch.turns, batch.cfg), batch.cfg)
    return [{"turn": turn, "perception": perception_trace(turn.perception)} for turn in turns]


def perception_on(state) -> bool:
    """Whether the batch in flight perceives: its VLM cannot see (or the config says so)."""
    return perception_wanted(state.cfg, state.engines.vlm)


STAGE = Stage("perceive", batch_fn=perceive, writes=("turn", "perception"), switch=perception_on)

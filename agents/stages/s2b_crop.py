"""Stage 2b (crop-then-search, `use_crop_search`): image search also runs on crops of the object
the question is about, and the hits of the whole image and the crops are fused by the best
score per entity (s3_retrieve). Whole-photo search finds what dominates the photo, not what the
user points at: with manual crops image-search recall rose from 51.9% to 58.0% in the CRAG-MM
paper, and QA-Dragon crops with Grounding DINO.

`crop_mode`:
- "box": the VLM names the object and gives its box on a 0-1000 grid (one engine call for the
  batch). An unreadable box (missing, not four numbers, inverted, thinner than `crop_min_side`
  of the photo, or the whole photo) means no crop: the whole image is searched alone.
- "tiles": no model; a centre crop and the four quadrant tiles (for a model that cannot ground,
  e.g. the text-only cpu profile).
- "box_or_tiles": the box where it is readable, else the tiles.

Egocentric frames (the dataset's `image_url` None) are where whole-image search fails most, but
the agent's inputs do not say which frames are egocentric, so every photo is cropped.
"""
from __future__ import annotations

import re

from PIL import Image

from agents.config.cruise_config import CruiseConfig
from agents.engines.base import ChatEngine, Sampling
from agents.runtime.system import Prior, Stage
from agents.stages.parsing import labelled_value
from agents.stages.prompts import ask_vlm
from agents.stages.s1a_tool_route import searches_allowed
from agents.stages.types import CropPlan, Route, Turn, column, search_question

GRID = 1000.0  # the prompt's coordinate scale
_WHOLE_IMAGE_SHARE = 0.9  # a box covering this share of the photo (in area) is the whole photo
_BOX_NUMBER = r"-?\d+(?:\.\d+)?"  # no decimal comma: "120,80,640,900" is four numbers


def tile_crops(width: int, height: int) -> list[dict]:
    """The centre half of the photo and its four quadrants, in pixels."""
    half_w, half_h = width // 2, height // 2
    boxes = {
        "centre": (width // 4, height // 4, width // 4 + half_w, height // 4 + half_h),
        "tile_NW": (0, 0, half_w, half_h), "tile_NE": (half_w, 0, width, half_h),
        "tile_SW": (0, half_h, half_w, height), "tile_SE": (half_w, half_h, width, height),
    }
    return [{"view": view, "box": list(box)} for view, box in boxes.items() if box[2] > box[0] and box[3] > box[1]]


def read_box(text: str, width: int, height: int, min_side: float) -> list[int] | None:
    """Pixel box [x0, y0, x1, y1] from "Box: 120, 80, 640, 900" (0-1000 grid); fractions
    (all four <= 1) are accepted too. None when the box is unreadable or useless."""
    value = labelled_value(text, r"box|bounding[\s_-]*box|bbox|coordinates")
    if value is None:
        found = re.search(r"[\[(]\s*" + r"\s*,\s*".join([_BOX_NUMBER] * 4) + r"\s*[\])]", text or "")
        value = found.group(0) if found else ""
    numbers = [float(n) for n in re.findall(_BOX_NUMBER, value)][:5]
    if len(numbers) != 4:
        return None
    scale = 1.0 if all(n <= 1.0 for n in numbers) else GRID
    if any(n < 0 or n > scale for n in numbers):
        return None
    x0, y0, x1, y1 = (n / scale for n in numbers)
    if x1 - x0 < min_side or y1 - y0 < min_side:
        return None  # inverted, empty or a sliver
    if (x1 - x0) * (y1 - y0) >= _WHOLE_IMAGE_SHARE:
        return None  # the whole photo: its search already runs
    return [round(x0 * width), round(y0 * height), round(x1 * width), round(y1 * height)]


def read_crop(text: str, image: Image.Image, cfg: CruiseConfig) -> CropPlan:
    name = labelled_value(text, r"object|item|subject") or ""
    box = read_box(text, *image.size, cfg.peer_stages.crop_min_side)
    crops = [{"view": "box", "box": box}] if box else []
    if not box and cfg.peer_stages.crop_mode == "box_or_tiles":
        crops = tile_crops(*image.size)
    return CropPlan(object_name=name[:100], crops=crops, raw=text, parsed=box is not None)


def wants_crops(turn: Turn, route: Route, cfg: CruiseConfig) -> bool:
    return (cfg.peer_stages.use_crop_search and cfg.retrieval.use_retrieval and turn.image is not None and route.needs_external
            and searches_allowed(route, cfg)[0])


def oracle_plan(turn: Turn) -> CropPlan | None:
    """An oracle run's region (Turn.oracle_box): the one crop searched, whatever the chain would
    have cropped; None without one."""
    return CropPlan(crops=[{"view": "oracle", "box": list(turn.oracle_box)}]) if turn.oracle_box else None


def crop_batch(turns: list[Turn], routes: list[Route], engine: ChatEngine, cfg: CruiseConfig) -> list[CropPlan]:
    plans = [oracle_plan(t) or CropPlan() for t in turns]
    wanted = [i for i, (t, r) in enumerate(zip(turns, routes)) if wants_crops(t, r, cfg) and not t.oracle_box]
    if cfg.peer_stages.crop_mode == "tiles":
        for i in wanted:
            plans[i] = CropPlan(crops=tile_crops(*turns[i].image.size))
        return plans
    replies = ask_vlm(engine, "crop", turns, wanted, lambda i: dict(query=search_question(turns[i])),
                      Sampling(max_tokens=cfg.peer_stages.crop_max_tokens, seed=cfg.models.seed), with_history=False)
    for i, text in zip(wanted, replies):
        plans[i] = read_crop(text, turns[i].image, cfg)
    return plans


def cropped_images(image: Image.Image, plan: CropPlan) -> list[tuple[str, Image.Image]]:
    return [(c["view"], image.crop(tuple(c["box"]))) for c in plan.crops]


def crop(batch) -> list[dict]:
    return [{"crops": plan} for plan in crop_batch(batch.turns, column(batch.reads, "route"), batch.engines.vlm, batch.cfg)]


STAGE = Stage("crop", batch_fn=crop, reads=("route",), writes=("crops",), switch="use_crop_search", parsed="crop",
              prior=Prior("summarize", max_tokens=lambda cfg: cfg.peer_stages.crop_max_tokens), prompts=("crop",))

"""The two search tools a model calls (their schemas: agents/agentic/schemas.py), and running one
call over the profile's search pipeline:

- image_search: the photo, or the part of it inside `box` ([x1, y1, x2, y2] in the photo's
  pixels), looked up in the image index; returns what the index knows of the entities it matches;
- web_search: `query` looked up in the web index; returns the pages' snippets (and body, where the
  index holds it).

A call is run as the shared retrieval stage runs a search (agents/stages/s3_retrieve.py: its hit
ids, its chunks, its guard against a query the pipeline would read as a path or URL), so its hits
read in the trace as `retrieved` reads for every system. A call the pipeline cannot run is an
error the model reads in the call's result, never a fault of the turn: an unknown tool, arguments
that are not an object, an empty or blank query, a box that is not four numbers inside the photo,
a search the task switched off, a search that raised.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

from agents.agentic.schemas import IMAGE_SEARCH, WEB_SEARCH
from agents.engines.tool_calls import ToolCall
from agents.stages.s3_retrieve import add_image_hits, add_web_hits, image_search_enabled, web_search_enabled
from agents.stages.s4_chunk import dedupe
from agents.stages.types import Retrieval, Turn


def offered_tools(turn: Turn, pipeline, cfg) -> list[dict]:
    """The tools a turn's model is offered: image search where the turn has a photo and the run
    searches images, web search where the run searches the web (Task 1 has no web search); a tool
    the task lacks is not offered, so no call is spent learning that."""
    offered = []
    if pipeline is not None and turn.image is not None and image_search_enabled(pipeline):
        offered.append(IMAGE_SEARCH)
    if pipeline is not None and cfg.retrieval.use_web_search and web_search_enabled(pipeline):
        offered.append(WEB_SEARCH)
    return offered


class ToolError(ValueError):
    """A call that cannot run, in one line the model reads."""


@dataclass
class CallResult:
    """One call as it ran: its trace record (tool, arguments, hits, error, ms), the text the model
    is shown, the hits in the shared `retrieved` shape and the chunks it returned."""

    record: dict
    text: str
    items: list[dict] = field(default_factory=list)
    chunks: list[str] = field(default_factory=list)
    chunk_sources: list[str] = field(default_factory=list)  # the id of the hit each chunk came from

    @property
    def failed(self) -> bool:
        return self.record["error"] is not None


def crop_box(value, size: tuple[int, int]) -> list[float] | None:
    """The box to crop, clipped to the photo; None for the whole photo (no box given)."""
    if value is None:
        return None
    width, height = size
    if not isinstance(value, (list, tuple)) or len(value) != 4 or not all(
            isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) for v in value):
        raise ToolError(f"box must be four numbers [x1, y1, x2, y2] in the photo's pixels ({width} x {height}), "
                        f"got {value!r:.80}")
    x1, y1, x2, y2 = (float(v) for v in value)
    if x1 >= x2 or y1 >= y2:
        raise ToolError(f"box {list(value)} is empty: it needs x1 < x2 and y1 < y2")
    clipped = [max(0.0, x1), max(0.0, y1), min(float(width), x2), min(float(height), y2)]
    if clipped[0] >= clipped[2] or clipped[1] >= clipped[3]:
        raise ToolError(f"box {list(value)} lies outside the photo ({width} x {height} pixels)")
    return clipped


def run_call(call: ToolCall, turn: Turn, pipeline, cfg, offered: list[dict], hits: int, max_chars: int) -> CallResult:
    """Run one call (see the module notes); `offered`: the turn's tools, `hits`: hits per search,
    `max_chars`: how much of its chunks the model is shown."""
    record = {"id": call.id, "tool": call.name, "arguments": call.arguments if call.arguments is not None
              else call.raw_arguments, "hits": [], "error": None}
    start = time.perf_counter()
    found = Retrieval()
    box = None
    try:
        if call.name not in [tool["function"]["name"] for tool in offered]:
            names = ", ".join(tool["function"]["name"] for tool in offered) or "none"
            raise ToolError(f"unknown tool {call.name!r}; the tools of this question: {names}")
        if call.arguments is None:
            raise ToolError(f"the arguments must be a JSON object, got {call.raw_arguments!r:.80}")
        if call.name == "image_search":
            box = crop_box(call.arguments.get("box"), turn.image.size)
            image = turn.image if box is None else turn.image.crop(tuple(box))
            try:
                image_hits = [h for h in (pipeline(image, k=hits) or []) if isinstance(h, dict)]
            except Exception as exc:  # noqa: BLE001 - a search that raises costs this call only
                raise ToolError(f"image search failed: {type(exc).__name__}: {str(exc)[:160]}") from None
            rows = add_image_hits(found, image_hits, "", cfg)
        else:
            query = call.arguments.get("query")
            if not isinstance(query, str) or not query.strip():
                raise ToolError(f"web_search needs a non-empty text query, got {query!r:.80}")
            try:
                rows = add_web_hits(found, query.strip(), hits, pipeline, cfg)
            except Exception as exc:  # noqa: BLE001
                raise ToolError(f"web search failed: {type(exc).__name__}: {str(exc)[:160]}") from None
    except ToolError as exc:
        record["error"] = str(exc)
        record["ms"] = round((time.perf_counter() - start) * 1000.0, 1)
        return CallResult(record, f"error: {exc}")
    chunks, sources = dedupe([row[0] for row in rows], [row[1] for row in rows])
    shown = within(chunks, max_chars)
    record["hits"] = [{"id": item["id"], "score": item.get("score"), "name": item["name"]}
                      for item in found.items]
    if box is not None:
        record["box_searched"] = [round(v, 1) for v in box]
    record["ms"] = round((time.perf_counter() - start) * 1000.0, 1)
    return CallResult(record, "\n\n".join(shown) or "nothing found", items=found.items, chunks=shown,
                      chunk_sources=sources[:len(shown)])


def within(chunks: list[str], max_chars: int) -> list[str]:
    """The first chunks that fit in `max_chars` together (a first chunk longer than that is cut)."""
    kept, used = [], 0
    for chunk in chunks:
        if used + len(chunk) > max_chars:
            if not kept:
                kept.append(chunk[:max_chars])
            break
        kept.append(chunk)
        used += len(chunk)
    return kept

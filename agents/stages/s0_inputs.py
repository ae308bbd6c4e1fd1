"""Stage 0: turn the evaluator's raw arguments into clean `Turn`s.

Whatever arrives (odd image modes, huge photos, control characters, endless histories), each
turn leaves here with an RGB image of bounded size or None, a bounded question, and a history
trimmed from the oldest turn (the current question is never cut away).

facebookresearch/CRAG-MM's harness also hands over its own retrieval (`rag_context_list`: one
string per turn, "" when it searched nothing) and the turn's domain name (`domains`). Any element
shape is accepted (a string, a list of strings, search-hit dicts, None, other scalars); each
becomes a list of text passages, chunked later like our own hits (s4_chunk.chunks_from_passage).
"""
from __future__ import annotations

import json
import logging
import unicodedata

from PIL import Image, ImageOps

from agents.stages.prompts import load_prompt_lines
from agents.stages.types import Turn

log = logging.getLogger(__name__)


def prepare_image(image, max_side: int) -> Image.Image | None:
    if image is None:
        return None
    try:
        image = ImageOps.exif_transpose(image)
        if image.mode in ("I;16", "I;16B", "I;16L", "I"):  # 16/32-bit grey: scale to 8 bits first
            image = image.point(lambda v: v / 256).convert("L")
        image = image.convert("RGB")
        if max(image.size) > max_side:
            image = image.copy()
            image.thumbnail((max_side, max_side))
        if min(image.size) < 1:
            return None
        return image
    except Exception as exc:  # noqa: BLE001 - a broken image must not break the batch
        log.warning("image dropped: %s: %s", type(exc).__name__, exc)
        return None


def clean_text(text, max_chars: int) -> str:
    """Printable text on a single line, cut to max_chars."""
    text = "" if text is None else str(text)
    kept = "".join(ch if ch in "\n\t" or unicodedata.category(ch)[0] != "C" else " " for ch in text)
    return " ".join(kept.split())[:max_chars]


def trim_history(history, max_chars: int, max_message_chars: int) -> list[dict]:
    """Keep whole user/assistant pairs from the newest backwards while they fit in max_chars."""
    messages = []
    for m in history or []:
        if isinstance(m, dict) and m.get("role") in ("user", "assistant"):
            messages.append({"role": m["role"], "content": clean_text(m.get("content"), max_message_chars)})
    kept, used = [], 0
    for i in range(len(messages) - 1, -1, -1):
        used += len(messages[i]["content"])
        if used > max_chars:
            break
        kept.insert(0, messages[i])
    while kept and kept[0]["role"] != "user":  # a chat must open with the user's turn
        kept.pop(0)
    return kept


# Keys under which a dict handed over as a passage may hold its text.
_PASSAGE_TEXT_KEYS = ("text", "content", "passage", "snippet", "context")


def passage_text(item) -> str:
    """One handed-over element as text. A search-pipeline hit (with `entities` or `page_snippet`)
    stays JSON, so that the chunker reads it as that hit."""
    if item is None:
        return ""
    if isinstance(item, str):
        return item
    if isinstance(item, (bytes, bytearray)):
        return bytes(item).decode("utf-8", errors="replace")
    if isinstance(item, dict):
        if "entities" in item or "page_snippet" in item:
            return json.dumps(item, ensure_ascii=False, default=str)
        for key in _PASSAGE_TEXT_KEYS:
            if isinstance(item.get(key), str):
                return item[key]
        return json.dumps(item, ensure_ascii=False, default=str)
    return str(item)


def harness_passages(value) -> list[str] | None:
    """A harness's retrieval for one turn as passages: None when it handed nothing over, else
    its non-blank texts (an empty list: it searched and found nothing)."""
    if value is None:
        return None
    items = value if isinstance(value, (list, tuple)) else [value]
    texts = (passage_text(item) for item in items)
    return [text for text in texts if text.strip()]


def domain_name(value) -> str | None:
    if value is None:
        return None
    name = clean_text(value, 200)
    return name or None


MAX_ORACLE_CHARS = 500  # an oracle's entity name or text-only question, as a question is bounded


def given_entity_line(turn: Turn) -> str:
    """The picture block's line naming an oracle run's given entity ("" without one)."""
    if not turn.given_entity:
        return ""
    return load_prompt_lines("given_entity").replace("$entity", turn.given_entity)


def with_oracle(turn: Turn, oracle, original_size: tuple[int, int] | None) -> Turn:
    """`turn` given an oracle run's label (evaluator/harness/oracle.py records): the text-only
    question replaces the question; the entity is named in the picture block; the box, in the
    pixels of the image as the harness gave it, is scaled to the prepared image's."""
    if not isinstance(oracle, dict):
        return turn
    stage = oracle.get("stage")
    if stage == "question" and oracle.get("question"):
        turn.query = clean_text(oracle["question"], MAX_ORACLE_CHARS)
    elif stage == "entity" and oracle.get("entity"):
        turn.given_entity = clean_text(oracle["entity"], MAX_ORACLE_CHARS)
        turn.picture = given_entity_line(turn)
    elif stage == "region" and turn.image is not None and original_size:
        try:
            x0, y0, x1, y1 = (float(v) for v in oracle.get("box"))
        except (TypeError, ValueError):
            return turn
        sx, sy = turn.image.size[0] / original_size[0], turn.image.size[1] / original_size[1]
        box = [max(0, round(x0 * sx)), max(0, round(y0 * sy)),
               min(turn.image.size[0], round(x1 * sx)), min(turn.image.size[1], round(y1 * sy))]
        turn.oracle_box = box if box[2] > box[0] and box[3] > box[1] else None
    return turn


def prepare_turns(queries, images, histories, cfg, rag_context_list=None, domains=None, oracle=None) -> list[Turn]:
    n = len(queries)
    contexts = list(rag_context_list) if rag_context_list is not None else [None] * n
    names = list(domains) if domains is not None else [None] * n
    given = list(oracle) if oracle is not None else [None] * n
    return [
        with_oracle(Turn(
            query=clean_text(q, cfg.inputs.max_query_chars),
            image=prepare_image(img, cfg.inputs.image_max_side),
            history=trim_history(h, cfg.inputs.history_max_chars, cfg.inputs.max_query_chars),
            domain=domain_name(d),
            passages=harness_passages(c),
        ), o, getattr(img, "size", None))
        for q, img, h, c, d, o in zip(queries, images, histories, contexts, names, given)
    ]

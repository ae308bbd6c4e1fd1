"""Stage 0: turn the evaluator's raw arguments into clean `Turn`s.

Whatever arrives (odd image modes, huge photos, control characters, endless histories), each
turn leaves here with an RGB image of bounded size or None, a bounded question, and a history
trimmed from the oldest turn (the current question is never cut away).
"""
from __future__ import annotations

import logging
import unicodedata

from PIL import Image, ImageOps

from agents.cruise.types import Turn

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


def prepare_turns(queries, images, histories, cfg) -> list[Turn]:
    return [
        Turn(
            query=clean_text(q, cfg.max_query_chars),
            image=prepare_image(img, cfg.image_max_side),
            history=trim_history(h, cfg.history_max_chars, cfg.max_query_chars),
        )
        for q, img, h in zip(queries, images, histories)
    ]

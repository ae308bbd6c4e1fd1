"""Stage 4: turn search hits into paragraph chunks for the reranker.

Paper: the description / caption / summary fields of KG entities and the web snippets, split
into paragraphs on newlines. Long fields would overflow the reranker's input, hence paragraphs.
"""
from __future__ import annotations

import json


def paragraphs(text: str, max_chars: int) -> list[str]:
    out = []
    for line in str(text).splitlines():
        line = " ".join(line.split())  # fold runs of white space
        if line:
            out.append(line[:max_chars])
    return out


def _attributes(entity: dict) -> dict:
    attrs = entity.get("entity_attributes") or {}
    if isinstance(attrs, str):  # some index builds store the attributes as JSON text
        try:
            attrs = json.loads(attrs)
        except ValueError:
            attrs = {"description": attrs}
    return attrs if isinstance(attrs, dict) else {}


def chunks_from_image_hit(hit: dict, fields: tuple[str, ...], max_chars: int) -> list[str]:
    wanted = {f.lower() for f in fields}
    chunks = []
    for entity in hit.get("entities") or []:
        if not isinstance(entity, dict):
            continue
        for key, value in _attributes(entity).items():
            if str(key).lower() in wanted and value:
                chunks.extend(paragraphs(value, max_chars))
    return chunks


def chunks_from_web_hit(hit: dict, max_chars: int) -> list[str]:
    return paragraphs(hit.get("page_snippet") or "", max_chars)


def dedupe(chunks: list[str], sources: list[str]) -> tuple[list[str], list[str]]:
    seen, kept, kept_sources = set(), [], []
    for chunk, source in zip(chunks, sources):
        key = chunk.lower()
        if key not in seen:
            seen.add(key)
            kept.append(chunk)
            kept_sources.append(source)
    return kept, kept_sources

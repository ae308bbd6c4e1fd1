"""Stage 3: recall through the official search pipeline (K_recall hits per source).

Image search uses the photo; web search (Tasks 2-3) uses q' = question + summary, plus the
names of the confident image-search entities (QA-Dragon's fusion search, `fusion_query`): a
vague "what year was this built?" becomes a query that names the building. The reranker still
scores chunks against q'. A pipeline error costs only that turn its context; the batch goes on.

Passages a harness handed over (`Turn.passages`) are chunked like our hits and, by
`harness_context`, join our pipeline's chunks ("merge"), replace them on the turns that have any
("only"), or are left out ("ignore"). The router's gate applies to them as to our search.
"""
from __future__ import annotations

import os

from agents.config import CruiseConfig
from agents.cruise.stages.s4_chunk import (
    chunks_from_image_hit,
    chunks_from_passage,
    chunks_from_web_hit,
    confident_names,
    dedupe,
    hit_entity_names,
    name_chunk,
)
from agents.cruise.types import Retrieval, Route, Turn


def safe_text_query(text: str) -> str:
    """The pipeline opens a string that is a file path as an image and fetches one that starts
    with "http"; a question must never be read that way, so such text gets a neutral prefix."""
    text = " ".join(text.split())
    if text.lower().startswith("http") or os.path.exists(text):
        return "search: " + text
    return text


def web_search_enabled(pipeline) -> bool:
    # UnifiedSearchPipeline sets `web_search`; other pipelines are tried and may refuse.
    return bool(getattr(pipeline, "web_search", True))


def fusion_query(query: str, names: list[str]) -> str:
    """q' followed by the entity names it does not already contain."""
    extra = [n for n in names if n.lower() not in query.lower()]
    return " ".join([query, *extra]).strip()


def expanded_query(turn: Turn, summary: str) -> str:
    """q' = question + summary (paper, eq. 2): what the reranker scores chunks against."""
    return f"{turn.query} {summary}".strip() if summary else turn.query


def retrieve_one(turn: Turn, summary: str, pipeline, cfg: CruiseConfig) -> Retrieval:
    query = expanded_query(turn, summary)
    found = Retrieval(summary=summary, query=query, web_query=query)
    chunks, sources = [], []
    if turn.image is not None:
        try:
            image_hits = [h for h in (pipeline(turn.image, k=cfg.k_recall) or []) if isinstance(h, dict)]
            hit_ids = [f"image:{hit.get('index', rank)}" for rank, hit in enumerate(image_hits)]
            names = confident_names(image_hits, cfg.image_score_floor) if cfg.chunker != "paper_fields" else []
            for name in names:
                chunks.append(name_chunk(name))
                sources.append(next(i for i, h in zip(hit_ids, image_hits) if name in hit_entity_names(h)))
            for hit_id, hit in zip(hit_ids, image_hits):
                found.items.append({"source": "image", "id": hit_id, "score": hit.get("score"),
                                    "name": ", ".join(hit_entity_names(hit))})
                new = chunks_from_image_hit(hit, cfg)
                chunks += new
                sources += [hit_id] * len(new)
            if cfg.fusion_query:
                fused = confident_names(image_hits, cfg.image_score_floor, cfg.fusion_max_names)
                found.web_query = fusion_query(query, fused)
        except Exception as exc:  # noqa: BLE001 - any pipeline fault only empties this turn
            found.errors.append(f"image search: {type(exc).__name__}: {exc}")
    if cfg.use_web_search and cfg.include_web_snippets and web_search_enabled(pipeline):
        try:
            for rank, hit in enumerate(pipeline(safe_text_query(found.web_query), k=cfg.k_recall) or []):
                hit_id = f"web:{hit.get('page_url') or hit.get('index', rank)}"
                found.items.append({"source": "web", "id": hit_id, "score": hit.get("score"), "name": hit.get("page_name", "")})
                new = chunks_from_web_hit(hit, cfg)
                chunks += new
                sources += [hit_id] * len(new)
        except Exception as exc:  # noqa: BLE001
            found.errors.append(f"web search: {type(exc).__name__}: {exc}")
    found.chunks, found.chunk_sources = dedupe(chunks, sources)
    return found


def add_passages(found: Retrieval, passages: list[str], cfg: CruiseConfig) -> Retrieval:
    """`found` with the chunks of the handed-over passages after its own (duplicates dropped);
    the passages' entity-name chunks come before their other chunks, as in retrieve_one."""
    names, rest = [], []  # (chunk, source) pairs
    for number, text in enumerate(passages):
        try:
            lead, chunks = chunks_from_passage(text, cfg)
        except Exception as exc:  # noqa: BLE001 - a passage we cannot read costs only itself
            found.errors.append(f"harness passage {number}: {type(exc).__name__}: {exc}")
            continue
        source = f"harness:{number}"
        found.items.append({"source": "harness", "id": source, "score": None, "name": f"{len(text)} characters"})
        names += [(c, source) for c in lead]
        rest += [(c, source) for c in chunks]
    handed = names + rest
    found.chunks, found.chunk_sources = dedupe(found.chunks + [c for c, _ in handed],
                                               found.chunk_sources + [s for _, s in handed])
    return found


def retrieve_batch(
    turns: list[Turn], routes: list[Route], summaries: list[str], pipeline, cfg: CruiseConfig
) -> list[Retrieval]:
    out = []
    for turn, route, summary in zip(turns, routes, summaries):
        wanted = cfg.use_retrieval and route.needs_external
        handed = turn.passages if wanted and cfg.harness_context != "ignore" else None
        own = wanted and pipeline is not None and not (handed is not None and cfg.harness_context == "only")
        if own:
            found = retrieve_one(turn, summary, pipeline, cfg)
        elif handed is not None:
            query = expanded_query(turn, summary)
            found = Retrieval(summary=summary, query=query, web_query=query)
        else:
            found = Retrieval(summary=summary, query=turn.query, web_query=turn.query)
        out.append(add_passages(found, handed, cfg) if handed else found)
    return out

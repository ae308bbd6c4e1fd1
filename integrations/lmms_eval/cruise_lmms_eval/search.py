"""The search pipeline as the CRAG-MM tasks read it: the RAG prompt's results for a turn, and
the chunking of a hit into passages that crag_mm_agentic's tools share.

The pipeline is the profile's (evaluator/search/pipeline.py, as local_evaluation.py builds it:
on cpu the mini benchmark's indices), each hit made into our passages (agents/stages/s4_chunk.py)
with the rag_baseline configuration's chunking.
"""
from __future__ import annotations


def search_chunks(pipeline, image, query: str, cfg, hits: int) -> tuple[list[str], dict]:
    """The search pipeline's results for one turn as the baseline reads them: image search on
    the photo, web search on the question (where the pipeline searches the web), each hit made
    into our passages, duplicates dropped; and what was found: the hits in order as `retrieved`
    (an image hit with its entities' names, which the diagnostics match against a labelled
    target). A search that fails costs only its own results."""
    from agents.stages.s3_retrieve import safe_text_query, web_search_enabled
    from agents.stages.s4_chunk import chunks_from_image_hit, chunks_from_web_hit, dedupe, hit_entity_names

    found = {"image_hits": 0, "web_hits": 0, "errors": [], "retrieved": []}
    chunks: list[str] = []
    searches = [("image", image, lambda hit: chunks_from_image_hit(hit, cfg))]
    if web_search_enabled(pipeline):
        searches.append(("web", safe_text_query(query), lambda hit: chunks_from_web_hit(hit, cfg, query)))
    for source, what, read in searches:
        try:
            results = [h for h in (pipeline(what, k=hits) or []) if isinstance(h, dict)]
        except Exception as exc:  # noqa: BLE001 - an index or model error costs this search only
            found["errors"].append(f"{source} search: {type(exc).__name__}: {str(exc)[:200]}")
            continue
        found[f"{source}_hits"] = len(results)
        for hit in results:
            chunks.extend(read(hit))
            found["retrieved"].append({"source": "image", "entities": hit_entity_names(hit)} if source == "image"
                                      else {"source": "web", "name": str(hit.get("page_name") or hit.get("page_url")
                                                                         or "")})
    kept, _ = dedupe(chunks, chunks)
    return kept, found


def within(chunks: list[str], chars: int) -> list[str]:
    """The first chunks that fit in `chars` together (a first chunk longer than that is cut)."""
    kept, used = [], 0
    for chunk in chunks:
        if used + len(chunk) > chars:
            if not kept:
                kept.append(chunk[:chars])
            break
        kept.append(chunk)
        used += len(chunk) + 2
    return kept


def rag_context(pipeline, cfg, images: list, query: str, hits: int, chars: int) -> tuple[str, dict]:
    """A RAG prompt's search results for a turn (within `chars`) and the trace of what was found,
    its funnel first; a turn without its photo searches nothing and says so."""
    chunks, found = search_chunks(pipeline, images[0], query, cfg, hits) if images else ([], {"errors": ["no image"]})
    kept = within(chunks, chars)
    trace = {"funnel": {"image loaded": bool(images), "search found passages": bool(chunks),
                        "passages in the prompt": bool(kept)},
             **found, "passages": kept}
    return "\n\n".join(kept), trace


def default_pipeline(profile: str):
    """The search pipeline of `profile` and the chunking settings of its rag_baseline
    configuration."""
    from agents.config.loading import load_config
    from evaluator.harness.resolved import resolve_run
    from evaluator.search.pipeline import build_search_pipeline

    run = resolve_run(profile)
    return build_search_pipeline(run.search, web=True), load_config(profile, preset="rag_baseline")

"""Stage 3: recall through the official search pipeline (K_recall hits per source).

Image search uses the photo; web search (Tasks 2-3) uses q' = question + summary, plus the
names of the confident image-search entities (QA-Dragon's fusion search, `fusion_query`): a
vague "what year was this built?" becomes a query that names the building. The reranker still
scores chunks against q'. A pipeline error costs only that turn its context; the batch goes on.

Passages a harness handed over (`Turn.passages`) are chunked like our hits and, by
`harness_context`, join our pipeline's chunks ("merge"), replace them on the turns that have any
("only"), or are left out ("ignore"). The router's gate applies to them as to our search.

The peer stages (docs/chain.md "Stages from the peer systems") steer it when they are on: the tool
router's choice rules image or web search out, crops of the photo (s2b) are searched too and
fused by best score per entity, and decomposition's sub-queries (s2a) each run a web search.

A follow-up turn searches with its standalone question (s1c_standalone) where the question
stands, and reuses its conversation's image-search hits of the whole photo from the first turn
(agents/runtime/conversation_cache.py; `Retrieval.image_hits_reused`).
"""
from __future__ import annotations

import dataclasses
import os

from agents.config.cruise_config import CruiseConfig
from agents.runtime.conversation_cache import SHARED_CONVERSATIONS, ConversationCache, conversation_key, remember_found
from agents.runtime.system import Prior, Stage
from agents.stages.s1a_tool_route import searches_allowed
from agents.stages.s2b_crop import cropped_images, oracle_plan
from agents.stages.s4_chunk import (
    chunks_from_image_hit,
    chunks_from_passage,
    chunks_from_web_hit,
    confident_names,
    dedupe,
    hit_entity_names,
    name_chunk,
)
from agents.stages.types import (
    CropPlan,
    Retrieval,
    Route,
    SubQueries,
    Turn,
    column,
    search_question,
    searched_for_oracle,
)


def safe_text_query(text: str) -> str:
    """The pipeline opens a string that is a file path as an image and fetches one that starts
    with "http"; a question must never be read that way, so such text gets a neutral prefix."""
    text = " ".join(text.split())
    if text.lower().startswith("http") or os.path.exists(text):
        return "search: " + text
    return text


def web_search_enabled(pipeline) -> bool:
    # No pipeline (`--search none`) searches nothing. UnifiedSearchPipeline sets `web_search`;
    # other pipelines are tried and may refuse.
    return pipeline is not None and bool(getattr(pipeline, "web_search", True))


def image_search_enabled(pipeline) -> bool:
    # A harness that switched image search off says so (the evaluator's --suppress-image-search-api
    # sets `image_search` False); other pipelines are tried and may refuse.
    return bool(getattr(pipeline, "image_search", True))


def fusion_query(query: str, names: list[str]) -> str:
    """q' followed by the entity names it does not already contain."""
    extra = [n for n in names if n.lower() not in query.lower()]
    return " ".join([query, *extra]).strip()


def expanded_query(turn: Turn, summary: str) -> str:
    """q' = question + summary (paper, eq. 2): what the reranker scores chunks against; an oracle
    run's given entity (Turn.given_entity) comes before the summary."""
    return " ".join(part for part in (search_question(turn), turn.given_entity, summary) if part).strip()


def fuse_image_hits(views: list[tuple[str, list[dict]]], k: int) -> list[dict]:
    """Hits of several searches (the whole image and its crops) fused by entity: each entity keeps
    the hit where it scored best, which view found it is noted under "view"; best first, at most k
    (FORMATS.md's hit shape, one entity per fused hit). Hits without entities keep their own row."""
    best: dict[str, dict] = {}
    for view, hits in views:
        for rank, hit in enumerate(hits):
            try:
                score = float(hit.get("score"))
            except (TypeError, ValueError):
                score = 0.0
            entities = [e for e in hit.get("entities") or [] if isinstance(e, dict)] or [None]
            for entity in entities:
                name = " ".join(str((entity or {}).get("entity_name") or "").split())
                key = name.lower() or f"{view}:{hit.get('index', rank)}"
                if key not in best or score > best[key]["score"]:
                    best[key] = {"index": hit.get("index", rank), "score": score, "url": hit.get("url"),
                                 "entities": [entity] if entity else [], "view": view}
    return sorted(best.values(), key=lambda h: -h["score"])[:k]


def conversations(cfg: CruiseConfig, cache: ConversationCache | None = None) -> ConversationCache:
    """`cache`, else the process's shared one, bounded as the config says."""
    cache = SHARED_CONVERSATIONS if cache is None else cache
    cache.size = cfg.inputs.conversation_cache_size
    return cache


def whole_photo_hits(turn: Turn, pipeline, cfg: CruiseConfig, cache: ConversationCache | None = None
                     ) -> tuple[list[dict], bool]:
    """(image hits of the whole photo, reused): a follow-up turn reads the hits its conversation's
    earlier turn found; a first turn searches and keeps them for the turns after it."""
    cache = conversations(cfg, cache)
    key = conversation_key(turn.query, turn.history, turn.image)
    name = f"image_hits:{id(pipeline)}:{cfg.retrieval.k_recall}"  # another pipeline or k is another search
    if turn.history:
        kept = cache.get(key, name)
        if kept is not None:
            return [dict(h) for h in kept], True
    whole = [h for h in (pipeline(turn.image, k=cfg.retrieval.k_recall) or []) if isinstance(h, dict)]
    cache.put(key, name, [dict(h) for h in whole])
    return whole, False


def remember_best_pages(turn: Turn, web_items: list[dict], cfg: CruiseConfig,
                        cache: ConversationCache | None = None) -> None:
    """Keep the names of this turn's best web pages (search order) for its conversation's later
    turns: one whose answer is "I don't know" is carried by them instead (s1c_standalone)."""
    if turn.image is None or cfg.inputs.standalone_found_pages <= 0:
        return
    cache = conversations(cfg, cache)
    names = [" ".join(str(item.get("name") or "").split()) for item in web_items]
    remember_found(cache, turn.query, turn.history, turn.image,
                   [n for n in names if n][: cfg.inputs.standalone_found_pages])


def image_search(turn: Turn, pipeline, cfg: CruiseConfig, crops: CropPlan | None,
                 found: Retrieval | None = None) -> tuple[list[dict], list[str]]:
    """Image hits of the whole photo, fused with those of its crops when there are any; `found`
    notes whether the whole photo's hits were its conversation's earlier ones."""
    whole, reused = whole_photo_hits(turn, pipeline, cfg)
    crops = oracle_plan(turn) or crops
    if found is not None:
        found.image_hits_reused = reused
        found.image_size = list(turn.image.size)
        found.regions_searched = [{"view": c["view"], "box": list(c["box"])} for c in (crops.crops if crops else [])]
    if not crops or not crops.crops:
        return whole, []
    views = [("whole", whole)]
    for view, image in cropped_images(turn.image, crops):
        views.append((view, [h for h in (pipeline(image, k=cfg.peer_stages.crop_k) or []) if isinstance(h, dict)]))
    return fuse_image_hits(views, cfg.retrieval.k_recall), [view for view, _ in views[1:]]


def regions_trace(found: Retrieval) -> dict:
    """The trace's `regions_searched`: the crops image search ran on besides the whole photo, in
    the pixels of the image of `image_size` (what grounding is measured on)."""
    return {"image_size": found.image_size, "boxes": found.regions_searched}


def add_image_hits(found: Retrieval, image_hits: list[dict], query: str, cfg: CruiseConfig) -> list[tuple]:
    """Items and (chunk, source, entity, date) rows of the image hits; sets the fused web query."""
    hit_ids = [f"image:{hit.get('index', rank)}" for rank, hit in enumerate(image_hits)]
    out = []
    names = confident_names(image_hits,
                            cfg.retrieval.image_score_floor) if cfg.retrieval.chunker != "paper_fields" else []
    for name in names:
        out.append((name_chunk(name), next(i for i, h in zip(hit_ids, image_hits) if name in hit_entity_names(h)), name, ""))
    for hit_id, hit in zip(hit_ids, image_hits):
        names_here = hit_entity_names(hit)
        item = {"source": "image", "id": hit_id, "score": hit.get("score"), "name": ", ".join(names_here),
                "entities": names_here}
        if "view" in hit:
            item["view"] = hit["view"]
        found.items.append(item)
        for entity in hit.get("entities") or []:
            if isinstance(entity, dict):  # one entity at a time, so each chunk knows its entity
                name = " ".join(str(entity.get("entity_name") or "").split())
                out += [(chunk, hit_id, name, "") for chunk in chunks_from_image_hit({"entities": [entity]}, cfg)]
    if cfg.retrieval.fusion_query:
        fused = confident_names(image_hits, cfg.retrieval.image_score_floor, cfg.retrieval.fusion_max_names)
        found.web_query = fusion_query(query, fused)
    return out


def add_web_hits(found: Retrieval, web_query: str, k: int, pipeline, cfg: CruiseConfig) -> list[tuple]:
    """Items and (chunk, source, "", date) rows of the web hits; a hit of the full-content database
    also gives its page's body (s4_chunk), the chunks that share most words with q' first."""
    out = []
    for rank, hit in enumerate(pipeline(safe_text_query(web_query), k=k) or []):
        hit_id = f"web:{hit.get('page_url') or hit.get('index', rank)}"
        item = {"source": "web", "id": hit_id, "score": hit.get("score"), "name": hit.get("page_name", "")}
        date = " ".join(str(hit.get("page_last_modified") or "").split())
        if "page_result" in hit:  # the trace says which hits came with their page
            item.update(page_chars=len(hit.get("page_result") or ""), last_modified=date)
        found.items.append(item)
        out += [(chunk, hit_id, "", date) for chunk in chunks_from_web_hit(hit, cfg, found.query)]
    return out


def searches_for(turn: Turn, route: Route | None, cfg: CruiseConfig) -> tuple[bool, bool]:
    """(image search, web search) for a turn: as the tool router allows them (both without one),
    and in an oracle run the label is searched whatever the routers decided (docs/diagnostics.md):
    a region by image, the web only where the route asked for outside information; a given entity
    by both searches where the tool router ruled both out."""
    use_image, use_web = searches_allowed(route, cfg) if route is not None else (True, True)
    if turn.oracle_box is not None:
        return True, use_web and (route is None or route.needs_external)
    if turn.given_entity and not (use_image or use_web):
        return True, True
    return use_image, use_web


def retrieve_one(turn: Turn, summary: str, pipeline, cfg: CruiseConfig, *, route: Route | None = None,
                 crops: CropPlan | None = None, sub_queries: SubQueries | None = None) -> Retrieval:
    """One turn's hits and chunks. `route` (tool routing) may rule a search out; `crops` add
    image searches; `sub_queries` add web searches (the peer stages; None: as without them)."""
    query = expanded_query(turn, summary)
    found = Retrieval(summary=summary, query=query, web_query=query)
    use_image, use_web = searches_for(turn, route, cfg)
    pool: list[tuple] = []  # (chunk, source id, image entity name or "", page date or "")
    if turn.image is not None and use_image and image_search_enabled(pipeline):
        try:
            image_hits, found.crops_searched = image_search(turn, pipeline, cfg, crops, found)
            found.searches.append("image")
            pool += add_image_hits(found, image_hits, query, cfg)
        except Exception as exc:  # noqa: BLE001 - any pipeline fault only empties this turn
            found.errors.append(f"image search: {type(exc).__name__}: {exc}")
    if use_web and cfg.retrieval.use_web_search and cfg.retrieval.include_web_snippets and web_search_enabled(pipeline):
        try:
            before = len(found.items)
            pool += add_web_hits(found, found.web_query, cfg.retrieval.k_recall, pipeline, cfg)
            found.searches.append("web")
            remember_best_pages(turn, found.items[before:], cfg)
            for sub_query in (sub_queries.queries if sub_queries else []):
                pool += add_web_hits(found, sub_query, cfg.peer_stages.decompose_k, pipeline, cfg)
                found.sub_queries.append(sub_query)
        except Exception as exc:  # noqa: BLE001
            found.errors.append(f"web search: {type(exc).__name__}: {exc}")
    found.chunks, found.chunk_sources, found.chunk_entities, found.chunk_dates = dedupe_pool(pool)
    return found


def add_passages(found: Retrieval, passages: list[str], cfg: CruiseConfig) -> Retrieval:
    """`found` with the chunks of the handed-over passages after its own (duplicates dropped);
    the passages' entity-name chunks come before their other chunks, as in retrieve_one."""
    names, rest = [], []  # (chunk, source, image entity name, date) rows, as in retrieve_one's pool
    for number, text in enumerate(passages):
        try:
            lead, chunks = chunks_from_passage(text, cfg)
        except Exception as exc:  # noqa: BLE001 - a passage we cannot read costs only itself
            found.errors.append(f"harness passage {number}: {type(exc).__name__}: {exc}")
            continue
        source = f"harness:{number}"
        found.items.append({"source": "harness", "id": source, "score": None, "name": f"{len(text)} characters"})
        names += [(c, source, "", "") for c in lead]
        rest += [(c, source, "", "") for c in chunks]
    entities = found.chunk_entities or [""] * len(found.chunks)
    dates = found.chunk_dates or [""] * len(found.chunks)
    pool = list(zip(found.chunks, found.chunk_sources, entities, dates)) + names + rest
    found.chunks, found.chunk_sources, found.chunk_entities, found.chunk_dates = dedupe_pool(pool)
    return found


def dedupe_pool(pool: list[tuple]) -> tuple[list[str], list[str], list[str], list[str]]:
    """The pool's distinct chunks (first occurrence wins), with their sources, entities and dates."""
    chunks, sources = dedupe([row[0] for row in pool], [f"{i}" for i in range(len(pool))])
    picked = [pool[int(i)] for i in sources]
    return chunks, [p[1] for p in picked], [p[2] for p in picked], [p[3] for p in picked]


def retrieve_batch(
    turns: list[Turn], routes: list[Route], summaries: list[str], pipeline, cfg: CruiseConfig,
    crops: list[CropPlan] | None = None, sub_queries: list[SubQueries] | None = None,
) -> list[Retrieval]:
    out = []
    for i, (turn, route, summary) in enumerate(zip(turns, routes, summaries)):
        use_image, use_web = searches_for(turn, route, cfg)
        wanted = cfg.retrieval.use_retrieval and (route.needs_external or searched_for_oracle(turn))
        handed = turn.passages if wanted and cfg.retrieval.harness_context != "ignore" else None
        own = (wanted and pipeline is not None and (use_image or use_web)
               and not (handed is not None and cfg.retrieval.harness_context == "only"))
        if own:
            found = retrieve_one(turn, summary, pipeline, cfg, route=route, crops=crops[i] if crops else None,
                                 sub_queries=sub_queries[i] if sub_queries else None)
        elif handed is not None:
            query = expanded_query(turn, summary)
            found = Retrieval(summary=summary, query=query, web_query=query)
        else:
            question = search_question(turn)
            found = Retrieval(summary=summary, query=question, web_query=question)
        out.append(add_passages(found, handed, cfg) if handed else found)
    return out


def retrieve_stage(batch) -> list[dict]:
    """Retrieval as a system without a run of its own lists it (agents/run_stages.py):
    every turn's image and web search, as far as the pipeline offers them, and the harness's
    passages; the hits and their chunks, in the order retrieve_one pools them."""
    # every search on: retrieval reads only a route's needs_external and search
    routes = [Route(needs_external=True, is_real_time=False, parsed=None) for _ in batch.turns]  # pragma: no mutate
    found = retrieve_batch(batch.turns, routes, [""] * len(batch.turns), batch.pipeline,
                           batch.cfg.replace(use_retrieval=True))
    for i, retrieval in enumerate(found):
        for message in retrieval.errors:
            batch.error(i, message)
    return [{"retrieval_query": r.query, "web_query": r.web_query, "retrieved": r.items, "searches_run": r.searches,
             "chunks": r.chunks} for r in found]


def retrieve(batch) -> list[dict]:
    """Each turn's retrieval as a chain reads it (a Retrieval): searched for q' = question +
    `summary`'s text where the `route` says so, with the `crops` and `sub_queries` of the peer
    stages where they ran."""
    crops, sub_queries = [r["crops"] for r in batch.reads], [r["sub_queries"] for r in batch.reads]
    found = retrieve_batch(batch.turns, column(batch.reads, "route"), [s.text for s in column(batch.reads, "summary")],
                           batch.pipeline, batch.cfg,
                           None if all(c is None for c in crops) else column(batch.reads, "crops"),
                           None if all(q is None for q in sub_queries) else column(batch.reads, "sub_queries"))
    return [{"retrieval": r} for r in found]


# s4_chunk cuts the pages this stage fetched into chunks: a step of this stage, timed with it.
STAGE = Stage("retrieve", batch_fn=retrieve, reads=("route", "summary", "crops", "sub_queries"), writes=("retrieval",),
              switch="use_retrieval", prior=Prior("retrieve"))
# The same stage as a system without a run of its own lists it: its fields as the trace holds them.
RETRIEVE = dataclasses.replace(STAGE, batch_fn=retrieve_stage, reads=(),
                               writes=("retrieval_query", "web_query", "retrieved", "searches_run", "chunks",
                                       "image_hits_reused", "regions_searched"))

"""Stage 3a (QA-Dragon's entity selection, `use_entity_check`): before the chunks of an image-search
entity are used, the VLM answers whether the photo shows that entity (one engine call for the
batch: one request per entity, at most `entity_check_max` entities per turn, best hit first).
The chunks of a rejected entity leave the pool; entities beyond the limit and unreadable
verdicts are kept (the check cannot vouch against them), the latter counted as parse failures.

Image search returns look-alikes; a wrong entity's infobox is the surest way to a confident wrong
answer, and on the real index most photos match several entities of the same kind.
"""
from __future__ import annotations

import dataclasses

from agents.config.cruise_config import CruiseConfig
from agents.engines.base import ChatEngine, ChatRequest, Sampling
from agents.runtime.system import Prior, Stage
from agents.stages.prompts import load_prompt, vlm_image
from agents.stages.types import Retrieval, Turn, column, search_question
from agents.stages.verdicts import read_verdict


def entities_to_check(retrieval: Retrieval, limit: int) -> list[str]:
    """Distinct entity names of the turn's image chunks, in the order the chunks came (best hit first)."""
    names: list[str] = []
    for name in retrieval.chunk_entities:
        if name and name not in names:
            names.append(name)
    return names[:limit]


def drop_rejected(retrieval: Retrieval, verdicts: dict[str, bool], raws: list[str], parsed: bool) -> Retrieval:
    rejected = {name for name, shown in verdicts.items() if shown is False}
    keep = [i for i, name in enumerate(retrieval.chunk_entities) if name not in rejected]
    return dataclasses.replace(
        retrieval,
        chunks=[retrieval.chunks[i] for i in keep],
        chunk_sources=[retrieval.chunk_sources[i] for i in keep],
        chunk_entities=[retrieval.chunk_entities[i] for i in keep],
        chunk_dates=[retrieval.chunk_dates[i] for i in keep] if retrieval.chunk_dates else [],
        entity_verdicts=verdicts, entity_check_raw=raws, entity_check_parsed=parsed,
        chunks_dropped_entity=len(retrieval.chunks) - len(keep),
    )


def entity_check_batch(
    turns: list[Turn], retrievals: list[Retrieval], engine: ChatEngine, cfg: CruiseConfig
) -> list[Retrieval]:
    if not cfg.peer_stages.use_entity_check:
        return list(retrievals)
    asks = [(i, name) for i, (t, r) in enumerate(zip(turns, retrievals)) if t.image is not None
            for name in entities_to_check(r, cfg.peer_stages.entity_check_max)]
    prompt = load_prompt("entity_check")
    requests = [ChatRequest(prompt.messages(None, entity=name.replace('"', "'"), query=search_question(turns[i])),
                            image=vlm_image(turns[i], engine), turn=i) for i, name in asks]
    sampling = Sampling(max_tokens=cfg.peer_stages.entity_check_max_tokens, seed=cfg.models.seed)
    replies = [r.text for r in engine.generate(requests, sampling, stage="entity_check")] if requests else []
    out = list(retrievals)
    per_turn: dict[int, list[tuple[str, str]]] = {}
    for (i, name), text in zip(asks, replies):
        per_turn.setdefault(i, []).append((name, text))
    for i, answers in per_turn.items():
        verdicts, parsed_all = {}, True
        for name, text in answers:
            shown, parsed = read_verdict(text)
            verdicts[name] = shown if parsed else None
            parsed_all = parsed_all and parsed
        out[i] = drop_rejected(retrievals[i], verdicts, [text for _, text in answers], parsed_all)
    return out


def entity_check(batch) -> list[dict]:
    checked = entity_check_batch(batch.turns, column(batch.reads, "retrieval"), batch.engines.vlm, batch.cfg)
    return [{"retrieval": r} for r in checked]


STAGE = Stage("entity_check", batch_fn=entity_check, reads=("retrieval",), writes=("retrieval",),
              switch="use_entity_check", parsed="entity_check",
              prior=Prior("consistency", max_tokens=lambda cfg: cfg.peer_stages.entity_check_max_tokens,
                          requests_per_turn=lambda cfg: cfg.peer_stages.entity_check_max),
              prompts=("entity_check",))

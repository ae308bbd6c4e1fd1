"""Stage 5a (SAM-RAG's relevance check isRel, `use_relevance_filter`): after the MAD threshold,
the VLM marks each kept chunk relevant or not, and irrelevant chunks leave the context. One
request per turn lists that turn's kept chunks (at most K_rerank) and asks for a line per chunk
("Info 2: no"), so the batch costs one engine call of at most B requests. All chunks dropped
means an empty context, which Algorithm 1 handles like no retrieval (tau_high); S_ret stays the
reranker's. A chunk whose verdict cannot be read is kept (counted as a parse failure): the
filter removes only what it has judged irrelevant.
"""
from __future__ import annotations

import dataclasses
import re

from agents.config.cruise_config import CruiseConfig
from agents.engines.base import ChatEngine, Sampling
from agents.runtime.system import Prior, Stage
from agents.stages.parsing import strip_markdown
from agents.stages.prompts import ask_vlm, quote_notes
from agents.stages.s5_rerank import context_block
from agents.stages.types import Evidence, Turn, column, search_question

_LINE = re.compile(r"(?:info|result|note|chunk|#)?\s*\[?(\d+)\]?\s*(?:[:=.)-]|\bis\b)?\s*[\[(\"']?\s*"
                   r"(yes|no|relevant|irrelevant|not\s+relevant|true|false)\b", re.I)


def read_relevance(text: str, count: int) -> list[bool | None]:
    """One verdict per chunk, by number ("Info 2: no", "2. yes", "[Info 1] relevant"); a reply of
    bare yes/no lines is read in order. None where a chunk has no readable verdict."""
    plain = strip_markdown(text)
    verdicts: list[bool | None] = [None] * count
    for number, word in _LINE.findall(plain):
        index = int(number) - 1
        if 0 <= index < count and verdicts[index] is None:
            verdicts[index] = word.lower() in ("yes", "relevant", "true")
    if all(v is None for v in verdicts):
        bare = [m.group(1).lower() for m in re.finditer(r"^\W*(yes|no|relevant|irrelevant)\b", plain, re.I | re.M)]
        if len(bare) == count:
            verdicts = [word in ("yes", "relevant") for word in bare]
    return verdicts


def filter_evidence(evidence: Evidence, verdicts: list[bool | None], raw: str) -> Evidence:
    kept = [c for c, v in zip(evidence.kept, verdicts) if v is not False]
    dates = [d for d, v in zip(evidence.kept_dates, verdicts) if v is not False] if evidence.kept_dates else []
    return dataclasses.replace(
        evidence, kept=kept, kept_dates=dates, context=context_block(kept, dates), relevance=verdicts,
        dropped_irrelevant=[c for c, v in zip(evidence.kept, verdicts) if v is False],
        relevance_raw=raw, relevance_parsed=all(v is not None for v in verdicts),
    )


def relevance_batch(turns: list[Turn], evidence: list[Evidence], engine: ChatEngine, cfg: CruiseConfig) -> list[Evidence]:
    if not cfg.peer_stages.use_relevance_filter:
        return list(evidence)
    wanted = [i for i, e in enumerate(evidence) if e.kept]
    replies = ask_vlm(
        engine, "relevance", turns, wanted,
        lambda i: dict(query=search_question(turns[i]),
                       notes=quote_notes("\n".join(f"[Info {m}] {c}" for m, c in enumerate(evidence[i].kept, 1))),
                       format="\n".join(f"Info {m}: yes or no" for m in range(1, len(evidence[i].kept) + 1))),
        Sampling(max_tokens=max(cfg.peer_stages.relevance_max_tokens, 8 * cfg.retrieval.k_rerank),
                 seed=cfg.models.seed), with_history=False,
    )
    out = list(evidence)
    for i, text in zip(wanted, replies):
        out[i] = filter_evidence(evidence[i], read_relevance(text, len(evidence[i].kept)), text)
    return out


def relevance(batch) -> list[dict]:
    kept = relevance_batch(batch.turns, column(batch.reads, "evidence"), batch.engines.vlm, batch.cfg)
    return [{"evidence": e} for e in kept]


STAGE = Stage("relevance", batch_fn=relevance, reads=("evidence",), writes=("evidence",),
              switch="use_relevance_filter", parsed="relevance",
              prior=Prior("consistency", max_tokens=lambda cfg: cfg.peer_stages.relevance_max_tokens),
              prompts=("relevance",))

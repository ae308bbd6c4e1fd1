"""Stage 2: a one-sentence, question-aware description of the image, to sharpen retrieval.

The retrieval query is q' = question + summary (paper, eq. 2). The sentence is read past a
lead-in ("Here is a one-sentence description:"), a label ("Description:"), markdown and quotes;
a full stop after "St.", "Dr.", "e.g." or an initial does not end it. A reply with no sentence
leaves the summary empty (q' = q) and counts as a parse failure.
"""
from __future__ import annotations

from agents.config.cruise_config import CruiseConfig
from agents.engines.base import ChatEngine, Sampling
from agents.runtime.system import Prior, Stage
from agents.stages.parsing import content_lines, first_sentence
from agents.stages.prompts import ask_vlm
from agents.stages.s0a_perceive import picture_summary
from agents.stages.types import Perception, Route, Summary, Turn, column

_LABELS = ("one-sentence description", "description", "summary", "sentence", "caption")
_QUOTES = "\"'“”‘’"


def read_summary(text: str) -> Summary:
    lines = content_lines(text, _LABELS)
    sentence = first_sentence(lines[0]).strip(_QUOTES).strip() if lines else ""
    return Summary(sentence, text, parsed=bool(sentence))


def summarize_batch(
    turns: list[Turn], routes: list[Route], engine: ChatEngine, cfg: CruiseConfig,
    perceptions: list[Perception | None] | None = None,
) -> list[Summary]:
    """Summaries for the turns that will retrieve; an empty Summary for the others (no request).
    A turn whose picture perception read for a VLM that cannot see (s0a) takes what was read as
    its summary, with no request (`picture_summary`)."""
    wanted = [i for i,
              r in enumerate(routes) if r.needs_external and cfg.retrieval.use_retrieval and cfg.answer.use_summary]
    summaries = [Summary() for _ in turns]
    read = {i: picture_summary(perceptions[i], cfg) for i in wanted if perceptions is not None}
    for i, text in read.items():
        if text:
            summaries[i] = Summary(text, "", parsed=None)
    wanted = [i for i in wanted if not read.get(i)]
    replies = ask_vlm(
        engine, "summarize", turns, wanted, lambda i: dict(query=turns[i].query),
        Sampling(max_tokens=cfg.answer.summary_max_tokens, seed=cfg.models.seed), with_history=False,
    )
    for i, text in zip(wanted, replies):
        summaries[i] = read_summary(text)
    return summaries


def summarize(batch) -> list[dict]:
    """Each turn's summary (`route`: whether it will retrieve); a turn perception read takes what
    was read."""
    summaries = summarize_batch(batch.turns, column(batch.reads, "route"), batch.engines.vlm, batch.cfg,
                                [t.perception for t in batch.turns])
    return [{"summary": s} for s in summaries]


STAGE = Stage("summarize", batch_fn=summarize, reads=("route",), writes=("summary",), switch="use_summary",
              parsed="summarize", prior=Prior("summarize", max_tokens=lambda cfg: cfg.answer.summary_max_tokens),
              prompts=("summarize",))

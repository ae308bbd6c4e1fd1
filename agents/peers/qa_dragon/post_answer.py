"""The post-answer module, part 1: CoT-based answer generation (seed 001, 3.7.1). For a Search
Verify or RAG turn the VLM sees the photo, the conversation, the reranked evidence and the D-CoT's
draft with its reasoning (the initial hypothesis the paper consolidates with the evidence), and
writes

    Reason: <what in the photo or the notes gives the answer>
    Answer: <one short sentence, or I don't know>

(prompts/qa_dragon_post_answer.txt; the paper's in-context examples are not reproduced). The
reply is generated with log-probabilities: the white-box verifier (verifier.py) reads the
least likely token of the Answer line, and the trace also keeps the whole reply's.
"""
from __future__ import annotations

import math
import re

from agents.base_agent import IDK_ANSWER
from agents.config.cruise_config import CruiseConfig
from agents.engines.base import ChatEngine, ChatRequest, ChatResult, Sampling
from agents.peers.qa_dragon.draft import lengths
from agents.peers.qa_dragon.types import Draft, PostAnswer, Reranked, SearchRoute, column
from agents.runtime.system import Stage
from agents.stages.parsing import labelled_value, strip_markdown
from agents.stages.prompts import load_prompt, quote_notes, vlm_image
from agents.stages.s6_answer import read_answer, token_probabilities
from agents.stages.types import Turn
from agents.stages.verdicts import without_answer_labels

_ANSWER_LABEL = r"final[\s_-]*answer|answer"
_REASON_LINE = re.compile(r"^[^\S\n]*[*_#>\s]*reason(?:ing)?[*_\s]*[:=]", re.IGNORECASE)
_ANSWER_LINE = re.compile(r"^[^\S\n]*[*_#>\s]*(?:final[\s_-]*)?answer[*_\s]*[:=]", re.IGNORECASE | re.MULTILINE)


def read_post_answer(text: str) -> tuple[str, str, bool]:
    """(answer, reason, parsed): the Answer line ("I don't know" for any abstention) and the Reason
    line. A reply without an Answer line is read as CRUISE reads an answer (s6_answer): its first
    line that is not the Reason line; parsed False when nothing is left."""
    plain = strip_markdown(text or "")
    reason = labelled_value(plain, r"reason|reasoning") or ""
    value = labelled_value(plain, _ANSWER_LABEL)
    if value is None:
        value = "\n".join(line for line in plain.splitlines() if not _REASON_LINE.match(line))
    value = without_answer_labels(value)
    if not value:
        return IDK_ANSWER, reason, False
    answer, parsed = read_answer(value)
    return answer, reason, parsed


def answer_line_probabilities(result: ChatResult) -> tuple[float | None, float | None]:
    """(minimum, mean) probability of the tokens of the Answer line; the whole reply's where the
    line cannot be found among the tokens; None without token probabilities."""
    tokens, logprobs = result.tokens, result.token_logprobs
    if not tokens or not logprobs or len(tokens) != len(logprobs):
        return token_probabilities(result)
    joined = "".join(tokens)
    found = list(_ANSWER_LINE.finditer(joined))
    if not found:
        return token_probabilities(result)
    start = found[-1].end()
    end = joined.find("\n", start)
    end = len(joined) if end < 0 else end
    probs, offset = [], 0
    for token, logprob in zip(tokens, logprobs):
        token_start, offset = offset, offset + len(token)
        if token_start >= start and token_start < end and token.strip() and logprob is not None and not math.isnan(logprob):
            probs.append(math.exp(logprob))
    if not probs:
        return token_probabilities(result)
    return min(probs), sum(probs) / len(probs)


def draft_text(draft: Draft) -> str:
    lines = [draft.reasoning] if draft.reasoning else []
    return "\n".join(lines + [f"Draft answer: {draft.answer}"])


def post_answer_batch(turns: list[Turn], drafts: list[Draft], routes: list[SearchRoute], reranked: list[Reranked],
                      engine: ChatEngine, cfg: CruiseConfig) -> list[PostAnswer]:
    out = [PostAnswer() for _ in turns]
    wanted = [i for i, r in enumerate(routes) if r.branch != "direct_output"]
    if not wanted:
        return out
    prompt = load_prompt("qa_dragon_post_answer")
    requests = [ChatRequest(prompt.messages(turns[i].history, turns[i].picture, query=turns[i].query,
                                            context=quote_notes(reranked[i].evidence.context),
                                            draft=draft_text(drafts[i])),
                            image=vlm_image(turns[i], engine)) for i in wanted]
    sampling = Sampling(max_tokens=lengths(cfg, cfg.own.qa_dragon_answer_lengths), seed=cfg.models.seed,
                        logprobs=True)
    results = engine.generate(requests, sampling, stage="post_answer")
    for i, result in zip(wanted, results):
        answer, reason, parsed = read_post_answer(result.text)
        lowest, mean = answer_line_probabilities(result)
        out[i] = PostAnswer(answer, reason, result.text, parsed, lowest, mean, token_probabilities(result)[0])
    return out


def post_answers(batch) -> list[dict]:
    found = post_answer_batch(batch.turns, column(batch.reads, "draft"), [r["search_route"] for r in batch.reads],
                              column(batch.reads, "reranked"), batch.engines.vlm, batch.cfg)
    return [{"post": p} for p in found]


STAGE = Stage("post_answer", batch_fn=post_answers, reads=("draft", "search_route", "reranked"), writes=("post",),
              parsed="post_answer", prompts=("qa_dragon_post_answer",))

"""SAM-RAG's answer generation and usefulness verification, isUse (seed 002, Table 1 second row).

The answer is generated from the photo, the conversation and the relevant documents C (CRUISE's
answer prompts, s6_answer, one path). isUse asks whether the answer responds to what the question
asks, right or wrong (prompts/sam_rag_is_use.txt, read as the stack reads a yes/no check; an
unreadable verdict counts as no, the safe side). Where it does not, the paper regenerates from
C; a greedy model asked the same prompt again would write the same answer, so the regeneration
prompt (prompts/sam_rag_regenerate.txt) shows the answer that missed the question. The paper
loops until isUse passes; here one regeneration and one second isUse: an answer that still misses
the question is not given. An answer of "I don't know" is not checked: it is already the abstention.
"""
from __future__ import annotations

import dataclasses

from agents.base_agent import IDK_ANSWER
from agents.config.cruise_config import CruiseConfig
from agents.engines.base import ChatEngine, ChatRequest, Sampling
from agents.peers.sam_rag.types import UseCheck, column
from agents.runtime.system import Stage
from agents.stages.prompts import load_prompt, quote_notes, vlm_image
from agents.stages.s6_answer import read_answer, token_probabilities
from agents.stages.types import Answers, Evidence, Turn
from agents.stages.verdicts import check_sampling, read_check


def use_requests(turns: list[Turn], answers: dict[int, str], wanted: list[int]) -> list[ChatRequest]:
    prompt = load_prompt("sam_rag_is_use")
    return [ChatRequest(prompt.messages(turns[i].history, query=turns[i].query, answer=answers[i])) for i in wanted]


def is_use_batch(turns: list[Turn], answers: list[Answers], uses: list[UseCheck], engine: ChatEngine,
                 cfg: CruiseConfig) -> list[UseCheck]:
    """isUse on the first answers (uses' `first`), or, for the turns that regenerated, on the new
    answers (`second`)."""
    out = [dataclasses.replace(u) for u in uses]
    second = [i for i, u in enumerate(uses) if u.regenerated is not None and u.second is None
              and u.regenerated != IDK_ANSWER]
    first = [i for i, (a, u) in enumerate(zip(answers, uses)) if u.first is None and u.regenerated is None
             and a.rag != IDK_ANSWER]
    wanted = second or first
    if not wanted:
        return out
    texts = {i: (uses[i].regenerated if second else answers[i].rag) for i in wanted}
    results = engine.generate(use_requests(turns, texts, wanted), check_sampling(cfg,
                                                                                 cfg.own.sam_rag_check_max_tokens),
                              stage="is_use")
    for i, result in zip(wanted, results):
        check = read_check(result)
        if check.passed is None:
            check.passed = False  # unreadable: the answer is not vouched for
        if second:
            out[i].second = check
        else:
            out[i].first = check
    return out


def regenerate_batch(turns: list[Turn], evidence: list[Evidence], answers: list[Answers], uses: list[UseCheck],
                     engine: ChatEngine, cfg: CruiseConfig) -> list[UseCheck]:
    out = [dataclasses.replace(u) for u in uses]
    wanted = [i for i, u in enumerate(uses) if u.first is not None and u.first.passed is False]
    if not wanted:
        return out
    prompt = load_prompt("sam_rag_regenerate")
    requests = [ChatRequest(prompt.messages(turns[i].history, turns[i].picture, query=turns[i].query,
                                            context=quote_notes(evidence[i].context), previous=answers[i].rag),
                            image=vlm_image(turns[i], engine)) for i in wanted]
    results = engine.generate(requests, Sampling(max_tokens=cfg.answer.answer_max_tokens, seed=cfg.models.seed,
                                                 logprobs=True),
                              stage="regenerate")
    for i, result in zip(wanted, results):
        out[i].regenerated, _ = read_answer(result.text)
        out[i].regenerated_raw = result.text
        out[i].regenerated_min_token_prob = token_probabilities(result)[0]
    return out


def is_use(batch) -> list[dict]:
    found = is_use_batch(batch.turns, column(batch.reads, "answers"), column(batch.reads, "use"), batch.engines.vlm,
                         batch.cfg)
    return [{"use": u} for u in found]


def regenerate(batch) -> list[dict]:
    found = regenerate_batch(batch.turns, column(batch.reads, "evidence"), column(batch.reads, "answers"),
                             column(batch.reads, "use"), batch.engines.vlm, batch.cfg)
    return [{"use": u} for u in found]


IS_USE = Stage("is_use", batch_fn=is_use, reads=("answers", "use"), writes=("use",), parsed="is_use",
               prompts=("sam_rag_is_use",))
REGENERATE = Stage("regenerate", batch_fn=regenerate, reads=("evidence", "answers", "use"), writes=("use",),
                   parsed="regenerate", prompts=("sam_rag_regenerate",))

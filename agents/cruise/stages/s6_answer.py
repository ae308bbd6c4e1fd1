"""Stage 6: dual-path generation in ONE engine call of up to 2B requests.

The RAG answer a' sees the question, image, history and context C; the non-RAG answer a sees
the question, image and history only. When C is empty the two prompts are the same, so a' is
generated once and a is a copy (greedy decoding would return the same text anyway).
"""
from __future__ import annotations

import re

from agents.base_agent import IDK_ANSWER
from agents.config import CruiseConfig
from agents.cruise.prompts import load_prompt, quote_notes
from agents.cruise.types import Answers, Evidence, Turn
from agents.engines.base import ChatEngine, ChatRequest, Sampling

# Ways a model says it cannot answer; any of them becomes exactly "I don't know".
_ABSTAIN = re.compile(
    r"\b(i\s+do\s+not\s+know|i\s+don['’]?t\s+know|not\s+sure|cannot\s+(?:be\s+)?(?:determined?|told|tell|answer(?:ed)?|know)"
    r"|can['’]?t\s+(?:determine|tell|answer)|unable\s+to\s+(?:determine|tell|answer)|no\s+information)\b",
    re.IGNORECASE,
)
_LEAD = re.compile(r"^\s*(?:final\s+)?answer\s*[:\-]\s*", re.IGNORECASE)


def normalize_answer(text: str) -> str:
    """A short answer on one line, or exactly "I don't know"."""
    line = next((ln.strip() for ln in text.strip().splitlines() if ln.strip()), "")
    line = _LEAD.sub("", line).strip().strip('"').strip()
    if not line or _ABSTAIN.search(line):
        return IDK_ANSWER
    return line


def answer_request(turn: Turn, context: str) -> ChatRequest:
    if context:
        messages = load_prompt("answer_with_context").messages(
            turn.history, query=turn.query, context=quote_notes(context)
        )
    else:
        messages = load_prompt("answer_without_context").messages(turn.history, query=turn.query)
    return ChatRequest(messages, image=turn.image)


def answer_batch(
    turns: list[Turn], evidence: list[Evidence], engine: ChatEngine, cfg: CruiseConfig
) -> list[Answers]:
    rag_requests = [answer_request(t, e.context) for t, e in zip(turns, evidence)]
    # The non-RAG path is only a separate request where the context is not empty.
    direct_for = [i for i, e in enumerate(evidence) if cfg.use_dual_path and e.context]
    direct_requests = [answer_request(turns[i], "") for i in direct_for]
    results = engine.generate(
        rag_requests + direct_requests,
        Sampling(max_tokens=cfg.answer_max_tokens, seed=cfg.seed),
        stage="answer",
    )
    answers = [Answers(rag=normalize_answer(r.text), rag_raw=r.text) for r in results[: len(turns)]]
    if cfg.use_dual_path:
        for a in answers:
            a.direct, a.direct_raw = a.rag, a.rag_raw
        for i, r in zip(direct_for, results[len(turns) :]):
            answers[i].direct, answers[i].direct_raw = normalize_answer(r.text), r.text
    return answers

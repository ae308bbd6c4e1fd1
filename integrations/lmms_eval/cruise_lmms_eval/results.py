"""A document's results as its turns: the records `answers.jsonl` holds, one per turn
(evaluator/harness/runner.py `answer_record`: the judged answer is the reply cut to 75 tokens,
the reply as given beside it), and a trace per turn where the task knows what went into the
prompt. lmms-eval logs them with the document's sample under TURNS_KEY, which
`local_evaluation.py from-lmms-eval` reads back.

A reply is never scored as an answer where the model gave none: a request that failed
(lmms-eval's marker `[LMMS_EVAL_REQUEST_FAILED after N retries] ...`, which its API models
return in place of a reply once their retries are spent, or an exception handed over as the
result) and a reply with no content are faults. Such a turn is recorded as our own agent-error
turns are (evaluator/harness/runner.py): answered "I don't know", the reason as its `error`,
so the scores count it as no answer given and the report counts it among the agent-error turns;
a provider that is down scores no hallucination.
"""
from __future__ import annotations

import logging
import re

from agents.base_agent import IDK_ANSWER
from evaluator.harness.dataset import Conversation
from evaluator.harness.runner import answer_record

log = logging.getLogger(__name__)

NO_REPLY = "the model gave no reply for this turn (its conversation ended early): scored as I don't know"
NO_CONTENT = "the model's reply had no content"
FAILED_REQUEST = re.compile(r"\s*\[LMMS_EVAL_REQUEST_FAILED after \d+ retries\]")


def reply_fault(reply) -> str | None:
    """Why `reply` is no answer (a failed request, an exception, no content), or None for a
    reply that is one."""
    if isinstance(reply, BaseException):
        return f"the request failed: {type(reply).__name__}: {str(reply)[:300]}"
    if reply is None or not str(reply).strip():
        return NO_CONTENT
    if FAILED_REQUEST.match(str(reply)):
        return f"the request failed: {' '.join(str(reply).split())[:300]}"
    return None


def answers_for_history(replies: list) -> list[str]:
    """A conversation's earlier replies as its later turns see them: a fault stands as "I don't
    know", as our own runs give a turn whose agent failed."""
    return [IDK_ANSWER if reply_fault(reply) else str(reply) for reply in replies]


def turn_replies(results: list, multi_turn: bool, turns: int) -> list[str]:
    """The replies to a document's turns, in order, as lmms-eval hands them to process_results:
    one reply (single-turn), or a list of them (a conversation; a lone string is its first). No
    result at all is no reply; a result of None is a reply without content (a fault), kept as
    None."""
    replies = [] if not results else results[0]
    if results and (not multi_turn or isinstance(replies, (str, BaseException)) or replies is None):
        replies = [replies]
    return [r if r is None or isinstance(r, BaseException) else str(r) for r in list(replies or [])[:turns]]


def document_turns(conv: Conversation, raw: list, cut: list[str], traces: list[dict | None]) -> dict:
    """{"records", "traces"} of a conversation: each turn's record from its reply `raw[t]` (cut:
    `cut[t]`), a turn without a reply or whose reply is a fault answered "I don't know" with the
    reason as its error; `traces[t]`: what the task knows of the turn's prompt (None: nothing)."""
    if len(raw) < len(conv.turns):
        log.warning("session %s: %d of %d turns without a reply", conv.session_id, len(conv.turns) - len(raw),
                    len(conv.turns))
    records, kept = [], []
    for t, turn in enumerate(conv.turns):
        fault = reply_fault(raw[t]) if t < len(raw) else NO_REPLY
        given = "" if t >= len(raw) or raw[t] is None else str(raw[t])
        records.append(answer_record(conv, t, IDK_ANSWER if fault else cut[t], given, fault))
        if traces[t] is not None:
            kept.append({"interaction_id": turn.interaction_id, "session_id": conv.session_id, "turn_idx": t,
                         **traces[t]})
    return {"records": records, "traces": kept}

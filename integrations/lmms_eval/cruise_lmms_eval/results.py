"""A document's results as its turns: the records `answers.jsonl` holds, one per turn
(evaluator/harness/runner.py `answer_record`: the judged answer is the reply cut to 75 tokens,
the reply as given beside it), and a trace per turn where the task knows what went into the
prompt. lmms-eval logs them with the document's sample under TURNS_KEY, which
`local_evaluation.py from-lmms-eval` reads back.
"""
from __future__ import annotations

import logging

from agents.base_agent import IDK_ANSWER
from evaluator.harness.dataset import Conversation
from evaluator.harness.runner import answer_record

log = logging.getLogger(__name__)

NO_REPLY = "the model gave no reply for this turn (its conversation ended early): scored as I don't know"


def turn_replies(results: list, multi_turn: bool, turns: int) -> list[str]:
    """The replies to a document's turns, in order, as lmms-eval hands them to process_results:
    one reply (single-turn), or a list of them (a conversation; a lone string is its first). No
    result at all is no reply; a result of None is the model's empty answer."""
    replies = [] if not results else results[0]
    if results and (not multi_turn or isinstance(replies, str)):
        replies = [replies]
    return [str(r) if r is not None else "" for r in list(replies or [])[:turns]]


def document_turns(conv: Conversation, raw: list[str], cut: list[str], traces: list[dict | None]) -> dict:
    """{"records", "traces"} of a conversation: each turn's record from its reply `raw[t]` (cut:
    `cut[t]`), a turn without a reply answered "I don't know" with the reason as its error;
    `traces[t]`: what the task knows of the turn's prompt (None: nothing)."""
    if len(raw) < len(conv.turns):
        log.warning("session %s: %d of %d turns without a reply", conv.session_id, len(conv.turns) - len(raw),
                    len(conv.turns))
    records, kept = [], []
    for t, turn in enumerate(conv.turns):
        answered = t < len(raw)
        records.append(answer_record(conv, t, cut[t] if answered else IDK_ANSWER, raw[t] if answered else "",
                                     None if answered else NO_REPLY))
        if traces[t] is not None:
            kept.append({"interaction_id": turn.interaction_id, "session_id": conv.session_id, "turn_idx": t,
                         **traces[t]})
    return {"records": records, "traces": kept}

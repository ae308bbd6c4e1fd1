"""What a CRAG-MM task asks the model, as one text (an lmms-eval model takes one text and the
image, and adds its own system prompt).

Every prompt is the straightforward agent's answer prompt (agents/stages/baseline_prompt.py):
the question alone, or with the search results (the RAG prompt), a conversation's later turns
with the model's own earlier answers, cut to the judged 75 tokens, as history. crag_mm_agentic
puts the two tools before it (prompts/lmms_agentic_tools.txt and the schemas of tools.py), and
how to call them (prompts/lmms_agentic_call.txt).
"""
from __future__ import annotations

import json

from agents.base_agent import IDK_ANSWER
from agents.stages.baseline_prompt import HISTORY_CLOSE, HISTORY_OPEN, baseline_messages
from agents.stages.prompts import load_prompt_lines
from agents.stages.types import Turn
from evaluator.harness.dataset import Conversation

from .tools import TOOLS


def prompt_text(messages: list[dict]) -> str:
    """The baseline's role/content messages as one text: each message a paragraph, the
    conversation's turns inside the history block named by their role."""
    parts, in_history = [], False
    for message in messages:
        content = message["content"]
        if content in (HISTORY_OPEN, HISTORY_CLOSE):
            in_history = content == HISTORY_OPEN
            parts.append(content)
        elif in_history:
            parts.append(f"{message['role'].capitalize()}: {content}")
        else:
            parts.append(content)
    return "\n\n".join(parts)


def question_prompt(conv: Conversation, turn_idx: int, history: list[dict], context: str = "") -> str:
    """The answer prompt of a turn: its question, the history, and `context` (a RAG prompt's
    search results; empty: none)."""
    turn = Turn(query=conv.turns[turn_idx].query, image=None, history=history)
    return prompt_text(baseline_messages(turn, context, "open"))


def history(conv: Conversation, round_idx: int, cut_answers: list[str]) -> list[dict]:
    """The conversation up to turn `round_idx` with the model's answers (already cut to the judged
    length); an answer the model did not give stands as "I don't know", so no turn is lost."""
    answers = list(cut_answers[:round_idx]) + [IDK_ANSWER] * (round_idx - len(cut_answers[:round_idx]))
    messages = []
    for turn, answer in zip(conv.turns[:round_idx], answers):
        messages += [{"role": "user", "content": turn.query}, {"role": "assistant", "content": answer}]
    return messages


def agentic_prompt(question: str) -> str:
    """crag_mm_agentic's first prompt: the tools, how to call them, then the question prompt."""
    return "\n\n".join([load_prompt_lines("lmms_agentic_tools"), json.dumps(TOOLS), load_prompt_lines("lmms_agentic_call"),
                        question])

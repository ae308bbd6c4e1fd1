"""crag_mm_agentic for a model that calls tools natively: one conversation in OpenAI's
chat-completions shape per document, kept in step with the task's text protocol (tools.py).

lmms-eval's agentic loop hands the model one text a round: the task's first prompt (the tools'
schemas, how to call them as text, the question), then that prompt grown by each call and its
result (`<tool_call>...</tool_call>\\n<tool_result>\\n...\\n</tool_result>`) and, once the calls
are spent, the line that says to answer. `ToolConversation` turns that into what a model with
native function calling expects (OpenAI's API reference, "Function calling"):

- the first request: the photo, once, and the question headed by prompts/lmms_agentic_native.txt
  in place of the text protocol's instructions; the schemas go as the request's `tools`;
- a reply's `tool_calls` (several at once included) become the task's `<tool_call>` blocks, one
  per call in order, which the task runs; the reply is kept as the assistant message;
- each result the task adds comes back as a `role: tool` message with the `tool_call_id` of its
  call, in order; text the task adds after them (the line that says to answer) as a user message;
- a reply without a call is the answer; one with no content either is handed back as None,
  which the task counts as a fault, never as an answer "".

Nothing here imports lmms-eval or the OpenAI SDK: cruise_lmms_eval/openai_tools.py sends the
requests.
"""
from __future__ import annotations

import json
import re

from agents.stages.prompts import load_prompt_lines

from .prompts import agentic_prompt

# one call and its result as the task writes them (tools.py agentic_round)
CALL_AND_RESULT = re.compile(r"<tool_call>(.*?)</tool_call>\n<tool_result>\n(.*?)\n</tool_result>", re.DOTALL)


def agentic_question(context: str) -> str | None:
    """The question prompt inside crag_mm_agentic's first prompt, or None for a prompt that is not
    one (another task's: asked as it is, without tools)."""
    head = agentic_prompt("")
    return context[len(head):] if context.startswith(head) else None


def call_text(name: str, arguments: str | None) -> str:
    """A native call as the task's text protocol writes it; arguments that are no JSON stay their
    text, which the task reports back to the model as an error."""
    try:
        parsed = json.loads(arguments) if arguments else {}  # pragma: no mutate: "" reaches the task as {} either way
    except ValueError:
        parsed = arguments
    return "<tool_call>" + json.dumps({"name": name, "arguments": parsed}) + "</tool_call>"


class ToolConversation:
    """One document's conversation with a model that calls tools natively (module notes)."""

    def __init__(self, first_prompt: str, question: str, image_urls: list[str]):
        self.first_prompt = first_prompt
        content = [{"type": "image_url", "image_url": {"url": url}} for url in image_urls]
        content.append({"type": "text", "text": "\n\n".join([load_prompt_lines("lmms_agentic_native"), question])})
        self.messages: list[dict] = [{"role": "user", "content": content}]
        # the ids of the last reply's calls whose results are not sent yet (a reply always comes first)
        self.pending: list[str] = []  # pragma: no mutate: take_reply sets it before add_round reads it
        self.results_sent = 0

    def follows(self, context: str) -> bool:
        """Whether `context` is a later round of this conversation."""
        return context.startswith(self.first_prompt) and context != self.first_prompt

    def add_round(self, context: str) -> None:
        """The messages for the task's next round: each new result as a `role: tool` message of its
        call, in order (the result of a call the model wrote as text in its content, which has no
        id to answer, as a user message), then any text after them."""
        rest = context[len(self.first_prompt):]
        found = list(CALL_AND_RESULT.finditer(rest))
        for match in found[self.results_sent:]:
            if self.pending:
                self.messages.append({"role": "tool", "tool_call_id": self.pending.pop(0), "content": match.group(2)})
            else:
                self.messages.append({"role": "user", "content": match.group(0)})
            self.results_sent += 1
        # the line that says to answer comes once: the model's next reply ends the turn
        after = rest[found[-1].end():].strip() if found else rest.strip()  # pragma: no mutate: a later round holds a result
        if after:
            self.messages.append({"role": "user", "content": after})

    def take_reply(self, content: str | None, tool_calls: list[dict]) -> str | None:
        """The model's reply kept as the assistant message, and what the task is handed: each
        call as its text protocol's block, else the content (None where there is none)."""
        message: dict = {"role": "assistant"}
        if content is not None:
            message["content"] = content
        if tool_calls:
            message["tool_calls"] = [{"id": c["id"], "type": "function",
                                      "function": {"name": c["name"], "arguments": c["arguments"]}}
                                     for c in tool_calls]
        self.messages.append(message)
        self.pending = [c["id"] for c in tool_calls]
        if not tool_calls:
            return content
        return "\n".join(call_text(c["name"], c["arguments"]) for c in tool_calls)  # pragma: no mutate: the task finds each block whatever stands between them

"""The requests of `--model openai_tools` (openai_tools.py) to an OpenAI-compatible
chat-completions server, through the OpenAI SDK (openai 3.54.0, requirements-cpu.txt) with its own
retries.

crag_mm_agentic's rounds go through one conversation per document (native_tools.py): the task's
two tools as the request's `tools`, the reply's `tool_calls` to and from the task's text protocol.
Any other prompt is asked alone with its photo, without tools. A request that still fails after
the retries is handed back as lmms-eval's failure marker (`[LMMS_EVAL_REQUEST_FAILED after N
retries] ...`), and a reply without content as "" (lmms-eval would turn None into the text
"None"): the tasks count both as faults, never as answers. Nothing here imports lmms-eval.
"""
from __future__ import annotations

import base64
import io

from .native_tools import ToolConversation, agentic_question
from .tools import TOOLS


def image_url(image) -> str:
    """A PIL image as a data URL (PNG), as the API reference's image_url content part takes it."""
    buffer = io.BytesIO()
    image.convert("RGB").save(buffer, format="PNG")
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode()


class ToolCallingClient:
    """One model behind an OpenAI-compatible server; `api_key`: any text for a server of one's own."""

    def __init__(self, model: str, base_url: str | None, api_key: str, timeout: float, max_retries: int):
        from openai import OpenAI

        self.model, self.max_retries = model, int(max_retries)
        self.client = OpenAI(api_key=api_key, base_url=base_url, timeout=float(timeout), max_retries=int(max_retries))
        self.conversations: dict[tuple, ToolConversation] = {}  # (task, split, doc_id) -> its conversation

    # ------------------------------------------------------------------ one request
    def ask(self, messages: list[dict], gen_kwargs: dict, tools: list[dict] | None) -> tuple[str | None, list[dict]]:
        """(content, tool calls as {"id", "name", "arguments"}) of one reply; a request that fails
        after the client's retries gives lmms-eval's failure marker as its content."""
        body = {"model": self.model, "messages": messages,
                "max_completion_tokens": int(gen_kwargs.get("max_new_tokens") or 128),
                "temperature": float(gen_kwargs.get("temperature") or 0.0)}
        stop = [s for s in (gen_kwargs.get("until") or []) if s]
        if stop:
            body["stop"] = stop[:4]
        if tools:
            body.update(tools=tools, tool_choice="auto")
        try:
            reply = self.client.chat.completions.create(**body)
            message = reply.choices[0].message
        except Exception as exc:  # noqa: BLE001 - the task counts a failed request as a fault, not an answer
            said = " ".join(f"{type(exc).__name__}: {exc}".split())[:300]
            return f"[LMMS_EVAL_REQUEST_FAILED after {self.max_retries} retries] {said}", []
        calls = [{"id": c.id, "name": c.function.name, "arguments": c.function.arguments}
                 for c in (message.tool_calls or []) if getattr(c, "function", None) is not None]
        return message.content, calls

    def answer(self, context: str, gen_kwargs: dict, visuals: list, key: tuple) -> str:
        """The reply to one round: crag_mm_agentic's rounds through the document's conversation,
        any other prompt asked alone with its photo."""
        question = agentic_question(context)
        conversation = self.conversations.get(key)
        if conversation is not None and conversation.follows(context):
            conversation.add_round(context)
        elif question is not None:
            conversation = ToolConversation(context, question, [image_url(v) for v in visuals])
            self.conversations[key] = conversation
        else:
            content = [*({"type": "image_url", "image_url": {"url": image_url(v)}} for v in visuals),
                       {"type": "text", "text": context}]
            return self.ask([{"role": "user", "content": content}], gen_kwargs, None)[0] or ""
        content, calls = self.ask(conversation.messages, gen_kwargs, TOOLS)
        # no content is handed over as "": lmms-eval would write None as the text "None"
        return conversation.take_reply(content, calls) or ""

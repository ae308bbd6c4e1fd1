"""How the model's calls and their results travel: natively, or written in the text.

- native (`tool_protocol=native`): the request carries the tools (`ChatRequest.tools`), the reply
  its calls (`ChatResult.tool_calls`), and each result goes back as a `role: tool` message with its
  call's id; the engine writes them in its provider's own shape (agents/engines/tool_calls.py,
  hosted_providers.py). For the served and hosted engines (`ChatEngine.supports_tools`).
- text (`tool_protocol=text`): the tools' schemas and the call format are written into the system
  prompt (prompts/agentic_text_calls.txt), the model writes each call as
  `<tool_call>{"name": ..., "arguments": {...}}</tool_call>` (crag_mm_agentic's format, which is
  also Hermes' and Qwen2.5's), and the results come back in a user message, one
  `<tool_result>...</tool_result>` per call in the order of the calls. For an in-process engine (no
  tool-call parser) and for a server started without one.
- auto (the default): native where the run's VLM engine takes tools, else text.
"""
from __future__ import annotations

import json
import re
from string import Template

from agents.engines.tool_calls import ToolCall, read_arguments

PROTOCOLS = ("auto", "native", "text")
CALL_BLOCK = re.compile(r"<tool_call>(.*?)(?:</tool_call>|$)", re.DOTALL)
# A text-protocol reply stops where the model would start writing a result itself.
TEXT_STOP = ("<tool_result>",)


def protocol_for(setting: str, engine) -> str:
    """The protocol a run speaks: "native" or "text" (see the module notes). `native` asked of an
    engine without tools is refused in one line."""
    takes_tools = bool(getattr(engine, "supports_tools", False))
    if setting == "auto":
        return "native" if takes_tools else "text"
    if setting == "native" and not takes_tools:
        raise ValueError(f"tool_protocol native: the VLM engine {type(engine).__name__} ({engine.model}) has no "
                         f"tool-call parser; use tool_protocol=text (or auto)")
    return setting


def text_guide(template: str, tools: list[dict]) -> str:
    """prompts/agentic_text_calls.txt with the turn's tools' schemas in it."""
    schemas = "\n".join(json.dumps(tool["function"], ensure_ascii=False) for tool in tools)
    return Template(template).safe_substitute(tools=schemas)


def read_text_calls(reply: str, step: int) -> tuple[str, list[ToolCall]]:
    """(the reply without its calls, the calls it wrote in order). A block that is not a JSON
    object with a "name" is still a call, with no name and its text kept: its result tells the
    model what was wrong. Ids are made here ("text-<step>-<n>"), as the native protocols' are
    given."""
    calls, reply = [], reply or ""
    for number, found in enumerate(CALL_BLOCK.finditer(reply)):
        body = found.group(1).strip()
        call_id = f"text-{step}-{number}"
        try:
            value = json.loads(body)
        except ValueError:
            value = None  # pragma: no mutate - "" or any other non-dict reads the same: a broken call
        if not isinstance(value, dict) or not isinstance(value.get("name"), str):
            calls.append(ToolCall(id=call_id, name="", arguments=None, raw_arguments=body))
            continue
        arguments, raw = read_arguments(value.get("arguments", value.get("parameters")))
        calls.append(ToolCall(id=call_id, name=value["name"], arguments=arguments, raw_arguments=raw))
    return CALL_BLOCK.sub("", reply).strip(), calls


def text_results(results: list[tuple[ToolCall, str]]) -> str:
    """The user message that returns a text-protocol reply's results, in the order of its calls."""
    return "\n".join(f"<tool_result>\n{text}\n</tool_result>" for _, text in results)


def result_messages(protocol: str, results: list[tuple[ToolCall, str, bool]]) -> list[dict]:
    """The messages that return one reply's results [(call, text, failed)], in call order: one
    `role: tool` message per call (native), or one user message of `<tool_result>` blocks (text)."""
    if protocol == "native":
        return [{"role": "tool", "tool_call_id": call.id, "name": call.name, "content": text,
                 **({"is_error": True} if failed else {})} for call, text, failed in results]
    return [{"role": "user", "content": text_results([(call, text) for call, text, _ in results])}]


def reply_message(protocol: str, text: str, calls: list[ToolCall]) -> dict:
    """The assistant message a reply leaves in the conversation: its text and, natively, its calls
    (the text protocol's calls are in its text already)."""
    if protocol == "native" and calls:
        return {"role": "assistant", "content": text, "tool_calls": [call.as_message_part() for call in calls]}
    return {"role": "assistant", "content": text}

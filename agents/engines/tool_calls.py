"""Function calling through the engine interface: the one shape the chain speaks, and OpenAI's wire
shape, which the served engine and the hosted OpenAI provider share (agents/engines/hosted_providers.py
writes Anthropic's and Gemini's from the same shape).

The chain's shape, provider-neutral and JSON-ready (a trace can hold it):

- a request's tools (`ChatRequest.tools`): OpenAI's function tools, `{"type": "function",
  "function": {"name", "description", "parameters": <JSON schema>}}`, the form most servers and
  both other providers' converters start from;
- a reply's calls (`ChatResult.tool_calls`): `ToolCall`s, in the order the model wrote them (a
  reply may hold several: parallel calls);
- the conversation: an assistant message that made calls carries them as `"tool_calls": [ToolCall
  as a dict]` beside its text (`content`, "" where it wrote none); each call's result is a message
  `{"role": "tool", "tool_call_id": ..., "name": ..., "content": <text>}`, in the order of the calls.

Arguments the model wrote that are not a JSON object are kept as written (`raw_arguments`) with
`arguments` None: the caller answers such a call with an error the model reads, never a crash.
"""
from __future__ import annotations

import json
import uuid
from dataclasses import asdict, dataclass, field

# What a request may ask of the model's tool use: "auto" (it may call, or answer) and "none" (it
# must answer now: its call budget is spent). Every provider has both (OpenAI "auto"/"none",
# Anthropic {"type": "auto"/"none"}, Gemini's functionCallingConfig mode AUTO/NONE).
TOOL_CHOICES = ("auto", "none")


@dataclass
class ToolCall:
    """One function call a model asked for. `echo`: what its provider wants sent back with the
    call, untouched (Gemini's `thoughtSignature`, and whether the id was the provider's own)."""

    id: str
    name: str
    arguments: dict | None  # None: what the model wrote is not a JSON object (raw_arguments)
    raw_arguments: str = ""
    echo: dict = field(default_factory=dict)

    def as_message_part(self) -> dict:
        return asdict(self)

    @classmethod
    def from_message_part(cls, part: dict) -> ToolCall:
        return cls(id=str(part.get("id") or ""), name=str(part.get("name") or ""), arguments=part.get("arguments"),
                   raw_arguments=str(part.get("raw_arguments") or ""), echo=dict(part.get("echo") or {}))


def new_call_id() -> str:
    """An id for a call its provider gave none (Gemini may not): unique across the conversation,
    so that each result finds its own call."""
    return f"call-{uuid.uuid4().hex[:16]}"


def read_arguments(raw) -> tuple[dict | None, str]:
    """(arguments as a dict or None, as written): OpenAI sends a JSON string, Anthropic and Gemini
    an object."""
    if isinstance(raw, dict):
        return raw, json.dumps(raw, ensure_ascii=False)
    text = "" if raw is None else str(raw)
    if not text.strip():
        return {}, text  # a call without arguments (image_search of the whole photo)
    try:
        value = json.loads(text)
    except ValueError:
        return None, text
    return (value, text) if isinstance(value, dict) else (None, text)


def calls_of(message: dict) -> list[ToolCall]:
    """The calls an assistant message of the chain's conversation made."""
    return [ToolCall.from_message_part(part) for part in message.get("tool_calls") or []]


def arguments_text(call: ToolCall) -> str:
    """The call's arguments as a JSON string, as OpenAI's shape carries them (as written where
    they were not a JSON object, so that the model sees its own mistake)."""
    return json.dumps(call.arguments, ensure_ascii=False) if call.arguments is not None else call.raw_arguments


# --------------------------------------------------------------------------- OpenAI's shape
def openai_messages(messages: list[dict]) -> list[dict]:
    """The chain's conversation in Chat Completions' shape: an assistant message's calls as
    `tool_calls` of type "function" with their arguments as a JSON string (content null where it
    wrote nothing), each result a `role: tool` message with its `tool_call_id`. Other messages pass
    as they are."""
    out = []
    for message in messages:
        if message.get("role") == "assistant" and message.get("tool_calls"):
            text = message.get("content")
            out.append({"role": "assistant", "content": text if isinstance(text, str) and text else None,
                        "tool_calls": [{"id": call.id, "type": "function",
                                        "function": {"name": call.name, "arguments": arguments_text(call)}}
                                       for call in calls_of(message)]})
        elif message.get("role") == "tool":
            out.append({"role": "tool", "tool_call_id": message["tool_call_id"], "content": str(message["content"])})
        else:
            out.append({k: v for k, v in message.items() if k != "tool_calls"})
    return out


def openai_tool_fields(tools: list[dict] | None, tool_choice: str) -> dict:
    """A request's `tools` and `tool_choice` (none where it offers no tools)."""
    if not tools:
        return {}
    return {"tools": [dict(tool) for tool in tools], "tool_choice": tool_choice}


def openai_calls(message: dict) -> list[ToolCall]:
    """The function calls of a Chat Completions message (`tool_calls`), in order."""
    calls = []
    for item in message.get("tool_calls") or []:
        if not isinstance(item, dict) or item.get("type", "function") != "function":
            continue  # a custom tool's call: none is offered
        function = item.get("function") or {}
        arguments, raw = read_arguments(function.get("arguments"))
        calls.append(ToolCall(id=str(item.get("id") or new_call_id()), name=str(function.get("name") or ""),
                              arguments=arguments, raw_arguments=raw))
    return calls


def streamed_calls(deltas: list[dict]) -> list[ToolCall]:
    """The function calls of a streamed Chat Completions reply: each delta's `tool_calls` pieces
    joined by their `index` (the id and name come once, the arguments in fragments)."""
    joined: dict[int, dict] = {}
    for delta in deltas:
        for piece in delta.get("tool_calls") or []:
            slot = joined.setdefault(int(piece.get("index", len(joined))), {"id": "", "name": "", "arguments": ""})
            function = piece.get("function") or {}
            slot["id"] = piece.get("id") or slot["id"]
            slot["name"] = function.get("name") or slot["name"]
            slot["arguments"] += function.get("arguments") or ""
    return openai_calls({"tool_calls": [{"id": s["id"], "function": {"name": s["name"], "arguments": s["arguments"]}}
                                        for _, s in sorted(joined.items())]})


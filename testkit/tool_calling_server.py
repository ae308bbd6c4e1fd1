"""A chat-completions endpoint on 127.0.0.1 for a model that calls tools natively: the stand-in
server of `--model openai_tools` (integrations/lmms_eval/cruise_lmms_eval/openai_tools.py).

Its shapes are OpenAI's, not ours: each request is read as the OpenAI SDK's own request type
(openai.types.chat.completion_create_params.CompletionCreateParamsNonStreaming, validated with
pydantic) and held to the API reference's rule for tool calls (an assistant message with
`tool_calls` is followed by one `role: tool` message per call, each naming its `tool_call_id`);
a request that breaks either gets HTTP 400 in the API's error shape, as OpenAI and vLLM answer
it. Each reply is built through the SDK's own response type (openai.types.chat.ChatCompletion).

`reply(body) -> {"content": str | None, "tool_calls": [(id, name, arguments as a JSON string)]}`
decides what the model says to a request; `requests` keeps every request with its status.
"""
from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler

from testkit.served import Served


def tool_call_order_error(messages: list[dict]) -> str | None:
    """The API's rule for tool results, or None where `messages` keep it: each call of an
    assistant message answered by the `role: tool` messages right after it, and no tool message
    that answers no call."""
    pending: list[str] = []
    for i, message in enumerate(messages):
        role = message.get("role")
        if role == "tool":
            if message.get("tool_call_id") not in pending:
                return f"messages[{i}]: a tool message whose tool_call_id {message.get('tool_call_id')!r} answers no call"
            pending.remove(message["tool_call_id"])
            continue
        if pending:
            return (f"messages[{i}]: an assistant message with 'tool_calls' must be followed by tool messages "
                    f"responding to each 'tool_call_id'; not answered: {pending}")
        if role == "assistant":
            pending = [call["id"] for call in message.get("tool_calls") or []]
    if pending:
        return f"the last assistant message's 'tool_calls' are not answered by tool messages: {pending}"
    return None


def request_error(body: dict) -> str | None:
    """Why the API would refuse `body` (None: it would not), read with the SDK's request types:
    the request, each message, each call of an assistant message, each part of a message's
    content and each tool (pydantic does not look inside the SDK's Iterable fields on its own),
    then the rule for tool results."""
    from openai.types.chat import (
        ChatCompletionContentPartParam,
        ChatCompletionMessageParam,
        ChatCompletionMessageToolCallUnionParam,
        ChatCompletionToolUnionParam,
    )
    from openai.types.chat.completion_create_params import CompletionCreateParamsNonStreaming
    from pydantic import TypeAdapter, ValidationError

    checks = [(CompletionCreateParamsNonStreaming, body)]
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        return "messages: a non-empty list"
    for message in messages:
        checks.append((ChatCompletionMessageParam, message))
        checks += [(ChatCompletionMessageToolCallUnionParam, call) for call in message.get("tool_calls") or []]
        if isinstance(message.get("content"), list):
            checks += [(ChatCompletionContentPartParam, part) for part in message["content"]]
    checks += [(ChatCompletionToolUnionParam, tool) for tool in body.get("tools") or []]
    for kind, value in checks:
        try:
            TypeAdapter(kind).validate_python(value)
        except ValidationError as exc:
            return f"{json.dumps(value)[:200]}: " + " ".join(str(exc).split())[:300]
    for message in messages:
        for call in message.get("tool_calls") or []:
            if not isinstance((call.get("function") or {}).get("arguments"), str):
                return f"tool call {call.get('id')!r}: function.arguments must be a JSON string"
    return tool_call_order_error(messages)


def completion(body: dict, content: str | None, tool_calls: list[tuple[str, str, str]]) -> str:
    """A reply as the SDK's ChatCompletion type reads it, as JSON."""
    from openai.types.chat import ChatCompletion

    message = {"role": "assistant", "content": content}
    if tool_calls:
        message["tool_calls"] = [{"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}
                                 for call_id, name, arguments in tool_calls]
    reply = ChatCompletion.model_validate({
        "id": f"chatcmpl-{time.monotonic_ns()}", "object": "chat.completion", "created": int(time.time()),
        "model": body.get("model", ""),
        "choices": [{"index": 0, "finish_reason": "tool_calls" if tool_calls else "stop", "message": message,
                     "logprobs": None}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}})
    return reply.model_dump_json()


class ToolCallingServer(Served):
    def __init__(self, reply, *, lifetime_s: float = 600.0):
        self.reply = reply
        self.requests: list[dict] = []  # {"body", "status", "error"}
        self.lock = threading.Lock()
        self.bind(self._handler(), lifetime_s)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def bodies(self, status: int = 200) -> list[dict]:
        with self.lock:
            return [r["body"] for r in self.requests if r["status"] == status]

    def _answer(self, body: dict) -> tuple[int, str]:
        error = request_error(body)
        if error:
            return 400, json.dumps({"error": {"message": error, "type": "invalid_request_error", "param": "messages",
                                              "code": None}})
        said = self.reply(body)
        return 200, completion(body, said.get("content"), said.get("tool_calls") or [])

    def _handler(self):
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
                if not self.path.endswith("/chat/completions"):
                    status, text = 404, json.dumps({"error": {"message": "not found", "type": "not_found"}})
                else:
                    status, text = outer._answer(body)
                with outer.lock:
                    outer.requests.append({"body": body, "status": status,
                                           "error": json.loads(text).get("error") if status != 200 else None})
                data = text.encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        return Handler

"""Stand-ins for models that call tools natively: one loopback HTTP server (127.0.0.1 only) per
dialect, "openai" (Chat Completions), "anthropic" (Messages) or "gemini" (generateContent). Each
takes or refuses a request by its provider's documented rules for function calling, and a scripted
model decides, from the conversation it was sent, whether to call the tools or to answer.

The rules come from the providers' own references, not from our engines (no module of agents/ is
imported here, so a mistake both sides shared would not pass unseen):

- OpenAI (platform.openai.com/docs/api-reference/chat/create and the function-calling guide; the
  openai SDK 3.54.0's types, `openai.types.chat`): the request body is checked field by field
  against the SDK's own TypedDicts (`CompletionCreateParamsNonStreaming` and what it nests: a field
  the type lacks, a required one missing or a value of another type is refused); then the
  conversation rules the API enforces: an assistant message with `tool_calls` must be followed by
  one `role: tool` message per call id, and a `role: tool` message must answer a call of the
  assistant message before it. The reply is built from the SDK's response models
  (`ChatCompletion`, `ChatCompletionMessageFunctionToolCall`): `content` null and `finish_reason`
  "tool_calls" when it calls, arguments a JSON string, ids "call_...".
- Anthropic (platform.claude.com/docs/en/agents-and-tools/tool-use: overview, implementing tool
  use, handling stop reasons; api/messages): tools are {name, description, input_schema}
  (input_schema a JSON schema of type object), tool_choice {"type": "auto" | "any" | "tool" |
  "none"}; a request holding tool_use or tool_result blocks must define tools; every tool_use
  block of an assistant turn is answered by a tool_result block (its tool_use_id) in the user turn
  right after, and those come first in that turn's content; a tool_result answers a tool_use of the
  turn before; text blocks may not be empty. A reply that calls has tool_use blocks (id "toolu_...",
  input an object) and stop_reason "tool_use". (The bodies our Claude provider writes for such a
  conversation, tool_choice auto and none, were also checked once against the anthropic SDK's own
  `MessageCreateParamsNonStreaming`, anthropic 2.17.0, with `sdk_shape_faults`: no fault; 2026-12-07,
  in the venv of benchmarks/vllm_tools_check.sh, which installs that SDK.)
- Gemini (ai.google.dev/gemini-api/docs/function-calling, .../thought-signatures;
  api/generate-content, api/caching#Schema): tools [{functionDeclarations: [{name, description,
  parameters}]}] with parameters in the OpenAPI Schema subset (type STRING, NUMBER, INTEGER,
  BOOLEAN, ARRAY or OBJECT in any case, properties, required, items, description, minItems,
  maxItems, enum, nullable, format); toolConfig.functionCallingConfig.mode AUTO, ANY, NONE or
  VALIDATED; roles user and model; each part holds one of text, inlineData, functionCall,
  functionResponse (with thoughtSignature beside it); a model turn's functionCall parts are answered
  by as many functionResponse parts in the next (user) turn, by name; the first functionCall of a
  reply carries a thoughtSignature (Gemini 3), which must come back on that part
  ("Function call is missing a thought_signature").

The scripted model (`plan`) reads the question after "Question:" and follows a marker in it:
[direct] answers "Red" at once; [parallel] calls image_search and web_search in one reply; [chain]
searches a box of the photo, then the web for the entity it found; [empty] asks web_search for
"  "; [badbox] gives image_search an empty box; [loop] calls web_search at every reply; anything
else calls image_search once. Asked to answer (tool choice none, or no tools), or with its searches
done, it answers from the last result it read: "It is <name>" for an entity the image search named
("The photo may show: <name>"), else the result's first words, else "I don't know".
"""
from __future__ import annotations

import itertools
import json
import re
import threading
import types
import typing
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler

import typing_extensions

from testkit.served import Served, send_json

STAND_IN_KEY = "sk-tools-stand-in-0123456789"
TOOL_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
GEMINI_TYPES = ("STRING", "NUMBER", "INTEGER", "BOOLEAN", "ARRAY", "OBJECT")
GEMINI_SCHEMA_KEYS = {"type", "format", "description", "nullable", "enum", "maxItems", "minItems", "properties",
                      "required", "items", "minimum", "maximum", "title", "anyOf", "propertyOrdering", "default",
                      "minLength", "maxLength", "pattern", "minProperties", "maxProperties", "example"}
SHOWN_ENTITY = re.compile(r"The photo may show: ([^\n]+)")


class Refused(Exception):
    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status, self.message = status, message


# --------------------------------------------------------------------------- OpenAI: the SDK's types
def sdk_shape_faults(value, hint, path: str = "body") -> list[str]:
    """What keeps `value` from being of the SDK type `hint` (a TypedDict and what it nests): a key
    the TypedDict lacks, a required key missing, a value of another type. [] where it is."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if hint in (typing.Any, object) or isinstance(hint, typing.TypeVar):
        return []
    if origin is typing.Annotated:
        return sdk_shape_faults(value, args[0], path)
    if typing_extensions.is_typeddict(hint):
        if not isinstance(value, dict):
            return [f"{path}: expected an object ({hint.__name__}), got {type(value).__name__}"]
        hints = typing.get_type_hints(hint)
        faults = [f"{path}.{key}: required by {hint.__name__}" for key in sorted(hint.__required_keys__)
                  if key not in value]
        faults += [f"{path}.{key}: not a field of {hint.__name__}" for key in value if key not in hints]
        for key, item in value.items():
            if key in hints:
                faults += sdk_shape_faults(item, hints[key], f"{path}.{key}")
        return faults
    if origin in (typing.Union, types.UnionType):
        options = [sdk_shape_faults(value, member, path) for member in args]
        return [] if any(not o for o in options) else min(options, key=len)
    if origin is typing.Literal:
        return [] if value in args else [f"{path}: {value!r} is none of {list(args)}"]
    if origin in (list, typing.List, typing.Iterable, typing.Sequence) or str(origin) in (
            "<class 'collections.abc.Iterable'>", "<class 'collections.abc.Sequence'>"):
        if not isinstance(value, list):
            return [f"{path}: expected an array, got {type(value).__name__}"]
        return [f for n, item in enumerate(value) for f in sdk_shape_faults(item, args[0], f"{path}[{n}]")] if args \
            else []
    if origin in (dict, typing.Dict) or str(origin) == "<class 'collections.abc.Mapping'>":
        return [] if isinstance(value, dict) else [f"{path}: expected an object"]
    if hint is type(None):
        return [] if value is None else [f"{path}: expected null"]
    if hint is bool:
        return [] if isinstance(value, bool) else [f"{path}: expected a boolean"]
    if hint is int:
        return [] if isinstance(value, int) and not isinstance(value, bool) else [f"{path}: expected an integer"]
    if hint is float:
        return [] if isinstance(value, (int, float)) and not isinstance(value, bool) else [f"{path}: expected a number"]
    if hint is str:
        return [] if isinstance(value, str) else [f"{path}: expected a string"]
    return []


def openai_request_faults(body: dict) -> list[str]:
    from openai.types.chat.completion_create_params import CompletionCreateParamsNonStreaming

    faults = sdk_shape_faults(body, CompletionCreateParamsNonStreaming)
    if faults:
        return faults
    messages = body["messages"]
    for n, message in enumerate(messages):
        if message["role"] == "assistant" and message.get("tool_calls"):
            ids = [c["id"] for c in message["tool_calls"]]
            answered = []
            for later in messages[n + 1:]:
                if later["role"] != "tool":
                    break
                answered.append(later["tool_call_id"])
            if sorted(answered) != sorted(ids):
                return [f"messages.[{n}]: An assistant message with 'tool_calls' must be followed by tool messages "
                        f"responding to each 'tool_call_id'. The following tool_call_ids did not have response "
                        f"messages: {sorted(set(ids) - set(answered))}"]
        if message["role"] == "tool":
            before = next((m for m in reversed(messages[:n]) if m["role"] != "tool"), None)
            made = [c["id"] for c in (before or {}).get("tool_calls") or []]
            if message["tool_call_id"] not in made:
                return [f"messages.[{n}]: Invalid parameter: messages with role 'tool' must be a response to a "
                        f"preceeding message with 'tool_calls'."]
    for n, tool in enumerate(body.get("tools") or []):
        if not TOOL_NAME.match(tool["function"]["name"]):
            return [f"tools[{n}].function.name: string does not match pattern '^[a-zA-Z0-9_-]{{1,64}}$'"]
    if body.get("tool_choice") is not None and not body.get("tools"):
        return ["tool_choice: 'tool_choice' is only allowed when 'tools' are specified"]
    return []


# --------------------------------------------------------------------------- what the model read
@dataclass
class Seen:
    """A request as the scripted model reads it, whatever the dialect."""

    question: str
    results: list[str]
    calls_made: int
    must_answer: bool
    tools: list[str]
    images: int


def question_of(texts: list[str]) -> str:
    for text in texts:
        if "Question:" in text:
            return text.split("Question:", 1)[1].strip().splitlines()[0]
    return texts[-1] if texts else ""


def answer_from(results: list[str]) -> str:
    for text in reversed(results):
        if text.startswith("error:"):
            continue
        shown = SHOWN_ENTITY.search(text)
        if shown:
            return f"It is {shown.group(1).strip()}"
        words = text.split()
        if words and text != "nothing found":
            return " ".join(words[:6])
    return "I don't know"


def plan(seen: Seen) -> tuple[str, list[tuple[str, dict]]]:
    """(text, calls) of the scripted model's reply (see the module notes)."""
    q, done = seen.question, seen.calls_made
    if "[direct]" in q:
        return "Red", []
    if seen.must_answer or not seen.tools:
        return answer_from(seen.results), []
    if "[loop]" in q:
        return "", [("web_search", {"query": f"more about it, round {done}"})]
    if "[empty]" in q:
        return ("", [("web_search", {"query": "  "})]) if done == 0 else (answer_from(seen.results), [])
    if "[badbox]" in q:
        return ("", [("image_search", {"box": [10, 10, 10, 40]})]) if done == 0 else (answer_from(seen.results), [])
    if "[parallel]" in q:
        if done == 0:
            return "", [("image_search", {}), ("web_search", {"query": q.replace("[parallel]", "").strip()})]
        return answer_from(seen.results[:1]), []
    if "[chain]" in q:
        if done == 0:
            return "Let me look at the left part first.", [("image_search", {"box": [0, 0, 16, 16]})]
        if done == 1:
            shown = SHOWN_ENTITY.search(seen.results[0] if seen.results else "")
            return "", [("web_search", {"query": f"history of {shown.group(1) if shown else 'it'}"})]
        return answer_from(seen.results), []
    if done == 0:
        return "", [("image_search", {})]
    return answer_from(seen.results), []


@dataclass
class Exchange:
    path: str
    body: dict
    headers: dict
    status: int = 200
    reason: str = ""
    reply: dict = field(default_factory=dict)
    seen: Seen | None = None


class ToolCallingStandIn(Served):
    """One dialect's stand-in on a free loopback port:

        with ToolCallingStandIn("openai") as server:
            engine = OpenAIChatEngine("standin-vl", base_url=server.url)
            ...
            assert server.refused() == []
    `call_ids`: whether Gemini's functionCall parts carry an id (the API gives one on some models);
    `models`: what GET /models lists (OpenAI)."""

    def __init__(self, dialect: str, *, key: str = STAND_IN_KEY, call_ids: bool = False,
                 models: tuple[str, ...] = ("standin-vl",)):
        if dialect not in ("openai", "anthropic", "gemini"):
            raise ValueError(dialect)
        self.dialect, self.key, self.call_ids, self.models = dialect, key, call_ids, models
        self.exchanges: list[Exchange] = []
        self.lock = threading.Lock()
        self.ids = itertools.count(1)
        self.signatures: set[str] = set()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_GET(self):  # OpenAI's "list models", which a run asks before it starts
                models = [{"id": name, "object": "model", "created": 1767225600, "owned_by": "stand-in"}
                          for name in outer.models]
                self.reply(200, {"object": "list", "data": models} if self.path.endswith("/models") else {})

            def do_POST(self):
                length = int(self.headers.get("content-length") or 0)
                self.reply(*outer.handle(self.path, {k.lower(): v for k, v in self.headers.items()},
                                         self.rfile.read(length)))

            def reply(self, status, payload):
                send_json(self, status, payload)

        self.bind(Handler)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}" + ("/v1beta" if self.dialect == "gemini" else "/v1")

    def refused(self) -> list[Exchange]:
        return [e for e in self.exchanges if e.status >= 400]

    def next_id(self, prefix: str) -> str:
        with self.lock:
            return f"{prefix}{next(self.ids):04d}"

    def handle(self, path: str, headers: dict, raw: bytes) -> tuple[int, dict]:
        try:
            body = json.loads(raw)
        except ValueError:
            body = {}
        exchange = Exchange(path, body, headers)
        with self.lock:
            self.exchanges.append(exchange)
        try:
            reply = getattr(self, self.dialect)(path, headers, body, exchange)
        except Refused as refused:
            exchange.status, exchange.reason = refused.status, refused.message
            return refused.status, self.error(refused.message)
        exchange.reply = reply
        return 200, reply

    def error(self, message: str) -> dict:
        if self.dialect == "anthropic":
            return {"type": "error", "error": {"type": "invalid_request_error", "message": message}}
        if self.dialect == "gemini":
            return {"error": {"code": 400, "message": message, "status": "INVALID_ARGUMENT"}}
        return {"error": {"message": message, "type": "invalid_request_error", "param": None, "code": None}}

    # ----------------------------------------------------------------------- OpenAI
    def openai(self, path, headers, body, exchange) -> dict:
        from openai.types.chat import ChatCompletion

        if not path.endswith("/chat/completions"):
            raise Refused(404, f"no route {path}")
        faults = openai_request_faults(body)
        if faults:
            raise Refused(400, faults[0])
        messages = body["messages"]
        texts = [part["text"] if isinstance(part, dict) else part
                 for m in messages if m["role"] == "user"
                 for part in (m["content"] if isinstance(m["content"], list) else [m["content"]])
                 if isinstance(part, str) or part.get("type") == "text"]
        seen = Seen(question=question_of(texts), results=[m["content"] for m in messages if m["role"] == "tool"],
                    calls_made=sum(len(m.get("tool_calls") or []) for m in messages if m["role"] == "assistant"),
                    must_answer=body.get("tool_choice") == "none",
                    tools=[t["function"]["name"] for t in body.get("tools") or []],
                    images=sum(1 for m in messages if isinstance(m["content"], list)
                               for part in m["content"] if part.get("type") == "image_url"))
        exchange.seen = seen
        text, calls = plan(seen)
        message = {"role": "assistant", "content": text or None, "refusal": None}
        if calls:
            message["tool_calls"] = [{"id": self.next_id("call_"), "type": "function",
                                      "function": {"name": name, "arguments": json.dumps(arguments)}}
                                     for name, arguments in calls]
        completion = ChatCompletion.model_validate({
            "id": self.next_id("chatcmpl-"), "object": "chat.completion", "created": 1767225600,
            "model": body["model"],
            "choices": [{"index": 0, "message": message, "logprobs": None,
                         "finish_reason": "tool_calls" if calls else "stop"}],
            "usage": {"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110}})
        return completion.model_dump(mode="json", exclude_unset=True)

    # ----------------------------------------------------------------------- Anthropic
    def anthropic(self, path, headers, body, exchange) -> dict:
        if not path.endswith("/messages"):
            raise Refused(404, f"no route {path}")
        if headers.get("x-api-key") != self.key or not headers.get("anthropic-version"):
            raise Refused(401, "invalid x-api-key")
        allowed = {"model", "max_tokens", "messages", "system", "stop_sequences", "tools", "tool_choice", "metadata",
                   "stream", "temperature", "top_p", "top_k", "thinking", "service_tier"}
        extra = sorted(set(body) - allowed)
        if extra:
            raise Refused(400, f"{extra[0]}: Extra inputs are not permitted")
        for required in ("model", "max_tokens", "messages"):
            if required not in body:
                raise Refused(400, f"{required}: Field required")
        tools = body.get("tools") or []
        for n, tool in enumerate(tools):
            unknown = sorted(set(tool) - {"name", "description", "input_schema", "cache_control", "type"})
            if unknown:
                raise Refused(400, f"tools.{n}.{unknown[0]}: Extra inputs are not permitted")
            if not TOOL_NAME.match(str(tool.get("name"))):
                raise Refused(400, f"tools.{n}.name: String should match pattern '^[a-zA-Z0-9_-]{{1,64}}$'")
            if (tool.get("input_schema") or {}).get("type") != "object":
                raise Refused(400, f"tools.{n}.input_schema.type: Input should be 'object'")
        choice = body.get("tool_choice")
        if choice is not None and (not isinstance(choice, dict) or choice.get("type") not in ("auto", "any", "tool",
                                                                                                  "none")):
            raise Refused(400, "tool_choice: Input tag does not match any of the expected tags: 'auto', 'any', "
                               "'tool', 'none'")
        messages = body["messages"]
        if not messages or messages[0].get("role") != "user":
            raise Refused(400, "messages: the first message must use the \"user\" role")
        texts, results, made, images = [], [], 0, 0
        pending: list[str] = []  # tool_use ids the next user turn must answer
        for n, message in enumerate(messages):
            role, content = message.get("role"), message.get("content")
            if role not in ("user", "assistant"):
                raise Refused(400, f"messages.{n}.role: Input should be 'user' or 'assistant'")
            blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
            if not isinstance(blocks, list) or not blocks:
                raise Refused(400, f"messages.{n}: all messages must have non-empty content")
            answered = [b.get("tool_use_id") for b in blocks if b.get("type") == "tool_result"]
            if pending:
                kinds = [b.get("type") for b in blocks]
                if role != "user" or sorted(answered) != sorted(pending):
                    raise Refused(400, f"messages.{n}: `tool_use` ids were found without `tool_result` blocks "
                                       f"immediately after: {sorted(set(pending) - set(answered))}. Each `tool_use` "
                                       f"block must have a corresponding `tool_result` block in the next message.")
                if kinds[:len(answered)] != ["tool_result"] * len(answered):
                    raise Refused(400, f"messages.{n}: tool_result blocks must come first in the user message, "
                                       f"before any text")
            elif answered:
                raise Refused(400, f"messages.{n}.content: unexpected `tool_use_id` found in `tool_result` blocks: "
                                   f"{answered[0]}. Each `tool_result` block must have a corresponding `tool_use` "
                                   f"block in the previous message.")
            pending = []
            for m, block in enumerate(blocks):
                kind = block.get("type")
                where = f"messages.{n}.content.{m}"
                if kind == "text":
                    if not str(block.get("text") or "").strip():
                        raise Refused(400, f"{where}: text content blocks must be non-empty")
                    if role == "user":
                        texts.append(block["text"])
                elif kind == "image":
                    if role != "user" or (block.get("source") or {}).get("type") != "base64":
                        raise Refused(400, f"{where}: an image is a base64 source in a user turn")
                    images += 1
                elif kind == "tool_use":
                    if role != "assistant" or not isinstance(block.get("input"), dict) or not block.get("id"):
                        raise Refused(400, f"{where}: a tool_use block (id, name, input object) is the assistant's")
                    pending.append(block["id"])
                    made += 1
                elif kind == "tool_result":
                    if not isinstance(block.get("content"), (str, list)):
                        raise Refused(400, f"{where}.content: Input should be a valid string or list")
                    if "is_error" in block and not isinstance(block["is_error"], bool):
                        raise Refused(400, f"{where}.is_error: Input should be a valid boolean")
                    results.append(block["content"] if isinstance(block["content"], str) else json.dumps(block["content"]))
                else:
                    raise Refused(400, f"{where}.type: unexpected block type {kind!r}")
        if pending:
            raise Refused(400, "messages: the last message holds tool_use blocks with no tool_result after them")
        if (made or results) and not tools:
            raise Refused(400, "Requests which include `tool_use` or `tool_result` blocks must define tools.")
        seen = Seen(question=question_of(texts), results=results, calls_made=made,
                    must_answer=(choice or {}).get("type") == "none", tools=[t["name"] for t in tools], images=images)
        exchange.seen = seen
        text, calls = plan(seen)
        content = ([{"type": "text", "text": text}] if text else []) + [
            {"type": "tool_use", "id": self.next_id("toolu_"), "name": name, "input": arguments}
            for name, arguments in calls]
        return {"id": self.next_id("msg_"), "type": "message", "role": "assistant", "model": body["model"],
                "content": content, "stop_reason": "tool_use" if calls else "end_turn", "stop_sequence": None,
                "usage": {"input_tokens": 100, "output_tokens": 10}}

    # ----------------------------------------------------------------------- Gemini
    def gemini(self, path, headers, body, exchange) -> dict:
        if not path.endswith(":generateContent"):
            raise Refused(404, f"no route {path}")
        if headers.get("x-goog-api-key") != self.key:
            raise Refused(403, "API key not valid. Please pass a valid API key.")
        allowed = {"contents", "systemInstruction", "generationConfig", "tools", "toolConfig", "safetySettings",
                   "cachedContent"}
        extra = sorted(set(body) - allowed)
        if extra:
            raise Refused(400, f"Invalid JSON payload received. Unknown name \"{extra[0]}\": Cannot find field.")
        declared = []
        for tool in body.get("tools") or []:
            for declaration in tool.get("functionDeclarations") or []:
                unknown = sorted(set(declaration) - {"name", "description", "parameters", "parametersJsonSchema",
                                                     "response", "responseJsonSchema", "behavior"})
                if unknown or not TOOL_NAME.match(str(declaration.get("name"))):
                    raise Refused(400, f"Invalid function declaration: {json.dumps(declaration)[:120]}")
                schema_fault = gemini_schema_fault(declaration.get("parameters"), "parameters")
                if schema_fault:
                    raise Refused(400, f"Invalid JSON payload received. {schema_fault}")
                declared.append(declaration["name"])
        mode = ((body.get("toolConfig") or {}).get("functionCallingConfig") or {}).get("mode", "AUTO")
        if mode not in ("AUTO", "ANY", "NONE", "VALIDATED", "MODE_UNSPECIFIED"):
            raise Refused(400, f"Invalid value at 'tool_config.function_calling_config.mode' ({mode})")
        texts, results, made, images = [], [], 0, 0
        expected: list[str] = []  # names the next turn's functionResponse parts must answer
        for n, content in enumerate(body.get("contents") or []):
            role, parts = content.get("role"), content.get("parts") or []
            if role not in ("user", "model"):
                raise Refused(400, f"Please use a valid role: user, model. (contents[{n}].role={role!r})")
            responses = [p["functionResponse"] for p in parts if "functionResponse" in p]
            if expected:
                if role != "user" or sorted(r.get("name") for r in responses) != sorted(expected):
                    raise Refused(400, "Please ensure that the number of function response parts is equal to the "
                                       "number of function call parts of the function call turn.")
            elif responses:
                raise Refused(400, "Please ensure that function response turn comes immediately after a function "
                                   "call turn.")
            expected = []
            for m, part in enumerate(parts):
                held = [k for k in ("text", "inlineData", "functionCall", "functionResponse", "fileData") if k in part]
                others = set(part) - {"text", "inlineData", "functionCall", "functionResponse", "fileData",
                                      "thoughtSignature", "thought"}
                if len(held) != 1 or others:
                    raise Refused(400, f"contents[{n}].parts[{m}]: a part holds one of text, inlineData, "
                                       f"functionCall, functionResponse")
                if "text" in part and role == "user":
                    texts.append(part["text"])
                if "inlineData" in part:
                    images += 1
                if "functionCall" in part:
                    call = part["functionCall"]
                    if role != "model" or not isinstance(call.get("args", {}), dict):
                        raise Refused(400, f"contents[{n}].parts[{m}]: a functionCall (args an object) is the model's")
                    if not expected and part.get("thoughtSignature") not in self.signatures:
                        raise Refused(400, "Function call is missing a thought_signature in functionCall parts. This "
                                           "is required for tools to work correctly.")
                    expected.append(call.get("name"))
                    made += 1
                if "functionResponse" in part:
                    response = part["functionResponse"]
                    if not isinstance(response.get("response"), dict) or not response.get("name"):
                        raise Refused(400, f"contents[{n}].parts[{m}].functionResponse: name and a response object")
                    answer = response["response"]
                    results.append(str(answer["result"]) if "result" in answer else f"error: {answer.get('error')}")
        if expected:
            raise Refused(400, "Please ensure that the number of function response parts is equal to the number of "
                               "function call parts of the function call turn.")
        seen = Seen(question=question_of(texts), results=results, calls_made=made, must_answer=mode == "NONE",
                    tools=declared, images=images)
        exchange.seen = seen
        text, calls = plan(seen)
        parts = ([{"text": text}] if text else [])
        for number, (name, arguments) in enumerate(calls):
            call = {"name": name, "args": arguments}
            if self.call_ids:
                call["id"] = self.next_id("fc-")
            part = {"functionCall": call}
            if number == 0:  # the first call of a reply carries the reply's signature (Gemini 3)
                part["thoughtSignature"] = self.next_id("sig-")
                with self.lock:
                    self.signatures.add(part["thoughtSignature"])
            parts.append(part)
        return {"candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}],
                "usageMetadata": {"promptTokenCount": 100, "candidatesTokenCount": 10, "totalTokenCount": 110},
                "modelVersion": path.rsplit("/", 1)[-1].split(":")[0]}


def gemini_schema_fault(schema, path: str) -> str | None:
    """What the Schema subset of functionDeclarations.parameters does not take, or None."""
    if schema is None:
        return None
    if not isinstance(schema, dict):
        return f"{path}: a Schema is an object"
    unknown = sorted(set(schema) - GEMINI_SCHEMA_KEYS)
    if unknown:
        return f"Unknown name \"{unknown[0]}\" at '{path}': Cannot find field."
    if "type" in schema and str(schema["type"]).upper() not in GEMINI_TYPES:
        return f"Invalid value at '{path}.type' ({schema['type']})"
    for name, sub in (schema.get("properties") or {}).items():
        fault = gemini_schema_fault(sub, f"{path}.properties[{name}]")
        if fault:
            return fault
    return gemini_schema_fault(schema.get("items"), f"{path}.items") if "items" in schema else None

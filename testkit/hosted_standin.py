"""Stand-ins for the hosted providers: loopback HTTP servers (127.0.0.1 only) that take or refuse
each request as the provider's documentation says it would, and answer in its shapes.

The rules below are written from the providers' documentation, independently of our engine
(agents/engines/hosted_providers.py and hosted_rules.py state the same facts for the other side;
a test that passes only because both sides share a mistake is what this file avoids by not
importing them):

- OpenAI Chat Completions (platform.openai.com/docs/api-reference/chat/create; the reasoning
  guide platform.openai.com/docs/guides/reasoning; the GPT-5 guide .../docs/guides/latest-model;
  images .../docs/guides/images-vision). Reasoning models (gpt-5*, o-series): 400
  `unsupported_parameter` for max_tokens ("Use 'max_completion_tokens' instead"), stop,
  logprobs, top_logprobs, presence/frequency penalties and logit_bias; 400 `unsupported_value`
  for a temperature or top_p other than 1 and for a reasoning_effort the model does not take;
  reasoning tokens are generated first and count against max_completion_tokens (a budget they
  use up returns empty content with finish_reason "length"); usage reports them in
  completion_tokens_details.reasoning_tokens; models before gpt-5.1 default to medium effort.
  Other chat models take max_tokens, temperature 0..2 and at most 4 stop strings. Images:
  PNG, JPEG, WEBP or GIF as a URL or base64 data URL, at most 20 MB each. 401 without the key.
  A refusal comes back as `message.refusal` (content null).
- Anthropic Messages (platform.claude.com/docs/en/api/messages; vision
  .../build-with-claude/vision; stop reasons .../build-with-claude/handling-stop-reasons; the
  model migration guide .../about-claude/models/migration-guide; API versions
  .../api/versioning and .../api/migration-2026-10-21; errors .../api/errors). x-api-key and
  anthropic-version headers (2023-06-01 or 2026-10-21, else 400); model, max_tokens and messages
  required; a model it does not have, or has retired, is a 404 not_found_error whose message is
  "model: <name>"; roles user and assistant only (the system text is a top-level field); under
  2026-10-21 temperature, top_p and top_k are refused at any value; under 2023-06-01 temperature
  is 0..1, refused together with top_p by the 4.1+ models and refused outright by Opus 4.7 and
  later; stop_sequences must hold non-whitespace; images
  base64 JPEG/PNG/GIF/WebP, at most 5 MB and 8,000 px a side. A refusal is stop_reason
  "refusal"; an image over the limit is a 400 ("image exceeds 5 MB maximum").
- Gemini generateContent (ai.google.dev/api/generate-content; thinking
  ai.google.dev/gemini-api/docs/thinking; images .../image-understanding; Gemini 3
  .../gemini-3). x-goog-api-key header; contents with roles user and model; systemInstruction
  apart; at most 5 stopSequences; thinkingBudget and thinkingLevel not both; 2.5 Pro cannot turn
  thinking off (128..32,768), 2.5 Flash takes 0..24,576, Gemini 3 takes thinkingLevel (Pro: low,
  high; Flash also minimal and medium); thoughts count against maxOutputTokens; inline images
  PNG/JPEG/WEBP/HEIC/HEIF within a 20 MB request. A blocked prompt has promptFeedback.blockReason
  and no candidates; a blocked answer has finishReason SAFETY.

What the documentation leaves open is the stand-in's own assumption, said where it is made: how
many reasoning tokens an effort spends (REASONING_TOKENS), and how tokens are counted (about one
per word or punctuation mark; images by each provider's documented formula).

The replies come from `crag_reply`: the chain's stages recognised by their prompts, answered as
minibench/standin.py answers them (notes repeated, verdicts in their formats).
"""
from __future__ import annotations

import base64
import io
import json
import math
import re
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Callable

from minibench.standin import answer_reply, consistency_reply, route_reply, verify_reply
from testkit.served import Served, send_json

STAND_IN_KEY = "sk-stand-in-0123456789abcdef"

# Reasoning tokens a request spends per effort: the stand-in's assumption (OpenAI documents only
# that lower efforts spend fewer, and that minimal spends very few).
REASONING_TOKENS = {"none": 0, "minimal": 12, "low": 320, "medium": 1800, "high": 7000, "xhigh": 15000}

# --------------------------------------------------------------------------- the models each knows
# OpenAI: the reasoning efforts each model takes and its default (None: not a reasoning model).
OPENAI_MODELS = {
    "gpt-5": (("minimal", "low", "medium", "high"), "medium"),
    "gpt-5-mini": (("minimal", "low", "medium", "high"), "medium"),
    "gpt-5-nano": (("minimal", "low", "medium", "high"), "medium"),
    "gpt-5.1": (("none", "low", "medium", "high"), "none"),
    "gpt-5.2": (("none", "low", "medium", "high", "xhigh"), "none"),
    "o3": (("low", "medium", "high"), "medium"),
    "o4-mini": (("low", "medium", "high"), "medium"),
    "gpt-4o": None,
    "gpt-4.1-mini": None,
}
# Anthropic, as the anthropic SDK 2.14.0 lists its models (types/model.py; claude-sonnet-4-5 and
# claude-opus-4-5 are on its deprecation list, _data/deprecated_models.py): under API version
# 2023-06-01, whether the model takes temperature, and whether it takes temperature and top_p
# together. Under 2026-10-21 no model takes either. The 5.x models, which think by default, are
# not stood in for.
ANTHROPIC_MODELS = {
    "claude-sonnet-4-6": (True, False),
    "claude-opus-4-6": (True, False),
    "claude-haiku-4-5": (True, False),
    "claude-opus-4-7": (False, False),
}
# Models the provider has retired (gone from the SDK's list): every request naming one, and the
# model's own page, answer 404 not_found_error, as for a name it never had.
ANTHROPIC_RETIRED = ("claude-3-7-sonnet-20250219", "claude-3-5-sonnet-20241022", "claude-opus-4-1")
ANTHROPIC_VERSIONS = ("2023-06-01", "2026-10-21")
# Gemini: ("budget", low, high, can_disable) or ("level", levels) or None (no thinking).
GEMINI_MODELS = {
    "gemini-2.5-flash": ("budget", 0, 24576, True),
    "gemini-2.5-flash-lite": ("budget", 512, 24576, True),
    "gemini-2.5-pro": ("budget", 128, 32768, False),
    "gemini-3-pro-preview": ("level", ("low", "high")),
    "gemini-3-flash-preview": ("level", ("minimal", "low", "medium", "high")),
    "gemini-2.0-flash": None,
}

WORD = re.compile(r"\w+|[^\w\s]")


def text_tokens(text: str) -> int:
    """About one token per word or punctuation mark (the stand-in's count)."""
    return len(WORD.findall(text))


def cut_tokens(text: str, budget: int) -> tuple[str, bool]:
    """The text's first `budget` tokens (by text_tokens), and whether it was cut."""
    if budget <= 0:
        return "", bool(text)
    pieces = list(WORD.finditer(text))
    if len(pieces) <= budget:
        return text, False
    return text[: pieces[budget - 1].end()], True


# --------------------------------------------------------------------------- replies
def crag_reply(text: str) -> str:
    """The chain's stages recognised by their prompts' own words (prompts/*.txt), each answered
    in its format."""
    if "Needs External Info" in text:
        return route_reply(text)
    if "CONFIDENCE" in text:
        return verify_reply(text)
    if "Do the two answers agree" in text:
        return consistency_reply(text)
    if "describing the photo for a search engine" in text:
        return "A photo of the object the question asks about."
    if "Does the photo show" in text:
        return "yes"
    results = re.search(r"<search_results>\n(.*?)\n</search_results>", text, re.S)
    if results:  # the baseline's layout: the notes in their own message
        text = f"<<<NOTES\n{results.group(1)}\nNOTES>>>\n" + text
    return answer_reply(text)


# --------------------------------------------------------------------------- the server
class Rejected(Exception):
    def __init__(self, status: int, payload: dict, headers: dict | None = None):
        super().__init__(json.dumps(payload))
        self.status, self.payload, self.headers = status, payload, headers or {}


@dataclass
class Exchange:
    method: str
    path: str
    body: dict
    status: int = 200
    reason: str = ""  # why a request was refused ("" when taken)
    injected: str = ""  # "429" or "refusal" when the stand-in was told to answer so
    reply: dict = field(default_factory=dict)
    headers: dict = field(default_factory=dict)  # lower-cased names


@dataclass
class Faults:
    """What the stand-in is told to do besides following the rules: answer 429 to the first
    `rate_limited` requests (with the provider's retry header), and refuse every request whose
    text contains `refuse_marker`, in the provider's documented form."""

    rate_limited: int = 0
    retry_after_s: float = 0.05
    refuse_marker: str = ""
    refuse_also_needs: str = ""  # refuse only requests that also contain this (one stage's prompt)
    refuse_as_http: bool = False  # Anthropic: the oversized-image 400 instead of stop_reason "refusal"
    delay_s: float = 0.0  # seconds before each answer (a slow provider)

    def refuses(self, text: str) -> bool:
        return bool(self.refuse_marker) and self.refuse_marker in text and self.refuse_also_needs in text


class StandInProvider(Served):
    """One provider's stand-in on a free loopback port: `dialect` "openai", "anthropic" or "gemini".

        with StandInProvider("openai") as server:
            ... --set vlm_base_url={server.url} with OPENAI_API_KEY=STAND_IN_KEY ...
            assert server.rejected() == []
    """

    def __init__(self, dialect: str, *, key: str = STAND_IN_KEY, faults: Faults | None = None,
                 reply: Callable[[str], str] = crag_reply):
        if dialect not in ("openai", "anthropic", "gemini"):
            raise ValueError(dialect)
        self.dialect, self.key, self.faults, self.reply = dialect, key, faults or Faults(), reply
        self.exchanges: list[Exchange] = []
        self.lock = threading.Lock()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_GET(self):
                self._serve("GET")

            def do_POST(self):
                self._serve("POST")

            def _serve(self, method):
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length) if length else b""
                status, headers, payload = outer.handle(method, self.path, dict(self.headers.items()), raw)
                send_json(self, status, payload, headers)

        self.bind(Handler)

    @property
    def url(self) -> str:
        root = f"http://127.0.0.1:{self.server.server_address[1]}"
        return root + ("/v1beta" if self.dialect == "gemini" else "/v1")

    # ----------------------------------------------------------------------- bookkeeping
    def posts(self) -> list[Exchange]:
        return [e for e in self.exchanges if e.method == "POST"]

    def rejected(self) -> list[Exchange]:
        """Requests refused for breaking a documented rule (not the 429s and refusals it was told to give)."""
        return [e for e in self.exchanges if e.status >= 400 and not e.injected]

    def empty_replies(self) -> list[Exchange]:
        """Answers that carried no text though nothing was refused."""
        return [e for e in self.posts() if e.status == 200 and not e.injected and not reply_text(self.dialect, e.reply)]

    # ----------------------------------------------------------------------- one request
    def handle(self, method: str, path: str, headers: dict, raw: bytes) -> tuple[int, dict, dict]:
        lowered = {k.lower(): v for k, v in headers.items()}
        try:
            body = json.loads(raw) if raw else {}
        except ValueError:
            body = {"<unreadable>": raw[:200].decode("latin-1")}
        exchange = Exchange(method, path, body if isinstance(body, dict) else {"<not an object>": body}, headers=lowered)
        with self.lock:
            self.exchanges.append(exchange)
            number = len([e for e in self.exchanges if e.method == "POST"])
        try:
            self.check_key(lowered)
            if method == "GET":
                payload = self.model_info(path)
            else:
                if number <= self.faults.rate_limited:
                    exchange.injected = "429"
                    raise Rejected(429, self.error_payload("rate_limit_exceeded", "Rate limit reached."),
                                   self.retry_headers())
                if self.faults.delay_s:
                    time.sleep(self.faults.delay_s)
                payload = self.answer(path, exchange.body, exchange)
            exchange.reply = payload
            return 200, {}, payload
        except Rejected as exc:
            exchange.status, exchange.reason = exc.status, json.dumps(exc.payload)[:300]
            return exc.status, exc.headers, exc.payload

    def retry_headers(self) -> dict:
        seconds = self.faults.retry_after_s
        if self.dialect == "openai":
            return {"retry-after-ms": str(int(seconds * 1000))}
        return {"retry-after": f"{seconds:g}"}

    def error_payload(self, code: str, message: str) -> dict:
        if self.dialect == "anthropic":
            kind = {"rate_limit_exceeded": "rate_limit_error", "invalid_api_key": "authentication_error",
                    "not_found": "not_found_error"}.get(code, "invalid_request_error")
            return {"type": "error", "error": {"type": kind, "message": message}, "request_id": "req_standin"}
        if self.dialect == "gemini":
            status = {"rate_limit_exceeded": (429, "RESOURCE_EXHAUSTED"), "invalid_api_key": (400, "INVALID_ARGUMENT"),
                      "not_found": (404, "NOT_FOUND")}.get(code, (400, "INVALID_ARGUMENT"))
            return {"error": {"code": status[0], "message": message, "status": status[1]}}
        return {"error": {"message": message, "type": "invalid_request_error", "param": None, "code": code}}

    def bad(self, message: str, code: str = "invalid_request_error", param: str | None = None) -> Rejected:
        payload = self.error_payload(code, message)
        if self.dialect == "openai":
            payload["error"]["param"] = param
        return Rejected(400, payload)

    def check_key(self, headers: dict) -> None:
        given = {"openai": (headers.get("authorization") or "").removeprefix("Bearer ").strip(),
                 "anthropic": headers.get("x-api-key") or "",
                 "gemini": headers.get("x-goog-api-key") or ""}[self.dialect]
        if given != self.key:
            status = 400 if self.dialect == "gemini" else 401
            raise Rejected(status, self.error_payload("invalid_api_key", "Incorrect API key provided."))
        if self.dialect == "anthropic" and not headers.get("anthropic-version"):
            raise self.bad("anthropic-version: header is required")
        if self.dialect == "anthropic" and headers["anthropic-version"] not in ANTHROPIC_VERSIONS:
            raise self.bad(f"anthropic-version: unknown version {headers['anthropic-version']!r}")

    def model_info(self, path: str) -> dict:
        known = {"openai": OPENAI_MODELS, "anthropic": ANTHROPIC_MODELS, "gemini": GEMINI_MODELS}[self.dialect]
        name = path.rstrip("/").rsplit("/", 1)[-1]
        if name == "models":
            return {"object": "list", "data": [{"id": m, "object": "model"} for m in known]}
        if name not in known:
            message = f"model: {name}" if self.dialect == "anthropic" else f"The model `{name}` does not exist."
            raise Rejected(404, self.error_payload("not_found", message))
        return {"id": name, "object": "model"} if self.dialect != "gemini" else {"name": f"models/{name}"}

    def answer(self, path: str, body: dict, exchange: Exchange) -> dict:
        if self.dialect == "openai":
            if not path.endswith("/chat/completions"):
                raise Rejected(404, self.error_payload("not_found", f"no route {path}"))
            return self.openai(body, exchange)
        if self.dialect == "anthropic":
            if not path.endswith("/messages"):
                raise Rejected(404, self.error_payload("not_found", f"no route {path}"))
            return self.anthropic(body, exchange)
        match = re.search(r"/models/([^/:]+):generateContent$", path)
        if not match:
            raise Rejected(404, self.error_payload("not_found", f"no route {path}"))
        return self.gemini(match.group(1), body, exchange)

    # ----------------------------------------------------------------------- OpenAI
    def openai(self, body: dict, exchange: Exchange) -> dict:
        model = body.get("model")
        if model not in OPENAI_MODELS:
            raise Rejected(404, self.error_payload("model_not_found", f"The model `{model}` does not exist"))
        efforts = OPENAI_MODELS[model]
        messages = body.get("messages")
        if not isinstance(messages, list) or not messages:
            raise self.bad("'messages' must be a non-empty array", param="messages")
        text, image_tokens = self.openai_content(model, messages)
        if efforts is not None:
            for name in ("max_tokens", "stop", "logprobs", "top_logprobs", "presence_penalty", "frequency_penalty",
                         "logit_bias"):
                if name in body:
                    hint = " Use 'max_completion_tokens' instead." if name == "max_tokens" else ""
                    raise self.bad(f"Unsupported parameter: '{name}' is not supported with this model.{hint}",
                                   "unsupported_parameter", name)
            for name in ("temperature", "top_p"):
                if name in body and body[name] != 1:
                    raise self.bad(f"Unsupported value: '{name}' does not support {body[name]} with this model. "
                                   "Only the default (1) value is supported.", "unsupported_value", name)
            accepted, default = efforts
            effort = body.get("reasoning_effort", default)
            if effort not in accepted:
                raise self.bad(f"Unsupported value: 'reasoning_effort' does not support '{effort}' with this model.",
                               "unsupported_value", "reasoning_effort")
            budget = body.get("max_completion_tokens")
        else:
            if "reasoning_effort" in body:
                raise self.bad("Unrecognized request argument supplied: reasoning_effort", param="reasoning_effort")
            stop = body.get("stop")
            if isinstance(stop, list) and len(stop) > 4:
                raise self.bad("'stop' holds at most 4 sequences", param="stop")
            if not 0 <= float(body.get("temperature", 1)) <= 2:
                raise self.bad("temperature must lie in [0, 2]", param="temperature")
            effort, budget = "none", body.get("max_completion_tokens", body.get("max_tokens"))
        if budget is not None and (not isinstance(budget, int) or budget < 1):
            raise self.bad("max_completion_tokens must be a positive integer", param="max_completion_tokens")
        prompt_tokens = text_tokens(text) + image_tokens + 4 * len(messages)
        if self.faults.refuses(text):
            exchange.injected = "refusal"
            message = {"role": "assistant", "content": None, "refusal": "I'm sorry, I can't help with that."}
            return self.openai_completion(model, message, "stop", prompt_tokens, 8, 0)
        reasoning = REASONING_TOKENS.get(effort, 0)
        limit = budget if budget is not None else 10 ** 9
        if reasoning >= limit:  # the budget went on reasoning: nothing is written
            message = {"role": "assistant", "content": "", "refusal": None}
            return self.openai_completion(model, message, "length", prompt_tokens, limit, limit)
        reply, cut = cut_tokens(self.reply(text), limit - reasoning)
        if efforts is None and isinstance(body.get("stop"), list):
            reply, _ = cut_at(reply, body["stop"])
        message = {"role": "assistant", "content": reply, "refusal": None}
        return self.openai_completion(model, message, "length" if cut else "stop", prompt_tokens,
                                      reasoning + text_tokens(reply), reasoning)

    @staticmethod
    def openai_completion(model, message, finish, prompt, completion, reasoning) -> dict:
        return {"id": "chatcmpl-standin", "object": "chat.completion", "created": 0, "model": model,
                "choices": [{"index": 0, "message": message, "finish_reason": finish, "logprobs": None}],
                "usage": {"prompt_tokens": prompt, "completion_tokens": completion,
                          "total_tokens": prompt + completion,
                          "completion_tokens_details": {"reasoning_tokens": reasoning}}}

    def openai_content(self, model: str, messages: list) -> tuple[str, int]:
        texts, image_tokens = [], 0
        for message in messages:
            if not isinstance(message, dict) or message.get("role") not in ("system", "developer", "user", "assistant"):
                raise self.bad(f"Invalid value for 'role': {message!r:.80}", param="messages")
            content = message.get("content")
            if isinstance(content, str):
                texts.append(content)
                continue
            if not isinstance(content, list):
                raise self.bad("content must be a string or an array of parts", param="messages")
            for part in content:
                kind = part.get("type") if isinstance(part, dict) else None
                if kind == "text":
                    texts.append(str(part.get("text", "")))
                elif kind == "image_url" and message["role"] == "user":
                    url = (part.get("image_url") or {}).get("url", "")
                    image = decode_data_url(url, ("image/png", "image/jpeg", "image/webp", "image/gif"), 20 * 2 ** 20)
                    if isinstance(image, str):
                        raise self.bad(f"Invalid image: {image}", "invalid_image", "messages")
                    image_tokens += openai_image_tokens(model, *image.size)
                else:
                    raise self.bad(f"Invalid content part type {kind!r}", param="messages")
        return "\n".join(texts), image_tokens

    # ----------------------------------------------------------------------- Anthropic
    def anthropic(self, body: dict, exchange: Exchange) -> dict:
        model = body.get("model")
        if model not in ANTHROPIC_MODELS:
            raise Rejected(404, self.error_payload("not_found", f"model: {model}"))
        takes_temperature, takes_both = ANTHROPIC_MODELS[model]
        if exchange.headers.get("anthropic-version") == "2026-10-21":
            sampled = [p for p in ("temperature", "top_p", "top_k") if p in body]
            if sampled:  # removed in this version, whatever the value
                raise self.bad(f"{sampled[0]}: Extra inputs are not permitted")
        budget = body.get("max_tokens")
        if not isinstance(budget, int) or budget < 1:
            raise self.bad("max_tokens: Field required" if budget is None else "max_tokens: must be >= 1")
        messages = body.get("messages")
        if not isinstance(messages, list) or not messages:
            raise self.bad("messages: at least one message is required")
        if "temperature" in body:
            if not takes_temperature:
                raise self.bad("`temperature` is deprecated for this model.")
            if not 0 <= float(body["temperature"]) <= 1:
                raise self.bad("temperature: must be between 0 and 1")
            if "top_p" in body and not takes_both:
                raise self.bad("`temperature` and `top_p` cannot both be specified for this model. Please use only one.")
        if ("top_p" in body or "top_k" in body) and not takes_temperature:
            raise self.bad("sampling parameters are not supported for this model")
        stops = body.get("stop_sequences") or []
        if not isinstance(stops, list) or any(not isinstance(s, str) or not s.strip() for s in stops):
            raise self.bad("stop_sequences: each sequence must contain non-whitespace")
        system = body.get("system", "")
        if not isinstance(system, (str, list)):
            raise self.bad("system: must be a string or a list of text blocks")
        texts, image_tokens = [system if isinstance(system, str) else json.dumps(system)], 0
        for message in messages:
            role = message.get("role") if isinstance(message, dict) else None
            if role not in ("user", "assistant"):
                raise self.bad(f'messages: Unexpected role "{role}". Allowed roles are "user" or "assistant". '
                               "For instructions or context, use the top-level system parameter.")
            content = message.get("content")
            blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
            for block in blocks or []:
                if block.get("type") == "text":
                    texts.append(str(block.get("text", "")))
                elif block.get("type") == "image":
                    source = block.get("source") or {}
                    data = str(source.get("data", ""))
                    if source.get("type") != "base64" or source.get("media_type") not in (
                            "image/jpeg", "image/png", "image/gif", "image/webp"):
                        raise self.bad("image source: base64 with media_type image/jpeg, png, gif or webp")
                    if len(data) > 5 * 2 ** 20:
                        raise self.bad(f"messages: image exceeds 5 MB maximum: {len(data)} bytes > {5 * 2 ** 20} bytes")
                    image = decode_data_url(f"data:{source['media_type']};base64,{data}", (source["media_type"],),
                                            5 * 2 ** 20)
                    if isinstance(image, str):
                        raise self.bad(f"messages: could not process image: {image}")
                    if max(image.size) > 8000:
                        raise self.bad("messages: image dimensions exceed max allowed size: 8000 pixels")
                    image_tokens += math.ceil(image.size[0] * image.size[1] / 750)
                else:
                    raise self.bad(f"messages: unexpected content block type {block.get('type')!r}")
        if messages[-1].get("role") == "assistant" and model.startswith("claude-opus-4-7"):
            raise self.bad("assistant message prefill is not supported for this model")
        text = "\n".join(texts)
        prompt_tokens = text_tokens(text) + image_tokens
        if self.faults.refuses(text):
            exchange.injected = "refusal"
            if self.faults.refuse_as_http:
                raise Rejected(400, self.error_payload("invalid_request_error",
                                                       "messages.0.content.0.image.source.base64: image exceeds 5 MB "
                                                       "maximum: 6291456 bytes > 5242880 bytes"))
            return self.anthropic_message(model, "", "refusal", None, prompt_tokens, 0)
        reply, stopped_by = cut_at(self.reply(text), stops)
        reply, cut = cut_tokens(reply, budget)
        reason = "max_tokens" if cut else ("stop_sequence" if stopped_by else "end_turn")
        return self.anthropic_message(model, reply, reason, stopped_by, prompt_tokens, text_tokens(reply))

    @staticmethod
    def anthropic_message(model, text, stop_reason, stop_sequence, prompt, output) -> dict:
        return {"id": "msg_standin", "type": "message", "role": "assistant", "model": model,
                "content": [{"type": "text", "text": text}] if text else [],
                "stop_reason": stop_reason, "stop_sequence": stop_sequence,
                "usage": {"input_tokens": prompt, "output_tokens": output}}

    # ----------------------------------------------------------------------- Gemini
    def gemini(self, model: str, body: dict, exchange: Exchange) -> dict:
        if model not in GEMINI_MODELS:
            raise Rejected(404, self.error_payload("not_found", f"models/{model} is not found"))
        thinking_rule = GEMINI_MODELS[model]
        contents = body.get("contents")
        if not isinstance(contents, list) or not contents:
            raise self.bad("contents is not specified")
        unknown = set(body) - {"contents", "systemInstruction", "generationConfig", "safetySettings", "tools",
                               "toolConfig", "cachedContent"}
        if unknown:
            raise self.bad(f"Invalid JSON payload received. Unknown name {sorted(unknown)[0]!r}")
        config = body.get("generationConfig") or {}
        known = {"maxOutputTokens", "temperature", "topP", "topK", "stopSequences", "candidateCount",
                 "thinkingConfig", "responseMimeType", "seed"}
        if set(config) - known:
            raise self.bad(f"Invalid JSON payload received. Unknown name {sorted(set(config) - known)[0]!r} "
                           "at 'generation_config'")
        stops = config.get("stopSequences") or []
        if len(stops) > 5:
            raise self.bad("stopSequences: at most 5 stop sequences are allowed")
        if "temperature" in config and not 0 <= float(config["temperature"]) <= 2:
            raise self.bad("temperature must lie in [0, 2]")
        budget = config.get("maxOutputTokens")
        if budget is not None and (not isinstance(budget, int) or budget < 1):
            raise self.bad("maxOutputTokens must be a positive integer")
        thoughts = self.gemini_thoughts(thinking_rule, config.get("thinkingConfig"))
        texts, image_tokens = [], 0
        system = body.get("systemInstruction")
        if system is not None:
            texts += [str(p.get("text", "")) for p in (system.get("parts") or [])]
        size = 0
        for content in contents:
            if content.get("role") not in ("user", "model"):
                raise self.bad(f"Please use a valid role: user, model. Got {content.get('role')!r}")
            for part in content.get("parts") or []:
                if "text" in part:
                    texts.append(str(part["text"]))
                elif "inlineData" in part or "inline_data" in part:
                    inline = part.get("inlineData") or part.get("inline_data")
                    mime = inline.get("mimeType") or inline.get("mime_type")
                    data = str(inline.get("data", ""))
                    size += len(data)
                    image = decode_data_url(f"data:{mime};base64,{data}",
                                            ("image/png", "image/jpeg", "image/webp", "image/heic", "image/heif"),
                                            20 * 2 ** 20)
                    if isinstance(image, str):
                        raise self.bad(f"Unable to process input image: {image}")
                    image_tokens += gemini_image_tokens(*image.size)
                else:
                    raise self.bad("Invalid part: only text and inlineData are accepted here")
        if size > 20 * 2 ** 20:
            raise self.bad("Request payload size exceeds the limit: 20971520 bytes.")
        text = "\n".join(texts)
        usage = {"promptTokenCount": text_tokens(text) + image_tokens}
        if self.faults.refuses(text):
            exchange.injected = "refusal"
            return {"promptFeedback": {"blockReason": "SAFETY"}, "usageMetadata": usage}
        limit = budget if budget is not None else 10 ** 9
        thoughts = min(thoughts, limit)
        reply, stopped = cut_at(self.reply(text), stops)
        reply, cut = cut_tokens(reply, limit - thoughts)
        usage.update(candidatesTokenCount=text_tokens(reply), thoughtsTokenCount=thoughts)
        parts = [{"text": reply}] if reply else []
        return {"candidates": [{"content": {"parts": parts, "role": "model"}, "index": 0,
                                "finishReason": "MAX_TOKENS" if cut or (thoughts >= limit) else "STOP"}],
                "usageMetadata": usage}

    def gemini_thoughts(self, rule, thinking: dict | None) -> int:
        """The thinking tokens of a request, after checking its thinkingConfig against the model."""
        thinking = thinking or {}
        if "thinkingBudget" in thinking and "thinkingLevel" in thinking:
            raise self.bad("thinkingBudget and thinkingLevel cannot both be set")
        if rule is None:
            if thinking:
                raise self.bad("Thinking is not supported for this model.")
            return 0
        if rule[0] == "level":
            if "thinkingLevel" in thinking:
                if thinking["thinkingLevel"] not in rule[1]:
                    raise self.bad(f"thinkingLevel {thinking['thinkingLevel']!r} is not supported for this model")
                return REASONING_TOKENS.get(thinking["thinkingLevel"], 0)
            if "thinkingBudget" in thinking:  # accepted for compatibility
                return min(int(thinking["thinkingBudget"]), REASONING_TOKENS["high"])
            return REASONING_TOKENS["high"]  # the default level is high
        _, low, high, can_disable = rule
        if "thinkingLevel" in thinking:
            raise self.bad("thinkingLevel is not supported for this model; use thinkingBudget")
        if "thinkingBudget" not in thinking:
            return REASONING_TOKENS["medium"]  # dynamic thinking
        value = int(thinking["thinkingBudget"])
        if value == 0 and can_disable:
            return 0
        if value == -1:
            return REASONING_TOKENS["medium"]
        if not low <= value <= high:
            raise self.bad(f"The thinking budget {value} is invalid. Please choose a value between {low} and {high}.")
        return min(value, REASONING_TOKENS["medium"])


# --------------------------------------------------------------------------- helpers
def cut_at(text: str, stops) -> tuple[str, str | None]:
    """Text before the earliest stop string, and that string (None when none occurs)."""
    found = [(text.find(s), s) for s in stops or [] if s and text.find(s) >= 0]
    if not found:
        return text, None
    index, stop = min(found)
    return text[:index], stop


def decode_data_url(url: str, media_types: tuple[str, ...], max_bytes: int):
    """The PIL image of a base64 data URL, or a string saying what is wrong with it."""
    from PIL import Image

    match = re.match(r"data:([\w/+.-]+);base64,(.*)$", url, re.S)
    if not match:
        return "not a base64 data URL"
    if match.group(1) not in media_types:
        return f"media type {match.group(1)} is not one of {', '.join(media_types)}"
    try:
        data = base64.b64decode(match.group(2), validate=True)
    except ValueError:
        return "the data is not valid base64"
    if len(data) > max_bytes:
        return f"the image is {len(data)} bytes, over {max_bytes}"
    try:
        image = Image.open(io.BytesIO(data))
        image.load()
    except Exception as exc:  # noqa: BLE001 - any undecodable image is the same refusal
        return f"the image cannot be decoded ({type(exc).__name__})"
    expected = {"image/jpeg": "JPEG", "image/png": "PNG", "image/webp": "WEBP", "image/gif": "GIF"}.get(match.group(1))
    if expected and image.format != expected:
        return f"the data is {image.format}, not {match.group(1)}"
    return image


def openai_image_tokens(model: str, width: int, height: int) -> int:
    """The images guide's count at high detail: the patch-based models (gpt-5-mini, gpt-5-nano,
    gpt-4.1-mini, o4-mini) read 32-px patches, at most 1,536 (shrunk to fit), times the model's
    multiplier; the others fit 2,048 px, then 768 px on the short side, and cost a base plus a
    share per 512-px tile."""
    multipliers = {"gpt-5-mini": 1.62, "gpt-5-nano": 2.46, "gpt-4.1-mini": 1.62, "o4-mini": 1.72}
    if model in multipliers:
        patches = math.ceil(width / 32) * math.ceil(height / 32)
        if patches > 1536:
            shrink = math.sqrt(1536 * 32 * 32 / (width * height))
            patches = min(1536, math.floor(width * shrink / 32) * math.floor(height * shrink / 32))
        return math.ceil(patches * multipliers[model])
    base, tile = (70, 140) if model.startswith("gpt-5") else (75, 150) if model.startswith("o") else (85, 170)
    scale = min(1.0, 2048 / max(width, height))
    width, height = width * scale, height * scale
    scale = min(1.0, 768 / min(width, height))
    return base + tile * math.ceil(width * scale / 512) * math.ceil(height * scale / 512)


def gemini_image_tokens(width: int, height: int) -> int:
    """The image-understanding guide: 258 tokens when both sides are at most 384 px, else 258 per
    768-px tile."""
    if max(width, height) <= 384:
        return 258
    return 258 * math.ceil(width / 768) * math.ceil(height / 768)


def reply_text(dialect: str, reply: dict) -> str:
    """The text of a stand-in answer, whatever the dialect."""
    if dialect == "openai":
        return "".join(str((c.get("message") or {}).get("content") or "") for c in reply.get("choices") or [])
    if dialect == "anthropic":
        return "".join(b.get("text", "") for b in reply.get("content") or [])
    return "".join(p.get("text", "") for c in reply.get("candidates") or []
                   for p in (c.get("content") or {}).get("parts") or [])

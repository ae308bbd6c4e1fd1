"""One object per hosted provider: OpenAI (Chat Completions: the GPT-5 family, the o-series),
Anthropic (the Messages API: Claude) and Google (generateContent: Gemini). Each object is the one
place that knows its provider: which model names it serves, where it is and how a key travels,
the request body it takes (with the limits its documentation sets: images, stop strings, the
parameters a model refuses), and how its reply reads (text, refusals, tokens with reasoning
tokens apart). agents/engines/hosted_engine.py holds the transport they share and asks the
provider for everything else; agents/engines/hosted_rules.py holds the per-model rules they read
(reasoning efforts, Gemini's thinking), with the documentation they follow.

Every request:
- OpenAI reasoning models: `max_completion_tokens` (the stage's budget plus a reasoning allowance
  for its effort: the reasoning tokens count against it), `reasoning_effort` per stage, and no
  temperature, top_p, logprobs, stop or seed. Other OpenAI models: the classic parameters, at most
  4 stop strings.
- Claude: `system` apart, `max_tokens` (no extended thinking is asked for, so the budget is all
  text), `stop_sequences`, and no sampling parameter (ANTHROPIC_VERSION says why).
- Gemini: `systemInstruction`, `contents` with roles user/model, `maxOutputTokens` (thoughts
  count against it: the allowance is added), the thinking level or budget the model takes, at
  most 5 stop strings.

Function calling (a request with `tools`; agents/engines/tool_calls.py holds the chain's shape), in
each provider's documented form:
- OpenAI: `tools` of type "function", `tool_choice` "auto" / "none"; the reply's
  `message.tool_calls` (arguments a JSON string); each result a `role: tool` message with its
  `tool_call_id`.
- Claude: `tools` of {name, description, input_schema}, `tool_choice` {"type": "auto" / "none"};
  the reply's `tool_use` content blocks (input an object); each result a `tool_result` block
  (`tool_use_id`, `is_error` for a failed call) in the user turn right after, before any text.
- Gemini: `tools` [{functionDeclarations: [{name, description, parameters}]}], `toolConfig`
  functionCallingConfig mode AUTO / NONE; the reply's `functionCall` parts (args an object, an
  `id` where the model gives one, a `thoughtSignature` beside the call that must come back with
  it); each result a `functionResponse` part ({"result": ...} or {"error": ...}) in a user turn.
The photo goes once per request, in the first user turn, whatever the rounds of calls after it.

Nothing here makes a request or reads a key.
"""
from __future__ import annotations

from dataclasses import dataclass

from agents.engines.base import ChatResult, Sampling, ServerGaveUp
from agents.engines.hosted_rules import (
    ImageLimits,
    bare_name,
    gemini_thinking,
    gemini_thinking_config,
    nearest_effort,
    openai_reasoning_efforts,
)
from agents.engines.tool_calls import (
    ToolCall,
    calls_of,
    new_call_id,
    openai_calls,
    openai_messages,
    openai_tool_fields,
)

# The Messages API version our requests name: 2026-10-21, the version the current SDKs send (the
# anthropic package 2.x, `_constants.ANTHROPIC_API_VERSION`). Anthropic asks for the latest version
# and calls earlier ones deprecated. Checked against its migration guide
# (platform.claude.com/docs/en/api/migration-2026-10-21), which changes three request rules:
# temperature, top_p and top_k are refused (400, even at their defaults), so none is sent and
# Claude samples at its default temperature 1.0 (the models from Claude 4.7 on took no other
# value under 2023-06-01 either); document blocks in assistant turns and citations in user turns
# are refused, and we send neither. The response shapes we read are unchanged.
ANTHROPIC_VERSION = "2026-10-21"

FittedImage = tuple[str, str] | None  # (media type, base64 data) of the turn's photo, already fitted


def _split_system(messages: list[dict]) -> tuple[str, list[dict]]:
    system = "\n\n".join(str(m["content"]) for m in messages if m["role"] == "system")
    return system, [m for m in messages if m["role"] != "system"]


def _merged_turns(messages: list[dict], image_block, text_block, roles: dict, call_block=None,
                  result_block=None) -> list[dict]:
    """Messages after the system one as a provider's alternating turns: the image placeholder
    becomes `image_block`, texts `text_block(text)`, consecutive messages of one role one turn. In
    a conversation with function calls (agents/engines/tool_calls.py), an assistant message's calls
    become `call_block(call)` after its text (an empty text is left out: neither provider takes
    one), and a `role: tool` result becomes `result_block(message)` in a user turn."""
    turns: list[dict] = []
    for message in messages:
        role = roles["user" if message["role"] == "tool" else message["role"]]
        content = message["content"]
        if message["role"] == "tool":
            blocks = [result_block(message)]
        elif content == [{"type": "image"}]:
            blocks = [image_block]
        elif message.get("tool_calls"):
            blocks = ([text_block(str(content))] if content else []) + [call_block(c) for c in calls_of(message)]
        else:
            blocks = [text_block(str(content))]
        if turns and turns[-1]["role"] == role:
            turns[-1]["parts"].extend(blocks)
        else:
            turns.append({"role": role, "parts": blocks})
    return turns


@dataclass(frozen=True)
class HostedProvider:
    """What every provider states; its subclass builds the request and reads the reply.
    `messages` are in the template layout (base.template_messages: the image as a placeholder)."""

    name: str
    key_variable: str  # the provider's own environment variable (read by the engine only)
    base_url: str
    images: ImageLimits
    max_stop_strings: int  # stop strings a request may carry; the rest are cut by the engine

    def serves(self, model: str) -> bool:
        raise NotImplementedError

    def headers(self, key: str | None) -> dict:
        raise NotImplementedError

    def request(self, model: str, messages: list[dict], image: FittedImage, sampling: Sampling, effort: str,
                allowance: int, tools: list[dict] | None = None, tool_choice: str = "auto") -> tuple[str, dict]:
        """(path under base_url, JSON body) of one request; `tools` (OpenAI's function-tool shape)
        in the provider's own form, with the calls and results the messages hold."""
        raise NotImplementedError

    def read(self, body: dict) -> ChatResult:
        """The reply as a result: text, refusal, budget spent on reasoning, tokens."""
        raise NotImplementedError

    def model_path(self, model: str) -> str:
        """Where one GET says whether the provider knows the model for this key."""
        return f"/models/{model.rsplit('/', 1)[-1]}"

    def stops(self, sampling: Sampling) -> list[str]:
        return [s for s in sampling.stop if s][: self.max_stop_strings]


@dataclass(frozen=True)
class OpenAIProvider(HostedProvider):
    def serves(self, model: str) -> bool:
        name = bare_name(model)
        return name.startswith(("gpt-", "chatgpt")) or openai_reasoning_efforts(name) is not None

    def headers(self, key: str | None) -> dict:
        return {"Authorization": f"Bearer {key}"} if key else {}

    def request(self, model, messages, image, sampling, effort, allowance, tools=None, tool_choice="auto"):
        if image is not None:
            part = {"type": "image_url", "image_url": {"url": f"data:{image[0]};base64,{image[1]}"}}
            messages = [dict(m, content=[part]) if m["content"] == [{"type": "image"}] else m for m in messages]
        messages = openai_messages(messages)
        budget = max(1, sampling.max_tokens)
        efforts = openai_reasoning_efforts(model)
        if efforts is not None:
            body = {"model": model, "messages": messages, "max_completion_tokens": budget + allowance,
                    **openai_tool_fields(tools, tool_choice)}
            chosen = nearest_effort(effort, efforts)
            if chosen:
                body["reasoning_effort"] = chosen
            return "/chat/completions", body
        body = {"model": model, "messages": messages, "max_completion_tokens": budget,
                "temperature": sampling.temperature, "top_p": sampling.top_p if sampling.temperature > 0 else 1.0,
                **openai_tool_fields(tools, tool_choice)}
        stops = self.stops(sampling)
        if stops:
            body["stop"] = stops
        if sampling.seed is not None:
            body["seed"] = sampling.seed
        return "/chat/completions", body

    def read(self, body):
        choices = body.get("choices")
        if not isinstance(choices, list) or not choices:
            raise ServerGaveUp(f"no completion in the answer: {str(body)[:300]}")
        choice = choices[0]
        message = choice.get("message") or {}
        usage = body.get("usage") or {}
        # completion_tokens counts the reasoning tokens too
        reasoning = int((usage.get("completion_tokens_details") or {}).get("reasoning_tokens") or 0)
        completion = int(usage.get("completion_tokens") or 0)
        result = ChatResult(text=str(message.get("content") or ""), prompt_tokens=int(usage.get("prompt_tokens") or 0),
                            output_tokens=max(0, completion - reasoning), reasoning_tokens=reasoning,
                            tool_calls=openai_calls(message))
        if message.get("refusal"):
            result.refusal = f"refused: {str(message['refusal'])[:200]}"
            result.text = ""
        elif choice.get("finish_reason") == "content_filter":
            result.refusal = "content filter"
            result.text = ""
        result.budget_exhausted = (choice.get("finish_reason") == "length" and not result.text.strip()
                                   and not result.tool_calls)
        return result


@dataclass(frozen=True)
class AnthropicProvider(HostedProvider):
    def serves(self, model: str) -> bool:
        return bare_name(model).startswith("claude")

    def headers(self, key: str | None) -> dict:
        return {"x-api-key": key or "", "anthropic-version": ANTHROPIC_VERSION}

    def stops(self, sampling: Sampling) -> list[str]:
        # the API refuses a stop sequence that is only whitespace
        return [s for s in sampling.stop if s and s.strip()][: self.max_stop_strings]

    def request(self, model, messages, image, sampling, effort, allowance, tools=None, tool_choice="auto"):
        system, rest = _split_system(messages)
        block = None if image is None else {"type": "image", "source": {"type": "base64", "media_type": image[0],
                                                                      "data": image[1]}}
        turns = _merged_turns(rest, block, lambda text: {"type": "text", "text": text},
                              {"user": "user", "assistant": "assistant"}, _anthropic_call, _anthropic_result)
        body = {"model": model, "max_tokens": max(1, sampling.max_tokens),
                "messages": [{"role": t["role"], "content": t["parts"]} for t in turns]}
        if system:
            body["system"] = system
        if tools:
            body["tools"] = [{"name": f["name"], "description": f.get("description", ""),
                              "input_schema": f.get("parameters") or {"type": "object"}}
                             for f in (tool["function"] for tool in tools)]
            body["tool_choice"] = {"type": tool_choice}
        stops = self.stops(sampling)
        if stops:
            body["stop_sequences"] = stops
        return "/messages", body

    def read(self, body):
        if body.get("type") == "error" or "content" not in body:
            raise ServerGaveUp(f"no message in the answer: {str(body)[:300]}")
        usage = body.get("usage") or {}
        blocks = body.get("content") or []
        text = "".join(block.get("text", "") for block in blocks if block.get("type") == "text")
        calls = [ToolCall(id=str(b.get("id") or ""), name=str(b.get("name") or ""),
                          arguments=b.get("input") if isinstance(b.get("input"), dict) else None,
                          raw_arguments=str(b.get("input")))
                 for b in blocks if b.get("type") == "tool_use"]
        # the prompt is what was read fresh plus what was written to or read from the cache
        prompt = sum(int(usage.get(k) or 0) for k in ("input_tokens", "cache_creation_input_tokens",
                                                       "cache_read_input_tokens"))
        result = ChatResult(text=text, prompt_tokens=prompt, output_tokens=int(usage.get("output_tokens") or 0),
                            tool_calls=calls)
        if body.get("stop_reason") == "refusal":
            result.refusal, result.text = "refusal (stop_reason)", ""
        result.budget_exhausted = body.get("stop_reason") == "max_tokens" and not result.text.strip() and not calls
        return result


def _anthropic_call(call: ToolCall) -> dict:
    return {"type": "tool_use", "id": call.id, "name": call.name,
            "input": call.arguments if call.arguments is not None else {}}


def _anthropic_result(message: dict) -> dict:
    block = {"type": "tool_result", "tool_use_id": message["tool_call_id"], "content": str(message["content"])}
    if message.get("is_error"):
        block["is_error"] = True
    return block


# Gemini's finish reasons that mean the answer was withheld, not finished
GEMINI_REFUSALS = ("SAFETY", "RECITATION", "BLOCKLIST", "PROHIBITED_CONTENT", "SPII", "IMAGE_SAFETY",
                   "LANGUAGE", "OTHER")


@dataclass(frozen=True)
class GeminiProvider(HostedProvider):
    def serves(self, model: str) -> bool:
        return bare_name(model).startswith("gemini")

    def headers(self, key: str | None) -> dict:
        return {"x-goog-api-key": key or ""}

    def request(self, model, messages, image, sampling, effort, allowance, tools=None, tool_choice="auto"):
        system, rest = _split_system(messages)
        part = None if image is None else {"inlineData": {"mimeType": image[0], "data": image[1]}}
        made = {call.id: call for m in rest for call in calls_of(m)}
        turns = _merged_turns(rest, part, lambda text: {"text": text}, {"user": "user", "assistant": "model"},
                              _gemini_call, lambda message: _gemini_result(message, made.get(message["tool_call_id"])))
        thinking, extra = gemini_thinking_config(model, effort, allowance)
        config: dict = {"maxOutputTokens": max(1, sampling.max_tokens) + extra, "candidateCount": 1}
        if thinking is not None:
            config["thinkingConfig"] = thinking
        if gemini_thinking(model).takes_temperature:
            config["temperature"] = sampling.temperature
        stops = self.stops(sampling)
        if stops:
            config["stopSequences"] = stops
        body = {"contents": turns, "generationConfig": config}
        if system:
            body["systemInstruction"] = {"parts": [{"text": system}]}
        if tools:
            body["tools"] = [{"functionDeclarations": [
                {"name": f["name"], "description": f.get("description", ""), "parameters": f.get("parameters")}
                if f.get("parameters") else {"name": f["name"], "description": f.get("description", "")}
                for f in (tool["function"] for tool in tools)]}]
            body["toolConfig"] = {"functionCallingConfig": {"mode": tool_choice.upper()}}
        return f"/models/{model.rsplit('/', 1)[-1]}:generateContent", body

    def read(self, body):
        usage = body.get("usageMetadata") or {}
        result = ChatResult(text="", prompt_tokens=int(usage.get("promptTokenCount") or 0),
                            output_tokens=int(usage.get("candidatesTokenCount") or 0),
                            reasoning_tokens=int(usage.get("thoughtsTokenCount") or 0))
        blocked = (body.get("promptFeedback") or {}).get("blockReason")
        if blocked:
            result.refusal = f"prompt blocked: {blocked}"
            return result
        candidates = body.get("candidates") or []
        if not candidates:
            raise ServerGaveUp(f"no candidate in the answer: {str(body)[:300]}")
        candidate = candidates[0]
        parts = (candidate.get("content") or {}).get("parts") or []
        result.text = "".join(p.get("text", "") for p in parts if not p.get("thought"))
        result.tool_calls = [_gemini_read_call(p) for p in parts if p.get("functionCall")]
        finish = candidate.get("finishReason")
        if finish in GEMINI_REFUSALS:
            result.refusal, result.text, result.tool_calls = f"finishReason {finish}", "", []
        result.budget_exhausted = finish == "MAX_TOKENS" and not result.text.strip() and not result.tool_calls
        return result


def _gemini_read_call(part: dict) -> ToolCall:
    """A functionCall part as a ToolCall: Gemini may give no id (one is made here, unique in the
    conversation, and its response then goes back by name and order), and a signature beside the
    call that must come back with it."""
    call = part["functionCall"]
    given = call.get("id")
    args = call.get("args")
    echo = {"id_given": bool(given)}
    if part.get("thoughtSignature"):
        echo["thoughtSignature"] = part["thoughtSignature"]
    return ToolCall(id=str(given or new_call_id()), name=str(call.get("name") or ""),
                    arguments=args if isinstance(args, dict) else ({} if args is None else None),
                    raw_arguments=str(args if args is not None else ""), echo=echo)


def _gemini_call(call: ToolCall) -> dict:
    function = {"name": call.name, "args": call.arguments if call.arguments is not None else {}}
    if call.echo.get("id_given"):
        function["id"] = call.id
    part = {"functionCall": function}
    if call.echo.get("thoughtSignature"):
        part["thoughtSignature"] = call.echo["thoughtSignature"]
    return part


def _gemini_result(message: dict, call: ToolCall | None) -> dict:
    """A result as a functionResponse part, named as its call (and with its id where Gemini gave
    one); a failed call's text under "error", else under "result"."""
    response = {"name": call.name if call is not None else str(message.get("name") or ""),
                "response": {"error" if message.get("is_error") else "result": str(message["content"])}}
    if call is not None and call.echo.get("id_given"):
        response["id"] = call.id
    return {"functionResponse": response}


OPENAI = OpenAIProvider(
    "openai", "OPENAI_API_KEY", "https://api.openai.com/v1",
    # images-vision guide: PNG, JPEG, WEBP, non-animated GIF; up to 20 MB per image (50 MB of
    # images per request); at high detail an image is read at most 768 px on its short side and
    # 2,000 px on its long side. 768 x 2,000 px also stays within the 1,536 patches of 32 px the
    # patch-based models read.
    ImageLimits(2000, 768, 768 * 2000, 20 * 1024 * 1024, ("image/jpeg", "image/png", "image/webp", "image/gif")),
    max_stop_strings=4,  # Chat Completions: "up to 4 sequences" (models that take `stop` at all)
)
ANTHROPIC = AnthropicProvider(
    "anthropic", "ANTHROPIC_API_KEY", "https://api.anthropic.com/v1",
    # vision guide: JPEG, PNG, GIF, WebP; 5 MB per image on the API; at most 8,000 x 8,000 px;
    # larger than 1,568 px on a side or about 1.15 megapixels is shrunk by the service first
    # (latency, no gain), so that is the size sent.
    ImageLimits(1568, 1568, 1_150_000, 5 * 1024 * 1024, ("image/jpeg", "image/png", "image/gif", "image/webp")),
    max_stop_strings=8,  # stop_sequences: no count documented; ours are at most 8
)
GEMINI = GeminiProvider(
    "gemini", "GEMINI_API_KEY", "https://generativelanguage.googleapis.com/v1beta",
    # image-understanding guide: PNG, JPEG, WEBP, HEIC, HEIF; inline data keeps the whole request
    # under 20 MB; images are scaled to at most 3,072 px on a side.
    ImageLimits(3072, 3072, 3072 * 3072, 20 * 1024 * 1024, ("image/png", "image/jpeg", "image/webp")),
    max_stop_strings=5,  # GenerationConfig.stopSequences: "up to 5"
)
PROVIDERS: dict[str, HostedProvider] = {p.name: p for p in (OPENAI, ANTHROPIC, GEMINI)}


def provider_for_model(model: str) -> str | None:
    """The name of the provider that serves a hosted model's name; None for any other."""
    return next((p.name for p in PROVIDERS.values() if p.serves(model)), None)


def provider_of(models, role: str) -> str:
    """The provider of a role's hosted model: the run's ModelSettings' `hosted_provider`, else the
    one the model's name says."""
    return models.hosted_provider or provider_for_model(getattr(models, f"{role}_model")) or "openai"

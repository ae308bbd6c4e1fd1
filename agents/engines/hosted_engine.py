"""The chain's VLM behind a hosted provider's own API (`engine = "hosted"`): OpenAI's Chat
Completions (the GPT-5 family, the o-series), Anthropic's Messages API (Claude), Google's
generateContent (Gemini). Each request follows that provider's documented rules
(agents/engines/hosted_rules.py says which, and where they are written).

Why by hand and not through LiteLLM or the providers' SDKs (docs/models.md "Hosted models" weighs
them): three request shapes are a few dozen lines each over the HTTP plumbing the served engines
already share (agents/engines/served.py), which keeps our guarantees by construction:
- one total time limit per request, inside the batch deadline (`base.seconds_left()`), also over a
  slow body; the SDKs' timeouts are per read;
- no hidden retries: 429 and 5xx are waited out by agents/transient_waits.py while the deadline
  allows, nothing else is asked again (the openai SDK retries twice by default, LiteLLM layers
  its own retries over the SDKs');
- the key comes from the provider's own variable, travels in its header only, and is blanked out
  of every error message that could reach a trace;
- nothing new to install (httpx is pinned already), and no import-time network call.

Per request:
- OpenAI reasoning models: `max_completion_tokens` (the stage's budget plus a reasoning allowance
  for its effort: the reasoning tokens count against it), `reasoning_effort` per stage, and no
  temperature, top_p, logprobs, stop or seed. Other OpenAI models: the classic parameters, at most
  4 stop strings.
- Claude: `system` apart, `max_tokens` (no extended thinking, so the budget is all text),
  `temperature` only for the models that take it, `stop_sequences`.
- Gemini: `systemInstruction`, `contents` with roles user/model, `maxOutputTokens` (thoughts
  count against it: the allowance is added), the thinking level or budget the model takes, at
  most 5 stop strings.
- Stop strings are always cut here as well, so a provider that takes fewer (or none) stops at the
  same place in the text.
- The image is shrunk to what the provider's models read and encoded as JPEG (what
  facebookresearch/CRAG-MM's agents send) within its size limit, before the first request.
- A refusal (a content-policy stop, a blocked prompt, an image the provider will not take) is
  not an error: that request's result carries `refusal`, and the chain answers its turn
  "I don't know" and counts it. Text cut off by the token budget before any word came back is
  `budget_exhausted` (counted as an empty reply).
- Token probabilities are never asked for: the stages that read them fall back to their text
  modes (agents/config.py `logprob_fallbacks`), and `Sampling.choices` is answered as text.
"""
from __future__ import annotations

import base64
import io
import os
import re
import threading
import time
from collections import OrderedDict
from concurrent.futures import ThreadPoolExecutor

from agents.engines.base import (
    ChatEngine,
    ChatRequest,
    ChatResult,
    Ledger,
    Sampling,
    cut_at_stop,
    deadline_cut_result,
    seconds_left,
    template_messages,
)
from agents.engines.hosted_rules import (
    PROVIDERS,
    ImageLimits,
    Provider,
    claude_takes_temperature,
    gemini_thinking,
    gemini_thinking_config,
    nearest_effort,
    openai_reasoning_efforts,
)
from agents.engines.served import DEFAULT_TIMEOUT_S, PROBE_TIMEOUT_S, Endpoint, ServerGaveUp
from agents.transient_waits import HTTPStatusFailure

ANTHROPIC_VERSION = "2023-06-01"  # the Messages API version header the reference requires
DEFAULT_EFFORT = "minimal"
# Reasoning tokens allowed on top of a stage's text budget, per effort, when the stage's config
# gives none (CruiseConfig.reasoning_allowance_tokens). OpenAI's reasoning guide asks to leave
# room for reasoning (it suggests 25,000 tokens when starting out); only the tokens used are billed.
DEFAULT_ALLOWANCE = {"none": 0, "minimal": 1024, "low": 4096, "medium": 16384, "high": 32768, "xhigh": 65536}
JPEG_QUALITY = 90
DEADLINE_SLACK_S = 0.05  # a time-out this close to the call's end is the deadline's doing
# A 400 answer that is a provider declining this one request, not a malformed request of ours.
_REFUSAL_400 = re.compile(r"content[ _-]?(policy|filter|management)|safety|image[^.\"]{0,40}(exceeds|too large|"
                          r"dimensions)|(could not|unable to) process (input )?image|invalid image", re.IGNORECASE)


def effort_for(stage: str, efforts: dict) -> str:
    """The effort a stage runs at: its own entry, else "default", else minimal."""
    return str(efforts.get(stage) or efforts.get("default") or DEFAULT_EFFORT)


def allowance_for(effort: str, allowances: dict) -> int:
    return int(allowances.get(effort, DEFAULT_ALLOWANCE.get(effort, DEFAULT_ALLOWANCE["minimal"])))


# --------------------------------------------------------------------------- images
def fit_image(image, limits: ImageLimits) -> tuple[str, str, tuple[int, int]]:
    """(media type, base64 data, size sent): the image shrunk to what the provider's models read
    (long side, short side, pixels) and encoded as JPEG within its byte limit, so that the first
    request is taken. Quality and then size step down only for an image that would still be too
    large (none of the benchmark's photos at these sizes)."""
    from PIL import Image

    picture = image.convert("RGB")
    width, height = picture.size
    scale = min(1.0, limits.max_long_side / max(width, height), limits.max_short_side / min(width, height),
                (limits.max_pixels / (width * height)) ** 0.5)
    quality = JPEG_QUALITY
    while True:
        size = (max(1, int(width * scale)), max(1, int(height * scale)))
        shown = picture if size == picture.size else picture.resize(size, Image.Resampling.LANCZOS)
        buffer = io.BytesIO()
        shown.save(buffer, format="JPEG", quality=quality)
        data = base64.b64encode(buffer.getvalue()).decode("ascii")
        if len(data) <= limits.max_bytes:
            return "image/jpeg", data, size
        if quality > 60:
            quality -= 15
        else:
            scale *= 0.75


class _ImageCache:
    """The last few images' encodings: every stage of a turn sends the same picture. Keyed by the
    object itself (held here, so its id cannot be reused while cached); a batch's worth (at most
    16 turns), so that only its images are kept alive."""

    def __init__(self, size: int = 16):
        self.size = size
        self.items: OrderedDict[int, tuple[object, tuple[str, str, tuple[int, int]]]] = OrderedDict()
        self.lock = threading.Lock()

    def get(self, image, limits: ImageLimits) -> tuple[str, str, tuple[int, int]]:
        with self.lock:
            hit = self.items.get(id(image))
            if hit is not None and hit[0] is image:
                self.items.move_to_end(id(image))
                return hit[1]
        encoded = fit_image(image, limits)
        with self.lock:
            self.items[id(image)] = (image, encoded)
            while len(self.items) > self.size:
                self.items.popitem(last=False)
        return encoded


# --------------------------------------------------------------------------- requests
def openai_request(model: str, messages: list[dict], image: tuple[str, str] | None, sampling: Sampling,
                   effort: str, allowance: int) -> dict:
    """A Chat Completions body. `messages` in the template layout (base.template_messages)."""
    if image is not None:
        part = {"type": "image_url", "image_url": {"url": f"data:{image[0]};base64,{image[1]}"}}
        messages = [dict(m, content=[part]) if m["content"] == [{"type": "image"}] else m for m in messages]
    budget = max(1, sampling.max_tokens)
    efforts = openai_reasoning_efforts(model)
    if efforts is not None:
        body = {"model": model, "messages": messages, "max_completion_tokens": budget + allowance}
        chosen = nearest_effort(effort, efforts)
        if chosen:
            body["reasoning_effort"] = chosen
        return body
    body = {"model": model, "messages": messages, "max_completion_tokens": budget,
            "temperature": sampling.temperature, "top_p": sampling.top_p if sampling.temperature > 0 else 1.0}
    stops = [s for s in sampling.stop if s][: PROVIDERS["openai"].max_stop_strings]
    if stops:
        body["stop"] = stops
    if sampling.seed is not None:
        body["seed"] = sampling.seed
    return body


def _merged_turns(messages: list[dict], image_block, text_block, roles: dict) -> list[dict]:
    """Messages after the system one as a provider's alternating turns: the image placeholder
    becomes `image_block`, texts `text_block(text)`, consecutive messages of one role one turn."""
    turns: list[dict] = []
    for message in messages:
        role = roles[message["role"]]
        content = message["content"]
        blocks = [image_block] if content == [{"type": "image"}] else [text_block(str(content))]
        if turns and turns[-1]["role"] == role:
            turns[-1]["parts"].extend(blocks)
        else:
            turns.append({"role": role, "parts": blocks})
    return turns


def _split_system(messages: list[dict]) -> tuple[str, list[dict]]:
    system = "\n\n".join(str(m["content"]) for m in messages if m["role"] == "system")
    return system, [m for m in messages if m["role"] != "system"]


def anthropic_request(model: str, messages: list[dict], image: tuple[str, str] | None, sampling: Sampling) -> dict:
    """A Messages API body: the system text apart, user/assistant turns with content blocks."""
    system, rest = _split_system(messages)
    block = None if image is None else {"type": "image", "source": {"type": "base64", "media_type": image[0],
                                                                  "data": image[1]}}
    turns = _merged_turns(rest, block, lambda text: {"type": "text", "text": text},
                          {"user": "user", "assistant": "assistant"})
    body = {"model": model, "max_tokens": max(1, sampling.max_tokens),
            "messages": [{"role": t["role"], "content": t["parts"]} for t in turns]}
    if system:
        body["system"] = system
    if claude_takes_temperature(model):
        body["temperature"] = min(1.0, max(0.0, sampling.temperature))
    # the API refuses a stop sequence that is only whitespace
    stops = [s for s in sampling.stop if s and s.strip()][: PROVIDERS["anthropic"].max_stop_strings]
    if stops:
        body["stop_sequences"] = stops
    return body


def gemini_request(model: str, messages: list[dict], image: tuple[str, str] | None, sampling: Sampling,
                   effort: str, allowance: int) -> dict:
    """A generateContent body: systemInstruction apart, user/model turns of parts."""
    system, rest = _split_system(messages)
    part = None if image is None else {"inlineData": {"mimeType": image[0], "data": image[1]}}
    turns = _merged_turns(rest, part, lambda text: {"text": text}, {"user": "user", "assistant": "model"})
    thinking, extra = gemini_thinking_config(model, effort, allowance)
    config: dict = {"maxOutputTokens": max(1, sampling.max_tokens) + extra, "candidateCount": 1}
    if thinking is not None:
        config["thinkingConfig"] = thinking
    if gemini_thinking(model).takes_temperature:
        config["temperature"] = sampling.temperature
    stops = [s for s in sampling.stop if s][: PROVIDERS["gemini"].max_stop_strings]
    if stops:
        config["stopSequences"] = stops
    body = {"contents": turns, "generationConfig": config}
    if system:
        body["systemInstruction"] = {"parts": [{"text": system}]}
    return body


# --------------------------------------------------------------------------- replies
def read_openai(body: dict) -> ChatResult:
    choices = body.get("choices")
    if not isinstance(choices, list) or not choices:
        raise ServerGaveUp(f"no completion in the answer: {str(body)[:300]}")
    choice = choices[0]
    message = choice.get("message") or {}
    usage = body.get("usage") or {}
    reasoning = int((usage.get("completion_tokens_details") or {}).get("reasoning_tokens") or 0)
    completion = int(usage.get("completion_tokens") or 0)
    result = ChatResult(text=str(message.get("content") or ""), prompt_tokens=int(usage.get("prompt_tokens") or 0),
                        output_tokens=max(0, completion - reasoning), reasoning_tokens=reasoning)
    if message.get("refusal"):
        result.refusal = f"refused: {str(message['refusal'])[:200]}"
        result.text = ""
    elif choice.get("finish_reason") == "content_filter":
        result.refusal = "content filter"
        result.text = ""
    result.budget_exhausted = choice.get("finish_reason") == "length" and not result.text.strip()
    return result


def read_anthropic(body: dict) -> ChatResult:
    if body.get("type") == "error" or "content" not in body:
        raise ServerGaveUp(f"no message in the answer: {str(body)[:300]}")
    usage = body.get("usage") or {}
    text = "".join(block.get("text", "") for block in body.get("content") or [] if block.get("type") == "text")
    prompt = sum(int(usage.get(k) or 0) for k in ("input_tokens", "cache_creation_input_tokens",
                                                   "cache_read_input_tokens"))
    result = ChatResult(text=text, prompt_tokens=prompt, output_tokens=int(usage.get("output_tokens") or 0))
    if body.get("stop_reason") == "refusal":
        result.refusal, result.text = "refusal (stop_reason)", ""
    result.budget_exhausted = body.get("stop_reason") == "max_tokens" and not result.text.strip()
    return result


GEMINI_REFUSALS = ("SAFETY", "RECITATION", "BLOCKLIST", "PROHIBITED_CONTENT", "SPII", "IMAGE_SAFETY",
                   "LANGUAGE", "OTHER")


def read_gemini(body: dict) -> ChatResult:
    usage = body.get("usageMetadata") or {}
    result = ChatResult(text="", prompt_tokens=int(usage.get("promptTokenCount") or 0),
                        output_tokens=int(usage.get("candidatesTokenCount") or 0),
                        reasoning_tokens=int(usage.get("thoughtsTokenCount") or 0))
    blocked = (body.get("promptFeedback") or {}).get("blockReason")
    candidates = body.get("candidates") or []
    if blocked:
        result.refusal = f"prompt blocked: {blocked}"
        return result
    if not candidates:
        raise ServerGaveUp(f"no candidate in the answer: {str(body)[:300]}")
    candidate = candidates[0]
    parts = (candidate.get("content") or {}).get("parts") or []
    result.text = "".join(p.get("text", "") for p in parts if not p.get("thought"))
    finish = candidate.get("finishReason")
    if finish in GEMINI_REFUSALS:
        result.refusal, result.text = f"finishReason {finish}", ""
    result.budget_exhausted = finish == "MAX_TOKENS" and not result.text.strip()
    return result


# --------------------------------------------------------------------------- the engine
def provider_headers(provider: Provider, key: str | None) -> dict:
    if provider.name == "anthropic":
        return {"x-api-key": key or "", "anthropic-version": ANTHROPIC_VERSION}
    if provider.name == "gemini":
        return {"x-goog-api-key": key or ""}
    return {"Authorization": f"Bearer {key}"} if key else {}


def refusal_from(exc: HTTPStatusFailure) -> str | None:
    """The reason of a 400 answer that declines this request's content, else None."""
    if exc.status_code != 400:
        return None
    match = _REFUSAL_400.search(str(exc))
    return f"HTTP 400: {str(exc).split(': ', 2)[-1][:200]}" if match else None


class HostedChatEngine(ChatEngine):
    """`provider`: "openai", "anthropic" or "gemini" (agents/engines/hosted_rules.py). `efforts`:
    stage -> reasoning effort ("default" for the rest); `allowances`: effort -> reasoning tokens
    added to a stage's budget. `key_variable`: where the key comes from (the provider's own
    variable; the served engine's for a reasoning model behind `engine = "openai"`)."""

    supports_images = True

    def __init__(self, model: str, ledger: Ledger | None = None, *, provider: str, base_url: str = "",
                 efforts: dict | None = None, allowances: dict | None = None, max_in_flight: int = 32,
                 timeout_s: float = DEFAULT_TIMEOUT_S, key_variable: str | None = None):
        super().__init__(model, ledger)
        if provider not in PROVIDERS:
            raise ValueError(f"unknown hosted provider {provider!r}; choose one of {sorted(PROVIDERS)}")
        self.provider = PROVIDERS[provider]
        self.key_variable = key_variable or self.provider.key_variable
        key = os.environ.get(self.key_variable) or None
        self.endpoint = Endpoint(base_url or self.provider.base_url, max_in_flight=max_in_flight, timeout_s=timeout_s,
                                 headers=provider_headers(self.provider, key), key_variable=self.key_variable,
                                 secret=key)
        self.efforts = dict(efforts or {})
        self.allowances = dict(allowances or {})
        self.max_in_flight = max(1, int(max_in_flight))
        self.images = _ImageCache()
        self._stage = "chat"

    def generate(self, requests, sampling, *, stage="chat"):
        self._stage = stage  # the chain runs one stage at a time; the effort is the stage's
        return super().generate(requests, sampling, stage=stage)

    def _generate(self, requests: list[ChatRequest], sampling: Sampling) -> list[ChatResult]:
        # One end for the whole call, read here (the context does not follow into the worker
        # threads); whether that end is the batch's deadline or only the per-request cap.
        left = seconds_left()
        end = time.monotonic() + self.endpoint.budget_s(left)
        at_deadline = left is not None and left <= self.endpoint.timeout_s
        stage = self._stage
        # every request of the call at once (at most max_in_flight open): a provider batches nothing
        # of ours, so image requests need not wait for each other
        pool = ThreadPoolExecutor(max_workers=min(self.max_in_flight, len(requests)))
        try:
            futures = [pool.submit(self._one, r, r.sampling_or(sampling), end, stage, at_deadline) for r in requests]
            return [future.result() for future in futures]
        finally:  # after a failure, requests not yet sent are not sent: the call has failed
            pool.shutdown(wait=True, cancel_futures=True)

    def request_body(self, request: ChatRequest, sampling: Sampling, stage: str) -> tuple[str, dict]:
        """(path, JSON body) of one request, as the provider's rules have it."""
        with_image = request.image is not None
        messages = template_messages(request.messages, with_image)
        image = None
        if with_image:
            media_type, data, _ = self.images.get(request.image, self.provider.images)
            image = (media_type, data)
        # a one-word choice is written, not read from probabilities (none are asked for)
        if sampling.choices:
            sampling = Sampling(max_tokens=max(sampling.max_tokens, 4), seed=sampling.seed, stop=sampling.stop)
        effort = effort_for(stage, self.efforts)
        allowance = allowance_for(effort, self.allowances)
        name = self.provider.name
        if name == "anthropic":
            return "/messages", anthropic_request(self.model, messages, image, sampling)
        if name == "gemini":
            return (f"/models/{self.model.rsplit('/', 1)[-1]}:generateContent",
                    gemini_request(self.model, messages, image, sampling, effort, allowance))
        return "/chat/completions", openai_request(self.model, messages, image, sampling, effort, allowance)

    def _one(self, request: ChatRequest, sampling: Sampling, end: float, stage: str,
             at_deadline: bool = False) -> ChatResult:
        import httpx

        path, body = self.request_body(request, sampling, stage)
        try:
            answer = self.endpoint.post(path, body, end - time.monotonic())[0]
        except HTTPStatusFailure as exc:
            reason = refusal_from(exc)
            if reason is None:
                raise
            return ChatResult(text="", refusal=reason)
        except (httpx.TimeoutException, TimeoutError):
            if at_deadline and time.monotonic() >= end - DEADLINE_SLACK_S:
                # the batch's deadline stopped it, as the in-process engines stop theirs: an empty
                # cut result (the chain starts nothing after the stage), not a stage fault
                return deadline_cut_result()
            raise
        reader = {"anthropic": read_anthropic, "gemini": read_gemini}.get(self.provider.name, read_openai)
        result = reader(answer)
        result.text, _ = cut_at_stop(result.text, sampling.stop)
        result.text = result.text.strip()
        return result


def hosted_problem(provider: str, model: str, base_url: str = "", key_variable: str | None = None) -> str | None:
    """What stops a hosted model before the run loads anything, in one line, or None: its key
    variable unset, or the provider not knowing the model for this key (one GET of the model, no
    retries)."""
    import httpx

    rules = PROVIDERS[provider]
    variable = key_variable or rules.key_variable
    key = os.environ.get(variable)
    if not key:
        return (f"cannot start: {variable} is not set; the {provider} model {model} is reached with the key "
                f"in that variable (it is never printed or written)")
    endpoint = Endpoint(base_url or rules.base_url, max_in_flight=1, headers=provider_headers(rules, key),
                        key_variable=variable, secret=key)
    try:
        endpoint.get(f"/models/{model.rsplit('/', 1)[-1]}", PROBE_TIMEOUT_S)
    except HTTPStatusFailure as exc:
        return f"cannot start: {endpoint.base_url} refused the model {model}: {str(exc)[:300]}"
    except (httpx.HTTPError, ValueError) as exc:
        return f"cannot start: nothing answers at {endpoint.base_url} for {model}: {type(exc).__name__}: {str(exc)[:200]}"
    finally:
        endpoint.close()
    return None

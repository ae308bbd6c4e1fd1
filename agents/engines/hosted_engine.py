"""The chain's VLM behind a hosted provider's own API (`engine = "hosted"`): OpenAI's Chat
Completions (the GPT-5 family, the o-series), Anthropic's Messages API (Claude), Google's
generateContent (Gemini). Each provider is one object (agents/engines/hosted_providers.py) that
builds its requests by its documented rules, reads its replies and counts their tokens; this
engine is the transport they share, and never asks which provider it talks to.

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

Per request (the rules of each provider are its object in agents/engines/hosted_providers.py):
- Stop strings are always cut here as well, so a provider that takes fewer (or none) stops at the
  same place in the text.
- The image is shrunk to what the provider's models read and encoded as JPEG (what
  facebookresearch/CRAG-MM's agents send) within its size limit, before the first request.
- A refusal (a content-policy stop, a blocked prompt, an image the provider will not take) is
  not an error: that request's result carries `refusal`, and the chain answers its turn
  "I don't know" and counts it. Text cut off by the token budget before any word came back is
  `budget_exhausted` (counted as an empty reply).
- Token probabilities are never asked for: the stages that read them fall back to their text
  modes (agents/engine_capabilities.py `logprob_fallbacks`), and `Sampling.choices` is answered as text.
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
from agents.engines.hosted_providers import PROVIDERS, HostedProvider, provider_for_model, provider_of
from agents.engines.hosted_rules import ImageLimits
from agents.engines.served import DEFAULT_TIMEOUT_S, PROBE_TIMEOUT_S, Endpoint
from agents.transient_waits import HTTPStatusFailure

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


# --------------------------------------------------------------------------- the engine
def refusal_from(exc: HTTPStatusFailure) -> str | None:
    """The reason of a 400 answer that declines this request's content, else None."""
    if exc.status_code != 400:
        return None
    match = _REFUSAL_400.search(str(exc))
    return f"HTTP 400: {str(exc).split(': ', 2)[-1][:200]}" if match else None


class HostedChatEngine(ChatEngine):
    """`provider`: "openai", "anthropic" or "gemini" (agents/engines/hosted_providers.py). `efforts`:
    stage -> reasoning effort ("default" for the rest); `allowances`: effort -> reasoning tokens
    added to a stage's budget. `key_variable`: where the key comes from (the provider's own
    variable; the served engine's for a reasoning model behind `engine = "openai"`)."""

    supports_images = True
    supports_tools = True  # each provider's own function calling (agents/engines/hosted_providers.py)

    def __init__(self, model: str, ledger: Ledger | None = None, *, provider: str, base_url: str = "",
                 efforts: dict | None = None, allowances: dict | None = None, max_in_flight: int = 32,
                 timeout_s: float = DEFAULT_TIMEOUT_S, key_variable: str | None = None):
        super().__init__(model, ledger)
        if provider not in PROVIDERS:
            raise ValueError(f"unknown hosted provider {provider!r}; choose one of {sorted(PROVIDERS)}")
        self.provider: HostedProvider = PROVIDERS[provider]
        self.key_variable = key_variable or self.provider.key_variable
        key = os.environ.get(self.key_variable) or None
        self.endpoint = Endpoint(base_url or self.provider.base_url, max_in_flight=max_in_flight, timeout_s=timeout_s,
                                 headers=self.provider.headers(key), key_variable=self.key_variable,
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
        return self.provider.request(self.model, messages, image, sampling, effort,
                                     allowance_for(effort, self.allowances), request.tools, request.tool_choice)

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
        result = self.provider.read(answer)
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
    endpoint = Endpoint(base_url or rules.base_url, max_in_flight=1, headers=rules.headers(key),
                        key_variable=variable, secret=key)
    try:
        endpoint.get(rules.model_path(model), PROBE_TIMEOUT_S)
    except HTTPStatusFailure as exc:
        if exc.status_code == 404:  # how every provider answers a model it has retired or never had
            return (f"cannot start: {endpoint.base_url} has no model {model} for this key (retired, or a name it "
                    f"never had): {str(exc)[:300]}")
        return f"cannot start: {endpoint.base_url} refused the model {model}: {str(exc)[:300]}"
    except (httpx.HTTPError, ValueError) as exc:
        return f"cannot start: nothing answers at {endpoint.base_url} for {model}: {type(exc).__name__}: {str(exc)[:200]}"
    finally:
        endpoint.close()
    return None


def role_url(models, role: str) -> str:
    return getattr(models, f"{role}_base_url") or models.vlm_base_url


def build(models, role: str, ledger: Ledger) -> HostedChatEngine:
    """The engine of one role at its provider (agents/engines/registry.py)."""
    return HostedChatEngine(
        getattr(models, f"{role}_model"), ledger, provider=provider_of(models, role), base_url=role_url(models, role),
        efforts=models.reasoning_effort, allowances=models.reasoning_allowance_tokens,
        max_in_flight=models.served_max_in_flight, timeout_s=models.served_timeout_s)


def reads_probabilities(models, role: str) -> bool:
    """No hosted provider is asked for token probabilities."""
    return False


def engine_key(models, role: str) -> tuple[str, str]:
    """One engine serves both roles where they name the same model at the same URL."""
    return getattr(models, f"{role}_model"), role_url(models, role)


def setting_problem(models) -> str | None:
    """Without hosted_provider, each model's name must say its provider."""
    if models.hosted_provider:
        return None
    for role in ("vlm", "router"):
        model = getattr(models, f"{role}_model")
        if provider_for_model(model) is None:
            return (f"engine hosted: no provider is known for {role}_model {model!r}; name one with "
                    f"hosted_provider (one of {sorted(PROVIDERS)})")
    return None


def preload_problem(models, stack: str) -> str | None:
    """For a hosted VLM (and router): the provider's key variable is set, and the provider knows
    the model for that key (one GET per model, short timeout, no retries)."""
    problems = []
    for role in ("vlm", "router"):
        model = getattr(models, f"{role}_model")
        if role == "router" and model == models.vlm_model and not models.router_base_url:
            continue
        found = hosted_problem(provider_of(models, role), model, role_url(models, role))
        if found:
            problems.append(found)
    return "\n".join(problems) or None

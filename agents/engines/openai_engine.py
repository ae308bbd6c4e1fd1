"""The chain's models behind any OpenAI-compatible server (`engine = "openai"`): vLLM's
`vllm serve`, SGLang, TGI, Ollama, llama.cpp's server, `transformers serve`.

One engine call sends every request of the batch to `POST {base_url}/chat/completions` at
once (at most `max_in_flight` open at a time) and returns the results in order: one call in
the ledger, as with the in-process engines. Each request:
- carries the messages in the layout the in-process engines render (`template_messages`:
  plain-string contents; with an image, by default the system message, then a user message
  holding only the image, then the history and the question; `image_layout` "first_user" for a
  family whose template insists on alternating roles, Gemma 3). The image travels as a
  `data:image/png;base64,...` `image_url` part (lossless); the server's own template writes the
  family's image token. Only `image_placeholder` (the Llama stack's "<|image|>") adds the model's
  image token as a text part right before it: for a vLLM server started with
  `--chat-template-content-format string`, which then writes no placeholder of its own and the
  prompt is the one `build_vllm_inputs` renders in-process (docs/serving.md);
- carries its own sampling (temperature, top_p, max_tokens, seed, stop) and asks for
  `logprobs` when the stage wants them; a server that sends none gives `token_logprobs=None`,
  as engines without them do;
- may take at most what is left of the batch's deadline (`base.seconds_left()`, set by the
  chain around each stage), and waits out 429/5xx answers within it (agents/transient_waits.py);
- is read as JSON or as a server-sent event stream, whichever the server sends.

`stop_strings = "client"` never sends `stop` (a server that fails on it: transformers serve
4.57.6's generate thread dies without a tokenizer and the request hangs) and cuts the text at the
first stop string here; with "server" the server cuts, and the text is cut here as well (harmless).

A failed request fails the engine call: the chain's stage guard retries the stage's turns in
halves, and turns that still fail answer "I don't know". A dead server costs those turns only.
"""
from __future__ import annotations

import base64
import io
import json
import time
from concurrent.futures import ThreadPoolExecutor

from agents.engines.base import (
    ChatEngine,
    ChatRequest,
    ChatResult,
    Ledger,
    Sampling,
    cut_at_stop,
    ended_on_end_token,
    image_groups,
    seconds_left,
    template_messages,
)
from agents.engines.served import DEFAULT_TIMEOUT_S, Endpoint, ServerGaveUp
from agents.engines.tool_calls import ToolCall, openai_calls, openai_messages, openai_tool_fields, streamed_calls

STOP_MODES = ("server", "client")


def image_data_url(image) -> str:
    """The image as a PNG data URL: lossless, so the server's model sees the pixels the
    in-process engines see (a JPEG's artefacts alone changed an answer on a noisy photo).
    vLLM's server decodes any format PIL opens from a base64 `data:` URL
    (vllm/multimodal/utils.py, `MediaConnector._load_data_url`; vllm/multimodal/image.py,
    `ImageMediaIO.load_base64`, then `convert("RGB")`), SGLang likewise (`load_image`)."""
    buffer = io.BytesIO()
    image.convert("RGB").save(buffer, format="PNG")
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")


def request_messages(request: ChatRequest, with_image: bool, image_placeholder: str = "",
                     layout: str = "own_turn") -> list[dict]:
    """`template_messages` in `layout` with the image part written the OpenAI way (see the module
    notes), and the calls the model made and their results in Chat Completions' shape
    (agents/engines/tool_calls.py)."""
    messages = openai_messages(template_messages(request.messages, with_image, layout))
    if not with_image:
        return messages
    parts = [{"type": "image_url", "image_url": {"url": image_data_url(request.image)}}]
    if image_placeholder:
        parts.insert(0, {"type": "text", "text": image_placeholder})

    def written(content):
        if not isinstance(content, list):
            return content
        return [part for item in content for part in (parts if item == {"type": "image"} else [item])]

    return [dict(m, content=written(m["content"])) for m in messages]


def request_payload(model: str, messages: list[dict], sampling: Sampling, send_stop: bool,
                    tools: list[dict] | None = None, tool_choice: str = "auto") -> dict:
    """The body of one chat completion; with `tools`, the function tools and the tool choice
    (vLLM's server takes them when started with `--enable-auto-tool-choice --tool-call-parser
    NAME`; without, it answers 400, and a run uses the text protocol: docs/evaluation.md)."""
    payload = {"model": model, "messages": messages, "max_tokens": sampling.max_tokens,
               "temperature": sampling.temperature, "top_p": sampling.top_p if sampling.temperature > 0 else 1.0,
               "stream": False, **openai_tool_fields(tools, tool_choice)}
    if sampling.seed is not None:
        payload["seed"] = sampling.seed
    if sampling.stop and send_stop:
        payload["stop"] = list(sampling.stop)
    if sampling.logprobs:
        payload["logprobs"] = True  # the chosen token's log-probability; no alternatives asked
    return payload


def read_completion(bodies: list[dict]) -> tuple[str, list[tuple[str, float]] | None, dict, dict]:
    """(text, [(token, logprob)] or None, usage, finish) from a JSON completion (one body) or
    from the chunks of a streamed one; `finish` holds the choice's `finish_reason` and what
    stopped it: vLLM's `stop_reason`, SGLang's `matched_stop` (both: a string for a stop
    string, a token id or None for an end token)."""
    text, logprobs, usage, streamed, finish = [], None, {}, False, {}
    for body in bodies:
        usage = body.get("usage") or usage
        for choice in body.get("choices") or []:
            if choice.get("index", 0) != 0:
                continue
            if choice.get("finish_reason"):
                finish = {"finish_reason": choice["finish_reason"],
                          "stopped_by": choice.get("stop_reason", choice.get("matched_stop")),
                          "says_what_stopped": "stop_reason" in choice or "matched_stop" in choice}
            part = choice.get("message") if "message" in choice else choice.get("delta")
            streamed = streamed or "delta" in choice
            if part and part.get("content"):
                text.append(part["content"])
            content = (choice.get("logprobs") or {}).get("content")
            if content:
                logprobs = (logprobs or []) + [(c.get("token", ""), float(c["logprob"])) for c in content]
    if not bodies or (not streamed and not any("choices" in b for b in bodies)):
        raise ServerGaveUp(f"no completion in the answer: {json.dumps(bodies)[:300]}")
    return "".join(text), logprobs, usage, finish


def read_tool_calls(bodies: list[dict]) -> list[ToolCall]:
    """The function calls of the first choice, from a JSON completion's `message.tool_calls` or a
    streamed one's `delta.tool_calls` pieces (agents/engines/tool_calls.py)."""
    choices = [c for body in bodies for c in body.get("choices") or [] if c.get("index", 0) == 0]
    if any("delta" in c for c in choices):
        return streamed_calls([c.get("delta") or {} for c in choices])
    return [call for c in choices for call in openai_calls(c.get("message") or {})]


def ends_with_end_token(text: str, logprobs: list[tuple[str, float]], finish: dict, stop: tuple[str, ...]) -> bool:
    """Whether the last listed token is the end-of-sequence token, which vLLM and SGLang list
    among the log-probabilities (and count in `completion_tokens`) and ChatResult does not count.

    It is when the choice finished with "stop" and no stop string did it: not the server's
    (a string `stop_reason`/`matched_stop`), nor one the listed tokens spell; and the token
    adds nothing to the text (it decodes to "" or to a special token such as "<|eot_id|>"),
    which keeps a server that lists no end token from losing a real one."""
    if not ended_on_end_token(finish.get("finish_reason"), finish.get("stopped_by")) or not logprobs:
        return False
    if cut_at_stop("".join(token for token, _ in logprobs), stop)[1]:
        return False
    last = logprobs[-1][0].strip()
    return not last or not text.rstrip().endswith(last)


def finish_result(text: str, logprobs: list[tuple[str, float]] | None, usage: dict, finish: dict,
                  stop: tuple[str, ...]) -> ChatResult:
    """The ChatResult of one completion, cut at the first stop string (and its tokens with it),
    without the end token (see ChatResult)."""
    if logprobs and ends_with_end_token(text, logprobs, finish, stop):
        logprobs = logprobs[:-1]
    text, stopped = cut_at_stop(text, stop)
    if stopped and logprobs:
        # keep the tokens up to the one that completed the stop string, as vLLM counts them
        seen, keep = "", len(logprobs)
        for k, (token, _) in enumerate(logprobs, start=1):
            seen += token
            if cut_at_stop(seen, stop)[1]:
                keep = k
                break
        logprobs = logprobs[:keep]
    # Without log-probabilities the server's count stands; vLLM and SGLang (the servers that say
    # what stopped an answer) include the end token in it, so an answer they ended on it counts
    # one token less. An answer cut at a stop string keeps the server's count.
    output_tokens = len(logprobs) if logprobs is not None else int(usage.get("completion_tokens") or 0)
    if logprobs is None and not stopped and output_tokens and finish.get("says_what_stopped") \
            and ended_on_end_token(finish.get("finish_reason"), finish.get("stopped_by")):
        output_tokens -= 1
    return ChatResult(
        text=text.strip(), prompt_tokens=int(usage.get("prompt_tokens") or 0), output_tokens=output_tokens,
        token_logprobs=None if logprobs is None else [lp for _, lp in logprobs],
        tokens=None if logprobs is None else [t for t, _ in logprobs])


def sees_images(model: str) -> bool:
    """Whether the model reads images, from its config.json when this machine has it (a folder,
    an alias of agents/engines/local_models.py, or the Hugging Face cache); otherwise by its name:
    a VLM family's (agents/stacks.py STACKS), or a word VLM names carry."""
    from agents.engines.local_models import read_checkpoint_config, resolve_model

    config = read_checkpoint_config(resolve_model(model))
    if config:
        return "vision_config" in config
    from agents.stacks import family_of

    family = family_of(model)
    if family is not None and family.image_placeholder:  # a VLM family by name (Gemma 3, Pixtral, InternVL)
        return True
    return any(word in model.lower() for word in ("vision", "-vl", "vlm", "llava"))


class OpenAIChatEngine(ChatEngine):
    supports_tools = True  # `tools` in the request, `tool_calls` in the reply (OpenAI's chat completions)

    def __init__(self, model: str, ledger: Ledger | None = None, *, base_url: str, served_name: str | None = None,
                 max_in_flight: int = 32, timeout_s: float = DEFAULT_TIMEOUT_S, stop_strings: str = "server",
                 image_placeholder: str = "", image_layout: str = "own_turn", supports_images: bool | None = None,
                 batch_images: bool = True):
        super().__init__(model, ledger)
        if stop_strings not in STOP_MODES:
            raise ValueError(f"stop_strings={stop_strings!r}: choose one of {STOP_MODES}")
        self.endpoint = Endpoint(base_url, max_in_flight=max_in_flight, timeout_s=timeout_s)
        self.served_name = served_name or model
        self.max_in_flight = max(1, int(max_in_flight))
        self.send_stop = stop_strings == "server"
        self.image_placeholder = image_placeholder
        self.image_layout = image_layout
        self.supports_images = sees_images(model) if supports_images is None else supports_images
        self.batch_images = batch_images

    def _generate(self, requests: list[ChatRequest], sampling: Sampling) -> list[ChatResult]:
        # One end for the whole call, read here (the context does not follow into the worker
        # threads): a request that waits for a free slot gets only what is left of it.
        end = time.monotonic() + self.endpoint.budget_s(seconds_left())
        # With batch_images off, image requests go one after another (the server cannot batch them
        # with each other), after the text requests, which go at once.
        results: list[ChatResult | None] = [None] * len(requests)
        for group in image_groups(requests, self.batch_images or not self.supports_images):
            pool = ThreadPoolExecutor(max_workers=min(self.max_in_flight, len(group)))
            try:
                futures = {i: pool.submit(self._one, requests[i], requests[i].sampling_or(sampling), end) for i in group}
                for i, future in futures.items():
                    results[i] = future.result()
            finally:  # after a failure, requests not yet sent are not sent: the call has failed
                pool.shutdown(wait=True, cancel_futures=True)
        return results

    def _one(self, request: ChatRequest, sampling: Sampling, end: float) -> ChatResult:
        with_image = self.supports_images and request.image is not None
        messages = request_messages(request, with_image, self.image_placeholder, self.image_layout)
        payload = request_payload(self.served_name, messages, sampling, self.send_stop, request.tools,
                                  request.tool_choice)
        bodies = self.endpoint.post("/chat/completions", payload, end - time.monotonic())
        result = finish_result(*read_completion(bodies), sampling.stop)
        if request.tools:
            result.tool_calls = read_tool_calls(bodies)
        return result


def served_name(models, role: str) -> str:
    from agents.engines.served import served_endpoint

    return served_endpoint(models, role)[1]


def reads_probabilities(models, role: str) -> bool:
    """Whether a served role returns token probabilities: not an OpenAI reasoning model's (its API
    refuses `logprobs`)."""
    from agents.engines.hosted_rules import is_openai_reasoning_model

    return not is_openai_reasoning_model(served_name(models, role))


def build(models, role: str, ledger: Ledger) -> ChatEngine:
    """The engine of one role behind an OpenAI-compatible server (agents/engines/registry.py)."""
    from agents.engines.hosted_rules import is_openai_reasoning_model
    from agents.engines.served import API_KEY_ENV, served_endpoint

    url, name = served_endpoint(models, role)
    if is_openai_reasoning_model(name):
        # OpenAI's reasoning models refuse what a vLLM-style request carries (max_tokens,
        # temperature, stop, logprobs): such a served name gets OpenAI's own request rules,
        # with the served engine's URL and key variable
        from agents.engines.hosted_engine import HostedChatEngine

        return HostedChatEngine(
            name, ledger, provider="openai", base_url=url, efforts=models.reasoning_effort,
            allowances=models.reasoning_allowance_tokens, max_in_flight=models.served_max_in_flight,
            timeout_s=models.served_timeout_s, key_variable=API_KEY_ENV)
    return OpenAIChatEngine(
        getattr(models, f"{role}_model"), ledger, base_url=url, served_name=name,
        max_in_flight=models.served_max_in_flight, timeout_s=models.served_timeout_s,
        stop_strings=models.served_stop_strings, image_placeholder=models.served_image_placeholder,
        image_layout=models.served_image_layout, batch_images=models.batch_images)


def engine_key(models, role: str) -> tuple:
    """One engine serves both roles where they name the same model on the same server."""
    from agents.engines.served import served_endpoint

    return getattr(models, f"{role}_model"), served_endpoint(models, role)

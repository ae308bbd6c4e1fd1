"""The one interface every model engine speaks, and the ledger that counts engine calls.

A call is always a whole batch: `generate(requests, sampling, stage=...)` takes every chat of a
stage at once and returns one `ChatResult` per request, in order. The chain never imports vLLM
or transformers; it only sees `ChatEngine` and `Reranker`.
"""
from __future__ import annotations

import dataclasses
import logging
import threading
import time
from abc import ABC, abstractmethod
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Callable, Iterator

from PIL import Image

log = logging.getLogger(__name__)


@dataclass
class ChatRequest:
    """One chat: role/content messages (plain strings), and at most one image.

    The engine decides where the image goes in the prompt (each model family has its own
    placeholder); callers never write image tokens themselves.
    """

    messages: list[dict]
    image: Image.Image | None = None
    # This request's own sampling, when it differs from the call's (e.g. one sampled answer in a
    # call of greedy ones). Both engines honour it within the same single engine call.
    sampling: Sampling | None = None
    # Which turn the request serves: its position in the list of turns the stage was handed. A
    # hosted provider may refuse one request (content policy, an image it will not take); the
    # chain then answers that turn "I don't know" and counts it (agents/runtime/batch.py BatchRun), which it can
    # only do for a request that says whose it is. None: no turn (warm-up, benchmarks).
    turn: int | None = None
    # Function tools the model may call (agents/engines/tool_calls.py: OpenAI's function-tool
    # shape), for an engine that takes them (ChatEngine.supports_tools); None: a plain chat. The
    # messages may then hold the calls the model made and their results (tool_calls.py).
    tools: list[dict] | None = None
    tool_choice: str = "auto"  # "auto": it may call or answer; "none": it must answer now

    def sampling_or(self, default: Sampling) -> Sampling:
        return self.sampling if self.sampling is not None else default


# Where the image goes among the messages (`template_messages`); a chat template accepts one or
# more of them, `image_layout` asks it which, in this order of preference.
IMAGE_LAYOUTS = (
    "own_turn",  # system, a user message holding only the image, the conversation, the question
    "own_turn_system_text",  # the same, the system text after the image in that first user message
    "first_user",  # system, then the image first in the first user message of the conversation
)


def template_messages(messages: list[dict], with_image: bool, layout: str = "own_turn") -> list[dict]:
    """Role/content messages as the families' chat templates read them, and as the CRAG-MM
    starter kit's vanilla agent sends them: every content stays a plain string (Llama's hub
    template reads the system content as a string and trims it, so typed parts there would reach
    the model as a Python list). With an image, `layout` (IMAGE_LAYOUTS) says where it goes; the
    image always comes before every word it is asked about.

    - "own_turn": the system message, then a user message holding only the image part, then the
      conversation so far, then the question;
    - "own_turn_system_text": for a template that refuses a system message next to an image (the
      September 2024 Llama-3.2-Vision template raised): the system text follows the image in that
      first user message, still ahead of the history and the question;
    - "first_user": for a template that insists on alternating roles (Gemma 3 raises on two user
      messages in a row): the image part opens the first user message, followed by its text."""
    if layout not in IMAGE_LAYOUTS:
        raise ValueError(f"unknown image layout {layout!r}; choose one of {IMAGE_LAYOUTS}")
    out = [dict(m) for m in messages]
    if not with_image:
        return out
    system = [out.pop(0)] if out and out[0]["role"] == "system" else []
    if layout == "first_user":
        first = next((i for i, m in enumerate(out) if m["role"] == "user"), None)
        if first is not None:
            out[first]["content"] = [{"type": "image"}, {"type": "text", "text": out[first]["content"]}]
            return [*system, *out]
        return [*system, {"role": "user", "content": [{"type": "image"}]}, *out]
    image_turn = {"role": "user", "content": [{"type": "image"}]}
    if system and layout == "own_turn_system_text":
        image_turn["content"].append({"type": "text", "text": system[0]["content"]})
        system = []
    return [*system, image_turn, *out]


def image_layout(render: Callable[[list[dict]], str]) -> str:
    """The first of IMAGE_LAYOUTS that a chat template renders for a system message, a question
    and an image; `render(messages)` applies the template. The template's own error is the
    answer: the hub's current Llama-3.2-Vision template renders "own_turn", its September 2024
    version raised "Prompting with images is incompatible with system messages", Gemma 3's
    raises "Conversation roles must alternate" for both "own_turn" layouts."""
    probe = [{"role": "system", "content": "probe"}, {"role": "user", "content": "probe"},
             {"role": "assistant", "content": "probe"}, {"role": "user", "content": "probe"}]
    for layout in IMAGE_LAYOUTS:
        try:
            render(template_messages(probe, with_image=True, layout=layout))
        except Exception:  # noqa: BLE001 - jinja2's TemplateError from raise_exception, or the like
            continue
        return layout
    return IMAGE_LAYOUTS[0]  # none renders: the first one's error will say why, on the real request


# How many seconds the current engine call may still take: the chain sets it around each stage
# from the batch's deadline, less a margin for what follows the call (`time_limit`). Every engine
# bounds its own work by it: transformers stops generating (`StopAtClock`), vLLM aborts its
# requests between steps, the served engines time their HTTP requests out.
_SECONDS_LEFT: ContextVar[Callable[[], float] | None] = ContextVar("cruise_seconds_left", default=None)


@contextmanager
def time_limit(seconds_left: Callable[[], float]) -> Iterator[None]:
    """Engine calls made inside this block may take at most `seconds_left()` seconds."""
    token = _SECONDS_LEFT.set(seconds_left)
    try:
        yield
    finally:
        _SECONDS_LEFT.reset(token)


def seconds_left() -> float | None:
    """What is left of the enclosing `time_limit`, or None outside one."""
    read = _SECONDS_LEFT.get()
    return None if read is None else read()


def call_end() -> float | None:
    """The `time.monotonic()` instant by which the current engine call must have returned, or
    None outside a `time_limit`. Read once at the start of a call: every sub-batch and request of
    the call then shares one end."""
    left = seconds_left()
    return None if left is None else time.monotonic() + left


@dataclass(frozen=True)
class Sampling:
    max_tokens: int = 64
    temperature: float = 0.0  # 0 means greedy
    top_p: float = 1.0
    stop: tuple[str, ...] = ()
    seed: int | None = 0
    logprobs: bool = False  # per output token: log-probability of the chosen token
    # A one-word answer among these (lower case, e.g. ("yes", "no")), read from the model's
    # next-token probabilities instead of generated text: one forward pass, and always one of the
    # words (`ChatResult.text`; `choice_logprobs` holds each word's log-probability). max_tokens,
    # temperature and stop do not apply.
    choices: tuple[str, ...] = ()


def cut_at_stop(text: str, stops) -> tuple[str, bool]:
    """Text before the earliest stop string, and whether one was found."""
    cut = min((i for i in (text.find(s) for s in stops if s) if i >= 0), default=-1)
    return (text[:cut], True) if cut >= 0 else (text, False)


# How every engine counts an answer's tokens, written into traces and calibration files so that
# token-probability thresholds are only compared with figures counted the same way.
TOKEN_COUNT = "end-of-sequence token not counted"


class ServerGaveUp(RuntimeError):
    """The server answered, but with an error inside its stream, or with nothing usable."""


@dataclass
class ChatResult:
    """One answer. `output_tokens`, `token_logprobs` and `tokens` cover the answer's own tokens:
    the end-of-sequence token that closed it is NOT counted, on every engine (transformers,
    vLLM offline and served alike; vLLM reports it, its engines here drop it; see TOKEN_COUNT).

    Why not counted: an answer cut at `max_tokens` or at a stop string has no end token, so
    counting it would make the same answer's mean probability depend on how generation ended;
    the end token's probability says how sure the model is that it is done, not how sure it is
    of what it said (the `min_token_prob` gate and the traced mean are about the latter); and a
    threshold tuned on one engine then means the same on the others. An answer cut at a stop
    string keeps the tokens up to the one that completed the stop string, as vLLM counts them.

    `prompt_tokens` counts what the model reads for the prompt, an image's encoder tokens
    included (vLLM's own count, offline and served); see each engine.
    """

    text: str
    prompt_tokens: int = 0
    output_tokens: int = 0
    token_logprobs: list[float] | None = None
    tokens: list[str] | None = None
    choice_logprobs: dict[str, float] | None = None  # Sampling.choices: log-probability of each word
    # The engine stopped this request at the batch's deadline before it ended on its own: its
    # text is empty, which every stage's parser reads as unreadable (the safe default).
    cut_by_deadline: bool = False
    # Hidden reasoning tokens the model spent before its answer (a hosted reasoning model's
    # `reasoning_tokens`, Gemini's `thoughtsTokenCount`); billed as output, not in output_tokens.
    reasoning_tokens: int = 0
    # Why the provider declined this request ("" when it answered): a content-policy refusal, an
    # image it would not take. The text is empty; the chain answers the turn "I don't know".
    refusal: str = ""
    # The model used its whole token budget before writing any text (a reasoning model that spent
    # it all on reasoning): the text is empty, and the run counts it as an empty reply.
    budget_exhausted: bool = False
    # The function calls the model asked for, in its order (agents/engines/tool_calls.py ToolCall);
    # empty where it answered in text, or the request offered no tools.
    tool_calls: list = field(default_factory=list)


def choice_variants(word: str) -> list[str]:
    """The spellings of a choice word a tokenizer may start an answer with."""
    return list(dict.fromkeys(v for w in (word, word.capitalize(), word.upper()) for v in (w, " " + w)))


def pick_choice(candidates: list[tuple[str, float]], choices: tuple[str, ...]) -> ChatResult:
    """The choice with the most probability among next-token candidates [(token text, logprob)]
    (an engine's top log-probabilities): each choice's spellings are summed. No choice among
    them: empty text, which the stage reads as unreadable."""
    import math

    mass: dict[str, float] = {}
    for token, logprob in candidates:
        word = token.strip().lower()
        if word in choices:
            mass[word] = mass.get(word, 0.0) + math.exp(logprob)
    if not mass:
        return ChatResult(text="", output_tokens=1, choice_logprobs={})
    best = max(mass, key=mass.get)
    logprobs = {w: math.log(p) for w, p in mass.items()}
    return ChatResult(text=best, output_tokens=1, token_logprobs=[logprobs[best]], tokens=[best],
                      choice_logprobs=logprobs)


def ended_on_end_token(finish_reason, stopped_by) -> bool:
    """Whether a served or vLLM answer's last listed token is the end-of-sequence token (or another
    of the model's stop token ids): it finished with "stop" and no stop string did it. vLLM's
    `stop_reason` (SGLang's `matched_stop`) is None for the tokenizer's EOS, the id for a stop
    token id, the string for a stop string (vllm/sequence.py, SequenceStatus;
    vllm/engine/output_processor/stop_checker.py)."""
    return finish_reason == "stop" and not isinstance(stopped_by, str)


def is_empty_reply(result: ChatResult) -> bool:
    """An answer with no text that neither the deadline nor a refusal explains: a model that wrote
    nothing, or spent its whole budget on hidden reasoning (`budget_exhausted`). A one-word choice
    read from probabilities is never empty when a word was found."""
    return not result.text.strip() and not result.tool_calls and not result.cut_by_deadline and not result.refusal


def deadline_cut_result() -> ChatResult:
    """What a request the deadline stopped (or never let start) returns."""
    return ChatResult(text="", cut_by_deadline=True)


@dataclass
class CallRecord:
    stage: str
    kind: str  # "chat" or "rerank"
    requests: int
    prompt_tokens: int
    output_tokens: int
    wall_ms: float
    cut_by_deadline: int = 0  # requests of this call the engine stopped at the deadline
    reasoning_tokens: int = 0  # hidden reasoning tokens (billed as output; not in output_tokens)
    empty_replies: int = 0  # requests answered with no text though no deadline cut them
    # [turn position, reason] of each request the provider refused (ChatRequest.turn)
    refusals: list = field(default_factory=list)
    model: str = ""  # the model that answered (the engine's, as it was loaded)


@dataclass
class Ledger:
    """Every engine and reranker call, in order. The agent drains it once per batch."""

    records: list[CallRecord] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def record(self, rec: CallRecord) -> None:
        with self._lock:
            self.records.append(rec)

    def drain(self) -> list[CallRecord]:
        with self._lock:
            out, self.records = self.records, []
        return out


class ChatEngine(ABC):
    """Batched chat generation. Subclasses implement `_generate` only."""

    #: whether the model can look at an image; a text-only engine drops images with one warning
    supports_images: bool = False
    #: whether requests may carry function tools (native function calling: the served and hosted
    #: engines); an in-process engine has no tool-call parser, and a system then writes its tools
    #: into the prompt and reads the calls from the text (agents/agentic/: the text protocol)
    supports_tools: bool = False

    def __init__(self, model: str, ledger: Ledger | None = None):
        self.model = model
        self.ledger = ledger if ledger is not None else Ledger()
        self._warned_image = False

    def generate(
        self, requests: list[ChatRequest], sampling: Sampling, *, stage: str = "chat"
    ) -> list[ChatResult]:
        if not requests:
            return []
        if not self.supports_images and any(r.image is not None for r in requests):
            if not self._warned_image:
                log.warning("%s is text-only: images are dropped from its requests", self.model)
                self._warned_image = True
            requests = [dataclasses.replace(r, image=None) for r in requests]
        if not self.supports_tools and any(r.tools for r in requests):
            raise ValueError(f"{type(self).__name__} ({self.model}) takes no function tools: it has no tool-call "
                             f"parser; write the tools into the prompt instead (tool_protocol=text)")
        start = time.perf_counter()
        left = seconds_left()
        if left is not None and left <= 0:
            # Nothing left of the deadline: not even the prompt is read (a prefill alone can take
            # seconds on a CPU).
            results = [deadline_cut_result() for _ in requests]
        else:
            results = self._generate(requests, sampling)
        if len(results) != len(requests):
            raise RuntimeError(
                f"{type(self).__name__} returned {len(results)} results for {len(requests)} requests"
            )
        self.ledger.record(
            CallRecord(
                stage=stage,
                kind="chat",
                requests=len(requests),
                prompt_tokens=sum(r.prompt_tokens for r in results),
                output_tokens=sum(r.output_tokens for r in results),
                wall_ms=(time.perf_counter() - start) * 1000.0,
                cut_by_deadline=sum(1 for r in results if r.cut_by_deadline),
                reasoning_tokens=sum(r.reasoning_tokens for r in results),
                empty_replies=sum(1 for r in results if is_empty_reply(r)),
                refusals=[[q.turn, r.refusal] for q, r in zip(requests, results) if r.refusal],
                model=self.model,
            )
        )
        return results

    @abstractmethod
    def _generate(self, requests: list[ChatRequest], sampling: Sampling) -> list[ChatResult]:
        ...


def image_groups(requests: list[ChatRequest], batch_images: bool) -> list[list[int]]:
    """Indices of the requests to run together: all at once, or, with `batch_images=False`,
    the text requests together and each image request alone (see CruiseConfig.models.batch_images)."""
    if batch_images or sum(r.image is not None for r in requests) < 2:
        return [list(range(len(requests)))]
    text = [i for i, r in enumerate(requests) if r.image is None]
    return ([text] if text else []) + [[i] for i, r in enumerate(requests) if r.image is not None]


class Reranker(ABC):
    """(query, passage) pairs in, one relevance score in [0, 1] per pair out, one call per batch."""

    def __init__(self, model: str, ledger: Ledger | None = None):
        self.model = model
        self.ledger = ledger if ledger is not None else Ledger()

    def score(self, pairs: list[tuple[str, str]], *, stage: str = "rerank") -> list[float]:
        if not pairs:
            return []
        start = time.perf_counter()
        scores = [float(s) for s in self._score(pairs)]
        if len(scores) != len(pairs):
            raise RuntimeError(f"{type(self).__name__} returned {len(scores)} scores for {len(pairs)} pairs")
        self.ledger.record(
            CallRecord(stage, "rerank", len(pairs), 0, 0, (time.perf_counter() - start) * 1000.0, model=self.model)
        )
        return scores

    @abstractmethod
    def _score(self, pairs: list[tuple[str, str]]) -> list[float]:
        ...


@dataclass
class Engines:
    """What the chain runs on: the router, the VLM (summary, answers, checks) and the reranker.
    The router and the VLM may be one engine (the cpu profile). `coarse`: the bi-encoder that
    shortlists each turn's chunks for the reranker (`rerank_coarse_k` > 0), else None."""

    router: ChatEngine
    vlm: ChatEngine
    reranker: Reranker
    coarse: Reranker | None = None

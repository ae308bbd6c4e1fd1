"""A stand-in for the chain's language models that answers at once, for runs at the real sizes.

    python local_evaluation.py --agent minibench.standin:StandInCruiseAgent ...

`InstantEngine` speaks the engine interface (agents/engines/base.py) and replies to each stage
in that stage's own format, without a model: the router says which questions need search, the
answer stage repeats the first line of the notes it was given (or guesses, or declines, without
notes), the consistency check and the Chain-of-Verification reply in their formats. Which reply
a question gets depends only on its text, so two runs over the same split give the same answers.

`StandInCruiseAgent` is the real CruiseAgent over that engine, with the profile's real reranker
and the search pipeline the evaluator hands over: everything but the chat models is real, so a
run measures what the evaluator, search, reranking and the chain cost around the models.

`MemoReranker` and `MemoSearch` wrap the real reranker and search pipeline and compute each
distinct (query, chunk) pair and each distinct query once. The synthetic full split
(minibench/full_split.py) repeats the mini benchmark's images and questions, so with them a
4k-turn run gives every turn the real models' scores and hits while paying for the ~100
distinct queries once: what is left of the run's time is the evaluator's and the chain's own.
"""
from __future__ import annotations

import copy
import hashlib
import math
import re
import zlib

from agents.config.loading import config_from_environment
from agents.cruise_agent import CruiseAgent
from agents.engines.base import ChatEngine, ChatResult, Engines, Ledger, Reranker
from agents.factory import build_coarse_reranker, build_reranker

NOTES = re.compile(r"<<<NOTES\n(.*?)\nNOTES>>>", re.S)
FIRST_INFO = re.compile(r"\[Info \d+\]\s*(.+)")
ANSWER_WORDS = 14


def bucket(text: str, n: int) -> int:
    """A stable number in [0, n) for a text (crc32: the same in every process)."""
    return zlib.crc32(text.encode("utf-8")) % n


def question_of(text: str) -> str:
    """The question quoted in a prompt (the last "Question...:" line), else the whole text."""
    lines = [line for line in text.splitlines() if line.lower().startswith("question")]
    return lines[-1] if lines else text


def user_text(request) -> str:
    content = request.messages[-1]["content"]
    if isinstance(content, list):  # typed parts: keep the text ones
        return " ".join(part.get("text", "") for part in content if isinstance(part, dict))
    return str(content)


def route_reply(text: str) -> str:
    question = question_of(text)
    external = "no" if bucket(question, 10) == 0 else "yes"
    real_time = "yes" if bucket(question + "/rt", 20) == 0 else "no"
    return f"Needs External Info: {external}\nIs Real-Time: {real_time}"


def answer_reply(text: str) -> str:
    question = question_of(text)
    notes = NOTES.search(text)
    if notes:
        first = FIRST_INFO.search(notes.group(1))
        if first:
            return " ".join(first.group(1).split()[:ANSWER_WORDS])
        return "I don't know"
    # without notes: decline, or guess from the question's own words (often a wrong answer)
    if bucket(question, 3) == 0:
        return "I don't know"
    return "It is " + " ".join(question.split()[-3:]).rstrip("?")


def consistency_reply(text: str) -> str:
    return "No" if bucket(text, 8) == 0 else "Yes"


def verify_reply(text: str) -> str:
    confidence = (0.3, 0.92, 0.95, 1.0)[bucket(text, 4)]
    return f"CONFIDENCE: {confidence}\nREASONING: stand-in check.\nSUB-QUESTIONS: none"


def draft_reply(text: str) -> str:
    """QA-Dragon's D-CoT, one of three kinds by the question: a failed draft, a hedged one about
    a named thing, a plain one about a kind of thing."""
    question = question_of(text)
    guess = "It is " + " ".join(question.split()[-3:]).rstrip("?")
    kind = bucket(question + "/draft", 3)
    if kind == 0:
        return "Object: unknown\n1. I cannot determine what the photo shows.\nDraft answer: I don't know"
    if kind == 1:
        return f"Object: Stand-In Thing\n1. The photo probably shows the Stand-In Thing.\nDraft answer: {guess}"
    return f"Object: thing\n1. The photo shows a thing.\nDraft answer: {guess}"


def yes_or_no(salt: str, no_in: int):
    """A yes/no reply that is "no" for one question in `no_in`."""
    return lambda text: "no" if bucket(question_of(text) + salt, no_in) == 0 else "yes"


STAGE_REPLIES = {
    "route": route_reply,
    "summarize": lambda text: "A photo of the object the question asks about.",
    "answer": answer_reply,
    "consistency": consistency_reply,
    "verify": verify_reply,
    # the peer systems' steps (agents/peers/)
    "domain": lambda text: "Domain: Others",
    "draft": draft_reply,
    "tool_route": yes_or_no("/tool", 3),
    "rephrase": lambda text: "Query: " + " ".join(question_of(text).split()[-5:]),
    "fine_rerank": yes_or_no("/fine", 4),
    "post_answer": lambda text: "Reason: the notes.\nAnswer: " + answer_reply(text),
    "is_rel": lambda text: "no" if bucket(text, 3) else "yes",  # one document in three is relevant
    "is_use": yes_or_no("/use", 4),
    "regenerate": answer_reply,
    "is_sup": lambda text: "Supported: " + ("no" if bucket(text, 4) == 0 else "fully"),
}


class InstantEngine(ChatEngine):
    """A chat engine that answers every stage of the chain, and of the peer systems, at once, in
    that stage's format. A stage it has no reply for (one of CRUISE's optional peer stages) gets
    an empty reply, which the chain's parsers treat as unreadable output."""

    supports_images = True

    def __init__(self, ledger: Ledger | None = None):
        super().__init__("instant-stand-in", ledger)
        self._stage = "chat"

    def generate(self, requests, sampling, *, stage="chat"):
        self._stage = stage
        return super().generate(requests, sampling, stage=stage)

    def _generate(self, requests, sampling):
        reply = STAGE_REPLIES.get(self._stage, lambda text: "")
        if sampling.choices and self._stage == "verify":  # cov_mode "yes_no": the reply's confidence as odds
            return [odds_from_confidence(reply(user_text(r))) for r in requests]
        return [ChatResult(text=reply(user_text(r)), prompt_tokens=0, output_tokens=0) for r in requests]


def odds_from_confidence(written: str) -> ChatResult:
    """A CoV reply written as "CONFIDENCE: x", turned into the one-word answer of cov_mode
    "yes_no": yes/no log-probabilities whose odds read back as x; an unreadable reply gives no
    odds (unreadable either way)."""
    from agents.cruise.stages.s8_verify import read_confidence

    x, parsed = read_confidence(written)
    if not parsed:
        return ChatResult(text=written, prompt_tokens=0, output_tokens=1)
    logs = {w: (math.log(p) if p > 0 else -math.inf) for w, p in (("yes", x), ("no", 1.0 - x))}
    return ChatResult(text="yes" if x >= 0.5 else "no", prompt_tokens=0, output_tokens=1, choice_logprobs=logs)


class MemoReranker(Reranker):
    """The real reranker, asked once per distinct (query, chunk) pair."""

    def __init__(self, reranker: Reranker):
        super().__init__(reranker.model)
        self.reranker = reranker
        self.scores: dict[tuple[str, str], float] = {}

    def _score(self, pairs):
        unseen = list(dict.fromkeys(p for p in pairs if p not in self.scores))
        if unseen:
            self.scores.update(zip(unseen, self.reranker._score(unseen)))
        return [self.scores[p] for p in pairs]


class MemoSearch:
    """A search pipeline that asks the wrapped one once per distinct query (a text, or an
    image by its pixels) and k; each caller gets its own copy of the hits."""

    def __init__(self, pipeline):
        self.pipeline = pipeline
        self.hits: dict[tuple[str, int], list] = {}

    def __getattr__(self, name):  # web_search and the like: the wrapped pipeline's
        return getattr(self.pipeline, name)

    def __call__(self, query, k=5):
        if isinstance(query, str):
            key = ("text:" + query, k)
        else:
            digest = hashlib.sha256(query.tobytes()).hexdigest()
            key = (f"image:{query.mode}:{query.size}:{digest}", k)
        if key not in self.hits:
            self.hits[key] = self.pipeline(query, k=k)  # a ValueError (Task 1 text query) is not kept
        return copy.deepcopy(self.hits[key])


class StandInCruiseAgent(CruiseAgent):
    """The real CruiseAgent chain, search pipeline and reranker, with `InstantEngine` for both
    chat models. Its settings arrive as CruiseAgent's do (the evaluator passes `config`)."""

    def __init__(self, search_pipeline=None, config=None):
        config = config or config_from_environment()
        engine = InstantEngine()
        super().__init__(search_pipeline, config,
                         engines=Engines(engine, engine, build_reranker(config, Ledger()),
                                         build_coarse_reranker(config, Ledger())))


class MemoStandInCruiseAgent(CruiseAgent):
    """`StandInCruiseAgent` whose reranker and search pipeline compute each distinct query once
    (`MemoReranker`, `MemoSearch`): for runs over the synthetic full split."""

    def __init__(self, search_pipeline=None, config=None):
        config = config or config_from_environment()
        engine = InstantEngine()
        search = MemoSearch(search_pipeline) if search_pipeline is not None else None
        super().__init__(search, config,
                         engines=Engines(engine, engine, MemoReranker(build_reranker(config, Ledger())),
                                         build_coarse_reranker(config, Ledger())))

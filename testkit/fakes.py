"""Stand-ins for what lies outside the chain: engines that answer from a script, a search
pipeline that returns fixed hits, a reranker that scores with a function, and the real
CruiseAgent wired to them for runs through local_evaluation.py. The chain itself is real."""
from __future__ import annotations

import re
import time
import zlib

from agents.cruise_agent import CruiseAgent
from agents.engines.base import ChatEngine, ChatResult, Engines, Reranker
from minibench.standin import InstantEngine, odds_from_confidence

# How models write an abstention besides the contract's exact "I don't know": a curly apostrophe,
# a line break inside the phrase, both, the long form broken. Every "I don't know" test gives the
# agent each of them.
IDK_SPELLINGS = ("I don't know", "I don\u2019t know", "I don't\nknow", "I don\u2019t\nknow", "I do not\nknow")


class FakeClock:
    """Time that moves only when something sleeps on it (the scripted engines' stage times), so a
    test of the deadline is exact on a busy machine. tests/conftest.py `fake_clock` puts it in
    place of the chain's, the agent's and the scripted engines' clocks."""

    def __init__(self):
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds

    perf_counter = monotonic = __call__


class ScriptedEngine(ChatEngine):
    """Answers each request with `script[stage](request)`; records every call's stage and size."""

    supports_images = True

    def __init__(self, script: dict, sleep_s: dict | None = None, fail: dict | None = None):
        super().__init__("scripted")
        self.script = script
        self.sleep_s = sleep_s or {}
        self.fail = fail or {}  # stage -> predicate(request) that makes the whole call raise
        self.calls: list[tuple[str, int]] = []
        self.requests: list[tuple[str, object]] = []  # (stage, ChatRequest) of every request seen
        self._stage = ""

    def generate(self, requests, sampling, *, stage="chat"):
        self._stage = stage
        return super().generate(requests, sampling, stage=stage)

    def _generate(self, requests, sampling):
        self.calls.append((self._stage, len(requests)))
        self.requests += [(self._stage, r) for r in requests]
        time.sleep(self.sleep_s.get(self._stage, 0.0))
        failing = self.fail.get(self._stage)
        if failing and any(failing(r) for r in requests):
            raise RuntimeError(f"scripted failure in {self._stage}")
        if sampling.choices and self._stage == "route":
            return [ChatResult(text=yes_no_from_two_lines(self.script["route"](r), r), prompt_tokens=10, output_tokens=1)
                    for r in requests]
        if sampling.choices and self._stage == "verify":
            return [odds_from_confidence(self.script["verify"](r)) for r in requests]
        return [ChatResult(text=self.script[self._stage](r), prompt_tokens=10, output_tokens=3) for r in requests]


def yes_no_from_two_lines(scripted: str, request) -> str:
    """A router scripted with the paper's two-line reply, asked one yes/no question
    (router_mode "yes_no"): the word of the label the request asks about; a reply without the
    two lines stays as it is (unreadable either way)."""
    from agents.cruise.stages.s1_route import parse_route
    from agents.stages.prompts import load_prompt

    route = parse_route(scripted)
    if not route.parsed:
        return scripted
    asks_real_time = load_prompt("route_real_time").user.template.splitlines()[-1] in request.messages[-1]["content"]
    return "yes" if (route.is_real_time if asks_real_time else route.needs_external) else "no"


class FunctionReranker(Reranker):
    """Scores each (query, chunk) pair with a plain function."""

    def __init__(self, score):
        super().__init__("function")
        self.score_pair = score

    def _score(self, pairs):
        return [self.score_pair(query, chunk) for query, chunk in pairs]


class WithoutWebFlag:
    """A search pipeline (wrapping another) that does not say whether it has a web index (only the official
    UnifiedSearchPipeline sets `web_search`): it is tried."""

    def __init__(self, pipeline):
        self.pipeline = pipeline

    def __call__(self, query, k=5):
        return self.pipeline(query, k)


class FakePipeline:
    """Image search returns `image_hits`; text search returns `web_hits` (or raises, Task 1)."""

    def __init__(self, image_hits=(), web_hits=None):
        self.image_hits = list(image_hits)
        self.web_hits = web_hits
        self.web_search = web_hits is not None
        self.calls: list[str] = []
        self.text_queries: list[str] = []  # what web search was asked

    def __call__(self, query, k=5):
        if isinstance(query, str):
            self.calls.append("text")
            self.text_queries.append(query)
            if self.web_hits is None:
                raise ValueError("Text input is not supported as web search is not enabled.")
            return self.web_hits[:k]
        self.calls.append("image")
        return self.image_hits[:k]


def last_user_text(request) -> str:
    return request.messages[-1]["content"]


def has_notes(request) -> bool:
    """Whether a request carries retrieved notes: in the question's message (our prompts) or in a
    message of their own (the baseline's layout, agents/stages/baseline_prompt.py)."""
    return any(mark in str(m["content"]) for m in request.messages for mark in ("<<<NOTES", "<search_results>"))


def echo_engine():
    """A VLM that always claims full confidence: only the chain's own rules can stop an answer."""
    return ScriptedEngine({
        "route": lambda r: "Needs External Info: yes\nIs Real-Time: no",
        "summarize": lambda r: "A photo.",
        "answer": lambda r: "A short answer.",
        "consistency": lambda r: "yes",
        "verify": lambda r: "CONFIDENCE: 1.0",
    })


class ScriptedCruiseAgent(CruiseAgent):
    """The real CruiseAgent chain over the echo engine, for runs through local_evaluation.py."""

    def __init__(self, search_pipeline=None, config=None):
        engine = echo_engine()
        super().__init__(search_pipeline, config, engines=Engines(engine, engine, FunctionReranker(lambda q, c: 0.9)))


DIRECTIVE = re.compile(r"#(\w+)=(\S+)")
STEERED_HITS = [{"index": 0, "score": 0.88, "entities": [{"entity_name": "Scripted landmark", "entity_attributes": {
    "description": "Relevant: the landmark in the photo.\n\nRelevant: it opened long ago.\n\nUnrelated filler text."}}]}]


def directives(request) -> dict[str, str]:
    """The `#key=value` words of the question quoted in a prompt (underscores stand for spaces)."""
    return {k: v.replace("_", " ") for k, v in DIRECTIVE.findall(last_user_text(request))}


def steered_answer(request) -> str:
    """`#say=X` for both paths; with `#sc=no` the answer without notes differs, so that the
    consistency check has two different answers to compare (identical ones skip the VLM)."""
    wanted = directives(request)
    if wanted.get("sc") == "no" and not has_notes(request):
        return "Something else entirely"
    return wanted.get("say", "I don't know")


def steered_engine():
    """A router and VLM whose every answer is set by words in the question: `#say=Big_Ben` (the
    answer of both paths, else "I don't know"), `#conf=0.3` (the CoV confidence, default 0.95),
    `#sc=no` (the paths differ and the VLM calls them inconsistent), `#ext=no` (no external information needed), `#rt=yes` (real-time)."""
    return ScriptedEngine({
        "route": lambda r: f"Needs External Info: {directives(r).get('ext', 'yes')}\n"
                           f"Is Real-Time: {directives(r).get('rt', 'no')}",
        "summarize": lambda r: "A scripted photo summary.",
        "answer": steered_answer,
        "consistency": lambda r: "No" if directives(r).get("sc") == "no" else "Yes",
        "verify": lambda r: f"CONFIDENCE: {directives(r).get('conf', '0.95')}\nREASONING: scripted",
    })


def steered_score(query: str, chunk: str) -> float:
    """`#weak=1` in the question: every chunk scores 0.2; else "Relevant" paragraphs 0.85, others 0.05.
    (The chunker puts the entity's name in front of a description paragraph, so look inside.)"""
    if "#weak=" in query:
        return 0.2
    return 0.85 if "Relevant:" in chunk else 0.05


class SteeredCruiseAgent(CruiseAgent):
    """The real CruiseAgent chain over `steered_engine`, for runs through local_evaluation.py in
    which each question picks its own outcome and Algorithm 1 branch. Image search returns one
    hit with two relevant paragraphs and one filler paragraph."""

    def __init__(self, search_pipeline=None, config=None):
        engine = steered_engine()
        super().__init__(FakePipeline(STEERED_HITS), config, engines=Engines(engine, engine, FunctionReranker(steered_score)))


# Hits whose paragraphs carry the judge stub's markers (testkit.scripted_agent.FakeOpenAIServer):
# the paragraph a question's notes start with decides whether its answer is judged right.
INSTANT_HITS = [{"index": 0, "score": 0.9, "entities": [{"entity_name": "Stand-in entity", "entity_attributes": {
    "description": "[yes] the tower by the river.\n\n[no] a bridge over the water.\n\n"
                   "[yes] the coffee in the cup.\n\n[no] a plant on the table.\n\n[yes] a red bus."}}]}]


def hashed_score(query: str, chunk: str) -> float:
    """A score in [0.2, 0.9) that depends only on the pair (crc32: the same in every process),
    so each question ranks the paragraphs in its own order."""
    return 0.2 + 0.7 * (zlib.crc32(f"{query}|{chunk}".encode()) % 1000) / 1000.0


class InstantCruiseAgent(CruiseAgent):
    """The real CruiseAgent chain over minibench.standin's InstantEngine (every stage answered at
    once, in its own format), fixed image hits and a hashed reranker score: runs of hundreds of
    turns through local_evaluation.py in seconds."""

    def __init__(self, search_pipeline=None, config=None):
        engine = InstantEngine()
        super().__init__(FakePipeline(INSTANT_HITS), config, engines=Engines(engine, engine, FunctionReranker(hashed_score)))


# A fact of the mini benchmark's Summer Palace page that only its body holds (its snippet stops
# before the practical notes), asked through `local_evaluation.py --web-contents` with the search
# pipeline the evaluator itself builds over the mini indices and the mini contents database
# (tests/full/test_web_contents.py).
BODY_QUESTION = "which subway station is nearest to the summer palace in beijing?"


BODY_FACT = "Beigongmen"


def body_fact_reply(request) -> str:
    return f"{BODY_FACT} station." if BODY_FACT in last_user_text(request) else "I don't know."


class BodyFactAgent(CruiseAgent):
    """The real chain with scripted chat models, a reranker that rates the chunk holding the fact
    (the models are outside the unit), and whatever search pipeline the evaluator hands over."""

    def __init__(self, search_pipeline=None, config=None):
        vlm = ScriptedEngine({"summarize": lambda r: "A palace by a lake.", "answer": body_fact_reply,
                              "consistency": lambda r: "yes", "verify": lambda r: "CONFIDENCE: 0.95"})
        router = ScriptedEngine({"route": lambda r: "Needs External Info: yes\nIs Real-Time: no"})
        reranker = FunctionReranker(lambda query, chunk: 0.95 if BODY_FACT in chunk else 0.3)
        super().__init__(search_pipeline, config, engines=Engines(router=router, vlm=vlm, reranker=reranker))

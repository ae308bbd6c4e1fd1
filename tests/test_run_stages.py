"""A system with no run of its own: the runtime runs its stages in order (agents/run_stages.py).

Each stage is a function over a batch that returns one dict per turn of the fields it declares it
writes, and reads only the earlier fields it declares; the runtime times, guards and traces each,
then decides every turn by the system's rule. The VLM is a scripted stand-in (outside the unit).
"""
from __future__ import annotations

from dataclasses import dataclass

import pytest
from PIL import Image

from agents.base_agent import IDK_ANSWER
from agents.config.loading import load_config
from agents.cruise_agent import CruiseAgent
from agents.engines.base import Engines
from agents.plugin import Stage, System, between, ranged
from agents.runtime.system import SystemRefused
from agents.settings import SettingError, check_settings
from testkit.fakes import FakePipeline, FunctionReranker, ScriptedEngine

pytestmark = pytest.mark.usefixtures("registered_systems")


def count_words(batch):
    return [{"words": len(turn.query.split())} for turn in batch.turns]


COUNT = Stage("count", batch_fn=count_words, writes=("words",))


def reply(batch):
    wanted = [reads["words"] >= batch.settings.min_words for reads in batch.reads]
    values = [{"query": turn.query, "context": f"{reads['words']} words"} for turn, reads in zip(batch.turns, batch.reads)]
    return [{"rag_answer": text or IDK_ANSWER} for text in batch.ask("answer_with_context", values, wanted=wanted)]


REPLY = Stage("reply", batch_fn=reply, reads=("words",), writes=("rag_answer",))


@dataclass
class WordSettings:
    min_words: int = ranged(3, between(1, 5))


def decide(signals, cfg):
    """Questions of more than twice min_words words (6 by default) are rejected whatever the reply."""
    return signals["rag_answer"] if signals["words"] <= 2 * cfg.own.min_words else IDK_ANSWER


def words_system(stages=(COUNT, REPLY), **changes) -> System:
    return System(name="words", stages=stages, decide=decide, settings=WordSettings, **changes)


class RecordingEngine(ScriptedEngine):
    """The scripted VLM, also noting each call's max_tokens."""

    def __init__(self, script):
        super().__init__(script)
        self.max_tokens: list[int] = []

    def generate(self, requests, sampling, *, stage="chat"):
        self.max_tokens.append(sampling.max_tokens)
        return super().generate(requests, sampling, stage=stage)


def ask(registered_systems, system, queries, pipeline=None, **settings):
    """The answers and traces of one batch of `queries` (one photo each) under `system`; the VLM
    replies "echo: <the context line>" to every request."""
    registered_systems(system)
    vlm = RecordingEngine({stage.name: lambda r: "echo: " + r.messages[-1]["content"].splitlines()[-1]
                           for stage in system.stages})
    engines = Engines(router=ScriptedEngine({}), vlm=vlm, reranker=FunctionReranker(lambda q, c: 0.0))
    config = load_config("cpu", "full", system=system.name, warmup_at_load=False, **settings)
    agent = CruiseAgent(pipeline, config=config, engines=engines)
    answers = agent.batch_generate_response(queries, [Image.new("RGB", (32, 32))] * len(queries),
                                            [[] for _ in queries])
    return answers, agent.last_batch_report["traces"], vlm


QUERIES = ["what's that", "what is this thing here", "what is this long thing in the photo right here"]


def test_the_stages_run_in_order_each_reading_what_the_one_before_wrote_and_the_rule_decides(registered_systems):
    answers, traces, vlm = ask(registered_systems, words_system(), QUERIES)
    # 2 words: under min_words (3), not asked; 5 words: asked; 10 words: asked, then rejected by the rule
    assert [t["words"] for t in traces] == [2, 5, 10]
    assert vlm.calls == [("reply", 2)] and vlm.max_tokens == [32]
    assert answers[0] == IDK_ANSWER and traces[0]["branch"] == "abstained"
    assert answers[1].startswith("echo: ") and traces[1]["branch"] == "answered"
    assert traces[2]["rag_answer"].startswith("echo: ")
    assert answers[2] == IDK_ANSWER and traces[2]["branch"] == "abstained"
    assert [t["final_answer"] for t in traces] == answers
    # every stage timed, the one without a model too, in the order of the list
    assert list(traces[0]["stage_ms"]) == ["count", "reply"]
    assert all(t["errors"] == [] for t in traces)


def test_a_setting_of_the_systems_own_reaches_its_stage(registered_systems):
    _, traces, vlm = ask(registered_systems, words_system(), QUERIES, min_words=5)
    assert vlm.calls == [("reply", 2)]
    _, traces, vlm = ask(registered_systems, words_system(), QUERIES, min_words=1)
    assert vlm.calls == [("reply", 3)]
    # the rule reads it too: more than 2 words is past twice min_words
    assert [t["branch"] for t in traces] == ["answered", "abstained", "abstained"]


def test_a_range_of_its_own_takes_both_bounds_and_refuses_past_them():
    span = between(1, 5)
    assert (span.low, span.high) == (1, 5)
    check_settings(WordSettings(min_words=1))
    check_settings(WordSettings(min_words=5))
    for wrong in (0, 6):
        with pytest.raises(SettingError, match="min_words"):
            check_settings(WordSettings(min_words=wrong))
    assert span.meaning == "from 1 to 5" and between(3, 3).high == 3  # one value is a range too
    assert between(2).high is None and "at least 2" in between(2).meaning
    with pytest.raises(ValueError, match="below"):
        between(5, 1)


def test_a_stage_switched_off_is_skipped_and_the_next_reads_none(registered_systems):
    seen = []

    def note(batch):
        seen.extend(reads["words"] for reads in batch.reads)
        return [{"rag_answer": "yes"} for _ in batch.turns]

    switched = Stage("count", batch_fn=count_words, writes=("words",), switch="use_retrieval")
    noted = Stage("note", batch_fn=note, reads=("words",), writes=("rag_answer",))
    system = System(name="words", stages=(switched, noted), decide=lambda s, cfg: s["rag_answer"])
    _, traces, _ = ask(registered_systems, system, QUERIES[:2], use_retrieval=False)
    assert seen == [None, None]
    assert list(traces[0]["stage_ms"]) == ["note"] and "words" not in traces[0]
    seen.clear()
    _, traces, _ = ask(registered_systems, system, QUERIES[:2], use_retrieval=True)
    assert seen == [2, 5] and list(traces[0]["stage_ms"]) == ["count", "note"]


@pytest.mark.parametrize("stage, message", [
    (Stage("reply", batch_fn=lambda b: [{"rag_answer": "x", "extra": 1} for _ in b.turns], writes=("rag_answer",)),
     "stage 'reply' writes 'extra', which it does not declare; its writes: ['rag_answer']"),
    (Stage("reply", batch_fn=lambda b: [{"rag_answer": "x"} for _ in b.turns][1:], writes=("rag_answer",)),
     "stage 'reply' must return one dict per turn (1), got a list of 0"),  # the retry's, on each turn alone
    (Stage("reply", batch_fn=lambda b: {"rag_answer": "x"}, writes=("rag_answer",)),
     "stage 'reply' must return one dict per turn (1), got a dict"),
    (Stage("reply", batch_fn=lambda b: ["x" for _ in b.turns], writes=("rag_answer",)),
     "stage 'reply' must return a dict per turn, got a str"),
    (Stage("reply", batch_fn=lambda b: [{"rag_answer": "x", "chunks": 3} for _ in b.turns],
           writes=("rag_answer", "chunks")),
     "stage 'reply': trace field 'chunks' must be a list"),
    (Stage("reply", batch_fn=lambda b: [{"rag_answer": str(r["word"])} for r in b.reads], reads=("words",),
           writes=("rag_answer",)),
     "stage 'reply' reads 'word', which it does not declare; its reads: ['words']"),
])
def test_a_stage_that_breaks_its_record_fails_its_turns_in_one_line_naming_it(registered_systems, stage, message):
    answers, traces, _ = ask(registered_systems, words_system((COUNT, stage)), QUERIES[:2])
    assert answers == [IDK_ANSWER, IDK_ANSWER]
    assert all(t["branch"] == "error" for t in traces)
    assert all(len(t["errors"]) == 1 and t["errors"][0].startswith(f"reply: StageContractError: {message}")
               for t in traces)
    assert traces[0]["stage_ms"]["count"] >= 0  # the stage before it ran and kept its time


def test_a_note_a_stage_makes_on_one_of_its_turns_lands_on_that_turn_whatever_its_place(registered_systems):
    """A note belongs to the turn the stage made it on: with an empty question failed first, the
    stage serves turns 1 and 2 as its positions 0 and 1, and a retry after a fault serves a smaller
    group still; the note lands on the turn, never on the position."""
    def partial(batch):
        if any(t.query.startswith("boom") for t in batch.turns) and len(batch.turns) > 1:
            raise RuntimeError("a group with the bad question fails whole")
        for i, turn in enumerate(batch.turns):
            if "thing" in turn.query:
                batch.error(i, f"image search: TimeoutError for {turn.query!r}")
        return [{"rag_answer": "ok"} for _ in batch.turns]

    system = System(name="words", stages=(Stage("look", batch_fn=partial, writes=("rag_answer",)),),
                    decide=lambda s, cfg: s["rag_answer"])
    queries = ["", "what's that", "boom, what is that", "what is this thing here"]
    answers, traces, _ = ask(registered_systems, system, queries)
    assert answers == [IDK_ANSWER, "ok", "ok", "ok"]
    assert [t["errors"] for t in traces] == [
        ["empty question"], [], [], ["look: image search: TimeoutError for 'what is this thing here'"]]


@pytest.mark.parametrize("stages, message", [
    ((REPLY, COUNT), "stage 'reply' reads 'words', which no stage before it writes; written before it: ['perception']"),
    ((COUNT, Stage("reply", writes=("rag_answer",))),
     "stage 'reply' has no batch_fn: a system without a run of its own calls each stage's batch_fn in order"),
])
def test_a_record_whose_stages_cannot_run_in_order_is_refused_when_it_registers(registered_systems, stages, message):
    with pytest.raises(SystemRefused) as refused:
        registered_systems(words_system(stages))
    assert message in str(refused.value)


def test_a_system_with_a_run_of_its_own_may_list_stages_without_a_batch_fn(registered_systems):
    def own_run(batch):
        return [IDK_ANSWER] * len(batch.turns), [{}] * len(batch.turns)

    record = words_system((COUNT, Stage("reply", writes=("rag_answer",))), run=own_run)
    assert registered_systems(record) is record


def test_a_stage_sees_exactly_the_fields_it_declares_and_asks_with_its_own_token_budget(registered_systems):
    seen = []

    def short_reply(batch):
        seen.extend(dict(reads) for reads in batch.reads)
        return [{"rag_answer": text} for text in batch.ask("answer_with_context", [
            {"query": t.query, "context": ""} for t in batch.turns], max_tokens=8)]

    short = Stage("reply", batch_fn=short_reply, reads=("words",), writes=("rag_answer",))
    _, _, vlm = ask(registered_systems, words_system((COUNT, short)), QUERIES[:2])
    assert seen == [{"words": 2}, {"words": 5}] and vlm.max_tokens == [8]


def test_a_later_stage_reads_an_earlier_stages_field_and_what_perception_read(registered_systems):
    def mark(batch):
        return [{"marked": len(turn.query)} for turn in batch.turns]

    def echo_mark(batch):
        return [{"rag_answer": f"{reads['marked']} {reads['perception']}"} for reads in batch.reads]

    marked = Stage("mark", batch_fn=mark, writes=("marked",))
    answers, traces, _ = ask(registered_systems, words_system((marked, COUNT, REPLY)), QUERIES[:2])
    assert [t["marked"] for t in traces] == [len(q) for q in QUERIES[:2]]
    assert [t["words"] for t in traces] == [2, 5] and answers[1].startswith("echo: ")
    # what perception read is None: this VLM sees the photo
    echoed = Stage("reply", batch_fn=echo_mark, reads=("marked", "perception"), writes=("rag_answer",))
    answers, _, _ = ask(registered_systems, words_system((marked, COUNT, echoed)), QUERIES[:2])
    assert answers == [f"{len(q)} None" for q in QUERIES[:2]]


def test_the_shared_retrieval_stage_searches_the_pipeline_for_a_system_without_a_run(registered_systems):
    from agents.plugin import RETRIEVE

    def first_chunk(batch):
        return [{"rag_answer": (reads["chunks"] or [IDK_ANSWER])[0]} for reads in batch.reads]

    quote = Stage("quote", batch_fn=first_chunk, reads=("chunks",), writes=("rag_answer",))
    web = [{"index": "https://food.example/espresso_chunk_0", "score": 0.6, "page_name": "Espresso - Food",
            "page_snippet": "Espresso is brewed under pressure.", "page_url": "https://food.example/espresso"}]
    pipeline = FakePipeline(web_hits=web)
    answers, traces, _ = ask(registered_systems, System(name="quoter", stages=(RETRIEVE, quote),
                                                        decide=lambda s, cfg: s["rag_answer"]),
                             ["What drink is this?"], pipeline=pipeline)
    assert pipeline.calls == ["image", "text"] and "Espresso: Espresso is brewed under pressure." in traces[0]["chunks"]
    assert traces[0]["searches_run"] == ["image", "web"] and answers[0] in traces[0]["chunks"]
    assert list(traces[0]["stage_ms"]) == ["retrieve", "quote"]
    # no summary joins the question: the reranker's and web search's query is the question itself
    assert traces[0]["retrieval_query"] == "What drink is this?" == pipeline.text_queries[0]


class BrokenImageSearch(FakePipeline):
    """A search pipeline whose image search fails; web search answers."""

    def __call__(self, query, k=5):
        if not isinstance(query, str):
            raise ConnectionError("image index unreachable")
        return super().__call__(query, k)


def test_a_search_that_fails_costs_its_turn_that_search_only_and_says_so_in_its_trace(registered_systems):
    from agents.plugin import RETRIEVE

    def count(batch):
        return [{"rag_answer": str(len(reads["chunks"]))} for reads in batch.reads]

    counted = Stage("count_chunks", batch_fn=count, reads=("chunks",), writes=("rag_answer",))
    web = [{"index": "https://food.example/espresso_chunk_0", "score": 0.6, "page_name": "Espresso - Food",
            "page_snippet": "Espresso is brewed under pressure.", "page_url": "https://food.example/espresso"}]
    answers, traces, _ = ask(registered_systems, System(name="counter", stages=(RETRIEVE, counted),
                                                        decide=lambda s, cfg: s["rag_answer"]),
                             ["What drink is this?", "Who makes it?"], pipeline=BrokenImageSearch(web_hits=web))
    assert answers == ["1", "1"] and [t["searches_run"] for t in traces] == [["web"], ["web"]]
    assert [t["errors"] for t in traces] == [["retrieve: image search: ConnectionError: image index unreachable"]] * 2


def test_a_batch_whose_budget_ran_out_before_it_started_runs_no_stage(registered_systems):
    import time

    from agents.run_stages import answer_batch
    from agents.runtime.deadline import StageCosts
    from agents.stages.types import Turn

    system = registered_systems(words_system())
    engines = Engines(router=ScriptedEngine({}), vlm=ScriptedEngine({"reply": lambda r: "late"}),
                      reranker=FunctionReranker(lambda q, c: 0.0))
    cfg = load_config("cpu", "full", system="words", warmup_at_load=False)
    turns = [Turn(query=q, image=None, history=[]) for q in QUERIES[:2]]
    answers, traces = answer_batch(system, turns, engines, None, cfg, StageCosts(), time.monotonic() - 3600)
    assert answers == [IDK_ANSWER, IDK_ANSWER]
    assert traces[0]["deadline_cut_before"] == "count" and traces[0]["stage_ms"] == {}


def test_a_stage_reads_what_perception_read_for_a_vlm_that_cannot_see(registered_systems, monkeypatch):
    from agents.engines import image_classifier, ocr
    from agents.stages import s0a_perceive
    from testkit.perception_scenes import BlindEngine

    # the classifier and the OCR as stand-ins (tests/full/test_perception.py runs the real ones)
    monkeypatch.setattr(image_classifier, "top_labels", lambda images, k=5: [[("street sign", 0.9)]] * (
        1 if isinstance(images, Image.Image) else len(images)))
    monkeypatch.setattr(ocr, "read_text", lambda image, max_side=960: [([[0, 0], [9, 0], [9, 9], [0, 9]], "OPEN", 0.97)])
    monkeypatch.setattr(s0a_perceive, "SHARED_CACHE", s0a_perceive.PerceptionCache())

    def read_sign(batch):
        return [{"rag_answer": " ".join(text for text, _ in reads["perception"]["ocr_lines"])} for reads in batch.reads]

    system = registered_systems(System(name="sign", decide=lambda s, cfg: s["rag_answer"], stages=(
        Stage("sign", batch_fn=read_sign, reads=("perception",), writes=("rag_answer",)),)))
    engines = Engines(router=ScriptedEngine({}), vlm=BlindEngine({}), reranker=FunctionReranker(lambda q, c: 0.0))
    agent = CruiseAgent(None, config=load_config("cpu", "full", system="sign", warmup_at_load=False), engines=engines)
    photo = Image.new("RGB", (96, 64), "yellow")
    assert agent.batch_generate_response(["What does it say?"], [photo], [[]]) == ["OPEN"]
    assert system.name == agent.last_batch_report["traces"][0]["system"]

"""The chain end to end over scripted engines: stages, engine calls per batch, final answers."""
from __future__ import annotations

import time

import pytest
from PIL import Image

from agents.base_agent import IDK_ANSWER
from agents.cruise_agent import CruiseAgent
from agents.engines.base import Engines
from tests.fakes import FakePipeline, FunctionReranker, ScriptedEngine, last_user_text

WHERE, COLOR, PRICE = "Where does this bus go?", "What color is the bus?", "What does a ticket cost today?"


def route(req):
    text = last_user_text(req)
    if WHERE in text:
        return "Needs External Info: yes\nIs Real-Time: no"
    if COLOR in text:
        return "needs external info: No.\nis real-time: no"
    return "Needs External Info: yes\nIs Real-Time: yes"


def answer(req):
    text = last_user_text(req)
    if WHERE in text:
        return "Answer: Camden."
    if COLOR in text:
        return "Red"
    return "Five pounds" if "<<<NOTES" in text else "I'm not sure."


def verify(req):
    text = last_user_text(req)
    if "Proposed answer: Camden." in text:
        return "CONFIDENCE: 0.95\nREASONING: the notes say so"
    if "Proposed answer: Red" in text:
        return "Confidence: 1.0"
    return "CONFIDENCE: 0.2"


VLM_SCRIPT = {
    "summarize": lambda req: "A red double-decker bus at a stop. It is raining.",
    "answer": answer,
    "consistency": lambda req: "Yes, they agree.",
    "verify": verify,
}

IMAGE_HITS = [
    {
        "index": 0,
        "score": 0.91,
        "entities": [
            {
                "entity_name": "Route 24",
                "entity_attributes": {
                    "description": "Route 24 runs from Pimlico to Camden.\n\nIt uses red double-decker buses.",
                    "summary": "Route 24 runs from Pimlico to Camden.",  # duplicate paragraph: dropped
                    "opened": "1910",  # not a chunk field
                },
            }
        ],
    }
]


def rerank_score(query: str, chunk: str) -> float:
    if PRICE in query:
        return 0.3  # real-time question with weak evidence
    return 0.9 if "Camden" in chunk else 0.2


def make_agent(preset="full", sleep_s=None, fail=None, web_hits=None, **overrides):
    engines = Engines(
        router=ScriptedEngine({"route": route}, sleep_s=sleep_s),
        vlm=ScriptedEngine(VLM_SCRIPT, sleep_s=sleep_s, fail=fail),
        reranker=FunctionReranker(rerank_score),
    )
    # The fake hits are in the paper's KG shape (description / caption / summary); the chunks
    # the chain sees of the official infobox shape are tested in test_chunking.py.
    overrides.setdefault("chunker", "paper_fields")
    return CruiseAgent(FakePipeline(IMAGE_HITS, web_hits), engines=engines, profile="cpu", preset=preset, **overrides)


def batch(queries):
    return queries, [Image.new("RGB", (64, 48), "red") for _ in queries], [[] for _ in queries]


def stages_called(agent):
    return [c["stage"] for c in agent.last_batch_report["engine_calls"]]


EXPECTED = {
    # preset: (engine calls of the batch in order, final answers for WHERE, COLOR, PRICE)
    "full": (["route", "summarize", "rerank", "answer", "consistency", "verify"], ["Camden.", "Red", IDK_ANSWER]),
    "no_cov": (["route", "summarize", "rerank", "answer", "consistency"], ["Camden.", "Red", IDK_ANSWER]),
    "no_cov_no_sc": (["route", "summarize", "rerank", "answer"], ["Camden.", "Red", IDK_ANSWER]),
    "rag_baseline": (["summarize", "rerank", "answer"], ["Camden.", "Red", "Five pounds"]),
    "vision_only": (["answer"], ["Camden.", "Red", IDK_ANSWER]),
}


@pytest.mark.parametrize("preset", sorted(EXPECTED))
def test_each_preset_runs_its_stages_once_per_batch(preset):
    stages, answers = EXPECTED[preset]
    agent = make_agent(preset)
    assert agent.batch_generate_response(*batch([WHERE, COLOR, PRICE])) == answers
    assert stages_called(agent) == stages
    # The number of engine calls does not grow with the batch.
    agent.batch_generate_response(*batch([WHERE, COLOR, PRICE] * 4))
    assert stages_called(agent) == stages
    assert len(agent.last_batch_report["traces"]) == 12


def test_trace_holds_every_signal_of_a_turn():
    agent = make_agent("full")
    agent.batch_generate_response(*batch([WHERE, COLOR, PRICE]))
    where, color, price = agent.last_batch_report["traces"]
    assert where["needs_external"] and not where["is_real_time"] and where["router_parsed"]
    assert where["summary"] == "A red double-decker bus at a stop."
    assert where["retrieval_query"] == WHERE + " A red double-decker bus at a stop."
    assert [c["text"] for c in where["chunks"]] == [
        "Route 24 runs from Pimlico to Camden.",
        "It uses red double-decker buses.",
    ]
    assert [c["score"] for c in where["chunks"]] == [0.9, 0.2]
    assert where["theta"] == pytest.approx(0.1)  # median .55 - 1.5 * MAD .35 = .025, below tau
    assert where["kept_chunks"] == ["Route 24 runs from Pimlico to Camden.", "It uses red double-decker buses."]
    assert where["context"].startswith("[Info 1] Route 24 runs from Pimlico to Camden.")
    assert where["retrieval_score"] == 0.9
    assert where["rag_answer"] == "Camden." and where["direct_answer"] == "Camden."
    assert where["consistent"] is True and where["cov_confidence"] == 0.95
    assert where["branch"] == "context_verified" and where["final_answer"] == "Camden."
    assert set(where["stage_ms"]) >= {"route", "summarize", "retrieve", "rerank", "answer", "consistency", "verify"}
    assert color["chunks"] == [] and color["branch"] == "no_context_verified"
    assert price["is_real_time"] and price["branch"] == "real_time_weak_retrieval"


def test_theta_matches_mad_formula_on_the_trace():
    from agents.cruise.stages.s5_rerank import mad_threshold

    agent = make_agent("full")
    agent.batch_generate_response(*batch([WHERE]))
    (trace,) = agent.last_batch_report["traces"]
    assert trace["theta"] == mad_threshold([c["score"] for c in trace["chunks"]])


def test_web_search_adds_snippets_when_enabled():
    web = [{"index": "u_chunk_0", "score": 0.5, "page_name": "TfL", "page_url": "https://tfl.example/24",
            "page_snippet": "Bus 24 timetable.\nBuses run to Camden every 8 minutes."}]
    agent = make_agent("full", web_hits=web)
    agent.batch_generate_response(*batch([WHERE]))
    (trace,) = agent.last_batch_report["traces"]
    assert {item["source"] for item in trace["retrieved"]} == {"image", "web"}
    assert "Buses run to Camden every 8 minutes." in [c["text"] for c in trace["chunks"]]


def test_task1_pipeline_refusing_text_search_costs_nothing_but_web_context():
    agent = make_agent("full")  # FakePipeline without web hits has web_search False: never asked
    agent.batch_generate_response(*batch([WHERE]))
    assert agent.search_pipeline.calls == ["image"]
    assert agent.last_batch_report["traces"][0]["errors"] == []


def test_a_failing_stage_costs_only_its_own_turns():
    fail = {"answer": lambda req: PRICE in last_user_text(req)}
    agent = make_agent("full", fail=fail)
    answers = agent.batch_generate_response(*batch([WHERE, PRICE, COLOR, WHERE]))
    # First try fails for everyone, then the halves [WHERE, PRICE] and [COLOR, WHERE] are retried.
    assert answers == [IDK_ANSWER, IDK_ANSWER, "Red", "Camden."]
    traces = agent.last_batch_report["traces"]
    assert traces[1]["branch"] == "error" and "scripted failure" in traces[1]["errors"][0]
    assert traces[2]["errors"] == []


def test_empty_question_gets_idk_without_breaking_the_batch():
    agent = make_agent("full")
    answers = agent.batch_generate_response(*batch(["   ", WHERE]))
    assert answers == [IDK_ANSWER, "Camden."]
    assert agent.last_batch_report["traces"][0]["errors"] == ["empty question"]


@pytest.mark.parametrize(
    "args",
    [
        ([WHERE, COLOR], [None], [[], []]),
        ([WHERE], [None], [[], []]),
        ([WHERE] * 17, [None] * 17, [[]] * 17),
    ],
)
def test_caller_errors_raise_value_error(args):
    with pytest.raises(ValueError):
        make_agent("full").batch_generate_response(*args)


@pytest.mark.parametrize("turn_budget_s, ran_stages", [
    (10.0, ["route", "summarize", "rerank", "answer", "consistency", "verify"]),
    (0.42, ["route", "summarize", "rerank"]),
    (0.0, []),
])
def test_deadline_stops_before_a_stage_would_overrun(turn_budget_s, ran_stages):
    sleep = {s: 0.15 for s in ("route", "summarize", "answer", "consistency", "verify")}
    agent = make_agent("full", sleep_s=sleep, safety_margin_s=0.0)
    agent.batch_generate_response(*batch([WHERE]))  # learns what each stage costs
    agent.config = agent.config.replace(turn_budget_s=turn_budget_s)
    start = time.monotonic()
    answers = agent.batch_generate_response(*batch([WHERE]))
    elapsed = time.monotonic() - start
    assert elapsed <= turn_budget_s + 0.1
    assert stages_called(agent) == ran_stages
    trace = agent.last_batch_report["traces"][0]
    assert trace["deadline_cut"] is (turn_budget_s < 10)
    if trace["deadline_cut"]:
        assert answers == [IDK_ANSWER]  # nothing verified: no answer

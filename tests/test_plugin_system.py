"""A system from outside agents/: what the runtime gives every system without its asking.

A system defined here lists only its own stage and opens its batch with the runtime's
`open_batch`: its turns reach its stage carrying the picture as text when the VLM cannot see
(the perception every system's list opens with), and each trace records what the harness handed
over with the turn (`harness_domain`, `harness_passages`) and what perception read. The
perception models are stand-ins that read one sign in every photo (they lie outside the unit:
tests/full/test_perception.py runs the real ones).
"""
from __future__ import annotations

import pytest
from PIL import Image

from agents.base_agent import IDK_ANSWER
from agents.config import load_config
from agents.cruise_agent import CruiseAgent
from agents.engines.base import Engines
from agents.runtime.batch import decide_turn, open_batch
from agents.runtime.cost_priors import stage_priors
from agents.runtime.system import Decision, Stage, System, View, register
from testkit.fakes import FunctionReranker, ScriptedEngine
from testkit.perception_scenes import BlindEngine

SIGN = "CLOSED ON MONDAYS"


@pytest.fixture
def perception_reads_a_sign(monkeypatch):
    """The classifier and the OCR as stand-ins: every photo shows a street sign that reads SIGN."""
    from agents.engines import image_classifier, ocr
    from agents.stages import s0a_perceive

    def top_labels(images, k=5):
        return [[("street sign", 0.9)]] * (1 if isinstance(images, Image.Image) else len(images))

    monkeypatch.setattr(image_classifier, "top_labels", top_labels)
    monkeypatch.setattr(ocr, "read_text", lambda image, max_side=960: [([[0, 0], [90, 0], [90, 9], [0, 9]], SIGN, 0.97)])
    monkeypatch.setattr(s0a_perceive, "SHARED_CACHE", s0a_perceive.PerceptionCache())


LOOK = Stage("look", trace_fields=("looked_at",))


def run_look(system, turns, engines, pipeline, cfg, costs, started=None):
    """Its one stage reads what each turn carries as its picture; no step of its own for perception."""
    state = open_batch(system, turns, engines, pipeline, cfg, costs, started)
    seen = state.run.stage("look", lambda ts: [t.picture for t in ts], [state.turns], (), lambda: "")
    answers, traces = [], []
    for i, picture in enumerate(seen):
        answer = "a sign" if SIGN in picture else IDK_ANSWER
        decision = decide_turn(system, {"rag_answer": answer}, cfg, state.run, i)
        answers.append(decision.answer)
        traces.append(state.trace(i, {"looked_at": picture, "rag_answer": answer, "branch": decision.branch,
                                      "final_answer": decision.answer}, parsed={}))
    return answers, traces


LOOKER = register(System(name="looker", stages=(LOOK,), run=run_look,
                         decide=lambda trace, cfg: Decision(trace["rag_answer"], "looked"),
                         view=View(funnel=lambda trace, cfg: {}), untimed_prior=None))


def looker_agent(vlm) -> CruiseAgent:
    engines = Engines(router=ScriptedEngine({}), vlm=vlm, reranker=FunctionReranker(lambda q, c: 0.0))
    return CruiseAgent(None, config=load_config("cpu", "full", system="looker", warmup_at_load=False), engines=engines)


def test_a_system_that_lists_no_perception_reads_the_photo_as_text_and_traces_the_harness_fields(
        perception_reads_a_sign):
    agent = looker_agent(BlindEngine({}))
    photo = Image.new("RGB", (96, 64), "yellow")
    answers = agent.batch_generate_response(["What does it say?", "And now?"], [photo, photo.copy()], [[], []],
                                            rag_context_list=[["a passage", "   ", "another"], ""],
                                            domains=["Plants", None])
    assert answers == ["a sign", "a sign"]
    traces = agent.last_batch_report["traces"]
    assert all(SIGN in t["looked_at"] and SIGN in t["perception"]["block"] for t in traces)
    assert [t["harness_domain"] for t in traces] == ["Plants", None]
    assert [t["harness_passages"] for t in traces] == [2, 0]  # blank passages dropped; "" searched, found none
    assert list(traces[0]["stage_ms"]) == ["perceive", "look"]
    # perception is one of its stages: timed per turn (it calls no model) and priced 0, not like a request
    assert LOOKER.stage_names() == ("perceive", "look") and "perceive" in LOOKER.engine_free(agent.config)
    assert stage_priors(LOOKER, agent.config) == {"perceive": 0.0}


def test_a_vlm_that_sees_gets_no_picture_block_and_a_harness_that_hands_nothing_over_is_traced_so(
        perception_reads_a_sign):
    agent = looker_agent(ScriptedEngine({}))
    answers = agent.batch_generate_response(["What does it say?"], [Image.new("RGB", (96, 64))], [[]])
    trace = agent.last_batch_report["traces"][0]
    assert answers == [IDK_ANSWER] and trace["looked_at"] == "" and trace["perception"] is None
    assert (trace["harness_domain"], trace["harness_passages"]) == (None, None)
    assert list(trace["stage_ms"]) == ["look"]

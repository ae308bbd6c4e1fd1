"""A system's rule is run on every turn, and whatever it does costs its own turn alone: a rule that
raises, or returns neither an answer nor a Decision, faults that turn (stage "rule", naming the rule
and what it returned); every turn keeps its trace, its stages' fields in it. Without `abstain_on`,
the rule decides a turn whose answer is "I don't know" too, under its own branch.

Through the agent, over a system of two stages without a run of its own; the VLM is a scripted
stand-in (outside the unit)."""
from __future__ import annotations

import pytest
from PIL import Image

from agents.base_agent import IDK_ANSWER
from agents.config.loading import load_config
from agents.cruise_agent import CruiseAgent
from agents.engines.base import Engines
from agents.plugin import Decision, Stage, System
from testkit.fakes import FunctionReranker, ScriptedEngine

QUESTIONS = ["", "how tall is it?", "who built it?", "when did it open?", "what is that thing?"]


def words(batch):
    return [{"words": len(t.query.split()), "rag_answer": IDK_ANSWER if "open" in t.query else t.query.upper()}
            for t in batch.turns]


WORDS = Stage("words", batch_fn=words, writes=("words", "rag_answer"))


def ask(registered_systems, decide, **record):
    registered_systems(System(name="ruled", stages=(WORDS,), decide=decide, **record))
    engines = Engines(router=ScriptedEngine({}), vlm=ScriptedEngine({}), reranker=FunctionReranker(lambda q, c: 0.0))
    agent = CruiseAgent(None, config=load_config("cpu", "full", system="ruled", warmup_at_load=False), engines=engines)
    answers = agent.batch_generate_response(QUESTIONS, [Image.new("RGB", (32, 32))] * len(QUESTIONS),
                                            [[] for _ in QUESTIONS])
    return answers, agent.last_batch_report["traces"]


def raising_on_who(signals, cfg):
    if signals["rag_answer"].startswith("WHO"):
        raise KeyError("builder")
    return Decision(signals["rag_answer"], "kept")


def test_a_rule_that_raises_on_one_turn_faults_that_turn_alone_and_every_turn_keeps_its_trace(registered_systems):
    answers, traces = ask(registered_systems, raising_on_who)
    assert answers == [IDK_ANSWER, "HOW TALL IS IT?", IDK_ANSWER, IDK_ANSWER, "WHAT IS THAT THING?"]
    assert [t["branch"] for t in traces] == ["error", "kept", "error", "kept", "kept"]
    who = traces[2]
    assert who["words"] == 3 and who["rag_answer"] == "WHO BUILT IT?"  # its stage's fields are kept
    assert who["faults"] == [{"stage": "rule", "exception": "KeyError: 'builder'",
                              "where": f"tests/test_plugin_rule_faults.py:{raising_on_who.__code__.co_firstlineno + 2}"}]
    assert who["errors"] == ["rule: KeyError: 'builder'"]
    assert [t["faults"] for i, t in enumerate(traces) if i != 2] == [[], [], [], []]


@pytest.mark.parametrize("returned", [None, 7, ("an answer", "a branch")])
def test_a_rule_that_returns_neither_an_answer_nor_a_decision_faults_each_turn_it_decides_naming_the_rule(
        registered_systems, returned):
    def decide(signals, cfg):
        return returned if signals["words"] == 3 else signals["rag_answer"]

    answers, traces = ask(registered_systems, decide)
    assert answers == [IDK_ANSWER, "HOW TALL IS IT?", IDK_ANSWER, IDK_ANSWER, "WHAT IS THAT THING?"]
    assert [t["branch"] for t in traces] == ["error", "answered", "error", "abstained", "answered"]
    (fault,) = traces[2]["faults"]
    assert fault["stage"] == "rule" and fault["exception"] == (
        "RuleFault: the rule of system 'ruled' (tests.test_plugin_rule_faults.test_a_rule_that_returns_neither_an_"
        f"answer_nor_a_decision_faults_each_turn_it_decides_naming_the_rule.<locals>.decide) returned {returned!r}: "
        "neither an answer (a str) nor a Decision(answer, branch)")
    assert all(len(t["stage_ms"]) == 1 for t in traces)  # every trace written, the stage's time in each


def test_without_abstain_on_the_rule_decides_an_i_dont_know_under_its_own_branch(registered_systems):
    def decide(signals, cfg):
        if signals["rag_answer"] == IDK_ANSWER:
            return Decision(IDK_ANSWER, "nothing to say")
        return Decision(signals["rag_answer"], "said")

    _, traces = ask(registered_systems, decide)
    assert [t["branch"] for t in traces] == ["error", "said", "said", "nothing to say", "said"]
    _, first = ask(registered_systems, decide, abstain_on="rag_answer")
    assert [t["branch"] for t in first] == ["error", "said", "said", "abstained", "said"]

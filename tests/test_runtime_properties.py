"""Properties of the one door every stage goes through (agents/run_stages.py `BatchState.call`)
over random batches: whatever turns fail first, whatever turns a stage raises on, whatever subset
it is asked for, each turn's result, notes, fault and trace are its own, never a neighbour's.

The stage functions are plain functions of their turns (outside the unit); the batch, its guards,
its fault search, its decision and its traces are the runtime's own."""
from __future__ import annotations

from types import SimpleNamespace

from hypothesis import given, settings
from hypothesis import strategies as st

from agents.base_agent import IDK_ANSWER
from agents.config.loading import load_config
from agents.engines.base import Ledger
from agents.run_stages import open_batch
from agents.runtime.deadline import StageCosts
from agents.runtime.system import Decision, Stage, System
from agents.stages.types import Turn

CFG = load_config("cpu", turn_budget_s=0.0)  # no deadline: the search always goes down to single turns
PROPERTY = settings(max_examples=40, deadline=None)


def engines():
    return SimpleNamespace(vlm=SimpleNamespace(ledger=Ledger(), supports_images=True))


def batches():
    """(questions, the turns whose question is empty, the turns the stage raises on)."""
    return st.integers(1, 16).flatmap(lambda n: st.tuples(
        st.just([f"q{i}" for i in range(n)]), st.sets(st.integers(0, n - 1)), st.sets(st.integers(0, n - 1))))


def echo_stage(raises_on: set[str]):
    """Each turn's own answer, a note on every third question, and a fault for a batch that holds a
    question of `raises_on`."""
    def echo(batch):
        bad = [t.query for t in batch.turns if t.query in raises_on]
        if bad:
            raise ValueError(f"cannot answer {bad[0]}")
        for i, turn in enumerate(batch.turns):
            if int(turn.query[1:]) % 3 == 0:
                batch.error(i, f"a note on {turn.query}")
        return [{"rag_answer": f"{turn.query}!"} for turn in batch.turns]

    return Stage("echo", batch_fn=echo, writes=("rag_answer",))


def system_of(stage) -> System:
    return System(name="props", stages=(stage,), decide=lambda signals, cfg: Decision(signals["rag_answer"], "own"))


@PROPERTY
@given(batches())
def test_each_turn_keeps_its_own_answer_note_and_fault_whatever_fails_around_it(case):
    questions, empty, raising = case
    queries = ["" if i in empty else q for i, q in enumerate(questions)]
    stage = echo_stage({questions[i] for i in raising})
    system = system_of(stage)
    batch = open_batch(system, [Turn(q, None, []) for q in queries], engines(), None, CFG, StageCosts())
    batch.call(stage)
    answers, traces = batch.finish()
    for i, (question, trace) in enumerate(zip(questions, traces)):
        if i in empty:
            assert (answers[i], trace["branch"], trace["errors"], trace["faults"]) == (
                IDK_ANSWER, "error", ["empty question"], [])
        elif i in raising:
            assert (answers[i], trace["branch"]) == (IDK_ANSWER, "error")
            assert trace["faults"] == [{"stage": "echo", "exception": f"ValueError: cannot answer {question}",
                                        "where": trace["faults"][0]["where"]}]
            assert trace["faults"][0]["where"].startswith("tests/test_runtime_properties.py:")
        else:
            assert (answers[i], trace["branch"], trace["faults"]) == (f"{question}!", "own", [])
            assert trace["errors"] == ([f"echo: a note on {question}"] if i % 3 == 0 else [])


@PROPERTY
@given(batches(), st.data())
def test_a_stage_asked_for_a_subset_serves_exactly_those_live_turns_each_with_its_own_earlier_fields(case, data):
    questions, empty, _ = case
    asked = data.draw(st.lists(st.booleans(), min_size=len(questions), max_size=len(questions)))
    queries = ["" if i in empty else q for i, q in enumerate(questions)]
    seen = []

    def mark(batch):
        return [{"mark": f"{t.query}#"} for t in batch.turns]

    def read_mark(batch):
        seen.extend(t.query for t in batch.turns)
        return [{"rag_answer": f"{reads['mark']} seen by {t.query}"} for t, reads in zip(batch.turns, batch.reads)]

    first, second = Stage("mark", batch_fn=mark, writes=("mark",)), Stage("echo", batch_fn=read_mark,
                                                                          reads=("mark",), writes=("rag_answer",))
    system = System(name="props", stages=(first, second), run=lambda *a: None,
                    decide=lambda s, cfg: s.get("rag_answer") or IDK_ANSWER)
    batch = open_batch(system, [Turn(q, None, []) for q in queries], engines(), None, CFG, StageCosts())
    batch.call(first)
    results = batch.call(second, only=asked)
    served = [i for i in range(len(questions)) if asked[i] and i not in empty]
    assert seen == [questions[i] for i in served]  # in the batch's order, the failed and unasked left out
    for i, question in enumerate(questions):
        if i in served:
            assert results[i] == {"rag_answer": f"{question}# seen by {question}"} == {
                "rag_answer": batch.fields[i]["rag_answer"]}
        else:
            assert results[i] is None and "rag_answer" not in batch.fields[i]
    answers, traces = batch.finish()
    assert answers == [f"{q}# seen by {q}" if i in served else IDK_ANSWER for i, q in enumerate(questions)]
    # each trace names the stages run over its own turn; the batch's stage_ms names both for every turn
    assert [t["stages_run"] for t in traces] == [
        [] if i in empty else ["mark", "echo"] if i in served else ["mark"] for i in range(len(questions))]

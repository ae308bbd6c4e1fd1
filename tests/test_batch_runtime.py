"""The guards every stage runs under (agents/runtime/batch.py): the deadline, the search for the
turn a faulting stage raises on, a provider's refusal of one turn, the stage's time and what the
deadline learns from it, the skip-for-time rule and every decision.

The stage functions are plain functions over the batch; the engines' ledger is the real one,
written as an engine writes it; a fake clock stands in for time."""
from __future__ import annotations

import math
from types import SimpleNamespace

import pytest

from agents.base_agent import IDK_ANSWER
from agents.config.loading import load_config
from agents.engines.base import CallRecord, Ledger, seconds_left
from agents.run_stages import open_batch
from agents.runtime import batch as batch_module
from agents.runtime.batch import (
    BatchRun,
    Room,
    RuleFault,
    decide_from_trace,
    decide_turn,
    start_batch,
)
from agents.runtime.deadline import Deadline, StageCosts
from agents.runtime.system import Decision, Stage, System


class Clock:
    """Seconds on a dial the test turns: the deadline's clock and the stages' timer."""

    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


@pytest.fixture
def clock(monkeypatch):
    clock = Clock()
    monkeypatch.setattr(batch_module, "time", SimpleNamespace(perf_counter=clock))
    return clock


def batch_run(clock, size=4, budget=100.0, **kw):
    return BatchRun(size, Deadline(budget, clock=clock, start=0.0), kw.pop("costs", StageCosts()), **kw)


def echo(values, suffix="!"):
    return [f"{v}{suffix}" for v in values]


def stage(run, name, fn, values, fixed=(), fallback=str, asked=None):
    """`fn(values of the group, *fixed)` under `run`'s guards over the live turns (`asked`: those of
    them marked); one result per turn, `fallback()` where the stage did not serve it."""
    positions = [i for i in run.alive() if asked is None or asked[i]]
    out = run.guarded(name, lambda group: fn([values[i] for i in group], *fixed), positions)
    return [out[i] if i in out else fallback() for i in range(run.size)]


def test_a_stage_serves_the_live_turns_in_order_and_the_failed_ones_keep_their_own_fallback(clock):
    run = batch_run(clock, stage_names=("answer",))
    run.fail(1, "empty question")
    out = stage(run, "answer", echo, ["a", "b", "c", "d"], ("?",), fallback=list)
    assert out[0] == "a?" and out[2] == "c?" and out[3] == "d?" and out[1] == []
    fallbacks = stage(run, "answer", lambda values: [None] * 0, ["a", "b", "c", "d"], (), fallback=list)
    assert fallbacks[1] is not fallbacks[0]  # one fallback per turn, not one shared object
    assert run.errors == [[], ["empty question"], [], []]


def test_a_stage_under_a_name_not_on_the_record_is_refused_naming_the_record(clock):
    run = batch_run(clock, stage_names=("route", "answer"))
    with pytest.raises(ValueError, match=r"stage 'anwser' is not on the system's record; its stages: \['route', 'answer'\]"):
        stage(run, "anwser", echo, ["a"] * 4, (), fallback=str)
    assert stage(batch_run(clock), "anything", echo, ["a"] * 4) == ["a!"] * 4  # a bare run


def test_a_stage_that_faults_is_split_until_the_turn_it_faults_on_is_found_and_only_that_turn_fails(clock):
    run = batch_run(clock, size=5)
    groups = []

    def breaks_on_c(values):
        groups.append(list(values))
        if "c" in values:
            raise ValueError("bad input")
        return echo(values)

    out = stage(run, "rerank", breaks_on_c, ["a", "b", "c", "d", "e"], (), fallback=lambda: IDK_ANSWER)
    assert groups == [["a", "b", "c", "d", "e"], ["a", "b"], ["c", "d", "e"], ["c"], ["d", "e"]]
    assert out == ["a!", "b!", IDK_ANSWER, "d!", "e!"]
    assert run.failed == {2} and run.errors[2] == ["rerank: ValueError: bad input"] and run.errors[3] == []
    assert run.faults[2] == [{"stage": "rerank", "exception": "ValueError: bad input",
                              "where": f"tests/test_batch_runtime.py:{breaks_on_c.__code__.co_firstlineno + 3}"}]
    later = stage(run, "answer", echo, list("abcde"), (), fallback=str)
    assert later == ["a!", "b!", "", "d!", "e!"]  # a failed turn is served by no later stage


def test_two_faulting_turns_apart_cost_those_two_alone_and_a_fault_on_every_turn_costs_one_call_per_turn(clock):
    run = batch_run(clock, size=8)
    groups = []

    def breaks(values):
        groups.append("".join(values))
        if "b" in values or "g" in values:
            raise KeyError("missing")
        return echo(values)

    out = stage(run, "answer", breaks, list("abcdefgh"))
    assert out == ["a!", "", "c!", "d!", "e!", "f!", "", "h!"] and run.failed == {1, 6}
    assert groups == ["abcdefgh", "abcd", "ab", "a", "b", "cd", "efgh", "ef", "gh", "g", "h"]
    every = batch_run(clock, size=4)
    tried = []
    stage(every, "answer", lambda v: tried.append(len(v)) or 1 / 0, list("abcd"))
    assert every.failed == {0, 1, 2, 3} and tried == [4, 2, 1, 1, 2, 1, 1]


def test_the_search_stops_where_the_deadline_leaves_no_room_for_the_smaller_calls(clock):
    costs = StageCosts(priors={"answer": 1.0})
    run = batch_run(clock, size=4, budget=5.0, costs=costs)
    groups = []

    def slow_and_breaks_on_b(values):
        groups.append("".join(values))
        clock.now += 2.0
        if "b" in values:
            raise ValueError("no")
        return echo(values)

    out = stage(run, "answer", slow_and_breaks_on_b, list("abcd"))
    # 4 turns x 1 s fits the 5 s; after 2 s, a half (2 x 1 s) fits the 3 s left: "ab" is tried and
    # fails at 4 s, and then no half of it fits the 1 s left: both its turns fail, unsearched
    assert groups == ["abcd", "ab", "cd"]
    assert run.failed == {0, 1} and out == ["", "", "c!", "d!"]
    assert run.errors[0] == run.errors[1] == ["answer: ValueError: no"]


def test_a_single_turn_that_faults_is_tried_once_then_fails(clock):
    run = batch_run(clock, size=1)
    calls = []

    def always_breaks(values):
        calls.append(list(values))
        raise RuntimeError("no")

    assert stage(run, "answer", always_breaks, ["a"], (), fallback=str) == [""]
    assert calls == [["a"]] and run.errors == [["answer: RuntimeError: no"]]
    assert stage(run, "verify", echo, ["a"], (), fallback=str) == [""]  # nothing alive: not called


def test_a_stage_whose_expected_cost_does_not_fit_is_not_started_nor_anything_after_it(clock):
    costs = StageCosts(priors={"answer": 2.0})
    run = batch_run(clock, budget=8.0, costs=costs)
    clock.now = 0.0
    called = []
    assert stage(run, "answer", lambda v: called.append(v) or echo(v), ["a"] * 4, (), fallback=str) == [""] * 4
    assert called == [] and run.cut_before == "answer" and "answer" not in run.stage_ms  # 4 x 2 s = 8 s left: no room
    assert stage(run, "verify", lambda v: called.append(v) or echo(v), ["a"] * 4, (), fallback=str) == [""] * 4
    assert called == []
    fits = batch_run(clock, budget=8.01, costs=StageCosts(priors={"answer": 2.0}))
    assert stage(fits, "answer", echo, ["a"] * 4, (), fallback=str) == ["a!"] * 4 and fits.cut_before is None


def test_only_the_turns_a_stage_asks_are_expected_and_learnt(clock):
    costs = StageCosts(priors={"consistency": 3.0})
    run = batch_run(clock, budget=7.0, costs=costs)
    asked = [True, False, True, False]

    def two_seconds(values):
        clock.now += 2.0
        return echo(values)

    out = stage(run, "consistency", two_seconds, list("abcd"), (), fallback=str, asked=asked)
    assert out == ["a!", "", "c!", ""]  # 2 asked x 3 s = 6 s < 7 s left; four turns fitted would not
    assert costs.samples["consistency"] == [(1.0, 0)] and run.stage_ms == {"consistency": 2000.0}


def test_a_stage_run_twice_adds_its_time_and_the_deadline_learns_seconds_per_engine_request(clock):
    ledger = Ledger()
    costs = StageCosts()
    run = batch_run(clock, costs=costs, ledger=ledger)

    def answer(values):
        clock.now += 1.5
        ledger.record(CallRecord("answer", "chat", requests=2 * len(values), prompt_tokens=0, output_tokens=0,
                                 wall_ms=1500.0))
        return echo(values)

    stage(run, "answer", answer, list("abcd"), (), fallback=str)
    stage(run, "answer", answer, list("abcd"), (), fallback=str)
    assert run.stage_ms == {"answer": 3000.0}
    assert [v for v, _ in costs.samples["answer"]] == [pytest.approx(1.5 / 8)] * 2
    assert costs.requests_per_turn["answer"] == 2.0

    def retrieve(values):  # the ledger sees no request of it
        clock.now += 0.123456
        return echo(values)

    stage(run, "retrieve", retrieve, list("abcd"), (), fallback=str)
    assert run.stage_ms["retrieve"] == 123.5  # rounded to a tenth of a ms
    assert costs.per_request_s("retrieve") == pytest.approx(0.123456 / 4)  # a stage without a model: per turn
    assert costs.requests_per_turn["retrieve"] == 1.0

    def skipped(values):  # the answer stage asks nothing this time: it is still a model stage
        clock.now += 0.01
        return echo(values)

    stage(run, "answer", skipped, list("abcd"))
    assert [v for v, _ in costs.samples["answer"]] == [pytest.approx(1.5 / 8)] * 2


def test_an_engine_call_the_deadline_cut_stops_every_later_stage(clock):
    ledger = Ledger()
    run = batch_run(clock, ledger=ledger)

    def cut(values):
        ledger.record(CallRecord("verify", "chat", requests=4, prompt_tokens=0, output_tokens=0, wall_ms=1.0,
                                 cut_by_deadline=1))
        return echo(values)

    assert stage(run, "verify", cut, list("abcd"), (), fallback=str) == ["a!", "b!", "c!", "d!"]
    assert run.cut_during == "verify" and run.cut_before is None
    assert stage(run, "answer", echo, list("abcd"), (), fallback=str) == [""] * 4


def test_the_engines_inside_a_stage_stop_at_the_deadline_less_the_margin(clock):
    run = batch_run(clock, budget=10.0, engine_margin_s=0.5)
    clock.now = 2.0
    seen = []
    stage(run, "answer", lambda v: seen.append(seconds_left()) or echo(v), ["a"] * 4, (), fallback=str)
    assert seen == [7.5] and seconds_left() is None


def test_a_refused_request_fails_its_own_turn_only_and_once(clock):
    ledger = Ledger()
    run = batch_run(clock, size=4, ledger=ledger)
    run.fail(0, "empty question")

    def refuses(values):  # served turns 1, 2, 3: positions 0, 1, 2 of the group
        ledger.record(CallRecord("answer", "chat", requests=3, prompt_tokens=0, output_tokens=0, wall_ms=1.0,
                                 refusals=[[1, "content policy"], [1, "again"], [3, "out of the group"],
                                           [-1, "negative"], ["2", "not a position"]]))
        return echo(values)

    ledger.record(CallRecord("route", "chat", requests=3, prompt_tokens=0, output_tokens=0, wall_ms=1.0,
                             refusals=[[0, "an earlier stage's call"]]))
    out = stage(run, "answer", refuses, list("abcd"), (), fallback=str)
    assert out == ["", "b!", "c!", "d!"]  # its answer is kept: the decision reads the refusal
    assert run.refused == {2} and run.failed == {0, 2}
    assert run.errors[2] == ["answer: the provider refused the request: content policy"]
    assert run.errors[1] == [] and run.errors[3] == []


def test_the_first_turn_of_a_retried_half_can_be_refused_and_a_run_without_ledger_refuses_none(clock):
    ledger = Ledger()
    run = batch_run(clock, size=4, ledger=ledger)

    def second_half_refused(values):
        if len(values) == 4:
            raise ValueError("too long")
        refusals = [[0, "image not taken"]] if values == ["c", "d"] else []
        ledger.record(CallRecord("answer", "chat", requests=len(values), prompt_tokens=0, output_tokens=0,
                                 wall_ms=1.0, refusals=refusals))
        return echo(values)

    stage(run, "answer", second_half_refused, list("abcd"), (), fallback=str)
    assert run.refused == {2} and run.errors[2] == ["answer: the provider refused the request: image not taken"]
    bare = batch_run(clock, size=4)
    stage(bare, "answer", second_half_refused, list("abcd"), (), fallback=str)
    assert bare.refused == set() and bare.failed == set()


def test_a_batch_has_the_turns_budget_less_the_margin_and_fails_its_empty_questions():
    cfg = load_config("cpu", turn_budget_s=10.0, safety_margin_s=1.5, engine_margin_s=0.25)
    system = SimpleNamespace(stage_names=lambda: ("retrieve", "answer"))
    costs, ledger = StageCosts(), Ledger()
    turns = [SimpleNamespace(query=q) for q in ("what is this?", "", None)]
    run = start_batch(turns, cfg, costs, system, ledger=ledger, started=100.0)
    assert run.deadline.end == 100.0 + 3 * 10.0 - 1.5 and costs.batch == 1 and run.ledger is ledger
    assert run.failed == {1, 2} and run.errors == [[], ["empty question"], ["empty question"]]
    assert (run.engine_margin_s, run.stage_names) == (0.25, ("retrieve", "answer"))
    none = start_batch([], cfg, costs, system, started=0.0)
    assert none.deadline.end == 10.0 - 1.5 and costs.batch == 2
    unbounded = start_batch(turns, load_config("cpu", turn_budget_s=0.0), costs, system)
    assert unbounded.deadline.end == math.inf and unbounded.ledger is None
    short = start_batch(turns, load_config("cpu", turn_budget_s=0.5, safety_margin_s=0.0), costs, system, started=0.0)
    assert short.deadline.end == 1.5  # half a second a turn is a budget, not none


def test_the_opening_is_perception_over_the_engines_ledger_and_a_vlm_that_sees_skips_it():
    ledger = Ledger()
    engines = SimpleNamespace(vlm=SimpleNamespace(ledger=ledger, supports_images=True))
    system = System("opened", stages=(Stage("answer", batch_fn=lambda b: [{} for _ in b.turns]),),
                    decide=lambda s, c: IDK_ANSWER)
    turns = [SimpleNamespace(query="what is this?")]
    opened = open_batch(system, turns, engines, None, load_config("cpu"), StageCosts(), started=0.0)
    assert opened.run.ledger is ledger and opened.opened == ("perceive",) and opened.turns == turns
    assert opened.run.stage_ms == {} and opened.fields == [{}]


def test_an_optional_step_starts_only_when_the_steps_after_it_still_fit(clock):
    costs = StageCosts(priors={"consistency": 1.0, "verify": 2.0, "answer": 1.0})
    run = batch_run(clock, size=3, budget=9.0, costs=costs)
    room = Room(run)
    assert room("consistency", ("answer",))  # 3 x (1 + 1) = 6 s < 9 s
    assert run.deadline.allows(3 * 2.0) and not room("verify", ("answer",))  # fits alone; 3 x (2 + 1) = 9 s does not
    clock.now = 3.0
    assert not room("consistency", ("answer",)) and room.skipped == ["verify", "consistency"]
    run.fail(0, "x")
    assert room("consistency", ("answer",))  # two live turns: 4 s < 6 s left
    assert room.skipped == ["verify", "consistency"]


def rule(signals, cfg):
    return signals["rule"]


SYSTEM = SimpleNamespace(name="ruled", abstain_on="rag_answer", decide=rule)


def test_a_refused_or_failed_turn_is_i_dont_know_whatever_its_signals():
    run = BatchRun(3, Deadline(10.0), StageCosts())
    run.refuse(0, "policy")
    run.fail(1, "bad")
    signals = {"rag_answer": "Paris", "rule": Decision("Paris", "answered")}
    assert decide_turn(SYSTEM, signals, None, run, 0) == Decision(IDK_ANSWER, "refused")
    assert decide_turn(SYSTEM, signals, None, run, 1) == Decision(IDK_ANSWER, "error")
    assert decide_turn(SYSTEM, signals, None, run, 2) == Decision("Paris", "answered")
    assert decide_turn(SYSTEM, {**signals, "branch": "refused"}, None) == Decision(IDK_ANSWER, "refused")
    assert decide_turn(SYSTEM, {**signals, "branch": "error"}, None) == Decision(IDK_ANSWER, "error")
    assert decide_turn(SYSTEM, signals, None, None, 0) == Decision("Paris", "answered")  # no run: the signals alone


def test_an_answer_already_i_dont_know_is_abstained_before_the_rule_where_the_system_says_so():
    says_paris = {"rule": "Paris"}
    assert decide_turn(SYSTEM, {**says_paris, "rag_answer": IDK_ANSWER}, None) == Decision(IDK_ANSWER, "abstained")
    assert decide_turn(SYSTEM, says_paris, None) == Decision(IDK_ANSWER, "abstained")  # no answer yet
    own = SimpleNamespace(name="own", abstain_on=None, decide=rule)
    assert decide_turn(own, {**says_paris, "rag_answer": IDK_ANSWER}, None) == Decision("Paris", "answered")
    assert decide_turn(own, {"rule": IDK_ANSWER}, None) == Decision(IDK_ANSWER, "abstained")
    named = Decision(IDK_ANSWER, "rejected by the check")
    assert decide_turn(own, {"rule": named}, None) is named


def test_a_traced_turn_is_decided_again_by_the_rule_of_the_system_its_config_names(registered_systems):
    registered_systems(System("ruled", stages=(), decide=lambda trace, cfg: trace["answer"] + cfg.preset,
                              run=lambda *a, **k: None))
    cfg = load_config("cpu", system="ruled")
    assert decide_from_trace({"answer": "Paris/"}, cfg) == Decision("Paris/" + cfg.preset, "answered")
    assert decide_from_trace({"answer": "x", "branch": "error"}, cfg) == Decision(IDK_ANSWER, "error")


@pytest.mark.parametrize("returned", [None, 3, Decision(None, "x"), ("Paris", "answered")])
def test_a_rule_that_returns_neither_an_answer_nor_a_decision_is_refused_naming_the_rule(returned):
    system = SimpleNamespace(name="mine", abstain_on=None, decide=lambda signals, cfg: returned)
    with pytest.raises(RuleFault, match=r"the rule of system 'mine' \(tests\.test_batch_runtime\..*<lambda>\) returned "):
        decide_turn(system, {}, None)


def test_a_fault_in_a_package_outside_the_working_folder_is_shown_from_the_packages_own_folder(tmp_path, clock):
    import importlib
    import sys

    package = tmp_path / "far" / "faraway_pkg"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "stages.py").write_text("def explode(values):\n    raise IndexError('no hits')\n")
    sys.path.insert(0, str(package.parent))
    try:
        stages = importlib.import_module("faraway_pkg.stages")
        run = batch_run(clock, size=1)
        run.guarded("answer", lambda group: stages.explode(["a"]), [0], code=stages.explode)
    finally:
        sys.path.remove(str(package.parent))
        for name in ("faraway_pkg", "faraway_pkg.stages"):
            sys.modules.pop(name, None)
    assert run.faults[0][0]["where"] == "faraway_pkg/stages.py:2"


def test_a_fault_raised_inside_a_library_is_placed_at_the_stages_own_line_that_called_it(clock):
    """json raises deep in its own decoder; the place named is the stage's line that called it,
    in the search down to one turn as in the first call."""
    import json

    def parse(values):
        return [json.loads(v) for v in values]  # "{" is no JSON

    line = f"tests/test_batch_runtime.py:{parse.__code__.co_firstlineno + 1}"
    for values in (["{"], ["1", "{", "2"]):
        run = batch_run(clock, size=len(values))
        run.guarded("parse", lambda group: parse([values[i] for i in group]), list(range(len(values))), code=parse)
        faulted = [i for i in range(len(values)) if run.faults[i]]
        assert faulted == [values.index("{")]
        assert run.faults[faulted[0]][0]["where"] == line

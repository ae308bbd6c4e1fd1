"""What every system's trace holds and how the report reads it back (agents/runtime/trace.py,
agents/runtime/trace_view.py): a turn's recorded fields, the run's parse figures and branches,
the settings the turns ran under, the turn page's chunks and the report's tables.

The system here is a small registered System with two parsed stages and a view of its own; the
traces fed to the report are those `record` writes."""
from __future__ import annotations

import pytest

from agents.base_agent import IDK_ANSWER
from agents.config.loading import load_config
from agents.run_stages import BatchState
from agents.runtime import trace_view
from agents.runtime.batch import BatchRun
from agents.runtime.deadline import Deadline, StageCosts
from agents.runtime.system import Stage, System, View
from agents.runtime.trace import field_type_fault, not_idk, parse_summary, perception_trace, record, stage_counts, tally
from agents.stages.types import Perception, Turn


def funnel(trace, cfg):
    return {"answered": trace["rag_answer"] != IDK_ANSWER, "budgeted": cfg.run.turn_budget_s > 0}


def summarize(traces):
    return {"answers": sum(1 for t in traces if not_idk(t.get("final_answer")))}


def sections(summary):
    return [{"title": "Answers", "id": "answers", "header": ["answers"], "rows": [[summary.get("answers")]]}]


TWO_STAGES = System(
    name="twostage",
    stages=(Stage("route", parsed="route", writes=("route",)), Stage("answer", parsed="answer", writes=("rag_answer",))),
    decide=lambda signals, cfg: signals["rag_answer"],
    run=lambda *a, **k: None,
    view=View(funnel=funnel, summarize=summarize, report_sections=sections, branches=("answered", "abstained")),
)


def a_run(size=2, **kw):
    run = BatchRun(size, Deadline(100.0), StageCosts(), **kw)
    run.stage_ms = {"route": 12.5, "answer": 300.0}
    return run


def a_trace(run=None, i=0, own=None, cfg=None, **kw):
    run = run or a_run()
    cfg = cfg or load_config("cpu", turn_budget_s=10.0)
    turn = kw.pop("turn", Turn("what is this?", None, [], domain="vehicle", passages=["p1", "p2", "p3"]))
    return record({"rag_answer": "a bus", **(own or {})}, system=TWO_STAGES, cfg=cfg, run=run, i=i, turn=turn,
                  parsed=kw.pop("parsed", {"answer": True, "route": False}), **kw)


def test_a_turns_trace_holds_its_own_fields_the_stages_and_what_every_system_records():
    run = a_run()
    run.fail(0, "route: ValueError: x", {"stage": "route", "exception": "ValueError: x", "where": "mine.py:3"})
    run.cut_during = "answer"
    perception = Perception(labels=[("school bus", 0.912345)], lines=[("STOP", 0.87654)], block="[picture]",
                            cached=True, ms=4.0, error="")
    cfg = load_config("cpu", turn_budget_s=10.0)
    turn = Turn("what is this?", None, [], domain="vehicle", passages=["p1", "p2", "p3"], perception=perception)
    trace = a_trace(run, own={"errors": ["own error"], "standalone_question": "q0"}, turn=turn,
                    skipped_for_time=("verify",), cfg=cfg)
    assert trace["faults"] == [{"stage": "route", "exception": "ValueError: x", "where": "mine.py:3"}]
    assert trace["faults"][0] is not run.faults[0][0]  # a copy: the run's record is not the trace's
    assert trace["preset"] == cfg.preset and trace["system"] == "twostage"
    assert (trace["harness_domain"], trace["harness_passages"]) == ("vehicle", 3)
    assert trace["rag_answer"] == "a bus" and trace["standalone_question"] == "q0"
    assert trace["parsed_stages"] == ["route", "answer"] and trace["parse_failures"] == ["route"]
    assert trace["stage_ms"] == {"route": 12.5, "answer": 300.0} and trace["stage_ms"] is not run.stage_ms
    assert (trace["deadline_cut"], trace["deadline_cut_before"], trace["deadline_cut_during"]) == (True, None, "answer")
    assert trace["skipped_for_time"] == ["verify"] and trace["errors"] == ["route: ValueError: x", "own error"]
    assert trace["perception"] == {"labels": [["school bus", 0.9123]], "ocr_lines": [["STOP", 0.8765]],
                                   "block": "[picture]", "cached": True, "ms": 4.0, "error": ""}
    assert trace["funnel"] == {"answered": True, "budgeted": True}
    assert trace["turn_budget_s"] == 10.0 and trace["mode_fallbacks"] == list(cfg.mode_fallbacks)
    assert set(trace) >= {"harness_domain", "harness_passages", "deadline_cut_before"}


def test_a_trace_without_passages_perception_cut_or_skips_says_none_of_them():
    run = a_run(size=2)
    run.cut_before = "verify"
    trace = a_trace(run, i=1, turn=Turn("q", None, []), own={"rag_answer": IDK_ANSWER}, parsed={},
                    cfg=load_config("cpu", turn_budget_s=0.0))
    assert trace["harness_passages"] is None and trace["harness_domain"] is None
    assert trace["perception"] is None and trace["skipped_for_time"] == [] and trace["errors"] == []
    assert (trace["deadline_cut"], trace["deadline_cut_before"], trace["deadline_cut_during"]) == (True, "verify", None)
    assert trace["parsed_stages"] == [] and trace["parse_failures"] == []
    assert trace["funnel"] == {"answered": False, "budgeted": False} and trace["turn_budget_s"] == 0.0
    assert a_trace(a_run())["deadline_cut"] is False
    empty = a_trace(a_run(), turn=Turn("q", None, [], passages=[]))
    assert empty["harness_passages"] == 0


def test_a_field_of_the_wrong_type_fails_the_turn_naming_the_system_field_and_types():
    with pytest.raises(TypeError, match=r"system 'twostage': trace field 'branch' must be a str \(the report reads it "
                                        r"so\), got int 7"):
        a_trace(own={"branch": 7})
    assert field_type_fault({"context": 3}) == ("trace field 'context' must be a str or list (the report reads it so), "
                                                "got int 3")
    assert field_type_fault({"context": ["a"], "chunks": None, "errors": []}) is None
    long = field_type_fault({"final_answer": ["x" * 100]})
    assert long.endswith("got list ['" + "x" * 58)  # the value cut to 60 characters


def test_an_answer_counts_unless_it_is_empty_or_says_i_dont_know_in_any_case():
    assert not_idk("Paris") and not not_idk("") and not not_idk(None)
    assert not not_idk("i DON'T know, sorry") and not not_idk(IDK_ANSWER.upper())
    assert not_idk(42)


def test_perception_is_rounded_to_four_places_and_absent_where_it_did_not_run():
    assert perception_trace(None) is None
    read = perception_trace(Perception(labels=[("cab", 0.123456), ("bus", 0.5)], error="unreadable"))
    assert read == {"labels": [["cab", 0.1235], ["bus", 0.5]], "ocr_lines": [], "block": "", "cached": False,
                    "ms": 0.0, "error": "unreadable"}


def test_the_parse_figures_count_each_stage_that_ran_or_failed_and_only_those():
    traces = [{"parsed_stages": ["route", "answer"], "parse_failures": ["route"]},
              {"parsed_stages": ["answer"], "parse_failures": []}, {"parsed_stages": None}, {}]
    assert stage_counts(traces, ("route", "answer", "verify")) == (
        {"route": 1, "answer": 0, "verify": 0}, {"route": 1, "answer": 2, "verify": 0})
    assert parse_summary(traces, ("route", "answer", "verify")) == {
        "parse_failures": {"route": 1, "answer": 0}, "parsed_outputs": {"route": 1, "answer": 2}}
    odd = [{"parsed_stages": ["crop"], "parse_failures": ["crop", "crop"]}]  # a stage not on the list still counts
    assert parse_summary(odd, ()) == {"parse_failures": {"crop": 2}, "parsed_outputs": {"crop": 1}}


def test_a_tally_counts_turns_per_value_most_first():
    traces = [{"branch": "b"}, {"branch": "a"}, {"branch": "a"}, {}, {"branch": None}, {"branch": 0}]
    assert list(tally(traces, "branch").items()) == [("a", 2), ("-", 2), ("b", 1), ("0", 1)]


@pytest.fixture
def two_stage(registered_systems):
    return registered_systems(TWO_STAGES)


def test_the_run_summary_has_the_systems_figures_parses_branches_and_settings(two_stage):
    cfg = load_config("cpu", turn_budget_s=10.0)
    traces = [a_trace(cfg=cfg, own={"branch": "answered", "final_answer": "a bus"}),
              a_trace(cfg=cfg, own={"branch": "refused", "final_answer": IDK_ANSWER}, parsed={"route": True}),
              {**a_trace(cfg=cfg), "branch": "refused"},
              {**a_trace(cfg=load_config("cpu", turn_budget_s=5.0)), "mode_fallbacks": ["verify: grounding", "a"]}]
    summary = trace_view.summarize(traces)
    assert summary["system"] == "twostage" and summary["answers"] == 1
    assert summary["branches"] == {"answered": 1, "abstained": 0, "refused": 2, "None": 1}
    assert summary["parse_failures"] == {"route": 3, "answer": 0} and summary["parsed_outputs"] == {"route": 4, "answer": 3}
    assert summary["run_settings"] == {"turn_budget_s": [5.0, 10.0], "mode_fallbacks": ["a", "verify: grounding"],
                                       "refused_turns": 2}


def test_traces_of_several_systems_or_of_none_are_summarized_as_cruises(two_stage):
    mixed = trace_view.summarize([{"system": "twostage"}, {"system": "nowhere"}])
    alone = trace_view.summarize([{"branch": "answered"}])
    assert mixed["system"] == "cruise" and alone["system"] == "cruise"
    assert alone["branches"]["answered"] == 1
    unknown = trace_view.summarize([{"system": "nowhere", "branch": "x", "turn_budget_s": "10"}])
    assert unknown == {"system": "nowhere", "branches": {"x": 1},
                       "run_settings": {"turn_budget_s": [], "mode_fallbacks": [], "refused_turns": 0}}
    assert trace_view.system_of({"system": "twostage"}) is two_stage
    assert trace_view.system_of({}).name == "cruise" and trace_view.system_of({"system": "nowhere"}) is None


def test_the_turn_page_gets_the_chunks_best_first_each_marked_kept_or_not(two_stage):
    trace = {"system": "twostage", "kept_chunks": ["b text"],
             "chunks": [{"text": "a text", "score": 0.2}, {"text": "b text", "score": 0.9}, "not a chunk",
                        {"text": "c text", "score": None}, {"text": "d text", "score": -0.5}]}
    page = trace_view.prepare_turn(trace)
    assert [(c["text"], c["kept"]) for c in page["chunks"]] == [
        ("b text", True), ("a text", False), ("c text", False), ("d text", False)]
    assert page["turn_template"] is None  # a system without a page of its own
    assert page["shown_keys"] == trace_view.RECORDED_KEYS | trace_view.SHOWN_ELSEWHERE
    nowhere = trace_view.prepare_turn({"system": "nowhere", "chunks": None, "kept_chunks": None})
    assert nowhere == {"chunks": [], "turn_template": None, "shown_keys": frozenset(trace_view.RECORDED_KEYS)}
    cruise = trace_view.prepare_turn({"system": "cruise"})
    assert cruise["turn_template"] and "rag_answer" in cruise["shown_keys"]
    assert cruise["shown_keys"] >= trace_view.RECORDED_KEYS | trace_view.SHOWN_ELSEWHERE
    assert "rag_answer" in trace_view.SHOWN_TRACE_KEYS and "twostage_field" not in trace_view.SHOWN_TRACE_KEYS
    with pytest.raises(AttributeError, match="has no attribute 'SHOWN_KEYS'"):
        trace_view.SHOWN_KEYS  # noqa: B018


def test_the_report_shows_the_parsers_budget_and_the_systems_own_tables(two_stage):
    summary = {"system": "twostage", "answers": 3, "parse_failures": {"route": 2, "answer": 0},
               "parsed_outputs": {"route": 5},
               "run_settings": {"turn_budget_s": [10.0, 0.0], "mode_fallbacks": ["verify: grounding"],
                                "refused_turns": 2}}
    parsers, budget, own = trace_view.report_sections(summary)
    assert parsers == {"title": "Parsers: unreadable model outputs per stage", "id": "parsers",
                       "header": ["stage", "unreadable", "read"], "rows": [["route", 2, 5], ["answer", 0, 0]]}
    assert budget["title"] == "Budget and model modes" and budget["id"] == "run-settings"
    assert budget["header"] == ["what", "setting"]
    assert budget["rows"][0][0] == "the agent's per-turn budget"
    assert budget["rows"][0][1].startswith("10 s a turn, the competition's; none (turn_budget_s 0")
    assert budget["rows"][1:] == [["stage switched to its text mode", "verify: grounding"],
                                  ["turns a hosted provider refused (answered I don't know)", 2]]
    assert own == {"title": "Answers", "id": "answers", "header": ["answers"], "rows": [[3]]}
    bare = trace_view.report_sections({"system": "nowhere", "parse_failures": "x", "parsed_outputs": 3,
                                       "run_settings": {"turn_budget_s": None}})
    assert bare == [{"title": "Budget and model modes", "id": "run-settings", "header": ["what", "setting"],
                     "rows": [["the agent's per-turn budget", "not recorded"],
                              ["turns a hosted provider refused (answered I don't know)", 0]]}]
    assert trace_view.report_sections({"system": "nowhere", "run_settings": []}) == []
    assert trace_view.report_sections({"system": "nowhere", "run_settings": "10 s"}) == []
    unread = trace_view.report_sections({"system": "nowhere", "parse_failures": {"route": 1}, "parsed_outputs": [1]})
    assert unread[0]["rows"] == [["route", 1, 0]]


def test_a_batch_in_flight_traces_each_turn_with_what_perception_read_its_errors_and_skips():
    run = a_run(size=2)
    turns = [Turn("a?", None, []), Turn("b?", None, [], passages=["p"], perception=Perception(labels=[("bus", 0.5)]))]
    state = BatchState(run, engines=None, pipeline=None, cfg=load_config("cpu"), turns=turns, system=TWO_STAGES)
    state.fields[1].update(standalone_question="b")
    answers, traces = state.finish(
        signals=lambda i: {"rag_answer": "x"},
        trace=lambda i, d: ({"rag_answer": "x", **state.fields[i], "errors": ["late"] * i, "branch": d.branch,
                             "final_answer": d.answer}, {"answer": True} if i else {}),
        skipped_for_time=["verify"])
    assert answers == ["x", "x"]
    trace = traces[1]
    assert trace["perception"]["labels"] == [["bus", 0.5]] and trace["errors"] == ["late"]
    assert trace["skipped_for_time"] == ["verify"] and trace["standalone_question"] == "b"
    assert trace["harness_passages"] == 1 and trace["parsed_stages"] == ["answer"]
    assert traces[0]["perception"] is None and "standalone_question" not in traces[0]

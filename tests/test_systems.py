"""A system is one record over the shared runtime (agents/runtime/system.py): a fourth system,
defined here and nowhere under agents/, evaluator/ or tools/, registers, runs inside CruiseAgent
under the batch guards, is traced and decided by its own rule, replays in calibration, and is
shown in the report with its own funnel. And what follows from the three built-in systems' stage
lists: their order, priors, parse records and the switches a peer refuses.

The echo system's one stage answers each question with its first word; its rule gives the answer
unless it is a one-letter word. Expected answers are worked out by hand from those two rules.
"""
from __future__ import annotations

import json

import pytest
from PIL import Image

from agents.base_agent import IDK_ANSWER
from agents.config.loading import config_from_record, load_config, load_config_from_settings, with_system
from agents.cruise_agent import CruiseAgent
from agents.runtime.batch import decide_from_trace
from agents.runtime.cost_priors import stage_priors
from agents.runtime.system import (
    Decision,
    Stage,
    System,
    View,
    register,
    registered,
    system_for,
    system_named,
)
from testkit.scripted_peers import qa_dragon_engines


def echo_batch(batch) -> list[dict]:
    return [{"first_word": turn.query.split()[0], "rag_answer": turn.query.split()[0]} for turn in batch.turns]


ECHO_STAGE = Stage("echo", batch_fn=echo_batch, writes=("first_word", "rag_answer"))


def run_echo(batch):
    batch.call(ECHO_STAGE)
    return batch.finish()


def decide_echo(trace: dict, cfg) -> Decision:
    word = trace["rag_answer"]
    return Decision(IDK_ANSWER, "too_short") if len(word) < 2 else Decision(word, "echoed")


def echo_funnel(trace: dict, cfg) -> dict[str, bool]:
    return {"first word longer than one letter": len(trace.get("rag_answer") or "") > 1}


ECHO = System(name="echo", stages=(ECHO_STAGE,), run=run_echo, decide=decide_echo,
              view=View(funnel=echo_funnel, branches=("echoed", "too_short")))


@pytest.fixture(autouse=True)
def echo_registered(registered_systems):
    """The echo system, registered for each test of this module and gone after it."""
    registered_systems(ECHO)


def test_a_system_defined_in_a_test_module_answers_traces_and_decides_by_its_own_rule():
    config = load_config("cpu", "full", system="echo", warmup_at_load=False)
    agent = CruiseAgent(None, config=config, engines=qa_dragon_engines())
    answers = agent.batch_generate_response(["Paris is where?", "A tower", ""], [Image.new("RGB", (8, 8))] * 3,
                                            [[], [], []])
    assert answers == ["Paris", IDK_ANSWER, IDK_ANSWER]
    traces = agent.last_batch_report["traces"]
    assert [t["system"] for t in traces] == ["echo"] * 3
    assert [t["branch"] for t in traces] == ["echoed", "too_short", "error"]  # the empty question fails its turn
    assert traces[0]["funnel"] == {"first word longer than one letter": True}
    assert traces[1]["funnel"] == {"first word longer than one letter": False}
    assert set(traces[0]["stage_ms"]) == {"echo"} and traces[2]["errors"] == ["empty question"]
    # calibration replays the system's own rule
    assert decide_from_trace(traces[0], config).answer == "Paris"
    assert decide_from_trace({**traces[0], "rag_answer": "I"}, config).branch == "too_short"


def test_a_registered_system_is_evaluated_and_reported_with_its_own_funnel(tmp_path, monkeypatch, capsys):
    import local_evaluation
    from testkit.scripted_agent import build_dataset

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.setenv("HF_DATASETS_CACHE", str(tmp_path / "hf-datasets"))
    questions = [("a", "Umbrellas for rain?", "Umbrellas"), ("b", "A car from when?", "1964")]
    dataset = build_dataset(tmp_path / "dataset", [
        dict(session_id=f"s-{key}", image=Image.new("RGB", (96, 64), "gray"), image_url=None, image_quality="normal",
             turns=[(f"{key}-0", question, gold, "others", "simple", "static")]) for key, question, gold in questions],
        form="list")
    out = tmp_path / "echo"
    local_evaluation.main(["--dataset", str(dataset), "--dataset-type", "single-turn", "--profile", "cpu",
                           "--preset", "full", "--set", "system=echo", "--set", "warmup_at_load=false",
                           "--agent", "testkit.scripted_peers:TableOneAgent", "--search", "none",
                           "--eval-model", "None", "--output-dir", str(out), "--no_progress",
                           "--display-conversations", "0"])
    summary = json.loads((out / "run_summary.json").read_text())
    assert summary["agent_summary"]["system"] == "echo"
    # the console's header and the report name the system, with the preset beside it
    assert "system echo (preset full), agent testkit.scripted_peers:TableOneAgent" in capsys.readouterr().out
    assert "<title>CRAG-MM report: echo (full; echo)</title>" in (out / "report.html").read_text()
    assert summary["agent_summary"]["branches"] == {"echoed": 1, "too_short": 1}
    # "Umbrellas" is echoed, "A" is too short: its own funnel and both its branches in the report
    page = (out / "report.html").read_text()
    assert "<td>first word longer than one letter</td>" in page
    assert 'data-branch="echoed"' in page and 'data-branch="too_short"' in page


def test_an_unknown_system_and_a_switch_of_a_stage_the_system_lacks_are_refused_in_one_line():
    with pytest.raises(ValueError, match=r"^unknown system 'dragon'; choose one of \[") as unknown:
        load_config("cpu", "full", system="dragon")
    # every system registered now is named (this module's echo too)
    assert all(repr(name) in str(unknown.value) for name in ("cruise", "echo", "qa_dragon", "sam_rag"))
    with pytest.raises(ValueError, match="^use_dual_path is a setting of system cruise, not of system sam_rag$"):
        load_config("cpu", "sam_rag", use_dual_path=True)


def test_the_three_built_in_systems_are_records_in_one_registry():
    systems = registered()
    assert {"cruise", "qa_dragon", "sam_rag"} <= set(systems)
    assert system_named("qa_dragon").stage_names() == (
        "perceive", "standalone", "domain", "draft", "tool_route", "rephrase", "crop", "retrieve", "entity_check", "rerank",
        "fine_rerank", "post_answer", "verify")
    # the parse record's names follow the stage list (SAM-RAG's caption and generation are CRUISE's
    # summary and answer stages under its own names)
    assert system_named("sam_rag").parsed_stages() == ("caption", "is_rel", "generate", "is_use", "regenerate",
                                                      "is_sup")
    assert system_named("cruise").parsed_stages() == ("route", "route_extras", "summarize", "decompose", "crop",
                                                     "entity_check", "relevance", "answer", "consistency", "verify")


def test_the_priors_follow_each_systems_stages():
    l40s = load_config("l40s")
    cruise = stage_priors(system_named("cruise"), l40s)
    dragon = stage_priors(system_named("qa_dragon"), with_system(l40s, "qa_dragon"))
    # a QA-Dragon step priced like CRUISE's stage of the same kind gets its prior; its own steps
    # have none (timed on their first run); it has no CRUISE-only stage
    assert dragon["rerank"] == cruise["rerank"] and dragon["crop"] == cruise["crop"]
    assert "draft" not in dragon and "fine_rerank" not in dragon
    assert "consistency" not in dragon and set(dragon) == {s.name for s in system_named("qa_dragon").stages if s.prior}
    # the echo system: its one stage has no prior, nor has the perception every system opens with
    assert stage_priors(ECHO, l40s) == {}


@pytest.mark.parametrize("view", ["agents.cruise.trace_view", "agents.runtime.trace_view"])
def test_a_turn_is_shown_by_its_own_systems_page_under_the_view_a_run_recorded(view):
    """Runs recorded before systems were records name agents.cruise.trace_view, and their CRUISE
    traces name no system: each turn is still shown by its own system's page."""
    from evaluator.harness.run_record import RunRecord
    from evaluator.report.html import turn_renderer

    render = turn_renderer(RunRecord(trace_view=view))
    cruise = dict(trace={"needs_external": True, "router_raw": "yes", "summary": "a red bus", "chunks": []},
                  branch="not_verified")
    dragon = dict(trace={"system": "qa_dragon", "domain": "vehicle", "branch": "direct_output",
                         "draft_answer": "Camden", "chunks": []}, branch="direct_output")
    echo = dict(trace={"system": "echo", "first_word": "Paris", "chunks": [], "stage_ms": {"perceive": 12.0, "echo": 3.0},
                       "errors": ["echo: the answer was cut"],
                       "perception": {"labels": [["umbrella", 0.91]], "ocr_lines": [], "ms": 12.0, "block": ""}},
                branch="echoed")
    for turn in (cruise, dragon, echo):
        render(turn)
    assert "<th>router</th>" in cruise["trace_html"] and "D-CoT draft" not in cruise["trace_html"]
    assert "<th>D-CoT draft</th>" in dragon["trace_html"] and "<th>router</th>" not in dragon["trace_html"]
    # a system without a page of its own: the rows every turn records (the picture, each stage's
    # time, the errors), then its own fields as they are
    assert "<th>what the picture shows</th><td>objects: umbrella (0.91)" in echo["trace_html"]
    assert "<th>stage ms</th><td>perceive 12, echo 3" in echo["trace_html"]
    assert "echo: the answer was cut" in echo["trace_html"] and echo["extra"]["first_word"] == "Paris"
    assert not {"stage_ms", "errors", "perception"} & set(echo["extra"])


def test_a_second_system_of_a_taken_name_is_refused_naming_both_modules():
    with pytest.raises(ValueError) as refused:
        register(System(name="cruise", stages=(ECHO_STAGE,), run=run_echo, decide=decide_echo,
                        view=View(funnel=echo_funnel)))
    assert str(refused.value) == ("a system named 'cruise' is registered already, by agents.cruise.system; "
                                  "tests.test_systems cannot register another of that name: give it a name of its own")
    assert system_named("cruise").run is not run_echo  # CRUISE's record stands
    # the module that registered a system may register it again (a reload): its record replaces its own
    again = System(name="echo", stages=(ECHO_STAGE,), run=run_echo, decide=decide_echo, view=ECHO.view)
    assert register(again) is again and system_named("echo") is again


USER_SYSTEM = '''
from dataclasses import dataclass

from agents.base_agent import IDK_ANSWER
from agents.runtime.system import Decision, Stage, System, View, register


@dataclass
class Settings:
    {name}_rounds: int = 1


def run(batch):
    return [IDK_ANSWER for _ in batch.turns], [{{"system": batch.system.name}} for _ in batch.turns]


register(System(name="{name}", stages=(Stage("{name}_step"),), run=run,
                decide=lambda trace, cfg: Decision(IDK_ANSWER, "none"), view=View(funnel=lambda t, c: {{}}),
                settings=Settings))
'''


def test_a_users_system_is_found_from_its_module_path_without_importing_it_first(tmp_path, monkeypatch):
    (tmp_path / "my_systems_by_path.py").write_text(USER_SYSTEM.format(name="by_path"))
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ValueError, match="unknown system 'by_path'"):
        load_config("cpu", system="by_path")  # nothing has imported it
    # its own settings are typed and held once the module path found it, in the same --set list
    cfg = load_config_from_settings("cpu", None, ["system=my_systems_by_path:by_path", "by_path_rounds=3"])
    assert system_for(cfg).name == "by_path" and system_for(cfg).stage_names() == ("perceive", "by_path_step")
    assert (cfg.own.by_path_rounds, cfg.has("tau_ret")) == (3, False)
    assert config_from_record(cfg.flat()) == cfg  # a recorded run names where its system is
    with pytest.raises(ValueError, match="no module 'no_such_module'"):
        load_config("cpu", system="no_such_module:mine")


def test_a_users_system_is_found_through_its_packages_entry_point(tmp_path, monkeypatch):
    (tmp_path / "my_systems_by_entry.py").write_text(USER_SYSTEM.format(name="by_entry"))
    info = tmp_path / "my_systems-0.1.dist-info"  # what pip writes for a package that declares one
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: my-systems\nVersion: 0.1\n")
    # the group as a user writes it in pyproject.toml (docs/layout.md), not read from the code
    (info / "entry_points.txt").write_text("[cruise_agent.systems]\nby_entry = my_systems_by_entry\n")
    with pytest.raises(ValueError, match="unknown system 'by_entry'"):
        load_config("cpu", system="by_entry")
    monkeypatch.syspath_prepend(str(tmp_path))
    cfg = load_config_from_settings("cpu", None, ["system=by_entry"])
    assert (cfg.system, system_for(cfg).stage_names()) == ("by_entry", ("perceive", "by_entry_step"))


def test_a_stage_field_no_page_reads_is_listed_by_the_report_and_one_it_reads_is_laid_out():
    import dataclasses

    from agents.runtime.trace_view import prepare_turn, system_shown_keys

    cruise = system_named("cruise")
    added = dataclasses.replace(cruise, stages=(*cruise.stages, Stage("picture_check", writes=("picture_match",))))
    shown = system_shown_keys(added)
    # CRUISE's page reads the CoV confidence and the router's verdicts; nothing reads the new field
    assert {"cov_confidence", "needs_external", "standalone_question"} <= shown and "picture_match" not in shown
    # a turn of the running system is shown by its own page's keys: a QA-Dragon field is not CRUISE's
    assert "draft_answer" not in prepare_turn({"system": "cruise"})["shown_keys"]
    assert "draft_answer" in prepare_turn({"system": "qa_dragon"})["shown_keys"]


def run_misspelled(batch):
    batch.call(Stage("ecoh", batch_fn=echo_batch, writes=("first_word", "rag_answer")))
    return batch.finish()


def echo_system_answering_one_turn(registered_systems, name: str, run):
    """Register an echo system of `name` whose chain is `run`, answer two turns through CruiseAgent,
    and return the answers and traces."""
    registered_systems(System(name=name, stages=(ECHO_STAGE,), run=run, decide=decide_echo, view=ECHO.view))
    config = load_config("cpu", "full", system=name, warmup_at_load=False)
    agent = CruiseAgent(None, config=config, engines=qa_dragon_engines())
    answers = agent.batch_generate_response(["Paris is where?", "Rome?"], [Image.new("RGB", (8, 8))] * 2, [[], []])
    return answers, agent.last_batch_report["traces"]


def test_a_stage_run_under_a_name_not_on_the_record_faults_the_run_naming_both_and_keeps_the_traces(
        registered_systems):
    answers, traces = echo_system_answering_one_turn(registered_systems, "misspelled", run_misspelled)
    assert answers == [IDK_ANSWER, IDK_ANSWER] and [t["branch"] for t in traces] == ["error", "error"]
    fault = traces[0]["faults"][0]
    assert (fault["stage"], fault["exception"]) == (
        "run", "ValueError: stage 'ecoh' is not on the system's record; its stages: ['perceive', 'echo']")
    assert fault["where"] == f"tests/test_systems.py:{run_misspelled.__code__.co_firstlineno + 1}"


def run_counting_chunks(batch):
    batch.call(Stage("echo", batch_fn=lambda b: [{"rag_answer": t.query, "chunks": 3} for t in b.turns],
                     writes=("rag_answer", "chunks")))
    return batch.finish()


def test_a_trace_field_of_the_wrong_type_faults_its_turn_and_the_turn_keeps_its_fields(registered_systems):
    registered_systems(System(name="counting", stages=(ECHO_STAGE,), run=run_counting_chunks, decide=decide_echo,
                              view=ECHO.view))
    config = load_config("cpu", "full", system="counting", warmup_at_load=False)
    agent = CruiseAgent(None, config=config, engines=qa_dragon_engines())
    assert agent.batch_generate_response(["Paris is where?"], [Image.new("RGB", (8, 8))], [[]]) == [IDK_ANSWER]
    trace = agent.last_batch_report["traces"][0]
    assert trace["branch"] == "error" and trace["rag_answer"] == "Paris is where?" and trace["chunks"] == 3
    assert trace["rule_answer"] == "Paris is where?"  # what the rule said, kept
    assert trace["faults"] == [{"stage": "trace", "exception": "TypeError: system 'counting': trace field 'chunks' must "
                                "be a list (the report reads it so), got int 3", "where": trace["faults"][0]["where"]}]


@pytest.mark.parametrize("name", ["cruise", "qa_dragon", "sam_rag", "agentic"])
def test_every_prompt_a_built_in_systems_stages_declare_is_there_and_each_asked_prompt_is_declared(name):
    """What pre-flight loads (Stage.prompts) names files that exist; and each prompts/ file a stage
    of the system reads is among them, so a prompt behind a gate cannot hide from pre-flight."""
    import re
    from pathlib import Path

    from agents.runtime.package_files import own_files
    from agents.stages.prompts import existing_prompt

    system = system_named(name)
    with own_files(system):
        for prompt in system.prompts():
            assert existing_prompt(prompt).is_file()
    assert len(system.prompts()) >= 3
    if name == "agentic":  # its loop names its prompts in one tuple, all declared
        from agents.agentic.loop import PROMPTS
        assert set(PROMPTS) <= set(system.prompts())
    declared = set(system.prompts())
    package = Path(__file__).resolve().parent.parent / "agents" / {"cruise": "cruise", "qa_dragon": "peers/qa_dragon",
                                                                   "sam_rag": "peers/sam_rag", "agentic": "agentic"}[name]
    named = {m for path in package.rglob("*.py") for m in re.findall(r'prompt_name="(\w+)"', path.read_text())}
    assert named <= declared, f"asked but not declared: {sorted(named - declared)}"

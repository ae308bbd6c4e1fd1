"""evaluator.evaluate (evaluator/api.py) called from Python: twice in one process with different
settings, each agent built with its own call's settings and each giving the scores and files of
the command line with the same flags (here in this process too; tests/full/test_library.py runs the
command line in processes of its own); its options are the command line's; the agent given as its
class and the settings typed run and record as their strings; an agent is asked for a model name
only where it declares one."""
from __future__ import annotations

import dataclasses
import inspect
import json
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import pytest

import local_evaluation
from evaluator import EvaluationRefused, EvaluationSettings, evaluate
from evaluator.harness.agent_setup import setup_agent
from testkit.in_process import fresh_environment, run_main
from testkit.library_runs import (
    AGENT,
    K_RECALL,
    agent_k_recall,
    first_turns,
    local_evaluation_flags,
    run_env,
    same_run,
    two_settings,
)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Two library calls in one process, then the command line with the same two settings."""
    root = tmp_path_factory.mktemp("library")
    settings = two_settings()
    results = []
    for i, options in enumerate(settings):
        with fresh_environment(run_env(root, f"library-{i}")):
            results.append(evaluate(**options, output_dir=root / f"library-{i}"))
    procs = [run_main(local_evaluation.main, local_evaluation_flags({**options, "output_dir": str(root / f"cli-{i}")}),
                      env=run_env(root, f"cli-{i}")) for i, options in enumerate(settings)]
    return dict(root=root, results=results, procs=procs, settings=settings)


def test_each_call_builds_its_agent_with_its_own_settings(runs):
    # what the agent held at every batch, not what the run recorded: a setup kept from the first
    # call would build the second call's agent with the first call's (empty) settings
    for i, k_recall in enumerate(K_RECALL):
        assert agent_k_recall(runs["root"], f"library-{i}") == {k_recall}
        assert agent_k_recall(runs["root"], f"cli-{i}") == {k_recall}


def test_each_call_gives_the_files_of_the_command_line_with_the_same_flags(runs):
    for i in range(2):
        assert runs["procs"][i].returncode == 0, runs["procs"][i].stderr[-2000:]
        same_run(runs["root"] / f"library-{i}", runs["root"] / f"cli-{i}", i)


def test_the_results_are_the_written_scores_and_rows(runs):
    first, second = runs["results"]
    assert first.exit_status == 0 and second.exit_status == 0
    assert first.output_dir == runs["root"] / "library-0"
    written = json.loads((first.output_dir / "scores_dictionary.json").read_text())
    assert first.scores == {"all": written["all"], "ego": written["ego"]}
    # worked out by hand: 4 single-turn conversations, two answered with their ground truth, two "I don't know"
    assert (first.scores["all"]["total"], first.scores["all"]["correct"], first.scores["all"]["miss"]) == (4, 2, 2)
    assert first.scores["all"]["accuracy"] == 0.5 and first.scores["all"]["hallucination"] == 0
    assert [r["interaction_id"] for r in first.rows] == list(
        pd.read_csv(first.output_dir / "turn_evaluation_results_all.csv")["interaction_id"])
    # the second call ran its own settings, not the first call's
    turns = sum(len(c.turns) for c in first_turns("multi-turn", 3))
    assert second.scores["all"]["total"] == turns and second.summary["rules"] == "crag-mm"
    assert second.summary["run_config"]["set"] == ["k_recall=3"] and first.summary["run_config"]["set"] == []
    assert any("offline lexical judge" in notice for notice in second.notices)


def test_a_refused_call_raises_one_line_and_an_unknown_option_is_a_type_error(runs):
    with pytest.raises(EvaluationRefused, match="already holds answers: pass --resume"):
        evaluate(**runs["settings"][0], output_dir=runs["root"] / "library-0")
    with pytest.raises(TypeError, match="unknown option num_conversation "):
        evaluate(num_conversation=3)
    with pytest.raises(EvaluationRefused, match="dataset_type='two-turn'"):
        evaluate(dataset_type="two-turn")


def test_the_options_are_the_command_lines_with_its_defaults():
    parsed = vars(local_evaluation.evaluation_parser().parse_args([]))
    assert parsed.pop("list_models") is False  # the command line's listing, not an evaluation's option
    fields = {f.name: f.default for f in dataclasses.fields(EvaluationSettings)}
    assert {k: tuple(v) if isinstance(v, list) else v for k, v in parsed.items()} == fields
    shown = inspect.signature(evaluate).parameters
    assert list(shown)[1:] == list(fields) and shown["num_workers"].default == 8
    assert "resume=True" in evaluate.__doc__ and "rejudge=True" in evaluate.__doc__


class AgentWithoutConfigure:
    def __init__(self, search_pipeline=None):
        self.search_pipeline = search_pipeline


class AgentTakingAnyKeyword:
    @classmethod
    def configure(cls, *, profile, **options):
        return {"profile": profile, **options}


def test_an_agent_that_declares_no_model_name_is_refused_it_in_one_line():
    with pytest.raises(ValueError) as refused:
        setup_agent(AGENT, profile="cpu", model_name="Qwen/Qwen2.5-VL-7B-Instruct")
    assert str(refused.value) == (f"--agent {AGENT} takes no --model-name "
                                  "(its configure() declares no model_name)")
    with pytest.raises(ValueError, match=r"takes no --model-name \(it has no configure\(\)\)"):
        setup_agent(f"{__name__}:AgentWithoutConfigure", profile="cpu", model_name="x")
    # without the flag the same agent is configured as before; one taking any keyword gets the name
    assert setup_agent(AGENT, profile="cpu").config["profile"] == "cpu"
    assert setup_agent(f"{__name__}:AgentTakingAnyKeyword", profile="cpu", model_name="m").config["model_name"] == "m"


def test_the_cruise_agent_declares_the_model_name_it_takes():
    setup = setup_agent("agents.user_config:UserAgent", profile="cpu", model_name="google/gemma-3-4b-it")
    assert setup.config.models.vlm_model == "google/gemma-3-4b-it"
    assert "model_name" in inspect.signature(setup.cls.configure).parameters


def test_a_settings_record_can_be_passed_whole(runs, tmp_path):
    settings = EvaluationSettings(**runs["settings"][0], output_dir=str(tmp_path / "whole"))
    with fresh_environment(run_env(tmp_path, "whole")):
        result = evaluate(dataclasses.replace(settings, generate_only=True))
    assert result.scores == {} and result.exit_status == 0
    assert (Path(settings.output_dir) / "answers.jsonl").exists()
    assert not (Path(settings.output_dir) / "scores_dictionary.json").exists()


@dataclass
class RetrievalChoice:
    """A settings dataclass of the caller's: every field of an instance is set."""

    k_recall: int = 3


@pytest.fixture(scope="module")
def typed_runs(runs):
    """The same two runs with the agent given as its class and the settings typed (a dict, then a
    settings dataclass instance beside a FIELD=VALUE string)."""
    from testkit.scripted_agent import ScriptedAgent

    root = runs["root"]
    typed = [dict(runs["settings"][0], agent=ScriptedAgent),
             dict(runs["settings"][1], agent=ScriptedAgent, set={"k_recall": 3}),
             dict(runs["settings"][1], set=[RetrievalChoice()])]
    for i, options in enumerate(typed):
        with fresh_environment(run_env(root, f"typed-{i}")):
            evaluate(**options, output_dir=root / f"typed-{i}")
    return root


def test_an_agent_class_and_typed_settings_run_and_record_as_their_strings(typed_runs):
    # the same answers, scores and rows, and a run_config.json that names the same agent and --set
    for typed, given in ((0, 0), (1, 1), (2, 1)):
        same_run(typed_runs / f"library-{given}", typed_runs / f"typed-{typed}", given)
        assert agent_k_recall(typed_runs, f"typed-{typed}") == {K_RECALL[given]}
    recorded = json.loads((typed_runs / "typed-1" / "run_config.json").read_text())
    assert recorded["agent"] == AGENT and recorded["args"]["set"] == ["k_recall=3"]


def test_a_typed_value_is_written_as_the_command_line_takes_it_and_a_class_that_cannot_be_named_is_refused():
    from evaluator.settings import set_strings

    assert set_strings([{"use_cov": False, "tau_low": 0.75, "chunk_fields": ("a", "b")}, "k_recall=7",
                        {"stage_cost_priors_s": {"answer": 2.5}, "agent_class": EvaluationSettings}]) == (
        "use_cov=false", "tau_low=0.75", "chunk_fields=a,b", "k_recall=7", 'stage_cost_priors_s={"answer": 2.5}',
        "agent_class=evaluator.settings:EvaluationSettings")

    class Local:
        pass

    with pytest.raises(EvaluationRefused, match=r"^<class '.*Local'> cannot be named for the run: .*<locals>\.Local "
                                                r"does not import back to it"):
        evaluate(agent=Local)
    with pytest.raises(EvaluationRefused, match="^set: 3 is neither"):
        evaluate(set=[3])

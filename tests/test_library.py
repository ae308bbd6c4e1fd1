"""evaluator.evaluate (evaluator/api.py) called from Python: twice in one process with different
settings, each giving the scores and files of the command line with the same flags; its options
are the command line's; an agent is asked for a model name only where it declares one."""
from __future__ import annotations

import dataclasses
import inspect
import json
from pathlib import Path

import pandas as pd
import pytest

import local_evaluation
from agents.profiles import REPO_ROOT
from evaluator import EvaluationRefused, EvaluationSettings, evaluate
from evaluator.harness.agent_setup import setup_agent
from evaluator.harness.dataset import load_split, read_conversations
from testkit.in_process import fresh_environment, offline_env, run_main

MINI = REPO_ROOT / "data" / "crag-mm-mini"
AGENT = "testkit.scripted_agent:ScriptedAgent"
# files whose every byte follows from the settings and the agent's answers (the rest hold times or paths)
SAME_BYTES = ("scores_dictionary.json", "turn_evaluation_results_all.csv", "turn_evaluation_results_ego.csv",
              "turn_evaluation_results_all_extended.csv", "turn_evaluation_results_ego_extended.csv")


def first_turns(dataset_type: str, n: int):
    ds, _, _ = load_split(str(MINI / dataset_type), None, "validation")
    return read_conversations(ds, n)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Two library calls in one process, then the command line with the same two settings."""
    root = tmp_path_factory.mktemp("library")
    single = first_turns("single-turn", 4)
    # the first two single-turn conversations answered with their ground truth, the rest "I don't know"
    answers = {c.turns[0].query: c.turns[0].ground_truth for c in single[:2]}
    script = root / "script.json"
    script.write_text(json.dumps({"answers": answers, "batch_size": 2}))
    env = {**offline_env(root), "SCRIPTED_AGENT_SCRIPT": str(script)}
    common = dict(profile="cpu", agent=AGENT, search="none", eval_model="None", no_progress=True,
                  display_conversations=0, exact_conversations=True)
    settings = [dict(common, dataset_type="single-turn", dataset=str(MINI / "single-turn"), num_conversations=4),
                dict(common, dataset_type="multi-turn", dataset=str(MINI / "multi-turn"), num_conversations=3,
                     set=["k_recall=3"], rules="crag-mm")]
    with fresh_environment(env):
        results = [evaluate(**options, output_dir=root / f"library-{i}") for i, options in enumerate(settings)]
    procs = []
    for i, options in enumerate(settings):
        argv = local_evaluation_flags({**options, "output_dir": str(root / f"cli-{i}")})
        procs.append(run_main(local_evaluation.main, argv, env=env))
    return dict(root=root, results=results, procs=procs, settings=settings)


def local_evaluation_flags(options: dict) -> list[str]:
    """The flags as a user types them (written out here, not by the code under test)."""
    argv = []
    for name, value in options.items():
        flag = "--no_progress" if name == "no_progress" else "--" + name.replace("_", "-")
        if value is True:
            argv.append(flag)
        elif isinstance(value, list):
            for item in value:
                argv += [flag, item]
        else:
            argv += [flag, str(value)]
    return argv


def test_each_call_gives_the_files_of_the_command_line_with_the_same_flags(runs):
    root = runs["root"]
    for i in range(2):
        assert runs["procs"][i].returncode == 0, runs["procs"][i].stderr[-2000:]
        library, cli = root / f"library-{i}", root / f"cli-{i}"
        assert sorted(p.name for p in library.iterdir()) == sorted(p.name for p in cli.iterdir())
        for name in SAME_BYTES:
            assert (library / name).read_bytes() == (cli / name).read_bytes(), (i, name)
        answers = [{k: v for k, v in json.loads(line).items() if k != "batch_wall_ms"}
                   for line in (library / "answers.jsonl").read_text().splitlines()]
        cli_answers = [{k: v for k, v in json.loads(line).items() if k != "batch_wall_ms"}
                       for line in (cli / "answers.jsonl").read_text().splitlines()]
        assert answers == cli_answers
        configs = [json.loads((folder / "run_config.json").read_text()) for folder in (library, cli)]
        for config, folder in zip(configs, (library, cli)):
            assert config["args"].pop("output_dir") == str(folder)
        assert configs[0] == configs[1]


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
    with fresh_environment({**offline_env(tmp_path), "SCRIPTED_AGENT_SCRIPT": str(runs["root"] / "script.json")}):
        result = evaluate(dataclasses.replace(settings, generate_only=True))
    assert result.scores == {} and result.exit_status == 0
    assert (Path(settings.output_dir) / "answers.jsonl").exists()
    assert not (Path(settings.output_dir) / "scores_dictionary.json").exists()

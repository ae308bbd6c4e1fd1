"""What the pre-load check holds each run to: the models a profile's process loads (Task 1 no text
model), and each agent's own list, with the settings it was given. The check itself, run as a user
runs it (a subprocess over a temporary Hugging Face cache): tests/full/test_preload.py.
"""
from __future__ import annotations

import pytest

from agents.config.loading import load_config
from agents.profiles import REPO_ROOT
from evaluator.harness.agent_setup import setup_agent
from evaluator.harness.models import is_hub_id, loaded_models
from evaluator.harness.resolved import resolve_run
from evaluator.search.pipeline import search_config

USER_AGENT = "agents.user_config:UserAgent"
L40S_MODELS = loaded_models(resolve_run("l40s", setup_agent(USER_AGENT, profile="l40s")))
L40S_DATASETS = ["crag-mm-2025/crag-mm-single-turn-public", search_config("l40s").image_index,
                 search_config("l40s").web_index]


def test_the_model_list_is_what_the_l40s_process_loads():
    config, search = load_config("l40s"), search_config("l40s")
    assert L40S_MODELS == [search.image_model, search.text_model, config.models.vlm_model, config.models.router_model,
                           config.models.reranker_model]
    assert "openai/clip-vit-large-patch14-336" in L40S_MODELS and "BAAI/bge-large-en-v1.5" in L40S_MODELS
    l40s_agent = setup_agent(USER_AGENT, profile="l40s")
    assert search.text_model not in loaded_models(resolve_run("l40s", l40s_agent, web=False))  # Task 1 loads no text model
    assert loaded_models(resolve_run("cpu", setup_agent(USER_AGENT, profile="cpu"))) == []  # aliases and local folders only
    assert not is_hub_id("smollm2") and not is_hub_id(str(REPO_ROOT)) and is_hub_id("org/name")


def test_each_agent_names_its_own_models():
    assert setup_agent(USER_AGENT, profile="l40s").hub_models() == [
        "meta-llama/Llama-3.2-11B-Vision-Instruct", "meta-llama/Llama-3.2-1B-Instruct", "BAAI/bge-reranker-v2-m3"]
    # built on CruiseAgent: the same answers, with the settings it was given
    assert setup_agent("testkit.fakes:ScriptedCruiseAgent", profile="l40s",
                       settings=["reranker_backend=server"]).hub_models()[-1] == "meta-llama/Llama-3.2-1B-Instruct"
    # an agent that answers none of the harness's questions loads what it likes: nothing is held to it
    other = setup_agent("testkit.slow_agent:SlowAgent", profile="l40s")
    assert other.config is None and other.hub_models() == [] and other.preload_problems() == []
    with pytest.raises(ValueError, match="cannot import"):
        setup_agent("no.such.module:Agent", profile="cpu")


def test_a_model_setting_no_loader_can_take_is_named_before_anything_loads():
    from agents.preload import model_name_problem

    assert model_name_problem(load_config("cpu")) is None  # aliases
    assert model_name_problem(load_config("l40s")) is None  # hub ids
    assert model_name_problem(load_config("cpu", router_model=str(REPO_ROOT))) is None  # a folder here
    problem = model_name_problem(load_config("cpu", router_model='{"a": 1}', reranker_model="org/name/extra"))
    assert problem.count("\n") == 1 and "router_model '{\"a\": 1}'" in problem and "reranker_model" in problem
    # a served role's name is its server's business, not a loader's
    assert model_name_problem(load_config("cpu", engine="openai", router_model="my served name")) is None


def test_an_agent_whose_model_is_missing_stops_the_run_in_one_line():
    from evaluator.commands import EvaluationRefused, load_agent
    from evaluator.harness.agent_setup import AgentSetup
    from evaluator.settings import EvaluationSettings

    class AgentWithoutItsModel:  # stands in for an agent whose loader finds no weights
        def __init__(self, search_pipeline=None):
            raise OSError("no file named config.json in /nowhere\nmore lines, left out of the one line")

    setup = AgentSetup(spec="tests:AgentWithoutItsModel", cls=AgentWithoutItsModel)
    with pytest.raises(EvaluationRefused) as stop:
        load_agent(EvaluationSettings(search="none", agent=setup.spec), resolve_run("cpu", setup, search="none"),
                   console=None)
    message = str(stop.value)
    assert "\n" not in message and "OSError: no file named config.json in /nowhere" in message
    assert "python -m tools.preflight --profile cpu" in message

"""A setting given more than once: the last one given is the one the run gets, for `system=` as
for any other field, as a command line reads left to right.

Through the run's own path: local_evaluation.py's flags -> EvaluationSettings -> resolve_settings
-> the agent's configure() -> the configuration the agent is handed, and through the public
builder load_config_from_settings.
"""
from __future__ import annotations

import pytest

import local_evaluation
from agents.config.loading import load_config_from_settings
from agents.settings import SettingError
from evaluator.harness.resolved import resolve_settings


def agent_config(*sets: str):
    """The configuration a run of these --set flags hands CruiseAgent (profile cpu)."""
    argv = ["--profile", "cpu"]
    for setting in sets:
        argv += ["--set", setting]
    resolved = resolve_settings(local_evaluation.run_settings(local_evaluation.evaluation_parser().parse_args(argv)))
    return resolved.agent.config


@pytest.mark.parametrize("systems", [("cruise", "qa_dragon"), ("qa_dragon", "sam_rag"), ("sam_rag", "cruise"),
                                     ("qa_dragon", "cruise", "sam_rag")])
def test_of_several_system_settings_the_last_runs_and_its_own_settings_are_taken(systems):
    config = agent_config(*(f"system={name}" for name in systems))
    assert config.system == systems[-1]
    assert load_config_from_settings("cpu", None, [f"system={name}" for name in systems]).system == systems[-1]


def test_a_setting_of_the_last_system_named_is_taken_wherever_it_stands_among_the_system_settings():
    # qa_dragon_coarse_k is QA-Dragon's own: it is held when QA-Dragon is the last system named,
    # even where an earlier system= named another and the setting came before the last one
    config = agent_config("system=cruise", "qa_dragon_coarse_k=7", "system=qa_dragon")
    assert (config.system, config.value("qa_dragon_coarse_k")) == ("qa_dragon", 7)


def test_a_setting_of_an_earlier_system_named_is_refused_when_a_later_one_runs():
    with pytest.raises(SettingError) as refused:
        load_config_from_settings("cpu", None, ["system=qa_dragon", "qa_dragon_coarse_k=7", "system=cruise"])
    assert str(refused.value) == "qa_dragon_coarse_k is a setting of system qa_dragon, not of system cruise"


@pytest.mark.parametrize("values", [(3, 5), (5, 3), (2, 9, 4)])
def test_a_field_given_several_times_takes_its_last_value(values):
    config = agent_config(*(f"k_rerank={value}" for value in values), "tau_low=0.3", "tau_low=0.6")
    assert (config.value("k_rerank"), config.value("tau_low")) == (values[-1], 0.6)
    built = load_config_from_settings("cpu", None, [f"k_rerank={value}" for value in values])
    assert built.value("k_rerank") == values[-1]


def test_the_last_of_a_systems_own_setting_given_twice_wins_after_the_system_is_named_twice():
    config = agent_config("system=qa_dragon", "qa_dragon_coarse_k=7", "system=qa_dragon", "qa_dragon_coarse_k=4")
    assert (config.system, config.value("qa_dragon_coarse_k")) == ("qa_dragon", 4)

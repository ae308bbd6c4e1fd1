"""The agent a run builds and the settings it hands it (evaluator/harness/agent_setup.py), with
stand-in agent classes: one that answers every optional question of agents/base_agent.py, one
that answers none (the official evaluators' shape), and the edges between."""
from __future__ import annotations

import pytest

from evaluator.harness.agent_setup import AgentSetup, setup_agent, takes_model_name


class Built:
    def __init__(self, **given):
        self.given = given


class FullAgent(Built):
    TRACE_VIEW = "standin.trace_view"

    @classmethod
    def configure(cls, profile, preset, settings, calibration, model_name=None):
        return {"profile": profile, "preset": preset, "settings": settings, "calibration": calibration,
                "model_name": model_name}

    @classmethod
    def describe(cls, config):
        return [("profile", config["profile"]), ("preset", config["preset"])]  # any mapping-like pairs

    @classmethod
    def hub_models(cls, config):
        return (f"org/vlm-{config['profile']}", "org/embedder")

    @classmethod
    def preload_problems(cls, config):
        return iter([f"no weights for {config['profile']}"])


class PlainAgent(Built):
    """The official evaluators' agent: built with search_pipeline alone."""


class SettingsOnlyAgent(Built):
    """Takes settings but declares no model_name: asked without it."""

    @classmethod
    def configure(cls, profile, preset, settings, calibration):
        return {"profile": profile, "settings": settings}


class AnyKeywordAgent(Built):
    @classmethod
    def configure(cls, **given):
        return given


class DeclinesAgent(Built):
    """A configure() that answers None: this agent takes no settings after all."""

    @classmethod
    def configure(cls, **given):
        return None

    @classmethod
    def hub_models(cls, config):
        raise AssertionError("not asked without a configuration")

    preload_problems = hub_models


def test_an_agent_answering_every_question_gets_each_setting_and_is_built_with_its_configuration():
    setup = setup_agent(f"{__name__}:FullAgent", profile="l40s", preset="fast", settings=["a=1", "b=2"],
                        calibration="cal.json", model_name="org/other-vlm")
    assert setup.cls is FullAgent and setup.spec == f"{__name__}:FullAgent"
    assert setup.config == {"profile": "l40s", "preset": "fast", "settings": ["a=1", "b=2"],
                            "calibration": "cal.json", "model_name": "org/other-vlm"}
    assert setup.description == {"profile": "l40s", "preset": "fast"}
    assert (setup.model_name, setup.preset, setup.settings, setup.calibration) == (
        "org/other-vlm", "fast", ("a=1", "b=2"), "cal.json")
    assert setup.trace_view == "standin.trace_view"
    assert setup.hub_models() == ["org/vlm-l40s", "org/embedder"]
    assert setup.preload_problems() == ["no weights for l40s"]
    agent = setup.build("the pipeline")
    assert isinstance(agent, FullAgent) and agent.given == {"search_pipeline": "the pipeline", "config": setup.config}


def test_an_agent_without_configure_is_built_as_the_official_evaluators_build_it():
    setup = setup_agent(f"{__name__}:PlainAgent", profile="cpu", settings=None)
    assert setup == AgentSetup(f"{__name__}:PlainAgent", PlainAgent)
    assert (setup.config, setup.description, setup.settings, setup.trace_view) == (None, {}, (), None)
    assert setup.hub_models() == [] and setup.preload_problems() == []
    assert setup.build("the pipeline").given == {"search_pipeline": "the pipeline"}


@pytest.mark.parametrize("spec", ["PlainAgent", "DeclinesAgent"])
def test_settings_an_agent_would_not_receive_are_refused_naming_each_flag(spec):
    with pytest.raises(ValueError) as refused:
        setup_agent(f"{__name__}:{spec}", profile="cpu", preset="fast", settings=["a=1"], calibration="c.json")
    assert str(refused.value) == (f"--agent {__name__}:{spec} takes no settings (it has no configure()), so "
                                  "--preset, --set, --calibration would not reach it")
    with pytest.raises(ValueError, match=r"^--agent \S+ takes no settings \(it has no configure\(\)\), so --set would"):
        setup_agent(f"{__name__}:{spec}", profile="cpu", settings=("a=1",))


def test_a_model_name_for_a_configure_that_answers_none_is_refused():
    with pytest.raises(ValueError) as refused:
        setup_agent(f"{__name__}:DeclinesAgent", profile="cpu", model_name="org/vlm")
    assert str(refused.value) == (f"--agent {__name__}:DeclinesAgent takes no settings (it has no configure()), so "
                                  "--model-name would not reach it")


def test_a_configure_that_answers_none_leaves_the_agent_without_settings():
    setup = setup_agent(f"{__name__}:DeclinesAgent", profile="cpu", preset="", settings=[], calibration=None)
    assert setup.config is None and setup.hub_models() == [] and setup.preload_problems() == []
    assert setup.build("p").given == {"search_pipeline": "p"}


def test_model_name_reaches_only_a_configure_that_declares_it():
    with pytest.raises(ValueError) as refused:
        setup_agent(f"{__name__}:SettingsOnlyAgent", profile="cpu", model_name="org/vlm")
    assert str(refused.value) == (f"--agent {__name__}:SettingsOnlyAgent takes no --model-name "
                                  "(its configure() declares no model_name)")
    with pytest.raises(ValueError) as refused:
        setup_agent(f"{__name__}:PlainAgent", profile="cpu", model_name="org/vlm")
    assert str(refused.value) == f"--agent {__name__}:PlainAgent takes no --model-name (it has no configure())"
    # without the flag it is asked without the keyword; a configure taking any keyword gets it
    plain = setup_agent(f"{__name__}:SettingsOnlyAgent", profile="cpu", settings=["x=1"])
    assert plain.config == {"profile": "cpu", "settings": ["x=1"]} and plain.description == {}
    assert plain.model_name is None
    assert setup_agent(f"{__name__}:AnyKeywordAgent", profile="cpu", model_name="org/vlm").config["model_name"] == "org/vlm"
    assert "model_name" not in setup_agent(f"{__name__}:AnyKeywordAgent", profile="cpu").config
    assert not takes_model_name(None)
    assert takes_model_name(FullAgent.configure) and takes_model_name(AnyKeywordAgent.configure)
    assert not takes_model_name(SettingsOnlyAgent.configure)


def test_an_agent_that_cannot_be_imported_is_refused_in_one_line():
    with pytest.raises(ValueError) as refused:
        setup_agent("no_such_package_here.agent:Agent", profile="cpu")
    assert str(refused.value) == ("--agent no_such_package_here.agent:Agent: cannot import it (ValueError: --agent "
                                  "'no_such_package_here.agent:Agent': no module 'no_such_package_here' to import it from)")
    with pytest.raises(ValueError, match=r"^--agent tests:Agent: cannot import it \(ValueError: .*has no 'Agent'\)$"):
        setup_agent("tests:Agent", profile="cpu")
    with pytest.raises(ValueError, match=r"^--agent FullAgent: cannot import it \(ValueError: .*expected MODULE:NAME\)$"):
        setup_agent("FullAgent", profile="cpu")

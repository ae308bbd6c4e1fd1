"""The settings groups: one check per field from its annotation and range (each numeric field's
span read from its declaration and tried at both bounds), a peer system without CRUISE's
switches, --set typed by annotation, and a run recorded before the groups."""
from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path
from typing import Literal, get_args, get_origin

import pytest

from agents import settings
from agents.config.fields import GROUPS
from agents.config.loading import (
    config_from_environment,
    config_from_record,
    default_config,
    load_config,
    load_config_from_settings,
    set_fields,
)
from agents.config.set_strings import parse_settings
from agents.cruise_agent import CruiseAgent
from agents.runtime.system import registered
from agents.settings import SettingError, check_settings, field_types
from evaluator.harness.fingerprint import differences

BEFORE_GROUPS = json.loads((Path(__file__).with_name("run_config_before_groups.json")).read_text())


def refusal(**flat) -> str:
    with pytest.raises(SettingError) as info:
        load_config("cpu", **flat)
    message = str(info.value)
    assert "\n" not in message
    return message


def test_a_choice_outside_its_literal_is_refused_naming_the_field_and_the_choices():
    assert refusal(cov_mode="bogus") == "cov_mode='bogus': choose one of ('text', 'yes_no', 'grounding')"
    assert refusal(engine="tensorrt") == "engine='tensorrt': choose one of ('vllm', 'transformers', 'openai', 'hosted')"
    assert refusal(crop_mode="quad") == "crop_mode='quad': choose one of ('box', 'tiles', 'box_or_tiles')"
    assert refusal(tau_ret_scope="all") == "tau_ret_scope='all': choose one of ('real_time', 'context')"
    assert refusal(served_image_layout="last").startswith("served_image_layout='last': choose one of (")
    assert refusal(hosted_provider="acme") == "hosted_provider='acme': choose one of ('', 'anthropic', 'gemini', 'openai')"


@pytest.mark.parametrize("group", list(GROUPS.values()), ids=list(GROUPS))
def test_every_choice_field_of_every_group_refuses_an_unknown_value(group):
    for name, hint in field_types(group).items():
        if get_origin(hint) is Literal:
            bad = dataclasses.replace(group(), **{name: "no-such-choice"})
            with pytest.raises(SettingError, match=f"^{name}='no-such-choice': choose one of "):
                check_settings(bad)
            for choice in get_args(hint):
                check_settings(dataclasses.replace(group(), **{name: choice}))


# What each span means (agents/settings.py), written from its meaning: (low, high; None: open above).
MEANINGS = {
    "THRESHOLD": (0.0, 1.01),  # a threshold on a probability or a [0, 1] score; 1.01: nothing passes
    "SHARE": (0.0, 1.0),  # a share, a probability or a [0, 1] score itself
    "COUNT": (1, None),  # how many of something the step needs at least one of (tokens, hits, chunks)
    "COUNT_OR_OFF": (0, None),  # how many, where 0 switches the step or the cache off
    "AMOUNT": (0.0, None),  # seconds, a temperature, a multiple
    "TIMEOUT": (1.0, None),  # a request outside a batch gets at least a second
    "SEED": (0, 2**32 - 1),  # what numpy's and torch's generators take
}


def settings_groups() -> list[type]:
    """Every settings dataclass registered: the shared groups and each registered system's own."""
    return list(dict.fromkeys([*GROUPS.values(), *(s.settings for s in registered().values() if s.settings)]))


def numeric_fields(group) -> dict[str, dataclasses.Field]:
    """field name -> its declaration, for a number or a dict of numbers."""
    declared = {f.name: f for f in dataclasses.fields(group)}
    found = {}
    for name, hint in field_types(group).items():
        number = get_args(hint)[1] if get_origin(hint) is dict else hint
        if number in (int, float):
            found[name] = declared[name]
    return found


def test_each_span_holds_what_it_means():
    assert {name: (getattr(settings, name).low, getattr(settings, name).high) for name in MEANINGS} == MEANINGS
    assert set(settings.SPANS) == {getattr(settings, name) for name in MEANINGS}


@pytest.mark.parametrize("group", settings_groups(), ids=lambda g: g.__name__)
def test_every_numeric_setting_declares_which_span_it_is(group):
    """A number without a span, or (in the package's own groups) with a span of its own making
    rather than one of the meanings above, is refused: its range would go unchecked."""
    for name, declared in numeric_fields(group).items():
        span = declared.metadata.get("span")
        assert isinstance(span, settings.Span), f"{group.__name__}.{name}: no span (ranged(default, SPAN))"
        if group.__module__.startswith("agents."):
            assert span in settings.SPANS, f"{group.__name__}.{name}: {span} is none of agents/settings.py's spans"


@pytest.mark.parametrize("group", settings_groups(), ids=lambda g: g.__name__)
def test_every_numeric_setting_is_taken_at_its_bounds_and_refused_just_past_them(group):
    def checked(name, value):
        field = next(f for f in dataclasses.fields(group) if f.name == name)
        if get_origin(field_types(group)[name]) is dict:  # a dict's range holds for each value
            choices = field.metadata.get("key_choices")
            key = next(iter(getattr(group(), name)), None) or (choices() if callable(choices) else choices or ("answer",))[0]
            value = {key: value}
        check_settings(dataclasses.replace(group(), **{name: value}))

    for name, declared in numeric_fields(group).items():
        number = get_args(field_types(group)[name])[1] if get_origin(field_types(group)[name]) is dict else \
            field_types(group)[name]
        span = declared.metadata["span"]
        low, high = span.low, span.high
        below = low - 1 if number is int else math.nextafter(low, -math.inf)
        checked(name, low)
        with pytest.raises(SettingError, match=f"^{name}=.*must lie in"):
            checked(name, below)
        if high is None:
            checked(name, 10**9)  # open above
        else:
            checked(name, high)
            with pytest.raises(SettingError, match=f"^{name}=.*must lie in"):
                checked(name, high + 1 if number is int else math.nextafter(high, math.inf))


def test_a_number_outside_its_range_or_of_the_wrong_kind_is_refused_in_one_line():
    assert refusal(tau_low=1.5) == "tau_low=1.5: must lie in [0.0, 1.01]"
    assert refusal(direct_temperature=-0.1) == "direct_temperature=-0.1: must lie in [0.0, inf]"
    assert refusal(page_max_chunks=-1) == "page_max_chunks=-1: must lie in [0, inf]"
    assert refusal(k_recall=2.5) == "k_recall=2.5: expected a whole number"
    assert refusal(use_cov="yes") == "use_cov='yes': expected true or false"
    assert refusal(stage_cost_priors_s={"answer": -1.0}) == \
        "stage_cost_priors_s={'answer': -1.0}: 'answer': must lie in [0.0, inf]"
    assert refusal(reasoning_effort={"answer": "max"}).startswith(
        "reasoning_effort={'answer': 'max'}: 'answer': choose one of ('none', 'minimal'")
    assert refusal(reasoning_allowance_tokens={"huge": 10}).startswith(
        "reasoning_allowance_tokens={'huge': 10}: key 'huge': choose one of ('none',")
    # the edges of a range are inside it
    assert load_config("cpu", tau_low=1.01, direct_temperature=0.0).answer.tau_low == 1.01


def test_a_peer_system_holds_no_cruise_switch_and_refuses_one_in_one_line():
    qa = load_config("cpu", "qa_dragon")
    assert type(qa.own).__name__ == "QaDragonSettings" and qa.own.qa_dragon_coarse_k == 5
    assert not {"use_cov", "use_dual_path", "tau_ret", "router_mode"} & set(qa.flat())
    for given in (["use_cov=true"], ["use_cov=false"], ["tau_ret=0.3"]):
        with pytest.raises(SettingError) as info:
            load_config_from_settings("cpu", "qa_dragon", given)
        name = given[0].split("=")[0]
        assert str(info.value) == f"{name} is a setting of system cruise, not of system qa_dragon"
    with pytest.raises(SettingError, match="^qa_dragon_coarse_k is a setting of system qa_dragon, not of system sam_rag$"):
        load_config_from_settings("cpu", "sam_rag", ["qa_dragon_coarse_k=3"])
    with pytest.raises(SettingError, match="^use_cov is a setting of system cruise, not of system sam_rag$"):
        config_from_environment({"CRUISE_PROFILE": "cpu", "CRUISE_PRESET": "sam_rag", "CRUISE_USE_COV": "false"})
    # what the cpu stack and a preset set for CRUISE is not applied under a peer, not refused
    assert load_config("cpu", "qa_dragon+no_cov").has("qa_dragon_coarse_k")
    assert load_config("cpu", "sam_rag").answer.cov_mode == load_config("cpu").answer.cov_mode == "grounding"


def test_set_strings_are_typed_by_the_fields_annotation():
    typed = parse_settings(["tau_low=1", "k_recall=7", "use_cov=off", "chunk_fields=a, b",
                            'stage_cost_priors_s={"answer": 2}', "hosted_provider="])
    assert typed == {"tau_low": 1.0, "k_recall": 7, "use_cov": False, "chunk_fields": ("a", "b"),
                     "stage_cost_priors_s": {"answer": 2}, "hosted_provider": ""}
    # a system's own field is typed by the system the same list names
    assert parse_settings(["sam_rag_rounds=2", "system=sam_rag"]) == {"sam_rag_rounds": 2, "system": "sam_rag"}
    assert isinstance(typed["tau_low"], float) and isinstance(typed["k_recall"], int)
    for bad, named in [("k_recall=seven", "k_recall"), ("use_cov=perhaps", "use_cov"), ("tau_low=high", "tau_low")]:
        with pytest.raises(SettingError, match=f"^--set {named}="):
            parse_settings([bad])
    # a peer system's own field is typed with no configuration that holds it
    assert load_config_from_settings("cpu", "sam_rag", ["sam_rag_rounds=1"]).own.sam_rag_rounds == 1


def test_flat_names_reach_their_group_both_ways():
    cruise = default_config().replace(tau_ret=0.2, tau_low=0.7)
    assert (cruise.own.tau_ret, cruise.answer.tau_low, cruise.value("tau_ret")) == (0.2, 0.7, 0.2)
    # `system` goes first, so its own fields may follow in the same call
    cfg = set_fields(cruise, dict(qa_dragon_coarse_k=2, vlm_model="m", system="qa_dragon"))
    assert (cfg.answer.tau_low, cfg.models.vlm_model, cfg.own.qa_dragon_coarse_k) == (0.7, "m", 2)
    assert cfg.value("tau_low") == 0.7 and cfg.has("qa_dragon_coarse_k") and not cfg.has("tau_ret")
    with pytest.raises(SettingError, match="^tau_ret is a setting of system cruise, not of system qa_dragon$"):
        set_fields(cfg, {"tau_ret": 0.3})
    with pytest.raises(SettingError, match=r"^unknown config field 'nope' \(system qa_dragon; "):
        set_fields(cfg, {"nope": 1})
    # the configuration itself names no other system: it looks none up
    with pytest.raises(SettingError, match="^tau_ret is not a setting of system qa_dragon$"):
        cfg.replace(tau_ret=0.3)
    with pytest.raises(SettingError, match="^system=cruise: a configuration changes its system with for_system"):
        cfg.replace(system="cruise")


def differences_but_added(before: dict, now: dict) -> list[str]:
    """What a resume names, less the settings added since that run was recorded (the conversation
    settings of agents/stages/s1c_standalone.py, a new stage's switch): a resume of it names each,
    which is right, since they may change what a turn does."""
    added = set(now["config"]) - set(before["config"])
    return [line for line in differences(before, now) if line.split(":")[0].removeprefix("config.") not in added]


@pytest.mark.parametrize("preset", ["full", "qa_dragon"])
def test_a_run_recorded_before_the_groups_reads_back_and_resumes_as_the_same_system(preset):
    before = BEFORE_GROUPS[preset]
    # that run had float32 weights and answered every turn (cpu_weights and skip_decided_turns came
    # later): read back, it still does
    assert config_from_record({**before["config"], **before["where"]}) == load_config(
        "cpu", preset, cpu_weights="float32", **({"skip_decided_turns": False} if preset == "full" else {}))
    now = json.loads(json.dumps(CruiseAgent.describe(load_config("cpu", preset))))
    assert differences_but_added({"config": before["config"]}, {"config": now["config"]}) == []
    # QA-Dragon's record kept CRUISE's switches (off); its settings now have none
    assert ("use_cov" in before["config"]) and ("use_cov" in now["config"]) == (preset == "full")


def test_a_run_recorded_before_the_groups_with_other_settings_is_refused_naming_them():
    before = BEFORE_GROUPS["qa_dragon"]
    assert (before["config"]["tau_low"], before["config"]["qa_dragon_coarse_k"]) == (0.6, 5)
    changed = load_config("cpu", "qa_dragon", tau_low=0.5, qa_dragon_coarse_k=3)
    now = json.loads(json.dumps(CruiseAgent.describe(changed)))
    assert differences_but_added({"config": before["config"]}, {"config": now["config"]}) == \
        ["config.qa_dragon_coarse_k: 5 -> 3", "config.tau_low: 0.6 -> 0.5"]


def test_each_built_in_systems_record_names_its_own_settings_group():
    from agents.runtime.system import system_named

    for name, preset in [("cruise", "full"), ("qa_dragon", "qa_dragon"), ("sam_rag", "sam_rag")]:
        own = system_named(name).settings
        assert own.__module__.startswith(("agents.cruise", "agents.peers")) and name not in GROUPS
        cfg = load_config("cpu", preset)
        assert isinstance(cfg.own, own) and set(cfg.flat()) >= {f.name for f in dataclasses.fields(own)}

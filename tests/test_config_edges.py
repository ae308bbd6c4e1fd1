"""The configuration at its edges (agents/config/): a bad or misspelt --set string and the exact
line that refuses it, a setting two other systems hold, a preset read off the running system's
settings, a calibration file and the environment at the AIcrowd boundary, a recorded run's
configuration whose system is gone, the switches that contradict each other and what the
engine refuses, and a system whose settings clash with the shared groups'.
"""
from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass

import pytest

from agents.base_agent import IDK_ANSWER
from agents.config.choices import allowance_field, reasoning_efforts
from agents.config.cruise_config import CruiseConfig
from agents.config.fields import field_default, field_type, shared_name_clashes
from agents.config.loading import (
    config_from_environment,
    config_from_record,
    default_config,
    load_config,
    load_config_from_settings,
    set_fields,
)
from agents.config.presets import FINALIZER_FIELDS, preset_settings
from agents.config.set_strings import parse_settings
from agents.config.validation import validate_config
from agents.cruise.settings import CruiseSettings
from agents.engines.cpu_path import resolve_cpu_weights
from agents.peers.qa_dragon.settings import QaDragonSettings
from agents.profiles import detect_profile
from agents.runtime.system import Decision, Prior, Stage, System, View
from agents.settings import SettingError, check_settings


def refusal(call) -> str:
    with pytest.raises((SettingError, TypeError, KeyError)) as refused:
        call()
    return str(refused.value)


# --------------------------------------------------------------------------- --set strings
@pytest.mark.parametrize("setting", ["tau_low", "=0.5", " =0.5"])
def test_a_set_string_without_a_field_or_an_equals_sign_is_refused_in_one_line(setting):
    assert refusal(lambda: parse_settings([setting])) == f"--set {setting!r}: expected FIELD=VALUE"


def test_a_set_strings_value_may_hold_equals_signs_and_its_name_any_case():
    assert parse_settings(["vlm_base_url=http://host:8000/v1?a=b", " TAU_LOW =0.25"]) == {
        "vlm_base_url": "http://host:8000/v1?a=b", "tau_low": 0.25}


def test_a_misspelt_setting_is_refused_naming_the_running_system_and_the_closest_names():
    assert refusal(lambda: parse_settings(["tau_lw=0.5"])) == (
        "--set 'tau_lw=0.5': unknown config field 'tau_lw' (system cruise; `python -m agents.config_cli show "
        "PROFILE` lists them); did you mean 'tau_low' or 'tau_ret'?")
    assert refusal(lambda: parse_settings(["system=qa_dragon", "qa_dragon_coarse=3"])) == (
        "--set 'qa_dragon_coarse=3': unknown config field 'qa_dragon_coarse' (system qa_dragon; `python -m "
        "agents.config_cli show PROFILE` lists them); did you mean 'qa_dragon_coarse_k' or 'qa_dragon_coarse_min' or "
        "'qa_dragon_answer_lengths'?")


def test_a_misspelt_field_set_on_a_configuration_gets_the_running_systems_own_names_too():
    cfg = default_config()
    assert refusal(lambda: set_fields(cfg, {"tau_rett": 0.5})) == (
        "unknown config field 'tau_rett' (system cruise; `python -m agents.config_cli show PROFILE` lists them); "
        "did you mean 'tau_ret' or 'tau_ret_scope'?")


@dataclass
class DepthSettings:
    probe_depth: int = 1


@dataclass
class ClashSettings:
    probe_depth: int = 1
    tau_low: float = 0.5
    k_recall: int = 3


def a_system(name: str, settings: type) -> System:
    """A record the registry takes, with `settings` as its own."""
    return System(name=name, stages=(Stage("probe_answer", prior=Prior("answer")),),
                  run=lambda batch: ([IDK_ANSWER] * len(batch.turns), [{} for _ in batch.turns]),
                  decide=lambda trace, cfg: Decision(IDK_ANSWER, "none"),
                  view=View(funnel=lambda trace, cfg: {}, branches=("none",)), settings=settings)


def test_a_setting_two_other_systems_hold_names_both(registered_systems):
    registered_systems(a_system("probe_a", DepthSettings))
    registered_systems(a_system("probe_b", DepthSettings))
    assert refusal(lambda: parse_settings(["probe_depth=2"])) == \
        "probe_depth is a setting of system probe_a and probe_b, not of system cruise"
    assert parse_settings(["system=probe_b", "probe_depth=2"]) == {"system": "probe_b", "probe_depth": 2}
    assert refusal(lambda: parse_settings(["system=probe_a", "probe_depth=2", "tau_ret=0.1"])) == \
        "tau_ret is a setting of system cruise, not of system probe_a"


def test_a_system_whose_settings_declare_a_shared_fields_name_is_refused_when_it_is_resolved(registered_systems):
    registered_systems(a_system("probe_clash", ClashSettings))
    assert shared_name_clashes(ClashSettings) == ["k_recall", "tau_low"]
    assert shared_name_clashes(ClashSettings()) == ["k_recall", "tau_low"]
    assert shared_name_clashes(DepthSettings) == [] and shared_name_clashes(None) == []
    assert refusal(lambda: load_config_from_settings("cpu", None, ["system=probe_clash"])) == (
        "system probe_clash: its settings ClashSettings declare fields the shared groups declare too: "
        "['k_recall', 'tau_low'] (a flat name must say one field)")


# --------------------------------------------------------------------------- fields and the container
def test_a_field_none_declares_is_a_key_error_naming_it_and_a_factory_default_is_made_fresh():
    assert refusal(lambda: field_type("no_such_field")) == "'no_such_field'"
    assert refusal(lambda: field_default("tau_ret")) == "'tau_ret'"  # CRUISE's own: not without its class
    assert field_default("tau_ret", CruiseSettings) == 0.5
    assert field_default("reasoning_effort") == {} and field_default("stage_cost_priors_s") == {}
    assert field_default("reasoning_effort") is not field_default("reasoning_effort")
    assert field_default("chunk_fields") == ("description", "caption", "summary")
    assert field_default("system") == "cruise"


def test_a_bare_configuration_holds_the_six_shared_groups_and_reads_its_records_by_name():
    bare = CruiseConfig()
    assert [type(g).__name__ for g in bare.groups()] == ["ModelSettings", "InputSettings", "RetrievalSettings",
                                                         "PeerStageSettings", "AnswerSettings", "RunSettings"]
    assert validate_config(bare) is bare
    cfg = load_config("cpu", preset="no_cov")
    assert (cfg.value("system"), cfg.value("preset"), cfg.value("profile")) == ("cruise", "no_cov", "cpu")
    assert cfg.groups()[-1] is cfg.own


def test_replacing_the_own_settings_whole_keeps_the_rest():
    cfg = default_config()
    changed = cfg.replace(own=CruiseSettings(tau_ret=0.25), tau_low=0.5)
    assert (changed.own.tau_ret, changed.answer.tau_low, changed.system) == (0.25, 0.5, "cruise")
    assert cfg.own.tau_ret == 0.5 and cfg.answer.tau_low == 0.9  # the original is left as it was
    assert cfg.replace() == cfg


def test_a_reasoning_allowance_starts_empty_and_takes_only_an_effort_and_a_count():
    @dataclass
    class Allowance:
        tokens: dict[str, int] = allowance_field()

    first, second = Allowance(), Allowance()
    assert first.tokens == {} and first.tokens is not second.tokens
    check_settings(Allowance(tokens={"low": 0, "high": 2048}))
    with pytest.raises(SettingError, match=r"^tokens=\{'lots': 5\}: .*'none'"):
        check_settings(Allowance(tokens={"lots": 5}))
    with pytest.raises(SettingError, match=r"^tokens=\{'low': -1\}"):
        check_settings(Allowance(tokens={"low": -1}))
    assert "minimal" in reasoning_efforts()


# --------------------------------------------------------------------------- presets
def test_a_preset_read_off_the_defaults_is_handed_the_system_the_presets_before_it_leave_running():
    asked = []

    def settings_of(system):
        asked.append(system)
        return {"cruise": CruiseSettings, "qa_dragon": QaDragonSettings}[system]

    assert preset_settings("paper_finalizer", settings_of) == {name: field_default(name, CruiseSettings)
                                                               for name in FINALIZER_FIELDS}
    got = preset_settings("qa_dragon+paper_finalizer", settings_of)
    assert asked == ["cruise", "qa_dragon"]
    assert got == {"system": "qa_dragon", "use_crop_search": True, "use_entity_check": True, "cov_mode": "text",
                   "tau_low": 0.9, "min_token_prob": 0.0}  # QA-Dragon holds no tau_ret


def test_the_paper_finalizer_preset_resets_the_stacks_thresholds_to_the_papers():
    stack = load_config("cpu")
    assert (stack.answer.cov_mode, stack.own.tau_ret_scope, stack.own.tau_ret, stack.answer.tau_low) == \
        ("grounding", "context", 0.9, 0.6)
    for cfg in (load_config("cpu", preset="paper_finalizer"), load_config_from_settings("cpu", "paper_finalizer")):
        assert (cfg.answer.cov_mode, cfg.own.tau_ret_scope, cfg.own.tau_ret, cfg.answer.tau_low, cfg.own.tau_high,
                cfg.answer.min_token_prob) == ("text", "real_time", 0.5, 0.9, 1.0, 0.0)


# --------------------------------------------------------------------------- load_config's steps
@pytest.fixture
def calibration(tmp_path):
    path = tmp_path / "calibration.json"
    path.write_text(json.dumps({"settings": {"tau_low": 0.42, "tau_ret": 0.33}}))
    return path


def test_a_calibration_files_thresholds_apply_where_the_finalizer_reads_them(calibration):
    for cfg in (load_config("cpu", calibration=calibration),
                load_config_from_settings("cpu", None, [], calibration=str(calibration))):
        assert (cfg.answer.tau_low, cfg.own.tau_ret) == (0.42, 0.33)
    baseline = load_config("cpu", "rag_baseline", calibration)  # no finalizer: no thresholds of it
    assert (baseline.answer.tau_low, baseline.own.tau_ret) == (0.6, 0.9)
    peer = load_config("cpu", "sam_rag", calibration)  # SAM-RAG holds no tau_ret: left out
    assert peer.answer.tau_low == 0.42 and not peer.has("tau_ret")
    # an override is applied after the file
    assert load_config("cpu", calibration=calibration, tau_low=0.7).answer.tau_low == 0.7


def test_the_cpu_weights_auto_is_resolved_to_this_cpus_path_and_a_forced_one_kept():
    resolved = resolve_cpu_weights("auto")
    assert resolved != "auto"
    assert load_config("cpu").models.cpu_weights == resolved
    assert load_config("cpu", cpu_weights="int8").models.cpu_weights == "int8"


def test_set_strings_reach_load_config_with_the_stack_model_name_and_profile_given():
    cfg = load_config_from_settings("cpu", "no_cov", ["tau_low=0.3"], stack="qwen2.5-vl")
    assert (cfg.profile, cfg.stack, cfg.preset, cfg.answer.tau_low, cfg.own.use_cov) == (
        "cpu", "qwen2.5-vl", "no_cov", 0.3, False)
    named = load_config_from_settings("cpu", None, [], model_name="meta-llama/Llama-3.2-11B-Vision-Instruct")
    assert (named.stack, named.models.vlm_model) == ("llama-3.2-vision", "meta-llama/Llama-3.2-11B-Vision-Instruct")
    assert load_config_from_settings(None, None).profile == detect_profile()
    assert load_config_from_settings("l40s", None).profile == "l40s"


def test_a_profile_left_unsaid_is_the_one_this_machine_gets():
    assert load_config().profile == detect_profile()
    assert config_from_environment({}).profile == detect_profile()


def test_the_aicrowd_boundary_reads_the_stack_calibration_and_profile_from_the_environment(calibration, monkeypatch):
    env = {"CRUISE_PROFILE": "cpu", "CRUISE_STACK": "qwen2.5-vl", "CRUISE_CALIBRATION": str(calibration)}
    cfg = config_from_environment(env)
    assert (cfg.profile, cfg.stack, cfg.preset, cfg.answer.tau_low, cfg.own.tau_ret) == (
        "cpu", "qwen2.5-vl", "full", 0.42, 0.33)
    empty = config_from_environment({"CRUISE_PROFILE": "cpu", "CRUISE_STACK": "", "CRUISE_CALIBRATION": "",
                                     "CRUISE_PRESET": ""})
    assert (empty.stack, empty.preset, empty.answer.tau_low) == ("smollm2", "full", 0.6)
    assert config_from_environment({"CRUISE_PROFILE": "l40s"}).profile == "l40s"
    # without a mapping: the process's environment, the one place it is read
    monkeypatch.setenv("CRUISE_PROFILE", "cpu")
    monkeypatch.setenv("CRUISE_TAU_LOW", "0.35")
    assert config_from_environment().answer.tau_low == 0.35


# --------------------------------------------------------------------------- a recorded run's configuration
def test_a_record_without_a_system_is_cruises_and_one_whose_system_is_gone_holds_the_shared_groups():
    bare = config_from_record({"tau_low": 0.4})
    assert (bare.system, type(bare.own), bare.answer.tau_low) == ("cruise", CruiseSettings, 0.4)
    assert config_from_record({"system": None}).system == "cruise"
    gone = config_from_record({"system": "retired_system", "tau_low": 0.4, "tau_ret": 0.2,
                               "chunk_fields": ["summary"]})
    assert (gone.system, gone.own, gone.answer.tau_low) == ("retired_system", None, 0.4)
    assert gone.retrieval.chunk_fields == ("summary",) and not gone.has("tau_ret")


# --------------------------------------------------------------------------- validation
@pytest.mark.parametrize("changes, says", [
    (dict(use_finalizer=False),
     "use_self_consistency=True needs use_finalizer=True (only the finalizer reads the consistency verdict); "
     "switch use_self_consistency off or use_finalizer on"),
    (dict(use_self_consistency=False, use_finalizer=False),
     "use_cov=True needs use_finalizer=True (only the finalizer reads the CoV confidence); switch use_cov off or "
     "use_finalizer on"),
    (dict(use_self_consistency=False, use_cov=False, use_finalizer=False, min_token_prob=0.2),
     "min_token_prob=0.2 needs use_finalizer=True (only the finalizer applies the token-probability gate); "
     "switch min_token_prob off or use_finalizer on"),
    (dict(use_decompose=True, use_router=False),
     "use_decompose=True needs use_router=True (the router marks the multi-hop and comparison questions); "
     "switch use_decompose off or use_router on"),
    (dict(engine="hosted", vlm_model="mystery-model"),
     "engine hosted: no provider is known for vlm_model 'mystery-model'; name one with hosted_provider (one of "
     "['anthropic', 'gemini', 'openai'])"),
])
def test_contradicting_switches_and_what_the_engine_refuses_are_refused_in_one_line(changes, says):
    assert refusal(lambda: validate_config(default_config(**changes))) == says


def test_a_switch_rule_applies_only_to_a_system_that_holds_both_of_its_fields():
    # QA-Dragon holds no self-consistency nor CoV: its finalizer may be off
    peer = default_config(system="qa_dragon", use_finalizer=False)
    assert validate_config(peer) is peer
    on = default_config(use_finalizer=True, min_token_prob=0.2)
    assert validate_config(on) is on
    assert dataclasses.replace(on.answer, min_token_prob=0.0) == default_config().answer

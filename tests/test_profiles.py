"""Profiles and model stacks (agents/profiles.py, agents/stacks.py) and the configuration built
from them (agents/config/; its command line, agents/config_cli.py): each profile one record, the paper's values as the defaults, settings
passed explicitly, the environment read at the AIcrowd boundary only."""
from __future__ import annotations

import pytest

from agents.config.cruise_config import own_field_names
from agents.config.fields import field_names
from agents.config.loading import (
    config_from_environment,
    config_from_record,
    default_config,
    load_config,
    load_config_from_settings,
)
from agents.config.set_strings import parse_settings
from agents.config_cli import diff, main, show
from agents.profiles import PROFILES, default_dataset
from agents.runtime.system import registered
from agents.settings import SettingError
from agents.stacks import PAPER_RERANKER, PAPER_ROUTER, PAPER_VLM, STACKS


def test_the_defaults_are_the_papers_values():
    cfg = default_config()
    models, retrieval = cfg.models, cfg.retrieval
    assert (models.router_model, models.vlm_model, models.reranker_model) == (PAPER_ROUTER, PAPER_VLM, PAPER_RERANKER)
    # section 3.2 and Algorithm 1
    assert (retrieval.k_recall, retrieval.mad_tau, retrieval.mad_lambda, retrieval.mad_top_k, retrieval.k_rerank) == \
        (10, 0.1, 1.5, 10, 3)
    assert (cfg.answer.tau_low, cfg.own.tau_high, cfg.own.tau_ret_scope, cfg.answer.cov_mode) == \
        (0.9, 1.0, "real_time", "text")


def test_l40s_is_the_paper_plus_its_machine():
    cfg = load_config("l40s")
    paper = default_config()
    changed = {name for name, value in cfg.flat().items() if value != paper.flat()[name]}
    machine = {name for name, value in PROFILES["l40s"].agent.items() if paper.value(name) != value}
    assert changed == {"profile"} | machine and "vlm_model" not in changed
    assert STACKS["llama-3.2-vision"].settings == {}


def test_every_change_a_profile_or_stack_makes_is_a_field():
    # the configuration's fields and the built-in systems' own (a stack sets CRUISE's router mode)
    names = field_names() | {name for system in registered().values() if system.settings
                             for name in own_field_names(system.settings)}
    for record in [*PROFILES.values(), *STACKS.values()]:
        assert set(getattr(record, "agent", {})) | set(getattr(record, "settings", {})) <= names, record.name


def test_load_config_does_not_read_the_environment(monkeypatch):
    monkeypatch.setenv("CRUISE_TAU_LOW", "0.11")
    monkeypatch.setenv("CRUISE_PROFILE", "l40s")
    monkeypatch.setenv("CRUISE_PRESET", "no_cov")
    cfg = load_config("cpu")
    assert (cfg.profile, cfg.preset, cfg.answer.tau_low) == ("cpu", "full", 0.6)


def test_the_aicrowd_boundary_reads_the_environment():
    env = {"CRUISE_PROFILE": "cpu", "CRUISE_PRESET": "no_cov", "CRUISE_TAU_RET": "0.3",
           "CRUISE_CHUNK_FIELDS": "description,summary"}
    cfg = config_from_environment(env)
    assert (cfg.profile, cfg.preset, cfg.own.use_cov, cfg.own.tau_ret) == ("cpu", "no_cov", False, 0.3)
    assert cfg.retrieval.chunk_fields == ("description", "summary")
    with pytest.raises(SettingError, match="use_cov"):
        config_from_environment({"CRUISE_PROFILE": "cpu", "CRUISE_USE_COV": "perhaps"})


def test_a_dict_field_is_set_as_json_or_refused_in_one_line():
    cfg = load_config_from_settings("l40s", None, ['stage_cost_priors_s={"answer": 2.5}'])
    assert cfg.run.stage_cost_priors_s == {"answer": 2.5}
    for bad in ["stage_cost_priors_s=answer:2", "stage_cost_priors_s=[1, 2]"]:
        with pytest.raises(SettingError) as info:
            load_config_from_settings("l40s", None, [bad])
        assert "stage_cost_priors_s" in str(info.value) and "\n" not in str(info.value)
    with pytest.raises(ValueError, match="stage_cost_priors_s"):
        load_config_from_settings("l40s", None, ['stage_cost_priors_s={"answer": "slow"}'])


def test_settings_are_typed_as_the_field_is_where_they_land():
    assert parse_settings(["tau_low=0.5", "k_recall=7", "use_cov=off", "vlm_model=x/y"]) == \
        {"tau_low": 0.5, "k_recall": 7, "use_cov": False, "vlm_model": "x/y"}
    for bad in ["nofield=1", "tau_low", "profile=l40s"]:
        with pytest.raises(SettingError):
            parse_settings([bad])


def test_presets_join_left_to_right():
    cfg = load_config("cpu", "no_cov+paper_finalizer")
    assert not cfg.own.use_cov and cfg.answer.cov_mode == "text" and cfg.answer.tau_low == 0.9 and cfg.preset == "no_cov+paper_finalizer"
    assert load_config("cpu", "paper_finalizer+no_cov").answer.tau_low == 0.9
    with pytest.raises(SettingError, match="nope"):
        load_config("cpu", "full+nope")


def test_a_recorded_config_comes_back_equal():
    cfg = load_config_from_settings("cpu", "extended", ["chunk_fields=a,b", 'stage_cost_priors_s={"x": 1.0}'])
    import json

    record = json.loads(json.dumps(cfg.flat()))
    assert config_from_record(record) == cfg
    assert config_from_record({**record, "engine_overrides": {}}) == cfg  # a field since removed is dropped


def test_show_and_diff_name_every_part_of_a_profile(capsys):
    shown = show("cpu")
    for line in ["vlm_model = smollm2", "search.image_model = efficientnet-lite0",
                 "search.provider = minibench.search_provider", "dataset = data/crag-mm-mini/{dataset_type}",
                 "gpus_per_worker = 0.0", "cov_mode = grounding"]:
        assert line in shown.splitlines(), line
    changed = diff("cpu", "l40s")
    assert "vlm_model" in changed and "smollm2" in changed and PAPER_VLM in changed
    assert "search.text_model" in changed and "BAAI/bge-large-en-v1.5" in changed
    assert "k_recall" not in changed  # the same on both
    assert main(["diff", "cpu", "served"]) == 0
    out = capsys.readouterr().out
    assert "engine" in out and "openai" in out


def test_show_resolves_the_indices_and_says_what_indices_changes():
    """A hub profile names no index of its own: show prints the pair a run searches and the other
    --indices choice, never None; a profile with its own indices says --indices leaves them."""
    shown = show("l40s").splitlines()
    assert ("search.image_index = crag-mm-2025/image-search-index-public-test  # --indices public-test (the default); "
            "--indices validation: crag-mm-2025/image-search-index-validation") in shown
    assert ("search.web_index = crag-mm-2025/web-search-index-public-test  # --indices public-test (the default); "
            "--indices validation: crag-mm-2025/web-search-index-validation") in shown
    assert ("search.provider = None  # none: every model and index is a Hugging Face id "
            "(python -m tools.fetch)") in shown
    assert not [line for line in shown if line.split("  #")[0].endswith("index = None")]
    assert ("search.image_index = crag-mm-mini/image-search-index  # the profile's own; --indices does not "
            "change it") in show("cpu").splitlines()


def test_default_dataset_is_the_profiles():
    assert default_dataset("l40s", "multi-turn") == "crag-mm-2025/crag-mm-multi-turn-public"
    assert default_dataset("cpu", "single-turn").endswith("data/crag-mm-mini/single-turn")


def test_a_model_name_picks_its_familys_stack_and_plays_both_chat_roles():
    from agents.stacks import stack_for_model

    cfg = load_config("cpu", model_name="meta-llama/Llama-3.2-11B-Vision-Instruct")
    assert cfg.stack == "llama-3.2-vision" and cfg.models.vlm_model == cfg.models.router_model
    # the cpu stack's readings for a 135M text model do not carry over to the named VLM
    assert (cfg.answer.cov_mode, cfg.own.router_mode, cfg.answer.tau_low) == ("text", "text", 0.9)
    assert (cfg.models.engine, cfg.models.reranker_backend) == ("transformers", "minilm")  # the machine's engine, unless the family says otherwise
    named = load_config("cpu", model_name="meta-llama/Llama-3.2-11B-Vision-Instruct", router_model="org/router")
    assert named.models.router_model == "org/router"
    with pytest.raises(ValueError, match="no model family matches"):
        stack_for_model("acme/unknown-vlm")

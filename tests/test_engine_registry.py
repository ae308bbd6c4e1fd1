"""Engines and reranker backends are records (agents/engines/registry.py): a new one is its record
and its file, and the settings' choices, the assembly (agents/factory.py), the pre-run check
(agents/preload.py) and the text fallbacks read the record, never its name."""
from __future__ import annotations

from typing import get_args

import pytest

from agents.config.loading import load_config
from agents.engines.base import Ledger
from agents.engines.registry import CHAT_ENGINES, RERANKERS, ChatEngineKind, RerankerKind
from agents.factory import build_engines, in_process_roles, served_roles
from agents.preload import engine_problem, in_process_models
from agents.settings import field_types
from testkit.fakes import FunctionReranker, ScriptedEngine

BUILT: list[tuple[str, str]] = []


def build_echo(models, role, ledger):
    """The new engine's file would hold this: one engine per role, from the run's ModelSettings."""
    BUILT.append((role, getattr(models, f"{role}_model")))
    return ScriptedEngine({})


def build_zero(models, ledger):
    return FunctionReranker(lambda query, chunk: 0.0)


def no_probabilities(models, role):
    return False


def problem_before_load(models, stack):
    return f"cannot start: the echo engine has no {models.vlm_model} ({stack})"


@pytest.fixture
def echo_engine(monkeypatch):
    """One record added, as a new engine adds its line to CHAT_ENGINES and RERANKERS."""
    here = __name__
    monkeypatch.setitem(CHAT_ENGINES, "echo", ChatEngineKind(
        "echo", f"{here}:build_echo", loads_here=False, served=True,
        reads_probabilities=f"{here}:no_probabilities", preload_problem=f"{here}:problem_before_load"))
    monkeypatch.setitem(RERANKERS, "zero", RerankerKind("zero", f"{here}:build_zero"))
    BUILT.clear()


def test_the_settings_choices_are_the_registrys_records():
    from agents.config.groups import ModelSettings

    hints = field_types(ModelSettings)
    assert get_args(hints["engine"]) == tuple(CHAT_ENGINES) and get_args(hints["reranker_backend"]) == tuple(RERANKERS)


def test_a_new_engine_is_built_checked_and_read_from_its_record_alone(echo_engine):
    # the Literal of choices was read off the registry at import: a record added here is checked
    # by its own hooks, applied past that check
    cfg = load_config("cpu", router_mode="yes_no", consistency_mode="yes_no").replace(
        engine="echo", reranker_backend="zero", router_model="r", vlm_model="v")
    engines = build_engines(cfg, Ledger())
    assert BUILT == [("vlm", "v"), ("router", "r")] and engines.router is not engines.vlm
    assert isinstance(engines.reranker, FunctionReranker)
    # its models load elsewhere and sit behind a server: the pre-run check asks their servers
    assert (served_roles(cfg), in_process_roles(cfg), list(in_process_models(cfg))) == \
        (["vlm", "router"], ["reranker"], ["reranker"])
    assert engine_problem(cfg) == "cannot start: the echo engine has no v (smollm2)"
    # it returns no token probabilities: the stages that read them fall back to text
    from agents.engine_capabilities import logprob_fallbacks

    fallen = logprob_fallbacks(cfg)
    assert (fallen.value("router_mode"), fallen.answer.consistency_mode) == ("text", "text")
    # one engine for both roles where the record's key says they are the same model
    BUILT.clear()
    same = build_engines(cfg.replace(router_model="v"), Ledger())
    assert BUILT == [("vlm", "v")] and same.router is same.vlm


def test_an_unknown_engine_or_backend_is_named_with_the_choices():
    cfg = load_config("cpu")
    with pytest.raises(ValueError, match=r"^unknown engine 'onnx'; choose one of \('vllm', 'transformers', "):
        build_engines(cfg.replace(engine="onnx"), Ledger())
    with pytest.raises(ValueError, match=r"^unknown reranker_backend 'bm25'; choose one of \('flag', 'minilm', "):
        served_roles(cfg.replace(reranker_backend="bm25"))

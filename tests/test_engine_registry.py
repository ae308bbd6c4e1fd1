"""Engines and reranker backends are records (agents/engines/registry.py): a new one is its record
and its file, and the settings' choices, the assembly (agents/factory.py), the pre-run check
(agents/preload.py) and the text fallbacks read the record, never its name."""
from __future__ import annotations

from typing import get_args

import pytest

from agents.config.loading import load_config
from agents.engines.base import ChatRequest, Ledger, Sampling
from agents.engines.registry import CHAT_ENGINES, RERANKERS, ChatEngineKind, RerankerKind
from agents.factory import build_engines, in_process_roles, served_roles
from agents.preload import engine_problem, in_process_models
from agents.settings import field_types
from testkit.fakes import FunctionReranker, ScriptedEngine
from testkit.loopback import chat_answer

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


# --- the built-in records, read through the assembly -----------------------------------------------

def served_settings(server, **more) -> dict:
    """The cpu chain with both roles behind one OpenAI-compatible server (testkit/loopback.py stands
    in for it) and the stages that read token probabilities on."""
    return dict(engine="openai", vlm_base_url=server.base_url, vlm_served_name="NAME", router_mode="yes_no",
                consistency_mode="yes_no", reranker_backend="server", reranker_base_url=server.base_url, **more)


def ask(engine):
    return engine.generate([ChatRequest([{"role": "user", "content": "Which city?"}])], Sampling(logprobs=True))[0]


def test_an_openai_served_model_keeps_the_stages_that_read_token_probabilities(loopback):
    """Its record's hook: a served model returns them (the yes/no stages stay), an OpenAI reasoning
    model's name does not (its API refuses `logprobs`), whatever other engines say."""
    server = loopback(chat_answer(["Par", "is"], [-0.1, -0.2], "Paris", {"finish_reason": "stop"}))
    cfg = load_config("cpu", **served_settings(server))
    assert (cfg.value("router_mode"), cfg.answer.consistency_mode, cfg.mode_fallbacks) == ("yes_no", "yes_no", ())
    engines = build_engines(cfg, Ledger())
    assert ask(engines.router).token_logprobs == [-0.1, -0.2] and server.requests[-1][2]["logprobs"] is True
    reasoning = load_config("cpu", **{**served_settings(server), "vlm_served_name": "o4-mini"})
    assert (reasoning.value("router_mode"), reasoning.answer.consistency_mode) == ("text", "text")


def test_openai_roles_share_an_engine_only_under_one_served_name(loopback):
    """Its record's key: the router is the VLM's model on the VLM's server, so one engine asks for
    the one served name; given a served name of its own it is another model there, another engine."""
    server = loopback(chat_answer(["Par", "is"], [-0.1, -0.2], "Paris", {"finish_reason": "stop"}))
    one = build_engines(load_config("cpu", **served_settings(server)), Ledger())
    ask(one.router)
    assert one.router is one.vlm and server.requests[-1][2]["model"] == "NAME"
    two = build_engines(load_config("cpu", **served_settings(server, router_served_name="ROUTER")), Ledger())
    assert two.router is not two.vlm
    ask(two.router)
    ask(two.vlm)
    assert [body["model"] for _, _, body in server.requests[-2:]] == ["ROUTER", "NAME"]


@pytest.mark.parametrize("int8", [True, False])
def test_the_flag_reranker_is_built_with_int8_linear_layers_when_the_settings_ask(loopback, int8):
    import torch

    from testkit.tiny_models import build_tiny_xlmr_reranker

    server = loopback(chat_answer(["Par", "is"], [-0.1, -0.2], "Paris", {"finish_reason": "stop"}))
    settings = {**served_settings(server), "reranker_backend": "flag", "reranker_model": build_tiny_xlmr_reranker(),
                "reranker_int8": int8}
    reranker = build_engines(load_config("cpu", **settings), Ledger()).reranker
    plain = [name for name, m in reranker.net.named_modules() if type(m) is torch.nn.Linear]
    quantized = [name for name, m in reranker.net.named_modules()
                 if isinstance(m, torch.ao.nn.quantized.dynamic.Linear)]
    assert (bool(quantized), bool(plain)) == (int8, not int8)
    assert all(0.0 < s < 1.0 for s in reranker.score([("which bridge?", "The Golden Gate Bridge.")]))

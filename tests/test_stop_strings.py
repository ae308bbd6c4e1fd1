"""Stop strings in the transformers engine: `StopOnText` stops a row on the very step that completes
a stop string, and only in generated text. That it gives the text transformers' own `stop_strings=`
gives, on SmolLM2 and on a tiny Mllama with the Llama 3.2 vocabulary: tests/full/test_stop_strings.py."""
from __future__ import annotations

import torch

from agents.engines.stopping import StopOnText


def test_stop_on_text_stops_a_row_on_the_step_that_completes_a_stop_string():
    from transformers import PreTrainedTokenizerFast

    from testkit.tiny_models import build_word_tokenizer

    tokenizer = build_word_tokenizer(PreTrainedTokenizerFast, vocab_size=400)
    prompt = tokenizer("question answer\n", add_special_tokens=False)["input_ids"]
    row_a = tokenizer(" the answer is red\nREASONING because", add_special_tokens=False)["input_ids"]
    row_b = tokenizer(" blue blue blue blue blue blue", add_special_tokens=False)["input_ids"]
    criterion = StopOnText(tokenizer, ("\nREASONING",), prompt_len=len(prompt))
    steps = max(len(row_a), len(row_b))
    first_done = None
    for k in range(1, steps + 1):
        ids = [prompt + row[:k] + [0] * max(0, k - len(row)) for row in (row_a, row_b)]
        done = criterion(torch.tensor(ids)).tolist()
        assert done[1] is False
        if done[0] and first_done is None:
            first_done = k
    text_until = tokenizer.decode(row_a[:first_done])
    assert text_until.endswith("REASONING") or "\nREASONING" in text_until
    assert "\nREASONING" not in tokenizer.decode(row_a[: first_done - 1])
    # A stop string in the prompt does not count: only generated text does.
    assert StopOnText(tokenizer, ("answer",), prompt_len=len(prompt))(torch.tensor([prompt + row_b[:1]])).tolist() == [False]

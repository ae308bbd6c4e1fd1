"""Stop strings in the transformers engine (`StopOnText`) give the text that transformers' own
`stop_strings=` gives (kept for comparison as `benchmarks.stop_strings.LegacyStopStrings`),
on SmolLM2 (real weights: the session's `smol`) and on the tiny Mllama with the real Llama 3.2
vocabulary (128k tokens)."""
from __future__ import annotations

import pytest

from agents.cruise.stages.s8_verify import COV_STOPS
from agents.engines.base import Sampling
from agents.engines.local_models import resolve_model
from agents.engines.transformers_engine import TransformersEngine
from benchmarks.stop_strings import LegacyStopStrings, requests
from testkit.tiny_models import build_tiny_mllama


def stops_found_in(texts: list[str]) -> tuple[str, ...]:
    """Stop strings that do occur: a piece from the middle of some rows' greedy output."""
    stops = []
    for text in texts[::3]:
        words = text.split()
        if len(words) >= 4:
            stops.append(" " + words[len(words) // 2])
        elif len(text) > 6:
            stops.append(text[len(text) // 2: len(text) // 2 + 2])
    return tuple(dict.fromkeys(stops))


@pytest.mark.parametrize("which, tokens", [("smollm2", 24), ("mllama-llama-vocab", 16)])
def test_stop_on_text_gives_the_text_transformers_stop_strings_gave(which, tokens, request):
    if which == "smollm2":
        now, before = request.getfixturevalue("smol"), LegacyStopStrings(resolve_model("smollm2"))
    else:
        path = build_tiny_mllama(llama_vocab=True)
        now, before = TransformersEngine(path), LegacyStopStrings(path)
    batch = requests(8)
    full = [r.text for r in now.generate(batch, Sampling(max_tokens=tokens))]
    found = stops_found_in(full)
    assert found, full
    for sampling in (Sampling(max_tokens=tokens, stop=COV_STOPS), Sampling(max_tokens=tokens, stop=found + ("\n",)),
                     Sampling(max_tokens=tokens, stop=found, temperature=0.7, seed=3)):
        new = now.generate(batch, sampling)
        old = before.generate(batch, sampling)
        assert [(r.text, r.output_tokens) for r in new] == [(r.text, r.output_tokens) for r in old]
    # The found stop strings really cut some rows (the comparison is not between uncut texts).
    cut = now.generate(batch, Sampling(max_tokens=tokens, stop=found))
    assert sum(c.text != f for c, f in zip(cut, full)) >= 1

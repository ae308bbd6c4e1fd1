"""What stop strings cost the transformers engine: no stop strings, transformers' own
`stop_strings=` (its StopStringCriteria is rebuilt on every call), and the engine's `StopOnText`.

Run: HF_HUB_OFFLINE=1 python -m benchmarks.stop_strings [--repeats 3]
Prints seconds per generate call (min / median) for
- SmolLM2-135M (49k vocabulary), a batch of 8, 24 new tokens, CoV's stop strings;
- the tiny random Mllama with the real Llama 3.2 vocabulary (128k), a batch of 8, 16 new tokens.
Random and small models rarely write a stop string, so every row runs to max_tokens in all three
columns: the difference is the stopping check's own cost.

Fills docs/benchmarks.md, "Stop strings".
"""
from __future__ import annotations

import argparse
import statistics
import time

from agents.engines.base import ChatRequest, Sampling
from agents.engines.transformers_engine import TransformersEngine
from benchmarks.machine import machine_header

QUESTIONS = [
    "What is the tallest mountain in Japan?", "Who designed the Eiffel Tower?",
    "How old is the Golden Gate Bridge?", "Which river flows through Paris?",
    "What colour is a ripe banana?", "Where was this olive oil made?",
    "When does the museum open?", "What breed is a golden retriever?",
]


class LegacyStopStrings(TransformersEngine):
    """Stopping with transformers' own `stop_strings=` (for comparison)."""

    def _stop_kwargs(self, stops, prompt_len: int) -> dict:
        return {"stop_strings": list(stops), "tokenizer": self.tokenizer}


def requests(n: int = 8) -> list[ChatRequest]:
    return [ChatRequest([{"role": "system", "content": "Answer briefly."},
                         {"role": "user", "content": QUESTIONS[i % len(QUESTIONS)]}]) for i in range(n)]


def time_calls(engine: TransformersEngine, sampling: Sampling, repeats: int) -> list[float]:
    batch = requests()
    engine.generate(batch, sampling, stage="warm-up")
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        engine.generate(batch, sampling, stage="bench")
        times.append(time.perf_counter() - start)
    return times


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    from agents.cruise.stages.s8_verify import COV_STOPS
    from agents.engines.local_models import resolve_model
    from testkit.tiny_models import build_tiny_mllama

    cases = [("SmolLM2-135M, batch 8, 24 tokens", resolve_model("smollm2"), 24),
             ("tiny Mllama + Llama 3.2 vocabulary, batch 8, 16 tokens", build_tiny_mllama(llama_vocab=True), 16)]
    print(machine_header())
    print("| model | no stop strings (s) | transformers stop_strings, before (s) | StopOnText, now (s) |")
    print("|---|---|---|---|")
    for title, path, tokens in cases:
        now, legacy = TransformersEngine(path), LegacyStopStrings(path)
        cells = []
        for engine, stops in ((now, ()), (legacy, COV_STOPS), (now, COV_STOPS)):
            times = time_calls(engine, Sampling(max_tokens=tokens, stop=stops), args.repeats)
            cells.append(f"{min(times):.3f} / {statistics.median(times):.3f}")
        print(f"| {title} | " + " | ".join(cells) + " |")
    print(f"(min / median of {args.repeats} calls after one warm-up call; CoV's {len(COV_STOPS)} stop strings)")


if __name__ == "__main__":
    main()

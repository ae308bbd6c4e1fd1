"""Engine figures on this machine (cpu profile): load times, generation and reranking throughput.

Run: HF_HUB_OFFLINE=1 python -m benchmarks.engines [--new-tokens 32] [--repeats 2]
Prints a markdown table. The first SmolLM2 conversion is timed into a temporary directory, so
the shared cache is left alone.

Fills docs/benchmarks.md, "Engines on CPU".
"""
from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from benchmarks.machine import machine_header

PROMPTS = [
    "Describe the Eiffel Tower in detail.",
    "Explain how a bicycle works.",
    "Write a short story about a lighthouse keeper.",
    "List some facts about the planet Mars.",
]
PASSAGES = [
    "The Eiffel Tower is a wrought-iron lattice tower on the Champ de Mars in Paris.",
    "Mount Fuji is the highest mountain in Japan, at 3,776 metres.",
    "A golden retriever is a medium-large gun dog bred to retrieve shot waterfowl.",
    "Olive oil is a liquid fat obtained by pressing whole olives.",
    "The museum opens at nine in the morning and closes at five in the evening.",
]


def timed(fn):
    start = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--new-tokens", type=int, default=32)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--batches", default="1,4,8,16")
    args = parser.parse_args()

    import torch

    from agents.engines.base import ChatRequest, Sampling
    from agents.engines.local_models import build_smollm2, resolve_model
    from agents.engines.reranker import MiniLMReranker
    from agents.engines.transformers_engine import TransformersEngine

    rows = [("what", "figure")]
    with tempfile.TemporaryDirectory() as tmp:
        _, seconds = timed(lambda: build_smollm2(Path(tmp) / "smollm2"))
        rows.append(("SmolLM2 GGUF -> directory, first conversion", f"{seconds:.1f} s"))
    resolve_model("smollm2")  # make sure the shared cache holds it before timing the reload
    engine, seconds = timed(lambda: TransformersEngine("smollm2"))
    rows.append(("SmolLM2 load from the converted directory", f"{seconds:.2f} s"))
    reranker, seconds = timed(lambda: MiniLMReranker("minilm"))
    rows.append(("MiniLM reranker load", f"{seconds:.2f} s"))

    sampling = Sampling(max_tokens=args.new_tokens)
    engine.generate([ChatRequest([{"role": "user", "content": "Hi"}])], Sampling(max_tokens=2))  # warm-up
    for batch in [int(b) for b in args.batches.split(",")]:
        requests = [ChatRequest([{"role": "user", "content": PROMPTS[i % len(PROMPTS)]}]) for i in range(batch)]
        walls, tokens = [], []
        for _ in range(args.repeats):
            results, seconds = timed(lambda: engine.generate(requests, sampling))
            walls.append(seconds)
            tokens.append(sum(r.output_tokens for r in results))
        wall = statistics.median(walls)
        rows.append((f"SmolLM2 generate, batch {batch}, {args.new_tokens} new tokens",
                     f"{wall:.2f} s/call, {statistics.median(tokens) / wall:.0f} tokens/s"))

    reranker.score([("warm up", "warm up")])
    for n in (10, 30, 100):
        pairs = [(f"question {i % 3} about {PROMPTS[i % 4]}", PASSAGES[i % len(PASSAGES)] + f" ({i})")
                 for i in range(n)]
        _, seconds = timed(lambda: reranker.score(pairs))
        rows.append((f"MiniLM rerank, {n} pairs", f"{seconds * 1000:.0f} ms/call, {n / seconds:.0f} pairs/s"))

    print(f"{machine_header()}\ntorch {torch.__version__}, {torch.get_num_threads()} threads\n")
    width = max(len(r[0]) for r in rows)
    print(f"| {rows[0][0]:<{width}} | {rows[0][1]} |\n|{'-' * (width + 2)}|---|")
    for what, figure in rows[1:]:
        print(f"| {what:<{width}} | {figure} |")


if __name__ == "__main__":
    main()

"""Reranking throughput: FlagEmbedding's FlagReranker (the reference scorer) against
CrossEncoderReranker, which runs the same model itself, on the same model and pairs.

Run: HF_HUB_OFFLINE=1 python -m benchmarks.reranker [--model DIR] [--turns 8] [--chunks 40] [--repeats 3]
Default model: the tiny random XLM-R cross-encoder of the tests (testkit/tiny_models.py), so the
figures show the host-side work (tokenizing, padding, copies), which is what differs; with the
real bge-reranker-v2-m3 on a GPU the model's own time is added to both. Prints pairs/s
(best / median of the repeats) for one batch: `turns` queries, each against `chunks` passages.

Fills docs/benchmarks.md, "Reranker".
"""
from __future__ import annotations

import argparse
import random
import statistics
import time

from benchmarks.machine import machine_header

SENTENCES = [
    "The Eiffel Tower is a wrought-iron lattice tower in Paris, France.",
    "Mount Fuji is the highest mountain in Japan and an active volcano.",
    "A golden retriever is a friendly dog breed that likes to swim.",
    "This bottle of olive oil was made in Italy and costs nine euros.",
    "The museum opens at nine in the morning and closes at five.",
    "Which year was the bridge in this picture built, and who designed it?",
]


def make_pairs(turns: int, chunks: int, seed: int = 0) -> list[tuple[str, str]]:
    rng = random.Random(seed)
    pairs = []
    for t in range(turns):
        query = f"{rng.choice(SENTENCES)} What is shown in photo {t}?"
        for _ in range(chunks):
            # Chunks of 1-6 sentences (~15-90 words), as the chunker's paragraphs vary.
            pairs.append((query, " ".join(rng.choice(SENTENCES) for _ in range(rng.randint(1, 6)))))
    return pairs


def pairs_per_s(score, pairs, repeats: int) -> list[float]:
    score(pairs[:8])  # warm-up
    rates = []
    for _ in range(repeats):
        start = time.perf_counter()
        score(pairs)
        rates.append(len(pairs) / (time.perf_counter() - start))
    return rates


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", default=None)
    parser.add_argument("--turns", type=int, default=8)
    parser.add_argument("--chunks", type=int, default=40)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    import torch
    from FlagEmbedding import FlagReranker

    from agents.engines.reranker import CrossEncoderReranker

    if args.model is None:
        from testkit.tiny_models import build_tiny_xlmr_reranker

        args.model = build_tiny_xlmr_reranker()
    cuda = torch.cuda.is_available()
    pairs = make_pairs(args.turns, args.chunks)
    flag = FlagReranker(args.model, use_fp16=cuda, devices=["cuda:0" if cuda else "cpu"], batch_size=32,
                        max_length=512)
    ours = CrossEncoderReranker(args.model, batch_size=32, max_length=512)
    lengths = [len(i) for i in ours.pair_ids(pairs)]
    rows = [("FlagReranker.compute_score (before)",
             lambda p: flag.compute_score([list(x) for x in p], normalize=True, batch_size=32, max_length=512)),
            ("CrossEncoderReranker (now)", ours.score)]
    print(machine_header())
    print(f"{len(pairs)} pairs ({args.turns} queries x {args.chunks} chunks), pair length "
          f"{min(lengths)}-{max(lengths)} tokens (median {statistics.median(lengths):.0f}), "
          f"{'cuda' if cuda else 'cpu'}, {torch.get_num_threads()} threads")
    print("| reranker | pairs/s, best | pairs/s, median |")
    print("|---|---|---|")
    for name, score in rows:
        rates = pairs_per_s(score, pairs, args.repeats)
        print(f"| {name} | {max(rates):.0f} | {statistics.median(rates):.0f} |")


if __name__ == "__main__":
    main()

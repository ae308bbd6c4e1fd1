"""The search pipeline at the official indices' sizes: open time, peak memory, query latency.

    python -m benchmarks.search                       # 30k, 40k, 200k records
    python -m benchmarks.search --sizes 40000 1000000 --queries 100

Per size it writes an image index (768-wide embeddings, as openai/clip-vit-large-patch14-336
makes) and a web index (1024-wide, as BAAI/bge-large-en-v1.5 makes) of that many records into
a Hugging Face cache under the l40s profile's official ids (chromadb's default settings, as
the official indices were written), with stand-in models of those widths under the official
model ids. Then, each in a fresh process so peak RSS is its own, it opens the pipeline:
- "ours": the evaluator's builder (index checks, metadata read per hit);
- "package": cragmm_search's own UnifiedSearchPipeline, where it can open the index at all;
and times the opening, the first image and text queries (chromadb loads the HNSW graph then)
and `--queries` more of each (p50 / p95). Indices are kept under `--dir` between runs: a size
already written is reused. Model loading is included in the open time but the stand-ins are
small, so the figure is the indices' cost.

Fills docs/benchmarks.md, "Search at the official sizes".
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path

from benchmarks.machine import machine_header

IMAGE_WIDTH = 768
TEXT_WIDTH = 1024
DEFAULT_SIZES = (30_000, 40_000, 200_000)


def _stand_in_models(cache: Path) -> None:
    import torch
    from transformers import CLIPConfig, CLIPImageProcessor, CLIPModel, CLIPProcessor

    from evaluator.harness.resolved import resolve_run
    from minibench import synthetic_indices as synth
    from minibench.search_models import _tiny_clip_tokenizer

    l40s = resolve_run("l40s").search
    done = cache / "models-ready"
    if done.exists():
        return
    work = cache.parent / "stand-in-models"
    torch.manual_seed(0)
    config = CLIPConfig(
        text_config=dict(hidden_size=32, intermediate_size=64, num_hidden_layers=1, num_attention_heads=2,
                         max_position_embeddings=77, vocab_size=1000),
        vision_config=dict(hidden_size=32, intermediate_size=64, num_hidden_layers=1, num_attention_heads=2,
                           image_size=336, patch_size=14),
        projection_dim=IMAGE_WIDTH)
    CLIPModel(config).save_pretrained(work / "clip")
    CLIPProcessor(image_processor=CLIPImageProcessor(size={"shortest_edge": 336},
                                                     crop_size={"height": 336, "width": 336}),
                  tokenizer=_tiny_clip_tokenizer(work / "clip")).save_pretrained(work / "clip")
    synth.stand_in_text_model(work / "bert", hidden=TEXT_WIDTH)
    synth.publish_model(cache, l40s.image_model, work / "clip")
    synth.publish_model(cache, l40s.text_model, work / "bert")
    shutil.rmtree(work)
    done.write_text("")


def _indices(root: Path, size: int) -> tuple[Path, float]:
    """An HF cache holding both indices of `size` records (written once) and the seconds it took."""
    from evaluator.harness.resolved import resolve_run
    from minibench import synthetic_indices as synth

    cache = root / f"hf-{size}"
    cache.mkdir(parents=True, exist_ok=True)
    _stand_in_models(cache)
    stamp = cache / "indices-ready"
    if stamp.exists():
        return cache, float(stamp.read_text())
    l40s = resolve_run("l40s").search
    start = time.perf_counter()
    synth.image_index(cache, l40s.image_index, size, IMAGE_WIDTH)
    synth.web_index(cache, l40s.web_index, size, TEXT_WIDTH)
    seconds = time.perf_counter() - start
    stamp.write_text(f"{seconds:.1f}")
    return cache, seconds


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def child(variant: str, queries: int) -> dict:
    """Runs in the measured process (HF_HUB_CACHE set by the parent)."""
    import numpy as np

    from evaluator.harness.resolved import resolve_run
    from evaluator.search.pipeline import build_search_pipeline

    l40s = resolve_run("l40s").search
    start = time.perf_counter()
    try:
        if variant == "ours":
            pipeline = build_search_pipeline(l40s, web=True)
        else:
            from cragmm_search.search import UnifiedSearchPipeline

            pipeline = UnifiedSearchPipeline(image_model_name=l40s.image_model, image_hf_dataset_id=l40s.image_index,
                                             text_model_name=l40s.text_model, web_hf_dataset_id=l40s.web_index)
    except Exception as exc:  # noqa: BLE001 - the package's failure at size is a result
        return dict(error=f"{type(exc).__name__}: {str(exc).splitlines()[0][:160]}",
                    open_s=time.perf_counter() - start, peak_rss_mb=_peak_rss_mb())
    opened = time.perf_counter() - start
    rng = np.random.default_rng(0)
    image_queries = [rng.standard_normal(IMAGE_WIDTH).astype(np.float32) for _ in range(queries + 1)]
    text_queries = [f"what year was synthetic landmark number {i} opened to visitors" for i in range(queries + 1)]
    first = {}
    times = {"image": [], "text": []}
    for kind, items in (("image", image_queries), ("text", text_queries)):
        for i, query in enumerate(items):
            t = time.perf_counter()
            hits = pipeline(query, k=5)
            elapsed = time.perf_counter() - t
            assert hits, f"no {kind} hits"
            if i == 0:
                first[kind] = elapsed
            else:
                times[kind].append(elapsed)
    return dict(open_s=opened, first_image_s=first["image"], first_text_s=first["text"],
                **{f"{k}_p{q}_ms": 1000 * _percentile(v, q / 100) for k, v in times.items() for q in (50, 95)},
                peak_rss_mb=_peak_rss_mb())


def _peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def measure(cache: Path, variant: str, queries: int) -> dict:
    env = dict(os.environ, HF_HUB_CACHE=str(cache), HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1",
               HF_DATASETS_OFFLINE="1")
    done = subprocess.run([sys.executable, "-m", "benchmarks.search", "--child", variant, "--queries", str(queries)],
                          env=env, capture_output=True, text=True)
    for line in done.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[len("RESULT "):])
    return dict(error=f"exit {done.returncode}: {done.stderr.strip().splitlines()[-1][:160] if done.stderr.strip() else ''}")


def _disk_mb(cache: Path) -> float:
    return sum(f.stat().st_size for f in cache.rglob("*") if f.is_file() and "datasets--" in str(f)) / 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=list(DEFAULT_SIZES))
    parser.add_argument("--queries", type=int, default=50)
    parser.add_argument("--dir", type=Path, default=Path("/tmp/cruise-bench-search"))
    parser.add_argument("--child", choices=["ours", "package"], help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print("RESULT " + json.dumps(child(args.child, args.queries)))
        return
    print(machine_header())
    print(f"{'records':>9} {'disk MB':>8} {'write s':>8} {'variant':>8} {'open s':>7} {'1st img s':>9} "
          f"{'1st txt s':>9} {'img p50/p95 ms':>15} {'txt p50/p95 ms':>15} {'peak RSS MB':>11}")
    for size in args.sizes:
        cache, wrote = _indices(args.dir, size)
        for variant in ("ours", "package"):
            r = measure(cache, variant, args.queries)
            head = f"{size:>9} {_disk_mb(cache):>8.0f} {wrote:>8.0f} {variant:>8}"
            if "error" in r:
                print(f"{head} cannot open: {r['error']} (after {r.get('open_s', 0):.1f} s, "
                      f"peak RSS {r.get('peak_rss_mb', 0):.0f} MB)", flush=True)
                continue
            print(f"{head} {r['open_s']:>7.1f} {r['first_image_s']:>9.2f} {r['first_text_s']:>9.2f} "
                  f"{r['image_p50_ms']:>7.1f}/{r['image_p95_ms']:<7.1f} {r['text_p50_ms']:>7.1f}/{r['text_p95_ms']:<7.1f} "
                  f"{r['peak_rss_mb']:>11.0f}", flush=True)


if __name__ == "__main__":
    main()

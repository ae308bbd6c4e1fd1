"""CPU inference backends for the cpu profile's model (SmolLM2-135M) on the chain's own prompts.

Run: HF_HUB_OFFLINE=1 python -m benchmarks.cpu_engines [--backends ...] [--batches 3] [--threads 1] [--rounds 1]

The prompts are the chain's: the cpu profile's CruiseAgent runs over the first `--batches`
batches of 8 of the mini benchmark's single-turn split with its real search, and every request
the router and the VLM receive is recorded (the stages after the answer are recorded but not
run: their prompts are not measured here, and skipping them saves minutes). They are kept in
`.cache/cpu_engines/prompts.json` and reused.

For each backend it prints one table row:
- prefill tokens/s (real prompt tokens, padding not counted) and decode tokens/s, at batch 8
  (the first batch's 8 answer prompts with notes) and 16 (all 16 answer prompts of that batch),
  each generation held to the answer stage's 24 new tokens;
- the answer stage's seconds per batch (the batch's 16 answer prompts, greedy answers ending where
  they end), wall and the process's CPU (other jobs on the machine move the wall seconds much
  more than the CPU ones);
- load time and a conversion's time (0 when `.cache/cpu_engines/` already holds it), the
  backend's peak RSS (each backend runs in a process of its own, which reports its own peak),
  the installed packages' size on disk;
- agreement with transformers float32 (left-padded, "fp32"): the share of the recorded answer
  prompts whose greedy answer is the same text. fp32 is run as the reference when `--backends`
  does not name it; where it could not run the column says "no reference".

`--rounds N` runs the backends in turn N times (a, b, a, b, ...), so that a machine whose load
changes (other jobs) weighs on each alike; the table then has a row per backend and round, and
the lines after it each backend's answer-stage speed-up on fp32 within a round (paired figures:
compare those ratios more than the seconds). The machine (CPU, logical CPUs, the instruction
sets that matter) is read from the system and printed with the table and saved with the figures.

The other backends are not requirements of the project (the chosen path is transformers'):
    pip install ctranslate2==4.8.5 optimum==2.1.0 optimum-onnx==0.1.0 onnx==1.23.2 ml_dtypes==0.6.0
(the versions measured, installed together with requirements-cpu.txt); a backend whose package
is missing, or that cannot convert the model, is a row saying why. Conversions are kept in
`.cache/cpu_engines/`.

Fills docs/benchmarks.md, "CPU inference backends".
"""
from __future__ import annotations

import argparse
import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path

from agents.profiles import REPO_ROOT, cache_dir
from benchmarks.machine import load_average, machine_header, own_peak_rss_mib, read_machine

ANSWER_TOKENS = 24  # the cpu profile's answer_max_tokens
REFERENCE = "fp32"  # the agreement column's reference: transformers float32, left-padded
SKIPPED_STAGES = ("consistency", "verify")  # after the answer: recorded, not run


def prompts_file() -> Path:
    folder = cache_dir() / "cpu_engines"
    folder.mkdir(parents=True, exist_ok=True)
    return folder / "prompts.json"


# --- the chain's prompts ----------------------------------------------------------------------
def record_prompts(batches: int, batch_size: int = 8) -> list[dict]:
    """[{stage, batch, messages, sampling}] of every engine request the chain makes for the first
    `batches` batches of the mini benchmark's single-turn split (cpu profile, no deadline)."""
    from agents.config.loading import load_config
    from agents.cruise_agent import CruiseAgent
    from agents.engines.base import ChatEngine, ChatResult, Engines, Ledger
    from agents.factory import build_engines
    from evaluator.harness.dataset import load_split, normalise_records
    from evaluator.search.pipeline import build_search_pipeline, search_config

    recorded: list[dict] = []
    batch_number = [0]

    class Recorder(ChatEngine):
        def __init__(self, inner):
            super().__init__(inner.model, inner.ledger)
            self.inner = inner

        def generate(self, requests, sampling, *, stage="chat"):
            for r in requests:
                s = r.sampling_or(sampling)
                recorded.append({"stage": stage, "batch": batch_number[0], "messages": r.messages,
                                 "sampling": {"max_tokens": s.max_tokens, "temperature": s.temperature,
                                              "logprobs": s.logprobs, "choices": list(s.choices),
                                              "stop": list(s.stop)}})
            if stage in SKIPPED_STAGES:
                return [ChatResult(text="") for _ in requests]
            return self.inner.generate(requests, sampling, stage=stage)

        def _generate(self, requests, sampling):
            raise NotImplementedError

    config = load_config("cpu", None, turn_budget_s=0)
    ledger = Ledger()
    engines = build_engines(config, ledger)
    chat = Recorder(engines.vlm)
    agent = CruiseAgent(build_search_pipeline(search_config("cpu")), config,
                        engines=Engines(router=chat, vlm=chat, reranker=engines.reranker))
    ds, _, _ = load_split(str(REPO_ROOT / "data" / "crag-mm-mini" / "single-turn"), None, "validation")
    for b in range(batches):
        rows = [ds[i] for i in range(b * batch_size, min((b + 1) * batch_size, len(ds)))]
        queries = [normalise_records(r["turns"])[0]["query"] for r in rows]
        batch_number[0] = b
        agent.batch_generate_response(queries, [r["image"].convert("RGB") for r in rows], [[] for _ in rows])
        print(f"cpu_engines: recorded batch {b + 1}/{batches}", flush=True)
    return recorded


def load_prompts(batches: int) -> list[dict]:
    path = prompts_file()
    if path.exists():
        saved = json.loads(path.read_text())
        if saved["batches"] >= batches:
            return [p for p in saved["prompts"] if p["batch"] < batches]
    prompts = record_prompts(batches)
    path.write_text(json.dumps({"batches": batches, "prompts": prompts}))
    return prompts


def tokenized(prompts: list[dict], tokenizer) -> list[list[int]]:
    """Each recorded prompt as the transformers engine tokenizes it (its chat template, one BOS)."""
    out = []
    for p in prompts:
        text = tokenizer.apply_chat_template(p["messages"], tokenize=False, add_generation_prompt=True)
        bos = tokenizer.bos_token
        out.append(tokenizer(text, add_special_tokens=not (bos and text.startswith(bos)))["input_ids"])
    return out


def quantized_int8(net):
    """`net` with every Linear layer's weights in int8, one scale per tensor (torch's dynamic
    quantization: activations are quantized per call, matmuls run in int8 with fbgemm/oneDNN,
    results come back in float32). The engine's int8 path scales per output channel
    (agents/engines/cpu_path.py: "int8-channel-rows" here)."""
    import torch
    from torch.ao.quantization import quantize_dynamic

    return quantize_dynamic(net, {torch.nn.Linear}, dtype=torch.qint8)


def load_causal_lm(path: str, weights: str = "float32"):
    """A causal LM for the CPU: weights "float32", "bfloat16", "int8" (`quantized_int8`, per tensor)
    or "int8-channel" (the engine's path, per output channel)."""
    import torch
    from transformers import AutoModelForCausalLM

    from agents.engines.local_models import dtype_argument

    dtype = torch.bfloat16 if weights == "bfloat16" else torch.float32
    net = AutoModelForCausalLM.from_pretrained(path, **dtype_argument(dtype)).eval()
    if weights == "int8-channel":
        from agents.engines import cpu_path

        return cpu_path.quantized_int8(net)
    return quantized_int8(net) if weights == "int8" else net


# --- backends ---------------------------------------------------------------------------------
class Backend:
    """One way to run the model: `load()` once, then `generate(rows, new_tokens, fixed)` greedy
    token ids per row (fixed: exactly new_tokens each, the end token ignored, for timing)."""

    name = ""
    packages: tuple[str, ...] = ()  # the pip distributions it needs beyond the project's own
    convert_s = 0.0

    def __init__(self, path: str, threads: int, end_ids: list[int], pad_id: int):
        self.path, self.threads, self.end_ids, self.pad_id = path, threads, end_ids, pad_id

    def load(self) -> None:
        raise NotImplementedError

    def generate(self, rows: list[list[int]], new_tokens: int, fixed: bool) -> list[list[int]]:
        raise NotImplementedError

    def cut(self, ids: list[int]) -> list[int]:
        end = next((k for k, t in enumerate(ids) if t in self.end_ids or t == self.pad_id), len(ids))
        return ids[:end]


class TorchBackend(Backend):
    """transformers on torch: `prefill` "padded" (one left-padded batch, the engine's "batch"),
    "rows" (each prompt read alone, shared runs once, then decoded together from the joined
    caches: the engine's "rows") or "alone" (the same, nothing shared);
    `weights` "float32", "bfloat16", "int8" (torch's dynamic int8 quantization of the Linear layers, per tensor)
    or "int8-channel" (per output channel, the engine's path)."""

    def __init__(self, *args, prefill: str = "padded", weights: str = "float32"):
        super().__init__(*args)
        self.prefill, self.weights = prefill, weights
        how = {"padded": "left-padded batch", "rows": "prompts read alone, shared runs once",
               "alone": "prompts read alone, nothing shared"}[prefill]
        self.name = f"transformers {weights}, {how}"

    def load(self) -> None:
        import torch

        torch.set_num_threads(self.threads)
        self.net = load_causal_lm(self.path, self.weights)

    def generate(self, rows, new_tokens, fixed):
        import torch

        from agents.engines.rows_prefill import SHARED_PREFIX_MIN, left_padded, prefill_rows

        kwargs = dict(max_new_tokens=new_tokens, do_sample=False, temperature=None, top_p=None, top_k=None,
                      pad_token_id=self.pad_id, eos_token_id=self.end_ids)
        if fixed:
            kwargs["min_new_tokens"] = new_tokens
        with torch.inference_mode():
            ids, mask = left_padded(rows, self.pad_id)
            if self.prefill != "padded":
                kwargs["past_key_values"] = prefill_rows(self.net, rows,
                                                         min_shared=10 ** 9 if self.prefill == "alone" else SHARED_PREFIX_MIN)
            out = self.net.generate(input_ids=ids, attention_mask=mask, **kwargs)
        return [self.cut(r) for r in out[:, ids.shape[1]:].tolist()]


class CTranslate2Backend(Backend):
    name = "CTranslate2 int8"
    packages = ("ctranslate2",)

    def load(self) -> None:
        import ctranslate2
        from transformers import AutoTokenizer

        folder = cache_dir() / "cpu_engines" / "ct2-int8"
        if not (folder / "model.bin").exists():
            began = time.perf_counter()
            ctranslate2.converters.TransformersConverter(self.path).convert(str(folder), quantization="int8",
                                                                             force=True)
            self.convert_s = time.perf_counter() - began
        self.tokenizer = AutoTokenizer.from_pretrained(self.path)
        self.net = ctranslate2.Generator(str(folder), device="cpu", compute_type="int8",
                                         intra_threads=self.threads, inter_threads=1)

    def generate(self, rows, new_tokens, fixed):
        tokens = [self.tokenizer.convert_ids_to_tokens(r) for r in rows]
        results = self.net.generate_batch(tokens, max_length=new_tokens, min_length=new_tokens if fixed else 0,
                                          sampling_topk=1, include_prompt_in_result=False,
                                          end_token=self.tokenizer.convert_ids_to_tokens(self.end_ids))
        return [self.cut(r.sequences_ids[0]) for r in results]


class OnnxRuntimeBackend(Backend):
    name = "ONNX Runtime int8 (optimum export, dynamic quantization)"
    packages = ("optimum", "optimum-onnx", "onnx", "onnxruntime")

    def load(self) -> None:
        import onnxruntime
        from optimum.onnxruntime import ORTModelForCausalLM, ORTQuantizer
        from optimum.onnxruntime.configuration import AutoQuantizationConfig

        folder = cache_dir() / "cpu_engines" / "onnx"
        quantized = cache_dir() / "cpu_engines" / "onnx-int8"
        if not (quantized / "config.json").exists():
            began = time.perf_counter()
            ORTModelForCausalLM.from_pretrained(self.path, export=True, use_cache=True).save_pretrained(folder)
            ORTQuantizer.from_pretrained(folder).quantize(
                save_dir=quantized, quantization_config=AutoQuantizationConfig.avx512_vnni(is_static=False,
                                                                                         per_channel=True))
            self.convert_s = time.perf_counter() - began
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads, options.inter_op_num_threads = self.threads, 1
        self.net = ORTModelForCausalLM.from_pretrained(quantized, session_options=options, use_cache=True)

    def generate(self, rows, new_tokens, fixed):
        from agents.engines.rows_prefill import left_padded

        ids, mask = left_padded(rows, self.pad_id)
        kwargs = dict(max_new_tokens=new_tokens, do_sample=False, pad_token_id=self.pad_id, eos_token_id=self.end_ids)
        if fixed:
            kwargs["min_new_tokens"] = new_tokens
        out = self.net.generate(input_ids=ids, attention_mask=mask, **kwargs)
        return [self.cut(r) for r in out[:, ids.shape[1]:].tolist()]


BACKENDS = {
    "fp32": lambda *a: TorchBackend(*a),
    "fp32-alone": lambda *a: TorchBackend(*a, prefill="alone"),
    "fp32-rows": lambda *a: TorchBackend(*a, prefill="rows"),
    "bf16-rows": lambda *a: TorchBackend(*a, prefill="rows", weights="bfloat16"),
    "int8-rows": lambda *a: TorchBackend(*a, prefill="rows", weights="int8"),
    "int8-channel-rows": lambda *a: TorchBackend(*a, prefill="rows", weights="int8-channel"),
    "ct2-int8": CTranslate2Backend,
    "ort-int8": OnnxRuntimeBackend,
}


# --- measuring ------------------------------------------------------------------------------
@dataclass
class Figures:
    backend: str
    key: str = ""  # the BACKENDS key it was run as
    round: int = 1
    error: str = ""
    load_s: float = 0.0
    convert_s: float = 0.0
    speeds: dict = field(default_factory=dict)  # batch -> (prefill tokens/s, decode tokens/s)
    answer_s: list = field(default_factory=list)  # seconds per batch's 16 answer prompts, natural stops
    answer_cpu_s: list = field(default_factory=list)  # the process's CPU seconds for the same
    rss_mib: float = 0.0
    install_mib: float = 0.0
    answers: list = field(default_factory=list)
    machine: dict = field(default_factory=dict)
    load_before: str = ""
    load_after: str = ""


def install_mib(packages) -> float:
    """Size on disk of the installed distributions' files."""
    from importlib import metadata

    total = 0
    for name in packages:
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            continue
        for f in dist.files or []:
            path = Path(dist.locate_file(f))
            if path.is_file():
                total += path.stat().st_size
    return total / 2 ** 20


def timed(fn):
    began = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - began


def measure(key: str, backend: Backend, batch_rows: dict[int, list[list[int]]], answer_batches) -> Figures:
    figures = Figures(backend=backend.name, key=key)
    try:
        _, figures.load_s = timed(backend.load)
        figures.convert_s = backend.convert_s
        figures.load_s -= backend.convert_s
        backend.generate(batch_rows[8][:1], 2, fixed=True)  # warm-up
        for batch, rows in batch_rows.items():
            real = sum(len(r) for r in rows)
            _, prefill_s = timed(lambda: backend.generate(rows, 1, fixed=True))
            _, total_s = timed(lambda: backend.generate(rows, ANSWER_TOKENS, fixed=True))
            figures.speeds[str(batch)] = (real / prefill_s,
                                          batch * (ANSWER_TOKENS - 1) / max(total_s - prefill_s, 1e-9))
            print(f"cpu_engines: {key} batch {batch}: prefill {prefill_s:.1f} s, all {total_s:.1f} s", flush=True)
        for rows in answer_batches:
            cpu = time.process_time()
            out, seconds = timed(lambda: backend.generate(rows, ANSWER_TOKENS, fixed=False))
            figures.answer_cpu_s.append(time.process_time() - cpu)
            figures.answers += out
            figures.answer_s.append(seconds)
        figures.rss_mib = own_peak_rss_mib()
        figures.install_mib = install_mib(backend.packages)
    except Exception as exc:  # noqa: BLE001 - a backend that cannot run is a row saying why
        figures.error = f"{type(exc).__name__}: {str(exc).splitlines()[0][:160] if str(exc) else ''}"
    return figures


def run_one(key: str, batches: int, threads: int) -> Figures:
    """One backend's figures (in its own process, so that RSS and threads are its own)."""
    from transformers import AutoTokenizer

    from agents.engines.local_models import resolve_model

    path = resolve_model("smollm2")
    tokenizer = AutoTokenizer.from_pretrained(path)
    prompts = [p for p in load_prompts(batches) if p["stage"] == "answer"]
    rows = tokenized(prompts, tokenizer)
    first = [r for r, p in zip(rows, prompts) if p["batch"] == 0]
    batch_rows = {8: first[:8], 16: first}
    answer_batches = [[r for r, p in zip(rows, prompts) if p["batch"] == b] for b in range(batches)]
    from transformers import GenerationConfig

    generation = GenerationConfig.from_pretrained(path)
    eos = generation.eos_token_id
    end_ids = sorted({*([eos] if isinstance(eos, int) else eos or []), tokenizer.eos_token_id})
    backend = BACKENDS[key](path, threads, end_ids, tokenizer.pad_token_id)
    figures = measure(key, backend, batch_rows, answer_batches)
    figures.answers = [tokenizer.decode(a, skip_special_tokens=True).strip() for a in figures.answers]
    figures.machine = read_machine().record()
    return figures


def prompt_figures(batches: int) -> list[str]:
    """What the answer prompts hold: real tokens, the padded batch's tokens, the shared prefix."""
    from transformers import AutoTokenizer

    from agents.engines.local_models import resolve_model
    from agents.engines.rows_prefill import prefix_tree

    tokenizer = AutoTokenizer.from_pretrained(resolve_model("smollm2"))
    prompts = [p for p in load_prompts(batches) if p["stage"] == "answer"]
    rows = tokenized(prompts, tokenizer)
    lines = []
    for b in range(batches):
        batch = [r for r, p in zip(rows, prompts) if p["batch"] == b]
        real, padded = sum(map(len, batch)), len(batch) * max(map(len, batch))
        half = len(batch) // 2
        shared = [next((k for k, (x, y) in enumerate(zip(a, d)) if x != y), min(len(a), len(d)))
                  for a, d in zip(batch[:half], batch[half:])]
        steps, _ = prefix_tree([r[:-1] for r in batch])
        read = sum(len(tokens) for _, tokens in steps) + len(batch)
        lines.append(f"batch {b + 1}: {len(batch)} answer prompts of {min(map(len, batch))}-{max(map(len, batch))} "
                     f"tokens, {real} in all; {padded} left-padded ({padded / real:.2f}x); {read} read with shared "
                     f"prefixes once ({read / real:.2f}x); a turn's RAG and direct prompts share "
                     f"{min(shared)}-{max(shared)} leading tokens")
    return lines


def backends_to_run(asked: list[str]) -> list[str]:
    """The asked backends in their order, and the agreement reference after them when not asked."""
    return list(asked) if REFERENCE in asked else [*asked, REFERENCE]


def reference_of(results: list[Figures]) -> Figures | None:
    """fp32's first round that ran: what every backend's greedy answers are compared with."""
    return next((f for f in results if f.key == REFERENCE and not f.error), None)


def agreement(figures: Figures, reference: Figures | None) -> str:
    if reference is None:
        return "no reference"
    return f"{sum(a == b for a, b in zip(figures.answers, reference.answers))}/{len(reference.answers)}"


def table(results: list[Figures]) -> str:
    reference = reference_of(results)
    rounds = max((f.round for f in results), default=1)
    head = ("| backend | prefill tok/s b8 | decode tok/s b8 | prefill tok/s b16 | decode tok/s b16 | answer stage s/batch "
            "| answer stage CPU s/batch | load s | conversion s | RSS MiB | install MiB | same greedy answer as fp32 |")
    lines = [head, "|" + "---|" * (head.count("|") - 1)]
    for f in results:
        name = f"{f.backend} (round {f.round})" if rounds > 1 else f.backend
        if f.error:
            lines.append(f"| {name} | {f.error} |" + " |" * 10)
            continue
        # a decode rate over 1e6 tokens/s: the prefill-only call took as long as the whole one (noise)
        speeds = [f"{f.speeds[b][k]:.0f}" if f.speeds[b][k] < 1e6 else "-" for b in ("8", "16") for k in (0, 1)]
        lines.append(f"| {name} | {' | '.join(speeds)} | {seconds_text(f.answer_s)} | {seconds_text(f.answer_cpu_s)} "
                     f"| {f.load_s:.2f} | {f.convert_s:.0f} "
                     f"| {f.rss_mib:.0f} | {f.install_mib:.0f} | {agreement(f, reference)} |")
    return "\n".join(lines)


def seconds_text(seconds: list[float]) -> str:
    return "/".join(f"{x:.1f}" for x in seconds) or "-"


def speedup_text(base: list[float], other: list[float]) -> str:
    """'2.00/1.25x (1.61x in all)': base's seconds / other's, batch by batch and summed."""
    each = "/".join(f"{b / o:.2f}" for b, o in zip(base, other))
    return f"{each}x ({sum(base) / sum(other):.2f}x in all)" if each else "-"


def paired_lines(results: list[Figures]) -> list[str]:
    """Within each round, each backend's answer stage against fp32's of that round: the speed-up
    (fp32's seconds / the backend's) batch by batch and over all batches, in wall seconds and in
    the process's CPU seconds (which other jobs on the machine move much less)."""
    lines = []
    for number in sorted({f.round for f in results}):
        ran = [f for f in results if f.round == number and not f.error and f.answer_s]
        base = next((f for f in ran if f.key == REFERENCE), None)
        for f in ran:
            if base is None:
                lines.append(f"round {number}: {f.key} {seconds_text(f.answer_s)} s, no fp32 to pair with")
            elif f is not base:
                lines.append(f"round {number}: {f.key} {seconds_text(f.answer_s)} s against fp32 "
                             f"{seconds_text(base.answer_s)} s: {speedup_text(base.answer_s, f.answer_s)}; CPU "
                             f"{seconds_text(f.answer_cpu_s)} s against {seconds_text(base.answer_cpu_s)} s: "
                             f"{speedup_text(base.answer_cpu_s, f.answer_cpu_s)} (load {f.load_before} before it, "
                             f"{f.load_after} after)")
    return lines


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--backends", nargs="+", default=list(BACKENDS), choices=list(BACKENDS))
    parser.add_argument("--batches", type=int, default=3, help="batches of 8 turns whose answer prompts are run")
    parser.add_argument("--threads", type=int, default=1, help="CPU threads per backend (the cpu profile: 1)")
    parser.add_argument("--rounds", type=int, default=1, help="run the backends in turn this many times")
    parser.add_argument("--table", action="store_true", help="print the table of the figures saved last, run nothing")
    parser.add_argument("--one", help=argparse.SUPPRESS)  # a child process: one backend, its figures saved
    parser.add_argument("--into", help=argparse.SUPPRESS)  # the child's figures file
    args = parser.parse_args(argv)
    saved = prompts_file().with_name("figures")
    saved.mkdir(exist_ok=True)
    if args.one:
        Path(args.into).write_text(json.dumps(run_one(args.one, args.batches, args.threads).__dict__))
        return
    import subprocess
    import sys

    print(machine_header(), flush=True)
    load_prompts(args.batches)
    print("\n".join(prompt_figures(args.batches)))
    results = []
    for number in range(1, args.rounds + 1):
        for key in backends_to_run(args.backends):
            into = saved / f"{key}.round{number}.json"
            why = "not run"
            if not args.table:
                into.unlink(missing_ok=True)
                before = load_average()
                # a process of its own: its RSS, threads and imports are the backend's alone
                done = subprocess.run([sys.executable, "-m", "benchmarks.cpu_engines", "--one", key, "--into", str(into),
                                       "--batches", str(args.batches), "--threads", str(args.threads)],
                                      capture_output=True, text=True, env=os.environ)
                why = (done.stderr.strip().splitlines() or ["no result"])[-1][:160]
                if into.exists():
                    kept = json.loads(into.read_text())
                    into.write_text(json.dumps({**kept, "round": number, "load_before": before,
                                                "load_after": load_average()}))
                print(f"cpu_engines: {key} round {number} done; load average {load_average()}", flush=True)
            if into.exists():
                kept = json.loads(into.read_text())
                results.append(Figures(**{k: v for k, v in kept.items() if k in Figures.__dataclass_fields__}))
            else:
                results.append(Figures(backend=key, key=key, round=number, error=why))
    print(f"\n{machine_header()} (at the end); {args.threads} thread(s) per backend\n")
    print(table(results))
    print("\n".join(["", *paired_lines(results)]))


if __name__ == "__main__":
    main()

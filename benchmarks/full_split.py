"""The whole validation split at its real size through the evaluator, with models that answer at once.

    python -m benchmarks.full_split [--out DIR] [--single 1900] [--multi 586] [--judge-latency 0.2]

Builds the synthetic full split (minibench/full_split.py: 1,900 single-turn sessions, 586
conversations of 2-6 turns), then runs local_evaluation.py over it with
minibench.standin:MemoStandInCruiseAgent: the real chain, the cpu profile's real search pipeline
(mini indices) and real reranker, each distinct query computed once, and chat models that answer
at once. The judge is a stub OpenAI-compatible server on 127.0.0.1 with latency and HTTP 429s.
The single-turn split runs as one process; the multi-turn split as two shards, then merged.
Then it times --resume of the finished run, --rejudge, the report in headless Chromium, and the
judge alone over ~4k distinct turns at 8 workers, and prints every figure.

Each evaluator run gets a private cache folder (links to the repository's .cache entries, its
own judge/ verdict cache), so the stub's verdicts never land in the shared cache.

Fills docs/benchmarks.md, "The whole validation split, synthetic".
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from agents.profiles import REPO_ROOT, cache_dir
from benchmarks.machine import load_average, read_machine
from evaluator.report.html import build_report
from evaluator.scoring.judge import Judge, JudgeItem
from minibench.full_split import MULTI_TURN_CONVERSATIONS, SINGLE_TURN_SESSIONS, build_full_split

AGENT = "minibench.standin:MemoStandInCruiseAgent"
JUDGE_MODEL = "gpt-4o-mini"
OFFLINE = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}
WORD = re.compile(r"[a-z0-9]{4,}")


# --------------------------------------------------------------------------- the judge stub
class StubJudge:
    """Chat completions on 127.0.0.1: each request waits `latency_s`; every `throttle_every`-th
    request gets HTTP 429 with Retry-After 1; a prediction sharing a word of 4+ letters with the
    ground truth is correct. Replies {"accuracy": bool} as the structured protocol asks."""

    def __init__(self, latency_s: float, throttle_every: int):
        self.latency_s, self.throttle_every = latency_s, throttle_every
        self.requests = self.throttled = 0
        self.lock = threading.Lock()
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def verdict(self, text: str) -> bool:
        truth = text.split("Ground truth:", 1)[-1].split("Prediction:", 1)[0].lower()
        prediction = text.split("Prediction:", 1)[-1].lower()
        return bool(set(WORD.findall(truth)) & set(WORD.findall(prediction)))

    def _handler(self):
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
                with stub.lock:
                    stub.requests += 1
                    throttled = stub.throttle_every > 0 and stub.requests % stub.throttle_every == 0
                    stub.throttled += int(throttled)
                time.sleep(stub.latency_s)
                if throttled:
                    status, headers = 429, {"Retry-After": "1"}
                    payload = {"error": {"message": "Rate limit reached", "type": "requests",
                                         "code": "rate_limit_exceeded"}}
                else:
                    status, headers = 200, {}
                    content = json.dumps({"accuracy": stub.verdict(body["messages"][-1]["content"])})
                    payload = {"id": "chatcmpl-stub", "object": "chat.completion", "created": 0,
                               "model": body.get("model"),
                               "choices": [{"index": 0, "finish_reason": "stop",
                                            "message": {"role": "assistant", "content": content}}],
                               "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for key, value in headers.items():
                    self.send_header(key, value)
                self.end_headers()
                self.wfile.write(data)

        return Handler


# --------------------------------------------------------------------------- runs
def private_cache(root: Path) -> Path:
    """A cache folder whose entries link to the repository's, except its own judge/."""
    root.mkdir(parents=True, exist_ok=True)
    for entry in cache_dir().iterdir():
        if entry.name != "judge" and not (root / entry.name).exists():
            (root / entry.name).symlink_to(entry)
    return root


def run(args: list[str], env: dict) -> dict:
    """Run local_evaluation.py; wall seconds, peak RSS (MiB) and exit status of that process."""
    start = time.perf_counter()
    log = tempfile.TemporaryFile()
    process = subprocess.Popen([sys.executable, str(REPO_ROOT / "local_evaluation.py"), *args], cwd=REPO_ROOT,
                               env=env, stdout=log, stderr=subprocess.STDOUT)
    _, status, usage = os.wait4(process.pid, 0)
    process.returncode = os.waitstatus_to_exitcode(status)
    wall = time.perf_counter() - start
    if process.returncode != 0:
        log.seek(0)
        sys.stdout.write(log.read().decode(errors="replace")[-4000:])
        raise SystemExit(f"local_evaluation.py {' '.join(args)} exited {process.returncode}")
    return {"wall_s": wall, "peak_rss_mib": usage.ru_maxrss / 1024.0}


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()] if path.exists() else []


def model_seconds(run_dir: Path) -> dict:
    """Seconds inside the models: engine calls (batches.jsonl stage_ms, the reranker included)
    and search ('retrieve' in stage_ms of the traces, which every turn of a batch shares, so
    counted once per batch); and the agent's wall seconds in all."""
    batches = read_jsonl(run_dir / "batches.jsonl")
    engine_ms = sum(sum((b.get("stage_ms") or {}).values()) for b in batches)
    batch_of = {a["interaction_id"]: (a.get("shard"), a.get("batch")) for a in read_jsonl(run_dir / "answers.jsonl")}
    search_ms: dict = {}
    for trace in read_jsonl(run_dir / "traces.jsonl"):
        key = batch_of.get(trace.get("interaction_id"))
        search_ms[key] = max(search_ms.get(key, 0.0), (trace.get("stage_ms") or {}).get("retrieve", 0.0))
    agent_ms = sum(b.get("wall_ms") or 0.0 for b in batches)
    return {"engine_s": engine_ms / 1000.0, "search_s": sum(search_ms.values()) / 1000.0, "agent_s": agent_ms / 1000.0}


def sizes(run_dir: Path) -> dict[str, int]:
    files = {p.relative_to(run_dir).as_posix(): p.stat().st_size for p in run_dir.rglob("*") if p.is_file()}
    report_pages = sum(v for k, v in files.items() if k.startswith("report_turns/"))
    shown = {k: v for k, v in files.items() if not k.startswith("report_turns/")}
    if report_pages:
        shown["report_turns/ (all pages)"] = report_pages
    return shown


def chromium_open_s(page: Path) -> float | None:
    binary = shutil.which("chromium") or shutil.which("chromium-browser")
    if not binary:
        return None
    with tempfile.TemporaryDirectory() as profile:
        start = time.perf_counter()
        subprocess.run([binary, "--headless", "--no-sandbox", "--disable-gpu", f"--user-data-dir={profile}",
                        "--dump-dom", page.resolve().as_uri()], stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL, timeout=300, check=False)
        return time.perf_counter() - start


def judge_alone(url: str, turns: int, workers: int, cache: Path) -> dict:
    """Judge `turns` distinct turns at `workers` threads through the evaluator's Judge."""
    judge = Judge(JUDGE_MODEL, url, "stub-key", num_workers=workers, backoff_s=0.5, cache_path=cache)
    items = [JudgeItem(f"turn-{i}", f"question {i}?", f"the answer number {i}", f"answer number {i}")
             for i in range(turns)]
    start = time.perf_counter()
    outcomes = judge.judge_all(items)
    wall = time.perf_counter() - start
    return {"turns": turns, "workers": workers, "wall_s": wall,
            "failed": sum(1 for o in outcomes.values() if o.verdict is None),
            "waits": sum(o.waits for o in outcomes.values())}


def evaluation_args(dataset: Path, dataset_type: str, out: Path, url: str, *extra: str) -> list[str]:
    return ["--profile", "cpu", "--dataset", str(dataset), "--dataset-type", dataset_type, "--agent", AGENT,
            "--eval-model", JUDGE_MODEL, "--eval-base-url", url, "--output-dir", str(out), "--no_progress", *extra]


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=None, help="work folder (default: a new one under /tmp)")
    parser.add_argument("--single", type=int, default=SINGLE_TURN_SESSIONS)
    parser.add_argument("--multi", type=int, default=MULTI_TURN_CONVERSATIONS)
    parser.add_argument("--judge-latency", type=float, default=0.2, help="seconds the stub judge takes per request")
    parser.add_argument("--judge-throttle-every", type=int, default=20, help="every N-th judge request gets HTTP 429")
    parser.add_argument("--judge-turns", type=int, default=4000, help="turns for the judge-alone timing")
    parser.add_argument("--workers", type=int, default=8)
    args = parser.parse_args(argv)
    out = args.out or Path(tempfile.mkdtemp(prefix="full-split-"))
    out.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, **OFFLINE, "CRUISE_CACHE": str(private_cache(out / "cache")), "OPENAI_API_KEY": "stub-key"}
    figures: dict = {"out": str(out), "machine": read_machine().record(), "load_average_before": load_average()}

    start = time.perf_counter()
    data = build_full_split(out / "data", single=args.single, multi=args.multi)
    figures["build_split_s"] = time.perf_counter() - start

    stub = StubJudge(args.judge_latency, args.judge_throttle_every)
    try:
        single, shards, multi = out / "single-turn", [out / "multi-turn-0", out / "multi-turn-1"], out / "multi-turn"
        figures["single-turn run"] = run(evaluation_args(data["single-turn"], "single-turn", single, stub.url), env)
        for index, shard in enumerate(shards):
            figures[f"multi-turn shard {index}/2 run"] = run(
                evaluation_args(data["multi-turn"], "multi-turn", shard, stub.url, "--shard", f"{index}/2"), env)
        figures["multi-turn merge"] = run(["merge", *map(str, shards), "--output-dir", str(multi), "--no_progress",
                                           "--eval-base-url", stub.url], env)
        figures["single-turn resume (all answered)"] = run(
            evaluation_args(data["single-turn"], "single-turn", single, stub.url, "--resume"), env)
        figures["single-turn rejudge"] = run(
            ["--rejudge", "--output-dir", str(single), "--eval-base-url", stub.url, "--no_progress"], env)
        figures["judge requests to the stub in the runs"] = {"requests": stub.requests, "throttled": stub.throttled}
        figures["judge alone"] = judge_alone(stub.url, args.judge_turns, args.workers, out / "judge-alone.jsonl")
    finally:
        stub.close()

    for name, run_dir in (("single-turn", single), ("multi-turn", multi)):
        summary = json.loads((run_dir / "run_summary.json").read_text())
        turns = summary["turns_answered"]
        wall = (figures["single-turn run"]["wall_s"] if name == "single-turn"
                else sum(figures[f"multi-turn shard {i}/2 run"]["wall_s"] for i in range(2)))
        models = model_seconds(run_dir)
        figures[f"{name} turns"] = {"turns": turns, "complete": summary["complete"],
                                    "judge_asked": summary.get("judge_asked"), "scores": summary["scores"]["all"]}
        models_s = models["engine_s"] + models["search_s"]
        figures[f"{name} seconds"] = {
            **models, "run_wall_s": wall,
            # the chain's own work inside batch_generate_response, models left out
            "chain_ms_per_turn": 1000.0 * (models["agent_s"] - models_s) / turns,
            # everything outside the agent: start, model loading, data, judge, scoring, files, report
            "evaluator_outside_agent_ms_per_turn": 1000.0 * (wall - models["agent_s"]) / turns,
            "all_but_models_ms_per_turn": 1000.0 * (wall - models_s) / turns}
        figures[f"{name} sizes"] = sizes(run_dir)
        start = time.perf_counter()
        build_report(run_dir)
        figures[f"{name} report build (s)"] = time.perf_counter() - start
        figures[f"{name} report in chromium (s)"] = chromium_open_s(run_dir / "report.html")
    print(json.dumps(figures, indent=1, default=str))


if __name__ == "__main__":
    main()

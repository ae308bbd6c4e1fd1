"""Scripted stand-ins for the evaluator's tests: an agent, a search pipeline, an
OpenAI-compatible judge endpoint and a tiny CRAG-MM-schema dataset builder.

The agent answers from a fixed query -> answer mapping read from the JSON file named by the
environment variable SCRIPTED_AGENT_SCRIPT, and logs every call (queries, histories, image
sizes) to a JSONL file so tests can check what the evaluator fed it. Script keys:
  answers: {query: answer}        default: answer for unknown queries ("I don't know")
  batch_size: int                 log: path of the call log
  crash_on_call: k + crash_flag: path   -> os._exit(17) on call k unless the flag file exists
                                           (the flag is created first, so it crashes once)
  raise_on_query / short_on_query: query -> raise / return one answer too few in that batch
  deadline_cut_queries: [query]   -> traces say "deadline_cut": true
  (--set turn_budget_s=S)         -> every trace says "turn_budget_s": S, as an agent that keeps a
                                     per-turn budget records the one it ran under
  sleep_s: float                  -> each call waits that long (a run slow enough to be killed)
Only the standard library here; PIL and datasets are imported inside the dataset builder.
"""
from __future__ import annotations

import email.utils
import io
import json
import os
import threading
import time
from collections import defaultdict
from http.server import BaseHTTPRequestHandler
from pathlib import Path

from testkit.served import Served


# --------------------------------------------------------------------------- agent and search
class ScriptedAgent:
    """Not a CruiseAgent, and not built on our BaseAgent: it answers the harness's optional
    questions itself (agents/base_agent.py), taking --profile and --set as plain strings."""

    @classmethod
    def configure(cls, *, profile, preset=None, settings=(), calibration=None):
        parsed = {}
        for setting in settings:
            key, sep, value = setting.partition("=")
            if not sep:
                raise ValueError(f"--set {setting!r}: expected FIELD=VALUE")
            parsed[key.strip()] = value
        return {"profile": profile, "preset": preset, "settings": parsed}

    @classmethod
    def describe(cls, config) -> dict:
        return {"settings": config["settings"]}

    def __init__(self, search_pipeline=None, config=None):
        self.search_pipeline = search_pipeline
        self.config = config or {"profile": None, "settings": {}}
        self.script = json.loads(Path(os.environ["SCRIPTED_AGENT_SCRIPT"]).read_text())
        self.calls = 0
        self.last_batch_report = None

    def get_batch_size(self) -> int:
        return self.script.get("batch_size", 2)

    def batch_generate_response(self, queries, images, message_histories):
        self.calls += 1
        s = self.script
        if s.get("log"):
            with open(s["log"], "a") as f:
                f.write(json.dumps({
                    "call": self.calls, "queries": queries, "histories": message_histories,
                    "image_sizes": [list(im.size) for im in images],
                    "search": type(self.search_pipeline).__name__,
                    "web": getattr(self.search_pipeline, "web", None),
                    "profile": self.config["profile"],
                    "k_recall": self.config["settings"].get("k_recall"),
                    "cuda_visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES"),
                }) + "\n")
        time.sleep(s.get("sleep_s", 0.0))
        if s.get("crash_on_call") == self.calls and not Path(s["crash_flag"]).exists():
            Path(s["crash_flag"]).write_text("crashed once")
            os._exit(17)
        if s.get("raise_on_query") in queries:
            raise RuntimeError("scripted failure")
        answers = [s["answers"].get(q, s.get("default", "I don't know")) for q in queries]
        cut = set(s.get("deadline_cut_queries", []))
        budget = self.config["settings"].get("turn_budget_s")
        budget_field = {} if budget is None else {"turn_budget_s": float(budget)}
        self.last_batch_report = {
            "traces": [{"scripted": True, "deadline_cut": q in cut, **budget_field} for q in queries],
            "engine_calls": [{"stage": "scripted", "kind": "chat", "requests": len(queries),
                              "prompt_tokens": 0, "output_tokens": 0, "wall_ms": 1.5},
                             {"stage": "rerank", "kind": "rerank", "requests": 1,
                              "prompt_tokens": 0, "output_tokens": 0, "wall_ms": 0.5}],
        }
        if s.get("short_on_query") in queries:
            return answers[:-1]
        return answers


class FakeSearch:
    def __init__(self, config, web: bool):
        self.profile = config.profile
        self.web = web

    def __call__(self, query, k=10):
        return []


def make_fake_search(config, web: bool) -> FakeSearch:
    return FakeSearch(config, web)


# --------------------------------------------------------------------------- judge endpoint
class FakeOpenAIServer(Served):
    """A chat-completions endpoint on 127.0.0.1 with scripted verdicts, keyed by a marker in the
    prediction: [yes] / [no] -> verdict, [fail] -> HTTP 500 always, [flaky] -> two 500s then
    true, [garbage] -> a reply that carries no verdict, [quota] -> OpenAI's 429
    `insufficient_quota` always. It speaks both judge protocols: a request with a response_format
    (kddcup2025) gets JSON {"accuracy": bool}; one without (crag-mm) gets a short free-text reason
    ending in a line "Result: CORRECT" or "Result: WRONG". `throttle`: the first len(throttle)
    chat requests, whatever they ask, get HTTP 429 with that Retry-After value ("date+N": an HTTP
    date N seconds ahead; None: no header), the way a rate-limited endpoint answers for a while.
    Also serves PNG files at /img/<name> and a redirect to file:// at /redirect-file. Stops by
    itself after `lifetime_s`. `requests` logs every request with the status it got."""

    def __init__(self, *, images: dict[str, bytes] | None = None, reject_structured: bool = False,
                 throttle: list[str | None] | None = None, lifetime_s: float = 300.0):
        self.images = images or {}
        self.reject_structured = reject_structured
        self.throttle = list(throttle or [])
        self.requests: list[dict] = []
        self.seen = defaultdict(int)
        self.lock = threading.Lock()
        self.bind(self._handler(), lifetime_s)

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    @property
    def url(self) -> str:
        return self.base + "/v1"

    def chat_requests(self) -> list[dict]:
        with self.lock:
            return [r for r in self.requests if r.get("path", "").endswith("/chat/completions")]

    def reply(self, body: dict) -> tuple[int, dict, dict]:
        """(status, JSON payload, extra headers) for one chat request."""
        with self.lock:
            throttled = self.throttle.pop(0) if self.throttle else False
        if throttled is not False:
            if throttled is None:
                headers = {}
            elif throttled.startswith("date+"):
                when = time.time() + float(throttled[len("date+"):])
                headers = {"Retry-After": email.utils.formatdate(when, usegmt=True)}
            else:
                headers = {"Retry-After": throttled}
            return 429, {"error": {"message": "Rate limit reached", "type": "requests", "code": "rate_limit_exceeded"}}, headers
        if self.reject_structured and (body.get("response_format") or {}).get("type") == "json_schema":
            return 400, {"error": {"message": "response_format json_schema is not supported", "type": "invalid"}}, {}
        prediction = body["messages"][-1]["content"].split("Prediction:", 1)[-1]
        with self.lock:
            self.seen[prediction] += 1
            count = self.seen[prediction]
        if "[quota]" in prediction:
            return 429, {"error": {"message": "You exceeded your current quota", "type": "insufficient_quota",
                                   "code": "insufficient_quota"}}, {"Retry-After": "1"}
        if "[fail]" in prediction or ("[flaky]" in prediction and count <= 2):
            return 500, {"error": {"message": "scripted server error"}}, {}
        right = "[yes]" in prediction or "[flaky]" in prediction
        if body.get("response_format"):
            content = "this is not json" if "[garbage]" in prediction else json.dumps({"accuracy": right})
        elif "[garbage]" in prediction:
            content = "The prediction is hard to grade.\nNo decision."
        else:
            content = ("Reason: scripted grading.\nResult: " + ("CORRECT" if right else "WRONG"))
        return 200, {
            "id": "chatcmpl-fake", "object": "chat.completion", "created": 0, "model": body.get("model"),
            "choices": [{"index": 0, "message": {"role": "assistant", "content": content},
                         "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
        }, {}

    def _handler(self):
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def _send(self, status: int, payload: bytes, ctype: str, extra: dict | None = None):
                self.send_response(status)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(payload)))
                for k, v in (extra or {}).items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(payload)

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
                record = {"path": self.path, "body": body, "auth": self.headers.get("Authorization")}
                with outer.lock:
                    outer.requests.append(record)
                status, payload, headers = outer.reply(body)
                record["status"] = status
                self._send(status, json.dumps(payload).encode(), "application/json", headers)

            def do_GET(self):
                with outer.lock:
                    outer.requests.append({"path": self.path})
                name = self.path.rsplit("/", 1)[-1]
                if self.path.startswith("/img/") and name in outer.images:
                    self._send(200, outer.images[name], "image/png")
                elif self.path == "/redirect-file":
                    self._send(302, b"", "text/plain", {"Location": "file:///etc/hostname"})
                else:
                    self._send(404, b"not found", "text/plain")

        return Handler


# --------------------------------------------------------------------------- dataset fixture
def png_bytes(color: tuple[int, int, int], size=(40, 30)) -> bytes:
    from PIL import Image

    buf = io.BytesIO()
    Image.new("RGB", size, color).save(buf, format="PNG")
    return buf.getvalue()


def build_dataset(folder: Path, conversations: list[dict], *, form: str,
                  answer_forms: dict[str, tuple[list[str], bool]] | None = None, split: str = "validation") -> Path:
    """Write a CRAG-MM-schema dataset. `conversations`: dicts with session_id, image (PIL or
    None), image_url, image_quality, turns: [(interaction_id, query, answer, domain,
    query_category, dynamism)]. form "list": turns/answers as lists of dicts, saved as parquet
    (load_dataset(folder)); form "dict": dicts of lists, saved with save_to_disk; form
    "dict-parquet": dicts of lists (v0.1.2's layout) saved as parquet. The parquet forms write
    `data/<split>-00000-of-00001.parquet`, the hub's file naming, so calls with other `split`s
    add splits to one folder.
    `answer_forms` (interaction_id -> (accepted forms, abstain expected)) adds the mini
    benchmark's two extra answer keys after the official ones."""
    import datasets
    from datasets import Features, Image, List, Sequence, Value

    turn_fields = {k: Value("string") for k in ("interaction_id", "query", "domain", "query_category", "dynamism")}
    answer_fields = {"interaction_id": Value("string"), "ans_full": Value("string")}
    if answer_forms is not None:
        answer_fields.update(ans_accepted=List(Value("string")), abstain_expected=Value("bool"))
    wrap = List if form == "list" else Sequence
    parquet = form in ("list", "dict-parquet")
    features = Features({"session_id": Value("string"), "image": Image(), "image_url": Value("string"),
                         "image_quality": Value("string"), "turns": wrap(turn_fields),
                         "answers": wrap(answer_fields)})
    rows = []
    for conv in conversations:
        turns = [dict(interaction_id=t[0], query=t[1], domain=t[3], query_category=t[4], dynamism=t[5])
                 for t in conv["turns"]]
        answers = [dict(interaction_id=t[0], ans_full=t[2]) for t in conv["turns"]]
        if answer_forms is not None:
            for answer in answers:
                accepted, abstain = answer_forms[answer["interaction_id"]]
                answer.update(ans_accepted=accepted, abstain_expected=abstain)
        if form != "list":
            turns = {k: [t[k] for t in turns] for k in turn_fields}
            answers = {k: [a[k] for a in answers] for k in answer_fields}
        rows.append(dict(session_id=conv["session_id"], image=conv["image"], image_url=conv["image_url"],
                         image_quality=conv["image_quality"], turns=turns, answers=answers))
    ds = datasets.Dataset.from_list(rows, features=features)
    folder.mkdir(parents=True, exist_ok=True)
    if parquet:
        (folder / "data").mkdir(exist_ok=True)
        ds.to_parquet(str(folder / "data" / f"{split}-00000-of-00001.parquet"))
    else:
        datasets.DatasetDict({split: ds}).save_to_disk(str(folder))
    return folder

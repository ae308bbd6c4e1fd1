"""The LLM judge: does a prediction carry the ground truth's key information?

Any OpenAI-compatible endpoint works. We ask for structured output (`{"accuracy": bool}`
through a pydantic model); an endpoint that rejects structured output gets
`response_format={"type": "json_object"}` and we parse the JSON ourselves. Each turn gets up
to 3 attempts (official) with exponential back-off; the client's own retries are off so that
one attempt is one HTTP request. No sampling parameters are sent (as the official evaluator;
some models reject a temperature). Verdicts are cached on disk, keyed by a hash of
(model, endpoint, question, ground truth, prediction), so a rerun never pays twice. The API key
is read from the environment or a `.env` file and is never printed or written.
"""
from __future__ import annotations

import hashlib
import json
import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel

from agents.config import REPO_ROOT, cache_dir

DEFAULT_EVAL_MODEL = "gpt-4o-mini"
MAX_ATTEMPTS = 3
DUMMY_KEY = "not-needed"

SYSTEM_PROMPT = (
    "You grade answers given by a question-answering assistant.\n"
    "You receive a question, the ground-truth answer and the assistant's prediction.\n"
    "Decide whether the prediction captures the key information of the ground truth:\n"
    "- Different wording, extra harmless detail or a more complete answer is still accurate.\n"
    "- A prediction that contradicts the ground truth, states a wrong fact, or leaves out what\n"
    "  the question actually asks for is not accurate.\n"
    "- A hedge that names several candidates without committing to the right one is not accurate.\n"
    'Reply with a JSON object only: {"accuracy": true} or {"accuracy": false}.'
)


class Verdict(BaseModel):
    accuracy: bool


@dataclass
class JudgeItem:
    key: str  # the caller's id for the turn (interaction_id)
    question: str
    ground_truth: str
    prediction: str


@dataclass
class JudgeOutcome:
    key: str
    verdict: bool | None  # None: every attempt failed
    attempts: int
    cached: bool
    error: str | None = None


def find_api_key() -> str | None:
    """OPENAI_API_KEY from the environment, else from a `.env` file (cwd, then repo root)."""
    key = os.environ.get("OPENAI_API_KEY")
    if key:
        return key
    try:
        from dotenv import dotenv_values
    except ImportError:
        return None
    for folder in (Path.cwd(), REPO_ROOT):
        env_file = folder / ".env"
        if env_file.is_file():
            key = dotenv_values(env_file).get("OPENAI_API_KEY")
            if key:
                return key
    return None


def user_message(question: str, ground_truth: str, prediction: str) -> str:
    return f"Question: {question}\nGround truth: {ground_truth}\nPrediction: {prediction}\n"


def parse_verdict_text(text: str | None) -> bool:
    """`{"accuracy": true}` (also tolerates a fenced block or a string "true"/"false")."""
    if not text:
        raise ValueError("empty judge reply")
    cleaned = text.strip().strip("`")
    if cleaned.lower().startswith("json"):
        cleaned = cleaned[4:]
    start, end = cleaned.find("{"), cleaned.rfind("}")
    if start < 0 or end < start:
        raise ValueError(f"judge reply is not JSON: {text[:200]!r}")
    value = json.loads(cleaned[start : end + 1]).get("accuracy")
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    raise ValueError(f"judge reply has no boolean 'accuracy': {text[:200]!r}")


class VerdictCache:
    """Append-only JSONL of {"key": hash, "accuracy": bool}; only real verdicts are stored."""

    def __init__(self, path: Path):
        self.path = path
        self._lock = threading.Lock()
        self._verdicts: dict[str, bool] = {}
        if path.exists():
            for line in path.read_text(encoding="utf-8").splitlines():
                try:
                    record = json.loads(line)
                    self._verdicts[record["key"]] = bool(record["accuracy"])
                except (ValueError, KeyError, TypeError):
                    continue  # a line cut by a crash

    def get(self, key: str) -> bool | None:
        return self._verdicts.get(key)

    def put(self, key: str, verdict: bool) -> None:
        with self._lock:
            self._verdicts[key] = verdict
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with self.path.open("a", encoding="utf-8") as f:
                f.write(json.dumps({"key": key, "accuracy": verdict}) + "\n")


class Judge:
    def __init__(self, model: str = DEFAULT_EVAL_MODEL, base_url: str | None = None,
                 api_key: str | None = None, *, num_workers: int = 8, timeout_s: float = 30.0,
                 backoff_s: float = 1.0, cache_path: Path | None = None):
        from openai import OpenAI

        self.model = model
        self.base_url = base_url
        self.num_workers = max(1, int(num_workers))
        self.timeout_s = timeout_s
        self.backoff_s = backoff_s
        self.structured = True  # switched off for good if the endpoint rejects structured output
        self.client = OpenAI(api_key=api_key or DUMMY_KEY, base_url=base_url, max_retries=0,
                             timeout=timeout_s)
        self.cache = VerdictCache(cache_path or cache_dir() / "judge" / "verdicts.jsonl")

    @property
    def label(self) -> str:
        return f"{self.model} @ {self.base_url or 'https://api.openai.com/v1'}"

    def cache_key(self, item: JudgeItem) -> str:
        blob = json.dumps([self.model, self.base_url or "", item.question, item.ground_truth, item.prediction])
        return hashlib.sha256(blob.encode()).hexdigest()

    def _ask_once(self, messages: list[dict]) -> bool:
        if self.structured:
            try:
                completion = self.client.chat.completions.parse(
                    model=self.model, messages=messages, response_format=Verdict)
            except Exception as exc:
                if not _rejects_structured_output(exc):
                    raise
                self.structured = False
            else:
                message = completion.choices[0].message
                if message.parsed is not None:
                    return bool(message.parsed.accuracy)
                return parse_verdict_text(message.content)
        completion = self.client.chat.completions.create(
            model=self.model, messages=messages, response_format={"type": "json_object"})
        return parse_verdict_text(completion.choices[0].message.content)

    def judge_one(self, item: JudgeItem) -> JudgeOutcome:
        key = self.cache_key(item)
        cached = self.cache.get(key)
        if cached is not None:
            return JudgeOutcome(item.key, cached, 0, True)
        messages = [
            {"role": "system", "content": SYSTEM_PROMPT},
            {"role": "user", "content": user_message(item.question, item.ground_truth, item.prediction)},
        ]
        error = None
        for attempt in range(1, MAX_ATTEMPTS + 1):
            try:
                verdict = self._ask_once(messages)
            except Exception as exc:  # noqa: BLE001 - network, HTTP status, refusal, unparsable reply
                error = f"{type(exc).__name__}: {str(exc)[:300]}"
                if attempt < MAX_ATTEMPTS:
                    time.sleep(self.backoff_s * 2 ** (attempt - 1))
                continue
            self.cache.put(key, verdict)
            return JudgeOutcome(item.key, verdict, attempt, False)
        return JudgeOutcome(item.key, None, MAX_ATTEMPTS, False, error)

    def judge_all(self, items: list[JudgeItem], on_done=None) -> dict[str, JudgeOutcome]:
        """Every item judged on `num_workers` threads; `on_done(outcome)` is called as each ends."""
        outcomes = {}
        with ThreadPoolExecutor(max_workers=self.num_workers) as pool:
            futures = [pool.submit(self.judge_one, item) for item in items]
            for future in as_completed(futures):
                outcome = future.result()
                outcomes[outcome.key] = outcome
                if on_done:
                    on_done(outcome)
        return outcomes


def _rejects_structured_output(exc: Exception) -> bool:
    """A 400/422 that names response_format / json_schema: the endpoint lacks structured output."""
    status = getattr(exc, "status_code", None)
    text = str(exc).lower()
    return status in (400, 422) and any(w in text for w in ("response_format", "json_schema", "structured"))

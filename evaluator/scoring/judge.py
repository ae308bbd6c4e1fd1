"""The LLM judge: is a prediction right, given the question and the ground truth?

Any OpenAI-compatible endpoint works. Two protocols, one per rule set (evaluator.scoring.rules):
- structured (kddcup2025, the starter kit's): structured output `{"accuracy": bool}` through a
  pydantic model, no sampling parameters (as the kit; some models reject a temperature); an
  endpoint that rejects structured output gets `response_format={"type": "json_object"}` and
  we parse the JSON ourselves.
- result-line (crag-mm, the published evaluator's): a free-text grading against written rules
  (evaluator/scoring/prompts/judge_crag_mm.txt, our wording of its rules) whose last line says "Result: CORRECT"
  or "Result: WRONG"; temperature 0, at most 1,024 tokens. A reply with neither is a failed
  attempt here (the published code would pass it on as a verdict of None).
Either protocol can instead use the official judge's own words, read at run time from a checkout
the user has (`--judge-prompt-from DIR`, evaluator/scoring/official_judge.py): that code builds
the messages and gives the sampling and, for crag-mm, the reading of the reply
(`OfficialResultLineProtocol`, `OfficialStructuredProtocol`). `Judge.prompt_origin` records which.
A protocol builds the messages and makes ONE request (`JudgeProtocol.ask`); the attempts,
back-off, rate-limit waits and caching around it live in `Judge.judge_one` only. Each turn gets
up to 3 attempts (official) with exponential back-off. Verdicts are cached on disk, keyed by a
hash of (protocol, model, endpoint, question, ground truth, prediction), so a rerun never pays
twice. The API key is read from the
environment or a `.env` file and is never printed or written.

Rate limits: an HTTP 429 or 5xx answer is waited out (`TransientWaits`, agents/transient_waits.py,
shared with the served engines) and asked again without
using up an attempt: we wait what `retry-after-ms` or `Retry-After` (seconds or an HTTP date)
asks, a little more so that threads told the same second do not come back together, else a
jittered exponential back-off (from `backoff_s`, at most 8 s as in the SDK). A turn waits this
way only until `max_wait_s` after its first request; after that such an answer costs an attempt
like any other failure. So a turn's sleeps stay below max_wait_s + the back-off between its
attempts (1 + 2 s by default), and the official 3 attempts still decide what a judge failure is.
`x-should-retry: false` and OpenAI's `insufficient_quota` are not waited out (waiting cannot help).

The SDK's own retries are off (`max_retries=0`): openai 3.54.0 (`_base_client`) would otherwise
resend each 429, 5xx, 408, 409 and connection error twice with its own sleeps (Retry-After up to
120 s, else 0.5-8 s), hidden inside each of our attempts, unbounded by our cap and unseen by our
counts; with them off, one request of ours is one HTTP request. (The published CRAG-MM judge
leaves them on, so its 3 attempts are up to 9 requests: there too 429/5xx waits come on top.)

A judge that cannot answer at all (endpoint unreachable, key refused, quota gone) would cost every
turn its 3 attempts and back-off. So once `give_up_after` turns in a row (in the order they end,
none judged in between) have failed every attempt, the judge stops: `gave_up` holds one line
saying why, and each later turn comes back at once without a verdict and without a request
(`attempts` 0). Turns without a verdict are the caller's to report and rejudge.
"""
from __future__ import annotations

import functools
import hashlib
import json
import os
import random
import re
import threading
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path
from string import Template
from typing import Callable

from pydantic import BaseModel

from agents.profiles import REPO_ROOT, cache_dir
from agents.transient_waits import TransientWaits, retry_after_s, waiting_helps  # noqa: F401 - re-exported
from evaluator.scoring.official_judge import PLACEHOLDER, OfficialJudge, ours_origin
from evaluator.scoring.rules import RULE_SETS, RuleSet, rule_set

DEFAULT_EVAL_MODEL = RULE_SETS["kddcup2025"].judge_model
MAX_ATTEMPTS = 3
DUMMY_KEY = "not-needed"
RESULT_LINE_TEMPERATURE = 0.0
RESULT_LINE_MAX_TOKENS = 1024
DEFAULT_MAX_WAIT_S = 120.0  # per turn, for 429/5xx waits (the SDK also honours Retry-After up to 120 s)
# turns in a row that fail every attempt before the judge stops asking (0: never stops)
DEFAULT_GIVE_UP_AFTER = 5
NOT_ASKED = "not asked"  # the start of a turn's error when the judge had given up before it
JUDGE_PROMPTS = Path(__file__).resolve().parent / "prompts"

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



@functools.cache
def judge_prompt(name: str) -> tuple[Template, Template]:
    """(system, user) of evaluator/scoring/prompts/<name>.txt: a [system] part, then a [user] part,
    `$name` placeholders. The judge's prompts belong to the evaluator, not to the agent's prompts/."""
    text = (JUDGE_PROMPTS / f"{name}.txt").read_text(encoding="utf-8")
    head, sep, rest = text.partition("[system]\n")
    system, sep2, user = rest.partition("[user]\n")
    if not sep or not sep2 or head.strip():
        raise ValueError(f"judge prompt {name!r} must hold a [system] part followed by a [user] part")
    return Template(system.strip()), Template(user.strip())

class Verdict(BaseModel):
    accuracy: bool


@dataclass
class JudgeItem:
    key: str  # the caller's id for the turn (interaction_id)
    question: str
    ground_truth: str
    prediction: str


@dataclass
class JudgeReply:
    verdict: bool
    text: str | None  # the judge's words (kept for the result-line protocol)


@dataclass
class JudgeOutcome:
    key: str
    verdict: bool | None  # None: every attempt failed
    attempts: int
    cached: bool
    error: str | None = None
    reply: str | None = None
    waits: int = 0  # 429/5xx answers waited out (not attempts)
    waited_s: float = 0.0


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
    """The starter kit's user message (kddcup2025)."""
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


def parse_result_line(text: str | None) -> bool | None:
    """The published evaluator's reading of a free-text verdict: WRONG wins (the phrase
    "Result: WRONG" anywhere, or WRONG on the last line), then CORRECT the same way, else None.
    Kept as it is, quirk included: a last line "INCORRECT" reads as CORRECT."""
    if not text:
        return None
    last_line = text.split("\n")[-1]
    if "Result: WRONG" in text or "WRONG" in last_line:
        return False
    if "Result: CORRECT" in text or "CORRECT" in last_line:
        return True
    return None


class JudgeProtocol:
    """How one rule set asks its judge: the messages for a turn and ONE request."""

    name = "?"

    def messages(self, item: JudgeItem) -> list[dict]:
        raise NotImplementedError

    def ask(self, client, model: str, messages: list[dict]) -> JudgeReply:
        """One request (the structured protocol may add one more, once, to learn that the
        endpoint lacks structured output); raises on any failure."""
        raise NotImplementedError


class StructuredProtocol(JudgeProtocol):
    name = "structured"

    def __init__(self, response_format: type[BaseModel] = Verdict):
        self.structured = True  # switched off for good if the endpoint rejects structured output
        self.response_format = response_format  # a model with one boolean field, accuracy

    def messages(self, item: JudgeItem) -> list[dict]:
        return [{"role": "system", "content": SYSTEM_PROMPT},
                {"role": "user", "content": user_message(item.question, item.ground_truth, item.prediction)}]

    def ask(self, client, model: str, messages: list[dict]) -> JudgeReply:
        if self.structured:
            try:
                completion = client.chat.completions.parse(model=model, messages=messages,
                                                           response_format=self.response_format)
            except Exception as exc:
                if not _rejects_structured_output(exc):
                    raise
                self.structured = False
            else:
                message = completion.choices[0].message
                if message.parsed is not None:
                    return JudgeReply(bool(message.parsed.accuracy), message.content)
                return JudgeReply(parse_verdict_text(message.content), message.content)
        completion = client.chat.completions.create(
            model=model, messages=messages, response_format={"type": "json_object"})
        text = completion.choices[0].message.content
        return JudgeReply(parse_verdict_text(text), text)


class ResultLineProtocol(JudgeProtocol):
    name = "result-line"

    def messages(self, item: JudgeItem) -> list[dict]:
        system, user = judge_prompt("judge_crag_mm")
        values = {"question": item.question, "ground_truth": item.ground_truth, "prediction": item.prediction}
        return [{"role": "system", "content": system.substitute(values)},
                {"role": "user", "content": user.substitute(values)}]

    def ask(self, client, model: str, messages: list[dict]) -> JudgeReply:
        completion = client.chat.completions.create(
            model=model, messages=messages, temperature=RESULT_LINE_TEMPERATURE,
            max_tokens=RESULT_LINE_MAX_TOKENS)
        text = completion.choices[0].message.content
        verdict = parse_result_line(text)
        if verdict is None:
            raise ValueError(f"judge reply has no Result line: {(text or '')[-200:]!r}")
        return JudgeReply(verdict, text)


class OfficialResultLineProtocol(ResultLineProtocol):
    """The result-line protocol with a CRAG-MM checkout's own prompt (`--judge-prompt-from`):
    its code builds the messages, gives the sampling parameters and reads the reply
    (evaluator/scoring/official_judge.py)."""

    def __init__(self, official: OfficialJudge):
        self.official = official

    def messages(self, item: JudgeItem) -> list[dict]:
        return self.official.messages(item.question, item.ground_truth, item.prediction)

    def ask(self, client, model: str, messages: list[dict]) -> JudgeReply:
        completion = client.chat.completions.create(model=model, messages=messages, **self.official.sampling)
        text = completion.choices[0].message.content
        verdict = self.official.read_reply(text)
        if verdict is None:  # as ours: asked again rather than passed on as a verdict of None
            raise ValueError(f"judge reply has no Result line: {(text or '')[-200:]!r}")
        return JudgeReply(verdict, text)


class OfficialStructuredProtocol(StructuredProtocol):
    """The structured protocol with the 2025 starter kit's own judge (`--judge-prompt-from` under
    kddcup2025): its messages and its verdict model (evaluator/scoring/official_judge.py)."""

    def __init__(self, official: OfficialJudge):
        super().__init__(official.response_format)
        self.official = official

    def messages(self, item: JudgeItem) -> list[dict]:
        return self.official.messages(item.question, item.ground_truth, item.prediction)


def protocol_for(rules: RuleSet, official: OfficialJudge | None = None) -> JudgeProtocol:
    if official is not None:
        if (official.response_format is None) != (rules.judge_protocol == "result-line"):
            raise ValueError(f"--judge-prompt-from: {official.folder} holds the judge of another rule set than "
                             f"--rules {rules.name}")
        return OfficialResultLineProtocol(official) if official.response_format is None \
            else OfficialStructuredProtocol(official)
    return ResultLineProtocol() if rules.judge_protocol == "result-line" else StructuredProtocol()


def prompt_origin_of(protocol: JudgeProtocol) -> dict:
    """Where the protocol's prompt comes from (official_judge.origin_text reads it)."""
    if isinstance(protocol, (OfficialResultLineProtocol, OfficialStructuredProtocol)):
        return protocol.official.origin()
    sampling = ({"temperature": RESULT_LINE_TEMPERATURE, "max_tokens": RESULT_LINE_MAX_TOKENS}
                if isinstance(protocol, ResultLineProtocol) else {})
    return ours_origin(protocol.messages(JudgeItem("", *PLACEHOLDER)), sampling)


OPENAI_URL = "https://api.openai.com/v1"
LABEL_PATTERN = re.compile(r"^(?P<model>.+) @ (?P<url>\S+) \((?P<rules>[^()]+) protocol\)$")


def judge_label(model: str, base_url: str | None, rules_name: str) -> str:
    """How a judge is named in judgments.jsonl and run_summary.json."""
    return f"{model} @ {base_url or OPENAI_URL} ({rules_name} protocol)"


def judges_of_label(label: str) -> tuple[str, list[str | None], str] | None:
    """(model, the base URLs the label may stand for, rule set name) of a `judge_label`, or None:
    OpenAI's own URL stands for itself and for no --eval-base-url at all."""
    found = LABEL_PATTERN.match(label or "")
    if not found:
        return None
    url = found["url"]
    return found["model"], [url, None] if url == OPENAI_URL else [url], found["rules"]


def judging_key(protocol: JudgeProtocol, model: str, base_url: str | None, item: JudgeItem) -> str:
    """The verdict cache key: the messages themselves, not just the turn, so a changed judge
    prompt, question, ground truth or answer must ask again."""
    blob = json.dumps([protocol.name, model, base_url or "", protocol.messages(item)])
    return hashlib.sha256(blob.encode()).hexdigest()


class VerdictCache:
    """Append-only JSONL of {"key": hash, "accuracy": bool, "reply": text}; only real verdicts."""

    def __init__(self, path: Path):
        self.path = path
        self._lock = threading.Lock()
        self._verdicts: dict[str, JudgeReply] = {}
        if path.exists():
            for line in path.read_text(encoding="utf-8").splitlines():
                try:
                    record = json.loads(line)
                    self._verdicts[record["key"]] = JudgeReply(bool(record["accuracy"]), record.get("reply"))
                except (ValueError, KeyError, TypeError):
                    continue  # a line cut by a crash

    def get(self, key: str) -> JudgeReply | None:
        return self._verdicts.get(key)

    def put(self, key: str, reply: JudgeReply) -> None:
        with self._lock:
            self._verdicts[key] = reply
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with self.path.open("a", encoding="utf-8") as f:
                f.write(json.dumps({"key": key, "accuracy": reply.verdict, "reply": reply.text}) + "\n")


class Judge:
    def __init__(self, model: str | None = None, base_url: str | None = None,
                 api_key: str | None = None, *, rules: RuleSet | None = None, num_workers: int = 8,
                 timeout_s: float = 30.0, backoff_s: float = 1.0, max_wait_s: float = DEFAULT_MAX_WAIT_S,
                 cache_path: Path | None = None, sleep: Callable[[float], None] = time.sleep,
                 clock: Callable[[], float] = time.monotonic, rng: random.Random | None = None,
                 give_up_after: int = DEFAULT_GIVE_UP_AFTER, official: OfficialJudge | None = None):
        from openai import OpenAI

        self.rules = rules or rule_set(None)
        self.protocol = protocol_for(self.rules, official)
        self.model = model or (official.default_model if official else None) or self.rules.judge_model
        self.prompt_origin = prompt_origin_of(self.protocol)
        self.base_url = base_url
        self.num_workers = max(1, int(num_workers))
        self.timeout_s = timeout_s
        self.backoff_s = backoff_s
        self.max_wait_s = max_wait_s
        self.sleep, self.clock, self.rng = sleep, clock, rng or random.Random()
        # max_retries=0: our TransientWaits are the only retries (module notes)
        self.client = OpenAI(api_key=api_key or DUMMY_KEY, base_url=base_url, max_retries=0,
                             timeout=timeout_s)
        self.cache = VerdictCache(cache_path or cache_dir() / "judge" / "verdicts.jsonl")
        self.give_up_after = max(0, int(give_up_after))
        self.gave_up: str | None = None  # why the judge stopped asking (None: it has not)
        self._failed_in_a_row = 0
        self._streak_lock = threading.Lock()

    @property
    def structured(self) -> bool:
        return getattr(self.protocol, "structured", False)

    @property
    def label(self) -> str:
        return judge_label(self.model, self.base_url, self.rules.name)

    def cache_key(self, item: JudgeItem) -> str:
        return judging_key(self.protocol, self.model, self.base_url, item)

    def _ask_once(self, messages: list[dict]) -> JudgeReply:
        """One attempt: one request through the rule set's protocol."""
        return self.protocol.ask(self.client, self.model, messages)

    def judge_one(self, item: JudgeItem) -> JudgeOutcome:
        key = self.cache_key(item)
        cached = self.cache.get(key)
        if cached is not None:
            return JudgeOutcome(item.key, cached.verdict, 0, True, reply=cached.text)
        if self.gave_up:
            return JudgeOutcome(item.key, None, 0, False, f"{NOT_ASKED}: {self.gave_up}")
        messages = self.protocol.messages(item)
        waits = TransientWaits(self.max_wait_s, self.backoff_s, sleep=self.sleep, clock=self.clock, rng=self.rng)
        error = None
        for attempt in range(1, MAX_ATTEMPTS + 1):
            try:
                reply = waits.send(self._ask_once, messages)
            except Exception as exc:  # noqa: BLE001 - network, HTTP status, refusal, unparsable reply
                error = f"{type(exc).__name__}: {str(exc)[:300]}"
                if attempt < MAX_ATTEMPTS:
                    self.sleep(self.backoff_s * 2 ** (attempt - 1))
                continue
            self.cache.put(key, reply)
            self._record(error=None)
            return JudgeOutcome(item.key, reply.verdict, attempt, False, reply=reply.text, waits=waits.waits,
                                waited_s=waits.waited_s)
        self._record(error=error)
        return JudgeOutcome(item.key, None, MAX_ATTEMPTS, False, error, waits=waits.waits, waited_s=waits.waited_s)

    def _record(self, error: str | None) -> None:
        """Count a turn that ended: a verdict resets the streak of failed turns; `give_up_after`
        failures in a row make the judge stop asking."""
        with self._streak_lock:
            if error is None:
                self._failed_in_a_row = 0
                return
            self._failed_in_a_row += 1
            if self.give_up_after and self._failed_in_a_row >= self.give_up_after and not self.gave_up:
                self.gave_up = give_up_line(self._failed_in_a_row, error)

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


def give_up_line(turns: int, error: str) -> str:
    """Why the judge stopped asking, in one line, with what the last failure said."""
    line = f"the judge failed every attempt on {turns} turns in a row, so it was not asked again ({error[:200]})"
    if any(code in error for code in ("401", "403", "AuthenticationError", "PermissionDenied")):
        line += "; the endpoint refuses the key: check OPENAI_API_KEY (environment or .env)"
    elif "insufficient_quota" in error:
        line += "; the account's quota is used up"
    elif "Connection" in error or "Timeout" in error:
        line += "; the endpoint cannot be reached: check --eval-base-url and the network"
    return line


def _rejects_structured_output(exc: Exception) -> bool:
    """A 400/422 that names response_format / json_schema: the endpoint lacks structured output."""
    status = getattr(exc, "status_code", None)
    text = str(exc).lower()
    return status in (400, 422) and any(w in text for w in ("response_format", "json_schema", "structured"))

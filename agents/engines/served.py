"""HTTP plumbing shared by the served engines (agents/engines/openai_engine.py, the server
reranker): one `Endpoint` per base URL, with a connection pool, the API key, deadline-bounded
requests and the shared 429/5xx waits (agents/transient_waits.py).

Why httpx and not the openai SDK (both pinned; httpx 0.28.1 is what openai 3.54.0 runs on):
- some OpenAI-compatible servers answer a chat completion as a server-sent event stream even
  with `"stream": false` (`transformers serve` 4.57.6 always does); the SDK's non-streaming call
  then hands back a plain string. Here the body is read by its content type, JSON or SSE;
- one total time limit per request (the batch deadline), also over a stream that stalls: the
  SDK's timeout is per read;
- no hidden retries: every wait is `TransientWaits`', bounded by the deadline;
- the reranker's `/rerank` is not an OpenAI route, so the SDK would not cover it anyway.

The API key comes from the environment (`CRUISE_ENGINE_API_KEY`) and goes into the
Authorization header only: it is never part of a message, a log line or an output file.
"""
from __future__ import annotations

import json
import os
import time
from typing import Iterator

import httpx

from agents.engines.base import ServerGaveUp
from agents.transient_waits import HTTPStatusFailure, TransientWaits

API_KEY_ENV = "CRUISE_ENGINE_API_KEY"
DEFAULT_TIMEOUT_S = 120.0  # a request made outside the chain (no batch deadline around it)
FIRST_BACKOFF_S = 0.5
PROBE_TIMEOUT_S = 5.0


class Endpoint:
    """One OpenAI-style base URL (e.g. http://localhost:8000/v1); thread-safe."""

    def __init__(self, base_url: str, *, max_in_flight: int = 32, timeout_s: float = DEFAULT_TIMEOUT_S,
                 headers: dict | None = None, key_variable: str = API_KEY_ENV, secret: str | None = None):
        """`headers`/`key_variable`/`secret`: a hosted provider's own authentication
        (agents/engines/hosted_engine.py): its headers, the variable its key came from (named in
        a 401/403 message) and the key itself, which is blanked out of every error message."""
        self.base_url = base_url.rstrip("/")
        self.timeout_s = timeout_s
        self.key_variable = key_variable
        if headers is None:
            secret = os.environ.get(API_KEY_ENV)
            headers = {"Authorization": f"Bearer {secret}"} if secret else {}
        self._secret = secret
        self.client = httpx.Client(
            headers=headers, timeout=timeout_s,
            limits=httpx.Limits(max_connections=max_in_flight, max_keepalive_connections=max_in_flight))

    def __repr__(self) -> str:  # never the headers
        return f"Endpoint({self.base_url})"

    def budget_s(self, seconds_left: float | None) -> float:
        """A request's time limit: what is left of the batch deadline, never more than timeout_s."""
        return self.timeout_s if seconds_left is None else min(self.timeout_s, seconds_left)

    def post(self, path: str, payload: dict, budget_s: float) -> list[dict]:
        """POST `payload` as JSON; the answer as a list of JSON objects: one for a JSON body, one
        per event for a server-sent event stream. 429/5xx answers are waited out while the
        budget lasts; anything else (refused connection, timeout, 4xx) is raised at once."""
        end = time.monotonic() + budget_s
        waits = TransientWaits(budget_s, FIRST_BACKOFF_S)
        return waits.send(self._post_once, path, payload, end)

    def _post_once(self, path: str, payload: dict, end: float) -> list[dict]:
        left = end - time.monotonic()
        if left <= 0:
            raise TimeoutError(f"{self.base_url}{path}: no time left in the batch's budget")
        with self.client.stream("POST", self.base_url + path, json=payload, timeout=httpx.Timeout(left)) as response:
            if response.status_code >= 400:
                response.read()
                raise _status_failure(response, f"{self.base_url}{path}", self.key_variable, self._secret)
            if response.headers.get("content-type", "").startswith("text/event-stream"):
                return list(_events(response.iter_lines(), end, f"{self.base_url}{path}"))
            response.read()
            return [response.json()]

    def model_ids(self, timeout_s: float = PROBE_TIMEOUT_S) -> list[str]:
        """The ids `GET /models` lists (one request, no retries)."""
        return [str(m.get("id")) for m in self.get("/models", timeout_s).get("data", []) if isinstance(m, dict)]

    def get(self, path: str, timeout_s: float = PROBE_TIMEOUT_S) -> dict:
        """One GET of a JSON answer (no retries): the pre-run checks."""
        response = self.client.get(self.base_url + path, timeout=timeout_s)
        if response.status_code >= 400:
            raise _status_failure(response, f"{self.base_url}{path}", self.key_variable, self._secret)
        return response.json()

    def close(self) -> None:
        self.client.close()


def _status_failure(response: httpx.Response, where: str, key_variable: str = API_KEY_ENV,
                    secret: str | None = None) -> HTTPStatusFailure:
    code = None
    try:
        error = response.json().get("error")
        code = error.get("code") if isinstance(error, dict) else None
    except (ValueError, AttributeError):
        pass
    body = response.text
    if secret:  # a server that echoes the key back must not put it in a trace or a log
        body = body.replace(secret, "[key]")
    body = body[:300].replace("\n", " ")
    status = f"HTTP {response.status_code}"
    if response.status_code in (401, 403):  # the key this process sends, or its absence
        status += f" (the server refuses the key: set {key_variable} to the key it expects)"
    return HTTPStatusFailure(response.status_code, response, code, f"{where}: {status}: {body}")


def _events(lines: Iterator[str], end: float, where: str) -> Iterator[dict]:
    """The JSON objects of a server-sent event stream, until `[DONE]` or its end; an event that
    carries an error (transformers serve's generate thread failing) is raised."""
    for line in lines:
        if time.monotonic() > end:
            raise TimeoutError(f"{where}: the stream outlived the batch's budget")
        if not line.startswith("data:"):
            continue
        data = line[len("data:"):].strip()
        if data == "[DONE]":
            return
        try:
            event = json.loads(data)
        except ValueError:
            raise ServerGaveUp(f"{where}: unreadable event {data[:200]!r}") from None
        if isinstance(event, dict) and event.get("error") and not event.get("choices"):
            raise ServerGaveUp(f"{where}: the server reported {str(event['error'])[:300]}")
        yield event


SERVED_ROLES = ("vlm", "router", "reranker")


def served_endpoint(models, role: str) -> tuple[str, str]:
    """(base URL, served model name) of one role's server, from the run's ModelSettings: the router
    defaults to the VLM's URL, every name to the role's model id. A router that is the VLM's model on
    the VLM's URL is the VLM's server, so it also takes the VLM's served name (one `vllm serve
    --served-model-name NAME` answers both roles)."""
    if role not in SERVED_ROLES:
        raise ValueError(f"unknown role {role!r}; choose one of {SERVED_ROLES}")
    model = getattr(models, f"{role}_model")
    url = getattr(models, f"{role}_base_url") or (models.vlm_base_url if role == "router" else "")
    name = getattr(models, f"{role}_served_name")
    if role == "router" and not name and model == models.vlm_model and url == models.vlm_base_url:
        name = models.vlm_served_name
    return url, name or model

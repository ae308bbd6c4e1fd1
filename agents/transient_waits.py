"""Waiting out HTTP 429 and 5xx answers: one helper for every client of an HTTP model server.

The judge (evaluator/scoring/judge.py) and the served engines (agents/engines/served.py) both send each
request through `TransientWaits.send`. A 429 or 5xx answer is asked again after the wait that
`retry-after-ms` or `Retry-After` (seconds or an HTTP date) asks, plus up to 10% so that threads
told the same second do not come back together; without such a header, after a jittered
exponential back-off (from `first_backoff_s`, at most 8 s as in the openai SDK). Waiting stops at
`max_wait_s` after the allowance was made: past it, the failure is raised like any other.
`x-should-retry: false` and OpenAI's `insufficient_quota` are never waited out (waiting cannot
help).

An error is read through three attributes, the ones the openai SDK's `APIStatusError` carries:
`status_code`, `response.headers` and `code`; `HTTPStatusFailure` carries them for plain httpx
clients. (This module lives under agents/ because the agent must not import the evaluator.)
"""
from __future__ import annotations

import email.utils
import random
import time
from typing import Callable, TypeVar

MAX_BACKOFF_S = 8.0  # one back-off without Retry-After (openai's MAX_RETRY_DELAY)
T = TypeVar("T")


class HTTPStatusFailure(Exception):
    """An HTTP error answer, with what `waiting_helps` and `retry_after_s` read."""

    def __init__(self, status_code: int, response=None, code: str | None = None, message: str = ""):
        super().__init__(message or f"HTTP {status_code}")
        self.status_code = status_code
        self.response = response
        self.code = code


def retry_after_s(exc: Exception, now: Callable[[], float] = time.time) -> float | None:
    """Seconds an HTTP error answer asks us to wait: `retry-after-ms` (OpenAI sends it), else
    `Retry-After` in seconds or as an HTTP date; None when absent or unreadable."""
    headers = getattr(getattr(exc, "response", None), "headers", None) or {}
    try:
        return float(headers["retry-after-ms"]) / 1000.0
    except (KeyError, ValueError):
        pass
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return float(value)
    except ValueError:
        pass
    try:
        return email.utils.parsedate_to_datetime(value).timestamp() - now()
    except (TypeError, ValueError, OverflowError):
        return None


def waiting_helps(exc: Exception) -> bool:
    """429 or 5xx, unless the server says a retry is pointless."""
    status = getattr(exc, "status_code", None)
    if not isinstance(status, int) or not (status == 429 or status >= 500):
        return False
    headers = getattr(getattr(exc, "response", None), "headers", None) or {}
    return headers.get("x-should-retry") != "false" and getattr(exc, "code", None) != "insufficient_quota"


class TransientWaits:
    """One unit of work's allowance for waiting out 429 and 5xx answers: a judged turn
    (`Judge.judge_one` sends each attempt's request through `send`) or one served engine request
    (agents/engines/served.py), whose allowance is what is left of its batch's deadline."""

    def __init__(self, max_wait_s: float, first_backoff_s: float, *, sleep: Callable[[float], None] = time.sleep,
                 clock: Callable[[], float] = time.monotonic, rng: random.Random | None = None):
        self.first_backoff_s = first_backoff_s
        self.sleep, self.clock, self.rng = sleep, clock, rng or random.Random()
        self.deadline = clock() + max_wait_s
        self.waits = 0
        self.waited_s = 0.0

    def delay_for(self, exc: Exception) -> float | None:
        """How long to wait before asking again, or None: not a waiting matter, or past the cap."""
        if not waiting_helps(exc):
            return None
        asked = retry_after_s(exc)
        if asked is not None and asked > 0:
            delay = asked * (1.0 + 0.1 * self.rng.random())
        else:
            base = min(self.first_backoff_s * 2 ** self.waits, MAX_BACKOFF_S)
            delay = base * (0.5 + 0.5 * self.rng.random())
        return delay if self.clock() + delay <= self.deadline else None

    def send(self, request: Callable[..., T], *args, **kwargs) -> T:
        """`request(*args, **kwargs)` (one HTTP request), made again after each 429/5xx that the
        allowance covers; any other failure, or one past the cap, is raised."""
        while True:
            try:
                return request(*args, **kwargs)
            except Exception as exc:
                delay = self.delay_for(exc)
                if delay is None:
                    raise
                self.sleep(delay)
                self.waits += 1
                self.waited_s += delay

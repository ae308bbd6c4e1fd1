"""How a settings dataclass declares what a field may hold, and the one check that reads it.

A field's annotation says its kind: `bool`, `int`, `float`, `str`, `tuple[str, ...]`, a
`typing.Literal[...]` of its choices, or a `dict[K, V]` of those. What the annotation cannot say
sits next to the field, in its metadata (`ranged`, `chosen`): the numeric range, named by what the
number means (a `Span`: `THRESHOLD`, `SHARE`, `COUNT`, ...), or choices kept by another module
(the providers of agents/engines/hosted_rules.py). `check_settings` reads both and refuses a bad
value in one line that names the field and what it may be. A new numeric field says which span
it is (`ranged(8, COUNT)`); tests/test_settings.py reads it from there and tries both its bounds. agents/config/
composes the groups; each system keeps its own group in its package (agents/cruise/settings.py,
agents/peers/qa_dragon/settings.py, agents/peers/sam_rag/settings.py).
"""
from __future__ import annotations

import dataclasses
import typing
from dataclasses import dataclass, field
from functools import cache
from typing import Callable, Literal, get_args, get_origin


class SettingError(ValueError):
    """A setting that cannot be applied, said in one line that names it."""


@dataclass(frozen=True)
class Span:
    """What a numeric setting may hold, by what it means: [low, high] (None: open above)."""

    meaning: str
    low: float
    high: float | None = None


THRESHOLD = Span("a threshold on a probability or a [0, 1] score (1.01: nothing passes)", 0.0, 1.01)
SHARE = Span("a share, a probability or a [0, 1] score itself", 0.0, 1.0)
COUNT = Span("how many of something a step needs at least one of (tokens, hits, chunks)", 1)
COUNT_OR_OFF = Span("how many, where 0 switches the step or the cache off", 0)
AMOUNT = Span("seconds, a temperature, a multiple", 0.0)
TIMEOUT = Span("seconds a request outside a batch may take: at least one", 1.0)
SEED = Span("a seed, as numpy's and torch's generators take it", 0, 2**32 - 1)
SPANS = (THRESHOLD, SHARE, COUNT, COUNT_OR_OFF, AMOUNT, TIMEOUT, SEED)


def between(low: float, high: float | None = None) -> Span:
    """A span of a system's own: `ranged(3, between(1, 5))` (None above: open)."""
    if high is not None and high < low:
        raise ValueError(f"between({low}, {high}): the upper bound is below the lower")
    return Span(f"from {low} to {high}" if high is not None else f"at least {low}", low, high)


def ranged(default, span: Span, *, keys: tuple | Callable[[], tuple] | None = None):
    """A numeric field whose values lie in `span`. For a dict field the span holds for each
    value, and `keys` (as `chosen`'s choices) are the keys it may have."""
    metadata = {"range": (span.low, span.high), "span": span, **({"key_choices": keys} if keys is not None else {})}
    if callable(default):
        return field(default_factory=default, metadata=metadata)
    return field(default=default, metadata=metadata)


def chosen(default, choices: tuple | Callable[[], tuple], *, keys: bool = False):
    """A field whose value (for a dict: each value, or each key with keys=True) is one of
    `choices`, a tuple or a function that returns one (for choices another module keeps)."""
    metadata = {"key_choices" if keys else "choices": choices}
    if callable(default):
        return field(default_factory=default, metadata=metadata)
    return field(default=default, metadata=metadata)


@cache
def field_types(cls) -> dict[str, object]:
    """Each field's annotation, resolved (the modules use `from __future__ import annotations`)."""
    return typing.get_type_hints(cls)


def _choices(meta, name: str):
    found = meta.get(name)
    return found() if callable(found) else found


def _fault(name: str, value, hint, meta) -> str | None:
    """What is wrong with `value` as field `name` of type `hint`, or None."""
    origin = get_origin(hint)
    choices = _choices(meta, "choices")
    if origin is Literal:
        choices = get_args(hint)
    if choices is not None and origin is not dict:
        return None if value in choices else f"choose one of {tuple(choices)}"
    if hint is bool:
        return None if isinstance(value, bool) else "expected true or false"
    if hint in (int, float):
        numeric = (int,) if hint is int else (int, float)
        if isinstance(value, bool) or not isinstance(value, numeric):
            return f"expected {'a whole number' if hint is int else 'a number'}"
        low, high = meta.get("range", (None, None))
        if (low is not None and value < low) or (high is not None and value > high):
            return f"must lie in [{'-inf' if low is None else low}, {'inf' if high is None else high}]"
        return None
    if hint is str:
        return None if isinstance(value, str) else "expected a string"
    if origin is tuple:
        return None if isinstance(value, tuple) and all(isinstance(v, str) for v in value) else \
            "expected a tuple of strings"
    if origin is dict:
        if not isinstance(value, dict):
            return "expected a JSON object"
        key_hint, value_hint = get_args(hint)
        key_choices = _choices(meta, "key_choices")
        value_meta = {k: v for k, v in meta.items() if k != "key_choices"}
        for key, item in value.items():
            if key_choices is not None and key not in key_choices:
                return f"key {key!r}: choose one of {tuple(key_choices)}"
            wrong = _fault(name, item, value_hint, value_meta)
            if wrong:
                return f"{key!r}: {wrong}"
        return None
    return None


def check_settings(group) -> None:
    """Refuse the first field of a settings dataclass that its annotation and metadata do not
    allow, in one line: `FIELD=VALUE: what it may be`."""
    types = field_types(type(group))
    for f in dataclasses.fields(group):
        value = getattr(group, f.name)
        wrong = _fault(f.name, value, types[f.name], f.metadata)
        if wrong:
            raise SettingError(f"{f.name}={value!r}: {wrong}")


def parse_setting(name: str, text: str, hint, meta=None):
    """A --set string as field `name` of type `hint` (its annotation, not a value); SettingError
    names the field."""
    import json

    origin = get_origin(hint)
    try:
        if hint is bool:
            lowered = text.strip().lower()
            if lowered not in ("1", "true", "yes", "on", "0", "false", "no", "off"):
                raise ValueError(f"expected true or false, got {text!r}")
            return lowered in ("1", "true", "yes", "on")
        if hint is int:
            return int(text)
        if hint is float:
            return float(text)
        if origin is tuple:
            return tuple(v.strip() for v in text.split(",") if v.strip())
        if origin is dict:
            parsed = json.loads(text)
            if not isinstance(parsed, dict):
                raise ValueError(f"expected a JSON object, got {type(parsed).__name__}")
            return parsed
    except ValueError as exc:  # json.JSONDecodeError is one
        raise SettingError(f"--set {name}={text}: {exc}") from None
    return text

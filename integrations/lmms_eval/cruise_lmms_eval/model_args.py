"""`--model_args` of the lmms-eval model cruise_agent, read into local_evaluation.py's settings.

lmms-eval 0.7.3 splits --model_args on the commas outside quotes and brackets, then each part at
its first "=", into a dict: `set=turn_budget_s=0` arrives whole as set -> "turn_budget_s=0", and of
a repeated key only the last would stay. So the model reads its argument string itself (the same
split): `set` may be given several times (`set=A=1,set=B=2`) and one `set` may hold several
settings joined by ";" (`set=A=1;B=2`, quoted in a shell); every other key once. Values stay text,
as local_evaluation.py's flags are (`--set` types them by their field).
"""
from __future__ import annotations

from evaluator.settings import EvaluationSettings

DEFAULTS = EvaluationSettings()
# model_args key -> local_evaluation.py's setting (the EvaluationSettings field)
KEYS = {"system": None, "profile": "profile", "preset": "preset", "set": "set", "calibration": "calibration",
        "model_name": "model_name", "agent": "agent", "search": "search", "output_dir": "output_dir"}
# what lmms-eval hands every model beside its model_args; the agent keeps its own batch size and device
LMMS_EVAL_EXTRAS = ("batch_size", "max_batch_size", "device")
SETTINGS_JOIN = ";"


def split_outside(text: str, separator: str) -> list[str]:
    """`text` split at `separator` where it stands outside quotes, braces and brackets (a --set
    value may be a JSON object)."""
    parts, current, depth, quote = [], [], 0, None
    for i, char in enumerate(text):
        if char in "\"'" and (i == 0 or text[i - 1] != "\\"):
            quote = None if quote == char else quote or char
        elif quote is None and char in "{[":
            depth += 1
        elif quote is None and char in "}]":
            depth -= 1
        elif quote is None and depth == 0 and char == separator:
            parts.append("".join(current))
            current = []
            continue
        current.append(char)
    parts.append("".join(current))
    return [p.strip() for p in parts if p.strip()]


def parse_model_args(text: str) -> dict:
    """{key: value} of an argument string, `set` gathered into a list of FIELD=VALUE settings.
    ValueError (one line) for a part without "=", an unknown key, or another key given twice."""
    found: dict = {}
    settings: list[str] = []
    for part in split_outside(text or "", ","):
        key, sep, value = part.partition("=")
        key = key.strip()
        if not sep:
            raise ValueError(f"model_args part {part!r} is not KEY=VALUE")
        if key not in KEYS:
            raise ValueError(f"unknown model_args key {key!r} of cruise_agent; the keys: {sorted(KEYS)}")
        if key == "set":
            settings += split_outside(value, SETTINGS_JOIN)
        elif key in found:
            raise ValueError(f"model_args key {key!r} given twice (only set= may repeat)")
        else:
            found[key] = value.strip()
    if settings:
        found["set"] = settings
    return found


def evaluation_settings(args: dict) -> EvaluationSettings:
    """The local_evaluation.py settings the model_args stand for: `system=NAME` is
    `--set system=NAME` (a built-in system, MODULE:NAME or a registered plugin's name), put first so
    that a later `set=system=...` wins as a later --set does."""
    values = {KEYS[key]: value for key, value in args.items() if KEYS.get(key)}
    settings = list(args.get("set") or [])
    if args.get("system"):
        settings.insert(0, f"system={args['system']}")
    values["set"] = tuple(settings)
    return EvaluationSettings(**values)

"""Reading a calibration file: the thresholds `python -m tools.calibrate` chose for a run.

load_config applies it after the profile and the preset (agents/config/loading.py); the evaluator checks
the file before any model loads. Only CALIBRATED_FIELDS may appear in its "settings".
"""
from __future__ import annotations

import json
from pathlib import Path

from agents.engines.base import TOKEN_COUNT

# The thresholds tools/calibrate.py tunes; a calibration file may set these and nothing else.
CALIBRATED_FIELDS = ("tau_ret", "tau_low", "tau_high", "min_token_prob", "mad_lambda")


def load_calibration(path: str | Path) -> dict:
    """The "settings" of a calibration.json written by `python -m tools.calibrate`.

    A `min_token_prob` that switches the gate on is only taken from a file whose "token_count"
    says its token probabilities were counted as every engine counts them now (TOKEN_COUNT,
    agents/engines/base.py): a threshold tuned on probabilities that included the end token
    would not mean the same here. Such a file is refused with what to do about it."""
    try:
        data = json.loads(Path(path).read_text())
        settings = data["settings"]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ValueError(f"cannot read calibration file {path}: {type(exc).__name__}: {exc}") from None
    unknown = set(settings) - set(CALIBRATED_FIELDS) if isinstance(settings, dict) else {"(not an object)"}
    if unknown:
        raise ValueError(f"calibration file {path}: settings may only hold {CALIBRATED_FIELDS}, got {sorted(unknown)}")
    settings = {name: float(value) for name, value in settings.items()}
    if settings.get("min_token_prob", 0.0) > 0 and data.get("token_count") != TOKEN_COUNT:
        raise ValueError(
            f"calibration file {path}: its min_token_prob={settings['min_token_prob']} was tuned on token "
            f"probabilities counted as {data.get('token_count') or 'it does not say (the end-of-sequence token may be among them)'}; "
            f"the engines count them with the {TOKEN_COUNT}. Run `python -m tools.calibrate` again on "
            "runs made now, or drop min_token_prob from the file's settings.")
    return settings

"""Reading a calibration file: the thresholds `python -m evaluation.calibrate` chose for a run.

load_config applies it after the profile and the preset (agents/config.py); the evaluator checks
the file before any model loads. Only CALIBRATED_FIELDS may appear in its "settings".
"""
from __future__ import annotations

import json
from pathlib import Path

# The thresholds evaluation/calibrate.py tunes; a calibration file may set these and nothing else.
CALIBRATED_FIELDS = ("tau_ret", "tau_low", "tau_high", "min_token_prob", "mad_lambda")


def load_calibration(path: str | Path) -> dict:
    """The "settings" of a calibration.json written by `python -m evaluation.calibrate`."""
    try:
        settings = json.loads(Path(path).read_text())["settings"]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ValueError(f"cannot read calibration file {path}: {type(exc).__name__}: {exc}") from None
    unknown = set(settings) - set(CALIBRATED_FIELDS)
    if not isinstance(settings, dict) or unknown:
        raise ValueError(f"calibration file {path}: settings may only hold {CALIBRATED_FIELDS}, got {sorted(unknown)}")
    return {name: float(value) for name, value in settings.items()}

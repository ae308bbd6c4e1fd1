"""The CRAG-MM evaluator. From Python: `from evaluator import evaluate` (evaluator/api.py;
docs/evaluation.md "From Python"); from the shell: `python local_evaluation.py`.

The names below are imported on first use, so that importing a part of the evaluator (the
scoring, the harness) does not load the whole of it.
"""
from __future__ import annotations

EXPORTED = ("evaluate", "merge", "EvaluationResult", "EvaluationRefused", "EvaluationSettings", "MergeSettings")
__all__ = list(EXPORTED)


def __getattr__(name: str):
    if name in EXPORTED:
        from evaluator import api

        return getattr(api, name)
    raise AttributeError(f"module 'evaluator' has no attribute {name!r}")

"""What every peer system's trace and run summary share with CRUISE's: the parse record, the
deadline, the skipped optional steps, the errors and the picture's readings (one home, so that the
report and calibration read the same keys from every system)."""
from __future__ import annotations

from agents.cruise.trace import perception_trace, stage_counts


def shared_fields(*, parsed: dict[str, bool], stages: tuple[str, ...], stage_ms: dict, deadline_cut: str | None,
                  deadline_cut_during: str | None, skipped_for_time: list[str] | None, errors: list[str],
                  perception) -> dict:
    return {
        "parsed_stages": sorted(parsed, key=stages.index),
        "parse_failures": [stage for stage in stages if parsed.get(stage) is False],
        "stage_ms": stage_ms,
        "deadline_cut": deadline_cut is not None or deadline_cut_during is not None,
        "deadline_cut_before": deadline_cut,
        "deadline_cut_during": deadline_cut_during,
        # optional steps the batch skipped to leave the answer its time (agents/peers/budget.py)
        "skipped_for_time": list(skipped_for_time or []),
        "errors": errors,
        "perception": perception_trace(perception),
    }


def parse_summary(traces: list[dict], stages: tuple[str, ...]) -> dict:
    """run_summary.json's parse figures for a peer run: only the stages that ran or failed."""
    failures, outputs = stage_counts(traces, stages)
    return {"parse_failures": {k: v for k, v in failures.items() if outputs.get(k) or v},
            "parsed_outputs": {k: v for k, v in outputs.items() if v}}

"""The trace fields every system records, in one place, so that the report and calibration read
the same keys from every system: which system and preset wrote it, the parse record, the stage
timings, the deadline, the optional steps skipped for time, the errors, what perception read in
the picture, the funnel, the per-turn budget and the stages switched to their text modes.

A system's own trace (its `turn_trace`) holds only its own signals; `record` adds the rest."""
from __future__ import annotations

from agents.base_agent import IDK_ANSWER
from agents.runtime.system import recorded_name


def not_idk(answer) -> bool:
    return bool(answer) and IDK_ANSWER.lower() not in str(answer).lower()


# The type of each trace field the evaluator, the report and calibration read from every system
# (None is also taken: a step that did not run), checked where the trace is written so that a
# system writing another type fails on its first turn, not in the report after the run.
FIELD_TYPES: dict[str, type | tuple[type, ...]] = {
    "chunks": list, "kept_chunks": list, "context": (str, list), "branch": str, "final_answer": str,
    "rag_answer": str, "stage_ms": dict, "errors": list, "parsed_stages": list, "parse_failures": list,
    "skipped_for_time": list, "funnel": dict, "mode_fallbacks": list, "perception": dict, "faults": list,
    "stages_run": list,
}


def field_type_fault(trace: dict) -> str | None:
    """The first field of `trace` whose value is not of its FIELD_TYPES type, in one line, or None."""
    for key, kind in FIELD_TYPES.items():
        value = trace.get(key)
        if value is not None and not isinstance(value, kind):
            names = " or ".join(k.__name__ for k in (kind if isinstance(kind, tuple) else (kind,)))
            return f"trace field {key!r} must be a {names} (the report reads it so), got {type(value).__name__} {value!r:.60}"
    return None


def record(own: dict, *, system, cfg, run, i: int, turn, parsed: dict[str, bool],
           skipped_for_time: list[str] | None = None, checked: bool = True) -> dict:
    """One turn's trace: `own` (the system's signals and fields; its "errors", if any, are its
    evidence's own notes, kept after the run's) and the fields every system records. `turn`: the
    turn as the stages read it last (agents/stages/types.py Turn, perception's readings on it);
    `parsed`: stage -> whether its parser read its output, for the stages that produced one;
    `checked`: whether a field of the wrong type is refused (TypeError)."""
    stages = system.parsed_stages()
    trace = {
        "preset": cfg.preset,
        "system": recorded_name(system, cfg),
        # what the harness passed besides the question: its domain name (steers nothing yet) and
        # how many passages of its own retrieval (None: it handed none over)
        "harness_domain": turn.domain,
        "harness_passages": None if turn.passages is None else len(turn.passages),
        **own,
    }
    trace.update({
        "parsed_stages": sorted(parsed, key=stages.index),
        "parse_failures": [stage for stage in stages if parsed.get(stage) is False],
        "stage_ms": dict(run.stage_ms),
        # the stages that were run over this turn (stage_ms is the batch's: a stage a system's
        # run asked of other turns only is timed there too)
        "stages_run": list(run.served[i]),
        "deadline_cut": run.cut_before is not None or run.cut_during is not None,
        "deadline_cut_before": run.cut_before,
        # the stage whose engine call the deadline stopped part-way (its outputs read as unreadable)
        "deadline_cut_during": run.cut_during,
        # optional steps the batch skipped to leave the answer its time (runtime/batch.py Room)
        "skipped_for_time": list(skipped_for_time or []),
        "errors": run.errors[i] + list(own.get("errors") or []),
        # each fault of the turn: the stage (or "rule"), the exception, where in the system's code
        "faults": [dict(fault) for fault in run.faults[i]],
        "perception": perception_trace(getattr(turn, "perception", None)),
    })
    trace["funnel"] = system.view.funnel(trace, cfg) if checked else {}
    # what the run's settings did besides the stages: the per-turn budget in force (0: none),
    # and the stages switched to text modes for an engine without token probabilities
    trace["turn_budget_s"] = cfg.run.turn_budget_s
    trace["mode_fallbacks"] = list(cfg.mode_fallbacks)
    fault = field_type_fault(trace) if checked else None
    if fault:
        raise TypeError(f"system {trace['system']!r}: {fault}")
    return trace


def perception_trace(perception) -> dict | None:
    """What s0a_perceive read in the image and the block the prompts carried; None when it did not run."""
    if perception is None:
        return None
    return {
        "labels": [[name, round(p, 4)] for name, p in perception.labels],
        "ocr_lines": [[text, round(s, 4)] for text, s in perception.lines],
        "block": perception.block,
        "cached": perception.cached,
        "ms": perception.ms,
        "error": perception.error,
    }


def stage_counts(traces: list[dict], stages) -> tuple[dict[str, int], dict[str, int]]:
    """(stage -> unreadable outputs, stage -> outputs a parser read or tried to read), every one
    of `stages` present."""
    failures = dict.fromkeys(stages, 0)
    outputs = dict.fromkeys(stages, 0)
    for trace in traces:
        for stage in trace.get("parsed_stages") or []:
            outputs[stage] = outputs.get(stage, 0) + 1
        for stage in trace.get("parse_failures") or []:
            failures[stage] = failures.get(stage, 0) + 1
    return failures, outputs


def parse_summary(traces: list[dict], stages: tuple[str, ...]) -> dict:
    """run_summary.json's parse figures: only the stages that ran or failed."""
    failures, outputs = stage_counts(traces, stages)
    return {"parse_failures": {k: v for k, v in failures.items() if outputs.get(k) or v},
            "parsed_outputs": {k: v for k, v in outputs.items() if v}}


def tally(traces: list[dict], key: str) -> dict[str, int]:
    """value of `key` -> turns, most first ("-" for none)."""
    out: dict[str, int] = {}
    for t in traces:
        value = str(t.get(key) if t.get(key) is not None else "-")
        out[value] = out.get(value, 0) + 1
    return dict(sorted(out.items(), key=lambda kv: -kv[1]))

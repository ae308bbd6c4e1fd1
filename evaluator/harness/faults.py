"""A fault that stopped every turn: said atop the console and the report, and in the exit code.

A stage that raises on every turn (a prompt missing from its package, a misspelled stage name, a
model server gone) makes every turn "I don't know" under the branch "error"; the scores then
measure the fault, not the system. Counted only among the "stage-fault turns", such a run would
look scored; so it is named: which stage, for what reason, on how many turns.

The rule (`systemic_fault`), decided over the run's saved answers and traces:
- every turn the run answered faulted: an agent error (the agent's batch call raised or gave a
  wrong number of answers, or the turn's image would not load) or a stage fault (the trace's
  branch "error"); or
- one stage faulted every turn that reached it: the turns whose batch ran it (the stage is in
  the trace's `stage_ms`) and that had not faulted at an earlier stage. A stage that faults only
  where some turns take another path (an egocentric photo, say) is caught so, though other turns
  were answered. A stage that ran in one batch only and faulted there (a server gone for that
  batch) is named too: it did fault every turn it reached.
A turn answered, abstained, cut by the deadline or refused by a provider is not a fault: one such
turn among those reached keeps the run's exit code. Why "every" and not a share such as 90%: a
fault of the system's making raises on every turn it reaches, whatever the question, and the
turns it did not reach are told apart by where they stopped, not guessed by a threshold; a fault
of some turns only (a question the stage cannot parse) is the data's: it stays a count,
`stage_fault_turns`.

The reasons are the faults' messages as recorded (the trace's first error less its stage's name,
the agent error as the runner wrote it), grouped as they are, commonest first: a fault of the
system's making says the same on every turn. run_summary.json holds it under "systemic_fault" (null
where none), the console prints it in a panel before the scores, report.html in a banner at the
top, and the run (or --rejudge, or merge) exits with SYSTEMIC_FAULT_EXIT_CODE once everything is
written.
"""
from __future__ import annotations

from collections import Counter

from evaluator.harness.unjudged import exit_code as unjudged_exit_code

# 1 and 2: a refused start, a bad flag; 3: the judge left turns without a verdict. This one wins
# over 3: the verdicts of turns that all faulted say nothing of the system.
SYSTEMIC_FAULT_EXIT_CODE = 4
REASONS_SHOWN = 3  # the commonest reasons the panel names; the rest are counted

AGENT_ERROR = "the agent's batch call"  # where an agent error happened: no stage of it is known


def turn_fault(record: dict, trace: dict | None) -> tuple[str | None, str] | None:
    """(where: the stage, AGENT_ERROR, or None for a fault before any stage; the reason) of a turn
    that faulted; None for one that did not."""
    if record.get("error"):
        return AGENT_ERROR, str(record["error"])
    if not trace or trace.get("branch") != "error":
        return None
    errors = trace.get("errors") or ["no error recorded"]
    stage, sep, rest = str(errors[0]).partition(": ")
    if sep and rest and stage and " " not in stage:
        return stage, rest
    return None, str(errors[0])


def reason_rows(faults: list[tuple[str | None, str]]) -> list[dict]:
    """The faults grouped by where and reason, commonest first (`stage` null: an agent error or
    a fault before any stage, `agent_error` says which)."""
    return [{"stage": where if where != AGENT_ERROR else None, "agent_error": where == AGENT_ERROR,
             "reason": reason, "turns": n} for (where, reason), n in Counter(faults).most_common()]


def reached(trace: dict | None, stage: str, fault: tuple[str | None, str] | None) -> bool:
    """Whether the turn reached `stage`: its batch ran the stage (the trace's `stage_ms`, in the
    order the stages ran), and the turn had not faulted before it."""
    ran = list((trace or {}).get("stage_ms") or {})
    if stage not in ran:
        return False
    if fault is None:
        return True
    return fault[0] in ran and ran.index(fault[0]) >= ran.index(stage)


def systemic_fault(records: list[dict], traces: list[dict]) -> dict | None:
    """run_summary.json's "systemic_fault": where (the whole run, or every turn that reached one
    stage), how many turns, the reasons and the panel's lines; None when the rule of the module's
    docstring does not hold."""
    by_id = {t.get("interaction_id"): t for t in traces if isinstance(t, dict)}
    turns = [(r, by_id.get(r.get("interaction_id"))) for r in records]
    faults = [turn_fault(r, t) for r, t in turns]
    if faults and all(faults):
        return finding("every turn of the run", None, reason_rows(faults), len(faults))
    stages = list(dict.fromkeys(s for _, t in turns for s in ((t or {}).get("stage_ms") or {})))
    for stage in stages:
        reaching = [f for (_, t), f in zip(turns, faults) if reached(t, stage, f)]
        if reaching and all(f is not None and f[0] == stage for f in reaching):
            return finding(f"every turn that reached stage '{stage}'", stage, reason_rows(reaching), len(reaching))
    return None


def finding(where: str, stage: str | None, reasons: list[dict], turns: int) -> dict:
    shown, rest = reasons[:REASONS_SHOWN], reasons[REASONS_SHOWN:]
    lines = [f"{where.capitalize()} faulted: {turns} turns answered \"I don't know\" for a fault, "
             "not for want of evidence."]
    for row in shown:
        at = AGENT_ERROR if row["agent_error"] else f"stage '{row['stage']}'" if row["stage"] else "before any stage"
        lines.append(f"{at}, {row['turns']} of {turns} turns: {row['reason']}")
    if rest:
        lines.append(f"and {len(rest)} other reasons on {sum(r['turns'] for r in rest)} turns "
                     "(traces.jsonl, answers.jsonl)")
    lines.append(f"The scores measure this fault, not the system: fix it and run again (exit code "
                 f"{SYSTEMIC_FAULT_EXIT_CODE}).")
    return {"where": where, "stage": stage, "turns": turns, "reasons": shown, "other_reasons": len(rest),
            "lines": lines, "notice": " ".join(lines)}


def exit_code(summary: dict) -> int:
    """What a scored run exits with: SYSTEMIC_FAULT_EXIT_CODE for a systemic fault, else the
    unjudged turns' code (3) or 0."""
    return SYSTEMIC_FAULT_EXIT_CODE if summary.get("systemic_fault") else unjudged_exit_code(summary)

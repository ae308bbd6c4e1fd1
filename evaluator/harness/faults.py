"""Faults: every one in a table atop the console and the report; a fault that stopped every
turn named in a panel and in the exit code; under --strict, any fault in the exit code.

The table (`fault_table`): one row per stage (or "rule", or the agent's batch call), exception and
place in the system's own code, with the turns it faulted. It is read from each trace's `faults`
(the runtime's record: {"stage", "exception", "where": "PATH:LINE"}), else, for a trace written
before the runtime kept them, from its first `errors` line ("stage: ExcType: message"; where not
known), plus the agent errors of answers.jsonl (`error`). run_summary.json holds it under
"faults" and the faulted turns under "fault_turns". A submission-like run stays forgiving: a
fault or two shows in the table and the run exits 0; `--strict` exits with
STRICT_FAULT_EXIT_CODE on any fault (`exit_code`), once everything is written.

A fault that stopped every turn:

A stage that raises on every turn (a prompt missing from its package, a misspelled stage name, a
model server gone) makes every turn "I don't know" under the branch "error"; the scores then
measure the fault, not the system. Counted only among the "stage-fault turns", such a run would
look scored; so it is named: which stage, for what reason, on how many turns.

The rule (`systemic_fault`), decided over the run's saved answers and traces:
- every turn the run answered faulted: an agent error (the agent's batch call raised or gave a
  wrong number of answers, or the turn's image would not load) or a stage fault (the trace's
  branch "error"); or
- one stage faulted every turn that reached it: the turns it was run over (the trace's
  `stages_run`; in a trace older than it, its batch's `stage_ms`) and that had not faulted at an
  earlier stage. A stage that faults only
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
# --strict, where any turn faulted: the next code free. It wins over 3 (a fault is the system's,
# a verdict missing is the judge's); 4 wins over it (it says more: every turn faulted).
STRICT_FAULT_EXIT_CODE = 5
FAULT_ROWS_KEPT = 20  # the table's rows run_summary.json keeps, commonest first
# under the faults table (console and report): what the exit status makes of them
FAULT_EXIT_HINT = (f"--strict fails a run with any fault: exit {STRICT_FAULT_EXIT_CODE} "
                   f"({SYSTEMIC_FAULT_EXIT_CODE} where every turn, or every turn a stage reached, faulted)")
REASONS_SHOWN = 3  # the commonest reasons the panel names; the rest are counted

AGENT_ERROR = "the agent's batch call"  # where an agent error happened: no stage of it is known
AGENT_RAISED = "agent raised "  # how the runner writes an agent's exception (harness/runner.py)


def traced_error(line: str) -> tuple[str | None, str]:
    """(the stage, the rest) of a trace's error line "stage: ExcType: message"; the stage None
    where the line names none."""
    stage, sep, rest = str(line).partition(": ")
    if sep and rest and stage and " " not in stage:
        return stage, rest
    return None, str(line)


def turn_faults(record: dict, trace: dict | None) -> list[tuple[str | None, str, str | None]]:
    """(stage: the stage's name, "rule", AGENT_ERROR, or None for a fault before any stage; the
    exception; where in the system's own code, or None) of each fault of a turn, in order; [] for
    a turn that did not fault."""
    found = []
    if record.get("error"):
        found.append((AGENT_ERROR, str(record["error"]), None))
    recorded = (trace or {}).get("faults")
    if isinstance(recorded, list) and recorded:
        for fault in recorded:
            if isinstance(fault, dict):
                where = fault.get("where")
                found.append((fault.get("stage"), str(fault.get("exception") or "no exception recorded"),
                              str(where) if where else None))
    elif trace and trace.get("branch") == "error":
        found.append((*traced_error((trace.get("errors") or ["no error recorded"])[0]), None))
    return list(dict.fromkeys(found))


def turn_fault(record: dict, trace: dict | None) -> tuple[str | None, str] | None:
    """(where: the stage, AGENT_ERROR, or None for a fault before any stage; the reason) of a
    turn's first fault; None for a turn that did not fault."""
    faults = turn_faults(record, trace)
    return faults[0][:2] if faults else None


def fault_table(records: list[dict], traces: list[dict]) -> list[dict]:
    """The run's faults by stage (or rule), exception and where, commonest first: each row
    {"stage", "turns", "exception", "where"} (an agent error's exception without the runner's
    "agent raised"; where None: not known)."""
    by_id = {t.get("interaction_id"): t for t in traces if isinstance(t, dict)}
    counts: Counter = Counter()
    for record in records:
        for stage, exception, where in turn_faults(record, by_id.get(record.get("interaction_id"))):
            if stage == AGENT_ERROR and exception.startswith(AGENT_RAISED):
                exception = exception[len(AGENT_RAISED):]
            counts[(stage, exception, where)] += 1
    rows = [{"stage": stage, "turns": n, "exception": exception, "where": where}
            for (stage, exception, where), n in counts.items()]
    return sorted(rows, key=lambda row: (-row["turns"], str(row["stage"]), row["exception"]))


def fault_turns(records: list[dict], traces: list[dict]) -> int:
    """How many turns faulted (an agent error, or a stage or the rule raised)."""
    by_id = {t.get("interaction_id"): t for t in traces if isinstance(t, dict)}
    return sum(1 for r in records if turn_faults(r, by_id.get(r.get("interaction_id"))))


def reason_rows(faults: list[tuple[str | None, str]]) -> list[dict]:
    """The faults grouped by where and reason, commonest first (`stage` null: an agent error or
    a fault before any stage, `agent_error` says which)."""
    return [{"stage": where if where != AGENT_ERROR else None, "agent_error": where == AGENT_ERROR,
             "reason": reason, "turns": n} for (where, reason), n in Counter(faults).most_common()]


def stages_of(trace: dict | None) -> list[str]:
    """The stages run over the turn, in order: the trace's `stages_run`; a trace written before it
    was recorded names its batch's (`stage_ms`), which a stage a system's run asked of other turns
    only is in too."""
    trace = trace or {}
    return list(trace["stages_run"] if isinstance(trace.get("stages_run"), list) else trace.get("stage_ms") or {})


def reached(trace: dict | None, stage: str, fault: tuple[str | None, str] | None) -> bool:
    """Whether the turn reached `stage`: the stage was run over it (`stages_of`, in the order the
    stages ran), and the turn had not faulted before it."""
    ran = stages_of(trace)
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
    stages = list(dict.fromkeys(s for _, t in turns for s in stages_of(t)))
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


def exit_code(summary: dict, *, strict: bool = False) -> int:
    """What a scored run exits with: SYSTEMIC_FAULT_EXIT_CODE for a systemic fault, else under
    `strict` STRICT_FAULT_EXIT_CODE where any turn faulted, else the unjudged turns' code (3) or 0."""
    if summary.get("systemic_fault"):
        return SYSTEMIC_FAULT_EXIT_CODE
    if strict and summary.get("fault_turns"):
        return STRICT_FAULT_EXIT_CODE
    return unjudged_exit_code(summary)

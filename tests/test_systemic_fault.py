"""A fault that stops every turn is named on the console, atop the report and in the exit code.

The runs go through `local_evaluation.py`'s own entry point in this process, with the real
CruiseAgent and the batch runtime over stand-in engines (outside the unit), on the shipped mini
benchmark's first 8 turns, with no judge: systems registered here fault on every turn at one
stage, on one turn of 8, or before their stages run (a misspelled stage name, which the runtime
refuses: the agent's batch call raises). The rule itself (evaluator/harness/faults.py) is tried
on traces written to the runtime's shape, for what a run cannot show cheaply: a stage that
faulted every turn that reached it while other turns were answered.
"""
from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

import pytest
from markupsafe import escape

import local_evaluation
from agents.base_agent import IDK_ANSWER
from agents.cruise_agent import CruiseAgent
from agents.engines.base import Engines
from agents.runtime.system import Decision, Stage, System, View
from evaluator.harness.faults import STRICT_FAULT_EXIT_CODE, SYSTEMIC_FAULT_EXIT_CODE, systemic_fault
from evaluator.harness.unjudged import UNJUDGED_EXIT_CODE
from testkit.fakes import FunctionReranker, ScriptedEngine
from testkit.in_process import offline_env, run_main
from tools.preflight import sample_batch

MINI = Path(__file__).resolve().parents[1] / "data" / "crag-mm-mini" / "single-turn"
TURNS = 8
REASON = "the gate's word list is empty"
# the line of this file where the gate raises: where the runtime's `faults` record should point
RAISE_LINE = next(n for n, line in enumerate(Path(__file__).read_text().splitlines(), 1)
                  if line.strip() == "raise ValueError(REASON)")


class SeeingStandInAgent(CruiseAgent):
    """The real CruiseAgent over stand-in engines whose VLM sees (so no perception runs)."""

    def __init__(self, search_pipeline=None, config=None):
        engines = Engines(router=ScriptedEngine({}), vlm=ScriptedEngine({}),
                          reranker=FunctionReranker(lambda q, c: 0.0))
        super().__init__(search_pipeline, config, engines=engines)


def gate_system(name: str, faults, stage_called: str = "kwgate_answer") -> System:
    """A system of one stage, "kwgate_answer", that raises ValueError(REASON) on a batch holding a
    turn `faults(turn)` is true of (the runtime then splits the batch, so only those turns fault);
    its run asks for the stage as `stage_called`."""

    def gate(batch):
        if any(faults(t) for t in batch.turns):
            raise ValueError(REASON)
        return [{"rag_answer": f"echo: {t.query}"} for t in batch.turns]

    def run(batch):
        batch.call(Stage(stage_called, batch_fn=gate, writes=("rag_answer",)))
        return batch.finish()

    return System(name=name, stages=(Stage("kwgate_answer", writes=("rag_answer",)),), run=run,
                  decide=lambda trace, cfg: Decision(trace.get("rag_answer") or IDK_ANSWER, "gated"),
                  view=View(funnel=lambda trace, cfg: {}))


def run_local_evaluation(tmp_path: Path, system: System, *settings: str, strict: bool = False):
    out = tmp_path / "run"
    argv = [*(["--strict"] if strict else []), "--dataset", str(MINI), "--dataset-type", "single-turn", "--num-conversations", str(TURNS),
            "--exact-conversations", "--profile", "cpu", "--agent", f"{__name__}:SeeingStandInAgent",
            "--search", "none", "--eval-model", "None", "--no_progress", "--display-conversations", "0",
            "--output-dir", str(out), "--set", f"system={system}", "--set", "warmup_at_load=false",
            *(word for setting in settings for word in ("--set", setting))]
    proc = run_main(local_evaluation.main, argv, env=offline_env(tmp_path))
    summary = json.loads((out / "run_summary.json").read_text())
    return proc, summary, (out / "report.html").read_text(encoding="utf-8")


def test_a_stage_that_faults_every_turn_is_named_on_the_console_atop_the_report_and_in_the_exit_code(
        tmp_path, registered_systems):
    system = registered_systems(gate_system("always_gated", lambda turn: True))
    proc, summary, report = run_local_evaluation(tmp_path, system)
    assert proc.returncode == SYSTEMIC_FAULT_EXIT_CODE, proc.stdout[-3000:] + proc.stderr[-3000:]
    fault = summary["systemic_fault"]
    assert (fault["where"], fault["turns"]) == ("every turn of the run", TURNS)
    assert fault["reasons"] == [{"stage": "kwgate_answer", "agent_error": False, "reason": f"ValueError: {REASON}",
                                 "turns": TURNS}]
    line = f"stage 'kwgate_answer', {TURNS} of {TURNS} turns: ValueError: {REASON}"
    # the console's panel comes before the scores, titled so
    assert line in proc.stdout and f"SYSTEMIC FAULT: {TURNS} TURNS FAULTED" in proc.stdout
    assert proc.stdout.index(line) < proc.stdout.index("Scores")
    # the report's banner is the first thing after its heading
    assert 'id="systemic-fault-banner"' in report and escape(line) in report
    assert report.index('id="systemic-fault-banner"') < report.index('<h2 id="scores">')
    assert summary["stage_fault_turns"] == TURNS and fault["notice"] in summary["notices"]


def test_one_faulting_turn_of_eight_keeps_the_exit_code_and_shows_no_panel_but_the_faults_table(
        tmp_path, registered_systems):
    queries, _, _ = sample_batch(str(MINI), TURNS)
    system = registered_systems(gate_system("once_gated", lambda turn: turn.query == queries[3]))
    # one batch of 8: the runtime splits the failing batch until it finds the one turn that raises
    proc, summary, report = run_local_evaluation(tmp_path, system)
    assert summary["stage_fault_turns"] == 1 and summary["systemic_fault"] is None
    assert proc.returncode == 0 and "SYSTEMIC FAULT" not in proc.stdout
    assert "systemic-fault-banner" not in report
    # the faults table names the stage, the one turn and the exception, on the console and atop
    # the report; where in the code, once the runtime records it (a trace's `faults`), else "not recorded"
    [row] = summary["faults"]
    assert (row["stage"], row["turns"], row["exception"]) == ("kwgate_answer", 1, f"ValueError: {REASON}")
    where = row["where"] or "not recorded"
    assert row["where"] is None or row["where"].endswith(f"{Path(__file__).name}:{RAISE_LINE}")
    assert re.search(rf"kwgate_answer\s*│\s*1\s*│\s*ValueError: {REASON}\s*│\s*{re.escape(where)}", proc.stdout)
    assert f'<td>{escape(f"ValueError: {REASON}")}</td><td><code>{escape(where)}</code></td>' in report
    assert report.index('id="fault-table"') < report.index('<h2 id="scores">')
    # --strict: the same run fails for its one fault
    strict, _, _ = run_local_evaluation(tmp_path / "strict", system, "batch_size=2", strict=True)
    assert strict.returncode == STRICT_FAULT_EXIT_CODE, strict.stdout[-3000:] + strict.stderr[-3000:]


def test_a_run_that_calls_a_stage_not_on_its_record_faults_every_turn_naming_it(tmp_path, registered_systems):
    """The run asks for its stage by a name not on its record: the runtime refuses the call, the
    run's fault costs every turn of its batches, and each keeps its trace."""
    system = registered_systems(gate_system("misspelled_gate", lambda turn: False, stage_called="kwgate_answr"))
    proc, summary, report = run_local_evaluation(tmp_path, system)
    assert proc.returncode == SYSTEMIC_FAULT_EXIT_CODE, proc.stdout[-3000:] + proc.stderr[-3000:]
    fault = summary["systemic_fault"]
    assert summary["stage_fault_turns"] == TURNS and fault["turns"] == TURNS
    [reason] = fault["reasons"]
    assert (reason["stage"], reason["turns"]) == ("run", TURNS)
    assert reason["reason"] == ("ValueError: stage 'kwgate_answr' is not on the system's record; its stages: "
                                "['perceive', 'kwgate_answer']")
    line = f"stage 'run', {TURNS} of {TURNS} turns: {reason['reason']}"
    assert line in proc.stdout and escape(line) in report


def test_an_agent_error_on_every_turn_is_named_too(tmp_path, registered_systems):
    """The system's run hands back one answer short: every batch call of the agent returns the wrong
    number of answers, and every turn is an agent error."""
    system = gate_system("short_gate", lambda turn: False)

    def one_short(batch):
        answers, traces = system.run(batch)
        return answers[:-1], traces[:-1]

    short = registered_systems(dataclasses.replace(system, run=one_short))
    proc, summary, report = run_local_evaluation(tmp_path, short)
    assert proc.returncode == SYSTEMIC_FAULT_EXIT_CODE, proc.stdout[-3000:] + proc.stderr[-3000:]
    fault = summary["systemic_fault"]
    assert summary["agent_error_turns"] == TURNS and fault["turns"] == TURNS
    [reason] = fault["reasons"]
    assert reason["agent_error"] and reason["turns"] == TURNS
    line = f"the agent's batch call, {TURNS} of {TURNS} turns: {reason['reason']}"
    assert line in proc.stdout and escape(line) in report


# --------------------------------------------------------------------------- the rule, on traces
def turn(i: int, *, error: str | None = None) -> dict:
    return {"interaction_id": f"t{i}", "error": error}


def trace(i: int, branch: str, stages: tuple[str, ...], errors: list[str] = ()) -> dict:
    """A trace as agents/runtime/trace.py records it: the batch's stages in the order they ran."""
    return {"interaction_id": f"t{i}", "branch": branch, "stage_ms": {s: 1.0 for s in stages}, "errors": list(errors)}


def test_a_stage_that_faulted_every_turn_that_reached_it_is_named_though_other_turns_were_answered():
    """Turns 0-3 took the path through "image_search", which raised on each; turns 4-7 did not
    reach it (their batch never ran it) and were answered."""
    records = [turn(i) for i in range(8)]
    traces = [trace(i, "error", ("route", "image_search"), ["image_search: KeyError: 'crop'"]) for i in range(4)]
    traces += [trace(i, "answered", ("route", "answer")) for i in range(4, 8)]
    fault = systemic_fault(records, traces)
    assert (fault["where"], fault["stage"], fault["turns"]) == ("every turn that reached stage 'image_search'",
                                                                "image_search", 4)
    assert fault["lines"][1] == "stage 'image_search', 4 of 4 turns: KeyError: 'crop'"
    # one turn that reached it and got through: no fault of the system's making
    traces[3] = trace(3, "answered", ("route", "image_search", "answer"))
    assert systemic_fault(records, traces) is None


def test_a_turn_that_faulted_before_the_stage_did_not_reach_it_and_one_after_it_did():
    records = [turn(i) for i in range(4)]
    stages = ("route", "retrieve", "answer")
    traces = [trace(0, "error", stages, ["route: TimeoutError: server gone"]),
              trace(1, "error", stages, ["retrieve: ValueError: no index"]),
              trace(2, "error", stages, ["retrieve: ValueError: no index"]),
              trace(3, "answered", stages)]
    # turn 0 never reached "retrieve"; turns 1 and 2 faulted there; turn 3 passed it: not every turn
    assert systemic_fault(records, traces) is None
    traces[3] = trace(3, "error", stages, ["answer: RuntimeError: empty reply"])  # passed "retrieve", then faulted
    assert systemic_fault(records, traces)["where"] == "every turn of the run"
    records[3] = turn(3, error="agent returned 1 answers for 2 queries")  # its batch left no trace
    del traces[3]
    reasons = systemic_fault(records, traces)["reasons"]
    assert [(r["stage"], r["agent_error"], r["turns"]) for r in reasons] == [
        ("retrieve", False, 2), ("route", False, 1), (None, True, 1)]


def test_a_stage_some_of_whose_turns_went_on_to_fault_later_is_not_the_one_named():
    """Turns 0-3 reached "retrieve": 0 and 1 faulted there, 2 and 3 passed it and faulted at
    "answer"; turns 4-7 took a path through neither and were answered. "answer" faulted every
    turn that reached it; "retrieve" did not."""
    records = [turn(i) for i in range(8)]
    stages = ("route", "retrieve", "answer")
    traces = [trace(i, "error", stages, ["retrieve: ValueError: no index"]) for i in (0, 1)]
    traces += [trace(i, "error", stages, ["answer: RuntimeError: empty reply"]) for i in (2, 3)]
    traces += [trace(i, "answered", ("route",)) for i in range(4, 8)]
    fault = systemic_fault(records, traces)
    assert (fault["stage"], fault["turns"]) == ("answer", 2)


def test_a_turn_cut_by_the_deadline_or_refused_is_no_fault():
    records = [turn(i) for i in range(3)]
    traces = [trace(0, "error", ("answer",), ["answer: ValueError: x"]),
              trace(1, "refused", ("answer",), ["answer: the provider refused the request: policy"]),
              {**trace(2, "deadline", ()), "deadline_cut": True}]
    assert systemic_fault(records, traces) is None


def test_the_exit_code_of_a_systemic_fault_wins_over_that_of_unjudged_turns():
    from evaluator.harness.faults import exit_code

    unjudged = {"turns": 2, "llm_judge": True}
    assert exit_code({"unjudged": unjudged, "systemic_fault": None}) == UNJUDGED_EXIT_CODE
    assert exit_code({"unjudged": unjudged, "systemic_fault": {"turns": 8}}) == SYSTEMIC_FAULT_EXIT_CODE
    assert exit_code({"unjudged": None, "systemic_fault": None}) == 0
    assert SYSTEMIC_FAULT_EXIT_CODE not in (0, 1, 2, UNJUDGED_EXIT_CODE)


@pytest.mark.parametrize("errors, stage, reason", [
    (["kwgate: PromptNotFound: prompt 'kwgate' not found"], "kwgate", "PromptNotFound: prompt 'kwgate' not found"),
    (["empty question"], None, "empty question"),  # a fault before any stage
    (["image search failed: TimeoutError"], None, "image search failed: TimeoutError"),  # no stage name before ": "
    (["kwgate: "], None, "kwgate: "),  # a stage name with nothing after it
    ([], None, "no error recorded"),
])
def test_a_traced_fault_is_split_into_its_stage_and_its_reason(errors, stage, reason):
    fault = systemic_fault([turn(0)], [trace(0, "error", ("kwgate",), errors)])
    assert fault["reasons"] == [{"stage": stage, "agent_error": False, "reason": reason, "turns": 1}]


def test_the_panel_names_the_three_commonest_reasons_counts_the_rest_and_says_where_each_happened():
    reasons = ["kwgate: A", "kwgate: A", "kwgate: A", "kwgate: B", "kwgate: B", "kwgate: C", "kwgate: D", "kwgate: E",
               "empty question"]
    traces = [trace(i, "error", ("kwgate",), [r]) for i, r in enumerate(reasons)]
    fault = systemic_fault([turn(i) for i in range(len(reasons))], traces)
    assert fault["other_reasons"] == 3 and [r["reason"] for r in fault["reasons"]] == ["A", "B", "C"]
    assert fault["lines"] == [
        "Every turn of the run faulted: 9 turns answered \"I don't know\" for a fault, not for want of evidence.",
        "stage 'kwgate', 3 of 9 turns: A",
        "stage 'kwgate', 2 of 9 turns: B",
        "stage 'kwgate', 1 of 9 turns: C",
        "and 3 other reasons on 3 turns (traces.jsonl, answers.jsonl)",
        f"The scores measure this fault, not the system: fix it and run again (exit code {SYSTEMIC_FAULT_EXIT_CODE}).",
    ]
    assert fault["notice"] == " ".join(fault["lines"])
    before = systemic_fault([turn(0)], [trace(0, "error", (), ["empty question"])])
    assert before["lines"][1] == "before any stage, 1 of 1 turns: empty question"


def test_a_stage_asked_of_some_turns_only_that_faults_on_each_is_named_though_the_batch_timed_it_for_all():
    """A system's run asked its answer stage of the turns that had a pick only (`only=`): the stage
    is in every trace's batch-wide stage_ms, but was run over turns 0, 1 and 3 alone, and faulted on
    each. The others, never reached, do not save it."""
    batch_wide = {"perceive": 1.0, "pick": 1.0, "answer": 1.0}
    traces = [{**trace(i, "error" if i in (0, 1, 3) else "no_pick", ("perceive", "pick", "answer"),
                       ["answer: StageContractError: stage 'answer' reads 'chunks'"] if i in (0, 1, 3) else []),
               "stage_ms": batch_wide, "stages_run": ["perceive", "pick", "answer"] if i in (0, 1, 3) else
               ["perceive", "pick"]} for i in range(5)]
    fault = systemic_fault([turn(i) for i in range(5)], traces)
    assert fault is not None and (fault["stage"], fault["turns"]) == ("answer", 3)
    # the same traces without stages_run (written before it was recorded) read the batch's stage_ms
    assert systemic_fault([turn(i) for i in range(5)], [{k: v for k, v in t.items() if k != "stages_run"}
                                                        for t in traces]) is None

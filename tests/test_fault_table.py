"""Every fault in a table atop the console and report.html, and --strict in the exit status
(evaluator/harness/faults.py `fault_table`, evaluator/report/terminal.py, report.html.j2).

The runs go through `evaluate()` in this process on the shipped mini benchmark's first 8
single-turn conversations, with no judge. The agent stands in for a system on the runtime: it
answers from a script, and its traces are written to the runtime's documented record
(/work/notes/RUNTIME_API.md: a faulted turn's `faults` list of {"stage", "exception", "where"},
its `errors` line "stage: ExcType: message", branch "error", answer "I don't know"). The 4th
turn it is asked faults (its second batch's second turn), so the faulting turn is neither the
first turn nor the first of its batch. The table read from `errors` alone (a trace written before
the runtime kept `faults`) and from the agent errors of answers.jsonl is tried on records.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from evaluator import evaluate, merge
from evaluator.harness.faults import (
    AGENT_ERROR,
    STRICT_FAULT_EXIT_CODE,
    SYSTEMIC_FAULT_EXIT_CODE,
    exit_code,
    fault_table,
    fault_turns,
)
from evaluator.harness.unjudged import UNJUDGED_EXIT_CODE
from evaluator.report.html import build_report
from testkit.in_process import fresh_environment, offline_env

MINI = Path(__file__).resolve().parents[1] / "data" / "crag-mm-mini" / "single-turn"
TURNS = 8
FAULTING_TURN = 3  # 0-based, in the order the agent is asked
FAULT = {"stage": "entity_vote", "exception": "IndexError: list index out of range",
         "where": "entity_vote/stages.py:42"}


class RuntimeShapedAgent:
    """Answers every turn "a heron" but the FAULTING_TURN-th, which faults at the stage
    FAULT["stage"]: "I don't know", its trace the runtime's record of that fault."""

    def __init__(self, search_pipeline=None, config=None):
        self.asked = 0
        self.last_batch_report = None

    def get_batch_size(self) -> int:
        return 2

    def batch_generate_response(self, queries, images, message_histories):
        answers, traces = [], []
        for _ in queries:
            faulted = self.asked == FAULTING_TURN
            self.asked += 1
            answers.append("I don't know" if faulted else "a heron")
            traces.append({"branch": "error", "errors": [f"{FAULT['stage']}: {FAULT['exception']}"],
                           "faults": [dict(FAULT)], "stage_ms": {FAULT["stage"]: 1.0}} if faulted else
                          {"branch": "voted", "errors": [], "stage_ms": {FAULT["stage"]: 1.0}})
        self.last_batch_report = {"traces": traces}
        return answers


def run(tmp_path: Path, name: str, capsys, **options):
    """evaluate() over the mini benchmark's first TURNS conversations: (result, console text, report.html)."""
    out = tmp_path / name
    with fresh_environment(offline_env(tmp_path)):
        result = evaluate(dataset=str(MINI), dataset_type="single-turn", num_conversations=TURNS,
                          exact_conversations=True, profile="cpu", agent=RuntimeShapedAgent, search="none",
                          eval_model="None", no_progress=True, display_conversations=0, output_dir=str(out),
                          **options)
    console = capsys.readouterr().out
    return result, console, (out / "report.html").read_text(encoding="utf-8")


ROW = re.compile(r"entity_vote\s*│\s*1\s*│\s*IndexError: list index out of range\s*│\s*entity_vote/stages\.py:42")
HTML_ROW = ('<tr><td>entity_vote</td><td class="num">1</td><td>IndexError: list index out of range</td>'
            '<td><code>entity_vote/stages.py:42</code></td></tr>')


def test_one_faulted_turn_shows_in_the_table_atop_the_console_and_the_report_and_exits_0(tmp_path, capsys):
    result, console, report = run(tmp_path, "forgiving", capsys)
    assert result.exit_status == 0  # a submission-like run stays forgiving
    assert result.summary["fault_turns"] == 1 and result.summary["faults"] == [{**FAULT, "turns": 1}]
    assert result.summary["systemic_fault"] is None
    # the console: the table's row (stage, 1 turn, exception, file:line), before the scores
    assert ROW.search(console), console[:3000]
    assert "FAULTS: 1 turn faulted" in console
    assert console.index("FAULTS: 1 turn faulted") < console.index("Scores")
    assert f"--strict fails a run with any fault: exit {STRICT_FAULT_EXIT_CODE} (4 where every turn" in console
    # report.html's first screen: the table right under the heading's line, before the scores
    assert HTML_ROW in report
    assert report.index('id="fault-table"') < report.index('<h2 id="scores">')
    assert report.index("</h1>") < report.index('id="faults-banner"')
    # a run summarized before the summary kept the table: the report reads it off the traces
    summary_path = result.output_dir / "run_summary.json"
    older = {k: v for k, v in json.loads(summary_path.read_text()).items()
             if k not in ("faults", "fault_turns", "fault_rows_left_out")}
    summary_path.write_text(json.dumps(older))
    assert HTML_ROW in build_report(result.output_dir).read_text(encoding="utf-8")
    # --strict on the rejudge of the same run: its one fault fails it
    with fresh_environment(offline_env(tmp_path)):
        rejudged = evaluate(output_dir=str(result.output_dir), rejudge=True, eval_model="None", no_progress=True,
                            display_conversations=0, strict=True)
    assert rejudged.exit_status == STRICT_FAULT_EXIT_CODE and ROW.search(capsys.readouterr().out)


def test_strict_makes_the_faulted_turn_fail_the_run_and_the_merge(tmp_path, capsys):
    result, console, report = run(tmp_path, "strict", capsys, strict=True)
    assert result.exit_status == STRICT_FAULT_EXIT_CODE
    assert ROW.search(console) and HTML_ROW in report  # the same table, whatever the exit status
    out = result.output_dir
    assert json.loads((out / "run_config.json").read_text())["args"]["strict"] is True
    with fresh_environment(offline_env(tmp_path)):
        merged = merge([out], output_dir=str(tmp_path / "merged"), eval_model="None", no_progress=True,
                       display_conversations=0, strict=True)
    assert merged.exit_status == STRICT_FAULT_EXIT_CODE and merged.summary["faults"] == [{**FAULT, "turns": 1}]
    assert ROW.search(capsys.readouterr().out)


# --------------------------------------------------------------------------- the table, on records
def answer(i: int, error: str | None = None) -> dict:
    """An answers.jsonl record as harness/runner.py writes it (the fields the table reads)."""
    return {"interaction_id": f"t{i}", "error": error}


def traced(i: int, branch: str, errors=(), faults=None) -> dict:
    trace = {"interaction_id": f"t{i}", "branch": branch, "errors": list(errors)}
    return trace if faults is None else {**trace, "faults": faults}


def test_the_table_reads_faults_else_the_first_error_line_and_the_agent_errors():
    rule = {"stage": "rule", "exception": "TypeError: rule 'vote' returned None, neither an answer nor a Decision",
            "where": "entity_vote/rule.py:7"}
    records = [answer(0), answer(1), answer(2), answer(3, "agent raised ValueError: stage 'x' is not on the record"),
               answer(4), answer(5), answer(6)]
    traces = [traced(0, "voted"),
              traced(1, "error", [f"{FAULT['stage']}: {FAULT['exception']}"], [FAULT]),
              # a trace of a runtime that kept no `faults`: its first error line, where not known
              traced(2, "error", ["search: TimeoutError: the server did not answer", "later: noise"]),
              traced(4, "error", [f"{FAULT['stage']}: {FAULT['exception']}"], [FAULT]),
              traced(5, "error", ["rule: " + rule["exception"]], [rule]),
              traced(6, "refused", ["hosted: the provider refused the image"])]  # refused: no fault
    assert fault_table(records, traces) == [  # commonest first, then by stage
        {**FAULT, "turns": 2},
        {**rule, "turns": 1},
        {"stage": "search", "turns": 1, "exception": "TimeoutError: the server did not answer", "where": None},
        {"stage": AGENT_ERROR, "turns": 1, "exception": "ValueError: stage 'x' is not on the record", "where": None}]
    assert fault_turns(records, traces) == 5
    # an error line naming no stage: the row says none
    assert fault_table([answer(0)], [traced(0, "error", ["something broke"])]) == [
        {"stage": None, "turns": 1, "exception": "something broke", "where": None}]
    # an empty `faults` list is no record of them: the error line stands; a record lacking its
    # exception or its place says so; only the agent's own errors lose the runner's "agent raised"
    assert fault_table([answer(0), answer(1)], [
        traced(0, "error", ["search: KeyError: 'hits'"], []),
        traced(1, "error", [], [{"stage": "relay", "where": ""}, {"stage": "relay", "exception": "agent raised x"}])]) == [
        {"stage": "relay", "turns": 1, "exception": "agent raised x", "where": None},
        {"stage": "relay", "turns": 1, "exception": "no exception recorded", "where": None},
        {"stage": "search", "turns": 1, "exception": "KeyError: 'hits'", "where": None}]


def test_without_strict_a_fault_keeps_the_exit_status():
    assert exit_code({"fault_turns": 3}) == 0


@pytest.mark.parametrize("summary, strict, expected", [
    ({"fault_turns": 1}, False, 0),
    ({"fault_turns": 1}, True, STRICT_FAULT_EXIT_CODE),
    ({"fault_turns": 0}, True, 0),
    ({"fault_turns": 2, "systemic_fault": {"turns": 2}}, True, SYSTEMIC_FAULT_EXIT_CODE),
    ({"fault_turns": 1, "unjudged": {"turns": 1, "llm_judge": True}}, True, STRICT_FAULT_EXIT_CODE),
    ({"fault_turns": 1, "unjudged": {"turns": 1, "llm_judge": True}}, False, UNJUDGED_EXIT_CODE),
])
def test_strict_exits_5_over_the_unjudged_3_and_the_systemic_fault_4_over_it(summary, strict, expected):
    assert exit_code(summary, strict=strict) == expected

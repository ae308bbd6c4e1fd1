"""The report says what the run did: the per-turn budget it kept, named against the competition's
(tighter, the same, wider), in the cut banner, the agent's settings table and batches.jsonl; and a
set of no turns shows "-" beside its count of 0, never a NaN or a 0.000 that reads as a score.

Two runs of local_evaluation.py over the hand-scored world (testkit/evaluation_world.py, in this
process): one at `--set turn_budget_s=2` whose every turn the scripted agent reports cut, one at
the competition's 10 s where none is.
"""
from __future__ import annotations

import json
import re

import pytest

import local_evaluation
from agents.base_agent import budget_text
from agents.runtime.trace_view import report_sections, run_settings
from evaluator.scoring.scores import shown_score, subset_scores
from testkit.evaluation_world import CONVERSATIONS, UNDECIDED, generation_args, run_in_process, write_script

ALL_QUERIES = [turn[1] for _, _, _, turns in CONVERSATIONS for turn in turns]
BATCH_SIZE = 2  # write_script's
NAN = re.compile(r"\bnan\b", re.IGNORECASE)


def strict_json(text: str):
    """JSON as the standard has it: NaN and Infinity are not JSON."""
    def refuse(constant):
        raise ValueError(f"{constant} in the JSON")
    return json.loads(text, parse_constant=refuse)


@pytest.fixture(scope="module")
def all_cut(world):
    out = world["root"] / "all-cut"
    script = write_script(world, "all-cut", deadline_cut_queries=ALL_QUERIES)
    proc = run_in_process(local_evaluation.main, world, generation_args(world, out, "--set", "turn_budget_s=2"),
                          script, expect_rc=UNDECIDED)  # s3-1's judge fails
    return out, proc.stdout


@pytest.fixture(scope="module")
def none_cut(world):
    out = world["root"] / "none-cut"
    script = write_script(world, "none-cut", deadline_cut_queries=[])
    proc = run_in_process(local_evaluation.main, world, generation_args(world, out, "--set", "turn_budget_s=10"),
                          script, expect_rc=UNDECIDED)
    return out, proc.stdout


def report_pages(out) -> dict[str, str]:
    pages = {"report.html": (out / "report.html").read_text()}
    pages.update({f"report_turns/{p.name}": p.read_text() for p in sorted((out / "report_turns").glob("*.html"))})
    assert len(pages) > 1, "the run wrote no turn pages"
    return pages


@pytest.mark.parametrize(("seconds", "expected"), [
    (2, "2 s a turn (tighter than the competition's 10 s)"),
    (9.5, "9.5 s a turn (tighter than the competition's 10 s)"),
    (10, "10 s a turn, the competition's"),
    (10.5, "10.5 s a turn (wider than the competition's 10 s)"),
    (60, "60 s a turn (wider than the competition's 10 s)"),
])
def test_a_budget_is_named_tighter_equal_or_wider_against_the_competitions(seconds, expected):
    assert budget_text(seconds) == expected


def test_no_budget_is_named_as_none():
    assert budget_text(0).startswith("none (turn_budget_s 0")


def test_the_agents_settings_table_names_the_budget_it_ran_under():
    """The report's "Budget and model modes" table, from the turns' traces (agents/runtime/trace_view.py)."""
    sections = report_sections({"run_settings": run_settings([{"turn_budget_s": 2.0}, {"turn_budget_s": 2.0}])})
    row = next(r for s in sections if s["id"] == "run-settings" for r in s["rows"] if "budget" in r[0])
    assert row[1] == "2 s a turn (tighter than the competition's 10 s)"


def test_a_set_of_no_turns_has_counts_of_zero_and_no_scores():
    scores = subset_scores([])
    assert scores["all"]["total"] == 0 and scores["all"]["correct"] == 0
    assert scores["all"]["accuracy"] is None and scores["all"]["truthfulness_score"] is None
    assert shown_score(scores["all"], "total", "{:.0f}") == "0"
    assert shown_score(scores["all"], "accuracy", "{:.1%}") == "-"
    assert shown_score(scores["all"], "truthfulness_score", "{:+.3f}") == "-"
    # the official score_rows gives a truthfulness of 0.0 for no turns: not shown as a score either
    assert shown_score({"total": 0.0, "truthfulness_score": 0.0}, "truthfulness_score", "{:+.3f}") == "-"
    assert shown_score({"total": 3.0, "accuracy": float("nan")}, "accuracy", "{:.1%}") == "-"
    assert shown_score({"total": 1.0, "truthfulness_score": 0.0}, "truthfulness_score", "{:+.3f}") == "+0.000"


def test_a_run_without_egocentric_turns_has_an_ego_subset_of_zero_counts_and_no_rates():
    """Two third-person turns, one right and one wrong: "ego" counts 0 of everything, hallucinations
    included, and has no rate; "all" counts the wrong answer as a hallucination."""
    rows = [{"session_id": "s", "interaction_id": f"s-{i}", "turn_idx": i, "is_ego": False, "is_exact_match": False,
             "is_correct": i == 0, "is_miss": False, "is_hallucination": i == 1} for i in range(2)]
    scores = subset_scores(rows)
    assert {k: scores["ego"][k] for k in ("total", "correct_exact", "correct", "miss", "hallucination")} == \
        dict.fromkeys(("total", "correct_exact", "correct", "miss", "hallucination"), 0.0)
    assert scores["ego"]["hallucination_rate"] is None and scores["ego"]["accuracy"] is None
    assert (scores["all"]["hallucination"], scores["all"]["hallucination_rate"]) == (1.0, 0.5)
    assert shown_score(scores["ego"], "hallucination", "{:.0f}") == "0"


def test_the_scores_table_shows_dashes_for_a_subset_of_no_turns():
    """A split without egocentric turns: the console's scores table has 0 turns and "-" for that
    column (score_rows gives NaN rates and a 0.0 truthfulness there), the other column its figures."""
    from rich.console import Console

    from evaluator.report.terminal import scores_table
    from evaluator.scoring.scores import score_rows

    row = {"session_id": "s", "interaction_id": "s-0", "turn_idx": 0, "is_ego": False, "is_exact_match": True,
           "is_correct": True, "is_miss": False}
    console = Console(width=200, record=True)
    console.print(scores_table({"all": score_rows([row, {**row, "session_id": "t", "interaction_id": "t-0"}])[1],
                                "ego": score_rows([])[1]}))
    text = console.export_text()
    assert not NAN.search(text)
    assert re.search(r"│ Total turns +│ +2 │ +0 │", text)
    for label in ("Accuracy", "Missing rate", "Truthfulness", "Mean conversation score"):
        assert re.search(rf"│ {label} +│ +\S+ │ +- │", text), label
    assert re.search(r"│ Truthfulness +│ +1\.0000 │", text)


def test_a_run_whose_every_turn_is_cut_names_its_tighter_budget_in_the_banner(all_cut):
    out, console = all_cut
    cut = strict_json((out / "run_summary.json").read_text())["deadline_cut"]
    assert (cut["turns"], cut["of_turns"]) == (15, 15)
    named = "2 s a turn (tighter than the competition's 10 s)"
    assert cut["budget"] == named and named in cut["notice"]
    assert f"The budget: {named}." in console
    page = (out / "report.html").read_text()
    assert re.search(r'id="deadline-cut-budget">2 s a turn \(tighter than the competition&#39;s 10 s\)<', page)
    assert "widened" not in console + page


def test_a_run_whose_every_turn_is_cut_shows_dashes_for_the_turns_not_cut(all_cut):
    """The "not cut" column: 0 turns and "-" for every score, in the console, the page and the notice."""
    out, console = all_cut
    not_cut = strict_json((out / "run_summary.json").read_text())["deadline_cut"]["scores_not_cut"]["all"]
    assert not_cut["total"] == 0 and not_cut["accuracy"] is None and not_cut["truthfulness_score"] is None
    panel = console[:console.index("Run the same turns without the budget")]
    for label in ("accuracy", "hallucination rate", "missing", "truthfulness"):
        assert re.search(rf"│ {label} +│ +\S+ │ +- │", panel), label
    assert re.search(r"│ Turns +│ +15 │ +0 │", panel)
    page = (out / "report.html").read_text()
    table = page[page.index('id="deadline-cut-scores"'):page.index("</table>", page.index('id="deadline-cut-scores"'))]
    assert table.count('<td class="num">-</td>') == 4 and '<td class="num">0</td>' in table
    assert "Turns not cut: 0 turns." in strict_json((out / "run_summary.json").read_text())["deadline_cut"]["notice"]


@pytest.mark.parametrize("run", ["all_cut", "none_cut"])
def test_no_page_of_the_report_nor_its_summary_says_nan(run, request):
    out, console = request.getfixturevalue(run)
    for name, page in report_pages(out).items():
        assert not NAN.search(page), f"{name}: {NAN.search(page).group(0)!r}"
    assert not NAN.search(console)
    strict_json((out / "run_summary.json").read_text())


def test_batches_record_the_runs_own_budget_beside_the_competitions(all_cut, none_cut):
    for (out, _), seconds in ((all_cut, 2.0), (none_cut, 10.0)):
        batches = [json.loads(line) for line in (out / "batches.jsonl").read_text().splitlines()]
        assert batches
        for b in batches:
            assert b["budget_ms"] == 10_000.0 * BATCH_SIZE
            assert b["turn_budget_s"] == seconds and b["run_budget_ms"] == seconds * 1000.0 * BATCH_SIZE
        summary = strict_json((out / "run_summary.json").read_text())
        assert {b["run_budget_ms"] for b in summary["per_batch"]} == {seconds * 1000.0 * BATCH_SIZE}
    page = (all_cut[0] / "report.html").read_text()
    assert "<th class=\"num\">the run's budget ms</th>" in page and '<td class="num">4000</td>' in page


def test_a_run_where_no_turn_is_cut_has_no_banner(none_cut):
    out, console = none_cut
    assert strict_json((out / "run_summary.json").read_text())["deadline_cut"] is None
    assert "CUT BY THE DEADLINE" not in console
    assert 'id="deadline-cut-banner"' not in (out / "report.html").read_text()

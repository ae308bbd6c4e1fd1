"""report.html and compare.html, built on runs that local_evaluation.py makes with the real chain
(scripted engines: testkit.fakes.SteeredCruiseAgent), checked as data and in headless Chromium.

Each question steers its own turn (see testkit.fakes.steered_engine), so every outcome, branch and
funnel count below is known by hand.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from PIL import Image

from agents.profiles import REPO_ROOT
from evaluator.report.html import EXTENDED_CSV, OFFICIAL_CSV, load_turn_rows
from testkit.scripted_agent import build_dataset

# session, ego?, [(interaction_id, question with directives, gold)]; outcome / branch of the full preset
CONVERSATIONS = [
    ("c1", True, [("c1-0", "Which landmark is this? #say=Big_Ben", "Big Ben")]),             # correct, context_verified
    ("c2", False, [("c2-0", "When did it open? #say=1850", "1859")]),                         # hallucinated, context_verified
    ("c3", True, [("c3-0", "Who built it? #say=Someone #conf=0.3", "Charles Barry")]),       # missed, not_verified
    ("c4", False, [("c4-0", "What colour is the sky here? #say=Blue #ext=no #conf=1.0", "blue")]),  # correct, no_context_verified
    ("c5", True, [("c5-0", "Is it open right now? #say=Yes #rt=yes #weak=1", "Yes")]),      # missed, real_time_weak_retrieval
    ("c6", False, [("c6-0", "What is the tower called? #say=Elizabeth_Tower #sc=no", "Elizabeth Tower")]),  # missed, inconsistent
    ("c7", True, [("c7-0", "What colour is the bus? #say=Red", "red"),                        # correct
                  ("c7-1", "And the door? #say=Green", "blue")]),                             # hallucinated
]
OUTCOMES = {"c1-0": "correct", "c2-0": "hallucinated", "c3-0": "missed", "c4-0": "correct", "c5-0": "missed",
            "c6-0": "missed", "c7-0": "correct", "c7-1": "hallucinated"}
BRANCHES = {"c1-0": "context_verified", "c2-0": "context_verified", "c3-0": "not_verified",
            "c4-0": "no_context_verified", "c5-0": "real_time_weak_retrieval", "c6-0": "context_inconsistent",
            "c7-0": "context_verified", "c7-1": "context_verified"}
# (label, passes alone, passes with every step above) for the full preset, by hand:
# routed: all but c4 (7). retrieved: the same 7. context: the same 7 (c5's chunks score 0.2, above tau
# 0.1, so they are kept). RAG answer not IDK: all 8. consistent: all but c6 (7); chained 6 (c4 is out).
# CoV >= threshold: c3 fails (0.3), c6 is not asked (inconsistent); c4 has no context and reaches
# tau_high with 1.0 -> 6 alone; chained 5.
# answered: c1 c2 c4 c7-0 c7-1 (5); chained (c4 left out at "routed") 4. correct: c1 c4 c7-0 (3); chained 2.
FUNNEL = [("all turns", 8, 8), ("routed to retrieval", 7, 7), ("retrieved", 7, 7), ("non-empty context", 7, 7),
          ("RAG answer not IDK", 8, 7), ("consistent", 7, 6), ("CoV >= 0.9 with context, >= 1 without", 6, 5),
          ("answered", 5, 4), ("correct", 3, 2)]


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("reportworld")
    colours = ["red", "green", "blue", "orange", "purple", "teal", "gold"]
    convs = [dict(session_id=session, image=Image.new("RGB", (96, 64), colour),
                  image_url=None if ego else f"http://127.0.0.1:9/{session}.png",  # embedded: never fetched
                  image_quality="normal" if i % 2 else "low",
                  turns=[(iid, q, gold, "landmark" if i < 4 else "vehicle", "simple" if i % 3 else "reasoning",
                          "static" if i % 2 else "real-time") for iid, q, gold in turns])
             for i, ((session, ego, turns), colour) in enumerate(zip(CONVERSATIONS, colours))]
    dataset = build_dataset(root / "dataset", convs, form="list")
    out = {}
    for preset in ("full", "rag_baseline"):
        out[preset] = root / preset
        # the scripted engines write the paper's CoV reply: the paper's finalizer reads it
        run_cli(["--dataset", str(dataset), "--dataset-type", "multi-turn", "--profile", "cpu",
                 "--preset", f"{preset}+paper_finalizer" if preset == "full" else preset,
                 "--agent", "testkit.fakes:SteeredCruiseAgent", "--search", "none", "--eval-model", "None",
                 "--output-dir", str(out[preset]), "--no_progress"], root)
    return out


def run_cli(args: list[str], root: Path, module: str = "local_evaluation.py") -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY" and not k.startswith("CRUISE_")}
    env.update(HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1", HF_DATASETS_CACHE=str(root / "hf-datasets"),
               CRUISE_CACHE=str(root / "cache"))
    command = [sys.executable, module, *args] if module.endswith(".py") else [sys.executable, "-m", module, *args]
    proc = subprocess.run(command, cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return proc


def scores(run: Path) -> dict:
    return json.loads((run / "scores_dictionary.json").read_text())


def test_the_scripted_runs_have_the_hand_worked_outcomes(runs):
    traces = {json.loads(line)["interaction_id"]: json.loads(line)
              for line in (runs["full"] / "traces.jsonl").read_text().splitlines()}
    assert {iid: t["branch"] for iid, t in traces.items()} == BRANCHES
    rows = {r["interaction_id"]: r for r in load_turn_rows(runs["full"])}
    assert {iid: "correct" if r["is_correct"] else "missed" if r["is_miss"] else "hallucinated"
            for iid, r in rows.items()} == OUTCOMES
    assert (scores(runs["full"])["all"]["correct"], scores(runs["full"])["all"]["hallucination"]) == (3.0, 2.0)


def test_turn_rows_prefer_the_extended_csv_and_derive_hallucination_from_the_official_one(runs, tmp_path):
    import pandas as pd

    official = pd.read_csv(runs["full"] / OFFICIAL_CSV)
    trimmed = tmp_path / "trimmed"
    trimmed.mkdir()
    assert "is_hallucination" not in official.columns  # the official 18 columns do not hold it
    official.to_csv(trimmed / OFFICIAL_CSV, index=False)
    rows = load_turn_rows(trimmed)
    assert sorted(r["interaction_id"] for r in rows if r["is_hallucination"]) == ["c2-0", "c7-1"]
    extended = official.assign(note=[f"extra-{i}" for i in range(len(official))])
    extended.to_csv(trimmed / EXTENDED_CSV, index=False)
    assert {r["note"] for r in load_turn_rows(trimmed)} == {f"extra-{i}" for i in range(len(official))}


def turn_pages(run: Path) -> str:
    """Every turn page of a run's report, concatenated."""
    return "".join(p.read_text() for p in sorted((run / "report_turns").glob("*.html")))


def test_every_run_folder_gets_a_self_contained_report(runs):
    for run in runs.values():
        page = (run / "report.html").read_text()
        for html in [page] + [p.read_text() for p in (run / "report_turns").glob("*.html")]:
            links = re.findall(r'(?:src|href)="([^"]*)"', html) + re.findall(r"url\(([^)]*)\)", html)
            # only data: URIs, anchors and the report's own files, which must exist
            local = [link.split("#")[0] for link in links if not link.startswith(("data:", "#"))]
            assert all(":" not in link for link in local), local[:5]
            base = run if html is page else run / "report_turns"
            assert all((base / link).is_file() for link in local), local[:5]
            assert "<link" not in html
        assert page.count('<tr class="turn"') == 8
        assert turn_pages(run).count('<details class="turn"') == 8
        assert turn_pages(run).count("data:image/jpeg;base64,") == 8  # one thumbnail per turn
        assert "<svg" in page
    page = (runs["full"] / "report.html").read_text()
    for label, alone, chained in FUNNEL:
        assert f"<td>{label.replace('>', '&gt;')}</td><td class=\"num\">{alone}</td><td class=\"num\">{chained}</td>" in page, label


def test_the_command_line_builds_the_same_report_and_a_comparison(runs, tmp_path):
    copy = tmp_path / "again"
    shutil.copytree(runs["full"], copy)
    (copy / "report.html").unlink()
    # figures other changes add to the traces and to evidence coverage show up without template
    # changes; a figure of an unexpected shape does not stop the report
    summary = json.loads((copy / "run_summary.json").read_text())
    summary.update(evidence_coverage={"answerable_turns": 6, "gold_in_context": 4},
                   agent_summary={"parse_failures": 3})
    (copy / "run_summary.json").write_text(json.dumps(summary))
    traces = [{**json.loads(line), "verifier_note": f"note for {json.loads(line)['interaction_id']}"}
              for line in (copy / "traces.jsonl").read_text().splitlines()]
    (copy / "traces.jsonl").write_text("".join(json.dumps(t) + "\n" for t in traces))
    proc = run_cli([str(copy)], tmp_path, module="evaluator.report")
    assert str(copy / "report.html") in proc.stdout
    page = (copy / "report.html").read_text()
    assert turn_pages(copy).count('<details class="turn"') == 8
    coverage = page.split('id="coverage-table"')[1].split("</table>")[0]
    assert "<td>gold_in_context</td><td class=\"num\">4</td>" in coverage
    assert 'id="parsers-table"' not in page  # the agent's view shows no table it cannot read
    assert "note for c6-0" in turn_pages(copy) and "<th>verifier_note</th>" in turn_pages(copy)
    compare = tmp_path / "compare.html"
    run_cli([str(runs["full"]), str(runs["rag_baseline"]), "--out", str(compare)], tmp_path, module="evaluator.report")
    page = compare.read_text()
    assert "full+paper_finalizer (full)" in page and "rag_baseline (rag_baseline)" in page
    assert 'id="cost-table"' in page  # what each run's model calls read and wrote, per turn
    # rag_baseline returns every answer unverified: c5 (Yes) and c6 (Elizabeth Tower) become correct,
    # c3 (Someone) a hallucination; the full preset missed all three.
    baseline = scores(runs["rag_baseline"])["all"]
    assert (baseline["correct"], baseline["hallucination"]) == (5.0, 3.0)
    assert f"{baseline['truthfulness_score']:.4f}" in page
    differing = page.split('id="differences-table"')[1]
    assert differing.count("<tr>") == 3  # header + c5-0 + c6-0
    assert "Is it open right now?" in differing and "What is the tower called?" in differing


def test_report_in_chromium(runs, browser, tmp_path):
    report = runs["full"] / "report.html"
    page = browser.open(report.as_uri())
    shot = page.screenshot(Path(os.environ.get("REPORT_SCREENSHOT", tmp_path / "report.png")))
    assert shot.stat().st_size > 10_000
    assert page.console_errors == []
    assert all(url.startswith(("file:", "data:")) for url in page.requested_urls), page.requested_urls
    truth = scores(runs["full"])["all"]["truthfulness_score"]
    shown = page.evaluate("document.querySelector('#scores-table tr[data-metric=truthfulness_score] "
                          "td[data-subset=all]').innerText")
    assert shown.split(" [")[0] == f"{truth:.4f}"  # the point score, then its 95% interval
    visible = "[...document.querySelectorAll('#turn-list tr.turn')].filter(d => d.offsetParent !== null).length"
    assert page.evaluate(visible) == 8

    def pick(select_id: str, value: str) -> None:
        page.evaluate(f"(() => {{ const s = document.getElementById('{select_id}'); s.value = '{value}'; "
                      "s.dispatchEvent(new Event('change')); })()")

    pick("filter-outcome", "hallucinated")
    hallucinated = scores(runs["full"])["all"]["hallucination"]
    assert page.evaluate(visible) == hallucinated == 2
    assert page.evaluate("document.getElementById('shown-count').innerText") == "2"
    pick("filter-branch", "context_verified")
    assert page.evaluate(visible) == 2
    pick("filter-outcome", "")
    assert page.evaluate(visible) == 4
    pick("filter-branch", "")
    pick("filter-domain", "vehicle")  # c5, c6, c7-0, c7-1
    assert page.evaluate(visible) == 4
    pick("filter-cut", "cut")  # no turn of this run was cut by the deadline
    assert page.evaluate(visible) == 0
    pick("filter-cut", "not-cut")
    assert page.evaluate(visible) == 4
    pick("filter-branch", "context_inconsistent")
    assert page.evaluate(visible) == 1
    # the row's link opens its turn page: the chunks with their scores, the kept ones marked, the CoV output
    link = page.evaluate("document.querySelector('#turn-list tr.turn:not([hidden]) a').href")
    assert link.startswith(report.parent.as_uri() + "/report_turns/") and link.endswith("#turn-c6-0")
    assert page.console_errors == []
    page = browser.open(link)
    opened = page.evaluate("document.getElementById('turn-c6-0').innerText")
    assert "Relevant: the landmark in the photo." in opened and "0.850" in opened and "kept" in opened
    assert "Unrelated filler text." in opened and "0.050" in opened
    assert "inconsistent" in opened and "What is the tower called?" in opened
    assert page.evaluate("document.getElementById('turn-c6-0').querySelector('img').naturalWidth") > 0
    page.evaluate("document.getElementById('turn-c6-0').scrollIntoView()")
    page.screenshot(Path(str(shot).replace(".png", "-open.png")))
    assert page.console_errors == []


def test_comparison_in_chromium(runs, browser, tmp_path):
    compare = tmp_path / "compare.html"
    run_cli([str(runs["full"]), str(runs["rag_baseline"]), "--out", str(compare)], tmp_path, module="evaluator.report")
    page = browser.open(compare.as_uri())
    page.screenshot(tmp_path / "compare.png")
    assert page.console_errors == []
    assert page.evaluate("document.querySelectorAll('#compare-table tr[data-run]').length") == 2
    assert page.evaluate("document.querySelectorAll('#differences-table tr').length") == 3


def test_the_summary_figures_have_their_own_tables(runs):
    """Judge, parse failures per stage, evidence coverage and errors: each figure of
    run_summary.json under a label, none dumped as raw JSON."""
    summary = json.loads((runs["full"] / "run_summary.json").read_text())
    page = (runs["full"] / "report.html").read_text()
    assert "More figures" not in page and "<pre>" not in page.split('id="health"')[1].split('id="turns"')[0]

    def table(table_id: str) -> str:
        return page.split(f'id="{table_id}"')[1].split("</table>")[0]

    assert f"<td>asked</td><td class=\"num\">{summary['judge_asked']}</td>" in table("judge-table")
    assert f"<td>left unjudged</td><td class=\"num\">{summary['unjudged_turns']}</td>" in table("judge-table")
    parsing = table("parsers-table")  # the agent's own table (agents/cruise/trace_view.py)
    figures = summary["agent_summary"]
    assert figures["parse_failures"] and figures["parsed_outputs"]["route"] > 0
    for stage, count in figures["parse_failures"].items():
        read = figures["parsed_outputs"].get(stage, 0)
        assert f"<td>{stage}</td><td>{count}</td><td>{read}</td>" in parsing, stage
    coverage = summary["evidence_coverage"]
    assert f"({coverage['turns']} turns)" in table("coverage-table")
    assert f"<td>Turns with context after the MAD filter</td><td class=\"num\">{coverage['context_share']:.2%}</td>" \
        in table("coverage-table")
    assert f"<td>agent-error turns</td><td class=\"num\">{summary['agent_error_turns']}</td>" in table("errors-table")


def test_a_calibrated_run_draws_its_funnel_at_the_files_thresholds(tmp_path, monkeypatch):
    """The funnel comes from what the run recorded (each trace's steps, decided at the thresholds
    the agent ran with), not from the run's arguments worked out again: a --calibration file's
    tau_low moves c3 (CoV 0.3) into the "CoV" step. In-process: the settings travel as arguments."""
    import local_evaluation
    from agents.engines.base import TOKEN_COUNT

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.setenv("HF_DATASETS_CACHE", str(tmp_path / "hf-datasets"))
    calibration = tmp_path / "calibration.json"
    calibration.write_text(json.dumps({"settings": {"tau_low": 0.25}, "token_count": TOKEN_COUNT}))
    dataset = build_dataset(tmp_path / "dataset", [
        dict(session_id=session, image=Image.new("RGB", (96, 64), "red"), image_url=None, image_quality="normal",
             turns=[(iid, q, gold, "landmark", "simple", "static") for iid, q, gold in turns])
        for session, _, turns in CONVERSATIONS[:3]], form="list")
    out = tmp_path / "calibrated"
    local_evaluation.main(["--dataset", str(dataset), "--dataset-type", "multi-turn", "--profile", "cpu",
                           "--preset", "full+paper_finalizer", "--calibration", str(calibration),
                           "--agent", "testkit.fakes:SteeredCruiseAgent", "--search", "none", "--eval-model", "None",
                           "--output-dir", str(out), "--no_progress", "--display-conversations", "0"])
    recorded = json.loads((out / "run_config.json").read_text())["agent_description"]["config"]
    assert recorded["tau_low"] == 0.25 and recorded["tau_high"] == 1.0
    page = (out / "report.html").read_text()
    assert '<td>CoV &gt;= 0.25 with context, &gt;= 1 without</td><td class="num">3</td>' in page
    assert "<th>tau_low</th><td>0.25</td>" in page  # the recorded settings, shown as they are

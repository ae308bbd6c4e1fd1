"""report.html and compare.html, built on runs that local_evaluation.py makes in-process with the
real chain on scripted engines (testkit/report_world.py: every outcome, branch and funnel count is
known by hand), checked as data. The same pages in headless Chromium: tests/full/test_report.py.
"""
from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

from PIL import Image

from evaluator.report.__main__ import main as report_main
from evaluator.report.html import EXTENDED_CSV, OFFICIAL_CSV, load_turn_rows
from testkit.in_process import run_main
from testkit.report_world import BRANCHES, CONVERSATIONS, FUNNEL, OUTCOMES, report_env
from testkit.scripted_agent import build_dataset


def report_command(args: list[str], root: Path) -> subprocess.CompletedProcess:
    """`python -m evaluator.report ARGS`, in this process."""
    proc = run_main(report_main, args, env=report_env(root))
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return proc


def scores(run: Path) -> dict:
    return json.loads((run / "scores_dictionary.json").read_text())


def test_the_scripted_runs_have_the_hand_worked_outcomes(report_runs):
    traces = {json.loads(line)["interaction_id"]: json.loads(line)
              for line in (report_runs["full"] / "traces.jsonl").read_text().splitlines()}
    assert {iid: t["branch"] for iid, t in traces.items()} == BRANCHES
    rows = {r["interaction_id"]: r for r in load_turn_rows(report_runs["full"])}
    assert {iid: "correct" if r["is_correct"] else "missed" if r["is_miss"] else "hallucinated"
            for iid, r in rows.items()} == OUTCOMES
    full = scores(report_runs["full"])["all"]
    assert (full["correct"], full["hallucination"]) == (3.0, 2.0)


def test_turn_rows_prefer_the_extended_csv_and_derive_hallucination_from_the_official_one(report_runs, tmp_path):
    import pandas as pd

    official = pd.read_csv(report_runs["full"] / OFFICIAL_CSV)
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


def test_every_run_folder_gets_a_self_contained_report(report_runs):
    for run in report_runs.values():
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
    page = (report_runs["full"] / "report.html").read_text()
    for label, alone, chained in FUNNEL:
        assert f"<td>{label.replace('>', '&gt;')}</td><td class=\"num\">{alone}</td><td class=\"num\">{chained}</td>" in page, label


def test_the_command_line_builds_the_same_report_and_a_comparison(report_runs, tmp_path):
    copy = tmp_path / "again"
    shutil.copytree(report_runs["full"], copy)
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
    proc = report_command([str(copy)], tmp_path)
    assert str(copy / "report.html") in proc.stdout
    page = (copy / "report.html").read_text()
    assert turn_pages(copy).count('<details class="turn"') == 8
    coverage = page.split('id="coverage-table"')[1].split("</table>")[0]
    assert "<td>gold_in_context</td><td class=\"num\">4</td>" in coverage
    assert 'id="parsers-table"' not in page  # the agent's view shows no table it cannot read
    assert "note for c6-0" in turn_pages(copy) and "<th>verifier_note</th>" in turn_pages(copy)
    compare = tmp_path / "compare.html"
    report_command([str(report_runs["full"]), str(report_runs["rag_baseline"]), "--out", str(compare)], tmp_path)
    page = compare.read_text()
    # each run by its system, the preset and its folder beside it
    assert "cruise (full+paper_finalizer; full)" in page and "cruise (rag_baseline; rag_baseline)" in page
    assert 'id="cost-table"' in page  # what each run's model calls read and wrote, per turn
    # rag_baseline returns every answer unverified: c5 (Yes) and c6 (Elizabeth Tower) become correct,
    # c3 (Someone) a hallucination; the full preset missed all three.
    baseline = scores(report_runs["rag_baseline"])["all"]
    assert (baseline["correct"], baseline["hallucination"]) == (5.0, 3.0)
    assert f"{baseline['truthfulness_score']:.4f}" in page
    differing = page.split('id="differences-table"')[1]
    assert differing.count("<tr>") == 3  # header + c5-0 + c6-0
    assert "Is it open right now?" in differing and "What is the tower called?" in differing


def test_the_summary_figures_have_their_own_tables(report_runs):
    """Judge, parse failures per stage, evidence coverage and errors: each figure under a label,
    none dumped as raw JSON, each worked out by hand from testkit/report_world.py's questions."""
    page = (report_runs["full"] / "report.html").read_text()
    assert "More figures" not in page and "<pre>" not in page.split('id="health"')[1].split('id="turns"')[0]

    def rows(table_id: str) -> list[list[str]]:
        table = page.split(f'id="{table_id}"')[1].split("</table>")[0]
        return [re.findall(r"<td[^>]*>(.*?)</td>", row) for row in table.split("<tr")[1:] if "<td" in row]

    # the judge is off (--eval-model None): the turns that needed it are the two wrong answers
    # (c2-0 "1850", c7-1 "Green"); the three right ones are exact and the three "I don't know"s misses
    judge = dict(r for r in rows("judge-table") if len(r) == 2)
    assert (judge["turns that needed the judge"], judge["asked"], judge["left unjudged"]) == ("2", "0", "2")
    # every scripted reply parses. route: all 8 turns; summarize: the 7 routed to retrieval (c4
    # says #ext=no); answer: 8; consistency: only c6, whose two answers differ (identical ones
    # skip the VLM); verify: all but c6 (inconsistent), 7
    assert rows("parsers-table") == [["route", "0", "8"], ["summarize", "0", "7"], ["answer", "0", "8"],
                                     ["consistency", "0", "1"], ["verify", "0", "7"]]
    # 7 of 8 turns retrieve the one hit, 4 chunks each (the "photo may show" line and 3 paragraphs):
    # 28 / 8 = 3.5 per turn. Kept: the two "Relevant" paragraphs (.85 against theta .1) in 6 turns,
    # and in c5 (#weak: all four at .2 = theta) the k_rerank 3: 15 / 8 = 1.875
    coverage = page.split('id="coverage-table"')[1].split("</table>")[0]
    assert "(8 turns)" in coverage
    assert dict(rows("coverage-table")) == {"Turns that retrieved something": "87.50%",
                                            "Turns with context after the MAD filter": "87.50%",
                                            "Chunks reranked per turn": "3.5", "Chunks kept per turn": "1.88"}
    errors = dict(rows("errors-table"))
    assert errors["agent-error turns"] == errors["stage-fault turns"] == errors["deadline-cut turns"] == "0"


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


def test_the_multi_turn_section_shows_both_rule_sets_and_the_turn_indices(report_runs):
    """The scripted world (testkit/report_world.py): seven conversations, c7 of two turns (correct,
    then hallucinated), so the cut takes nothing and both rule sets agree. By hand: 8 turns, 3
    correct (c1, c4, c7-0) -> accuracy 37.5% under both; turn 1: 7 turns, 3 right (42.9%), 4
    answered (c1, c2, c4, c7-0: 57.1%); turn 2: c7-1 alone, wrong but answered."""
    summary = json.loads((report_runs["full"] / "run_summary.json").read_text())["multi_turn"]
    assert (summary["conversations"], summary["turns"]) == (7, 8)
    assert summary["early_stop"]["turns"] == 0
    page = (report_runs["full"] / "report.html").read_text()
    section = page.split('id="multi-turn"', 1)[1].split("<h2", 1)[0]
    rules = section.split('id="multi-turn-rules"', 1)[1].split("</table>", 1)[0]
    accuracy = rules.split('data-metric="accuracy"', 1)[1].split("</tr>", 1)[0]
    assert re.findall(r'data-rules="([^"]+)">37\.5%', accuracy) == ["kddcup2025", "crag-mm"]
    by_turn = section.split('id="multi-turn-by-turn"', 1)[1].split("</table>", 1)[0]
    first = by_turn.split('data-turn="0"', 1)[1].split("</tr>", 1)[0]
    assert re.findall(r'class="num">([\d.]+%)', first) == ["42.9%", "57.1%"]
    second = by_turn.split('data-turn="1"', 1)[1].split("</tr>", 1)[0]
    assert re.findall(r'class="num">([\d.]+%)', second) == ["0.0%", "100.0%"]
    assert "rules kddcup2025" not in section and "<b>kddcup2025</b>" in section  # the run's own rule set named

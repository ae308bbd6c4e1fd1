"""report.html and compare.html in headless Chromium (scripts/test.sh installs it), on the runs of
testkit/report_world.py; the comparison is built by `python -m evaluator.report` in a subprocess,
as a user runs it. The same pages checked as data: tests/test_report.py.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from agents.profiles import REPO_ROOT
from testkit.report_world import report_env


def scores(run: Path) -> dict:
    return json.loads((run / "scores_dictionary.json").read_text())


def test_report_in_chromium(report_runs, browser, tmp_path):
    report = report_runs["full"] / "report.html"
    page = browser.open(report.as_uri())
    shot = page.screenshot(Path(os.environ.get("REPORT_SCREENSHOT", tmp_path / "report.png")))
    assert shot.stat().st_size > 10_000
    assert page.console_errors == []
    assert all(url.startswith(("file:", "data:")) for url in page.requested_urls), page.requested_urls
    truth = scores(report_runs["full"])["all"]["truthfulness_score"]
    shown = page.evaluate("document.querySelector('#scores-table tr[data-metric=truthfulness_score] "
                          "td[data-subset=all]').innerText")
    assert shown.split(" [")[0] == f"{truth:.4f}"  # the point score, then its 95% interval
    visible = "[...document.querySelectorAll('#turn-list tr.turn')].filter(d => d.offsetParent !== null).length"
    assert page.evaluate(visible) == 8

    def pick(select_id: str, value: str) -> None:
        page.evaluate(f"(() => {{ const s = document.getElementById('{select_id}'); s.value = '{value}'; "
                      "s.dispatchEvent(new Event('change')); })()")

    pick("filter-outcome", "hallucinated")
    hallucinated = scores(report_runs["full"])["all"]["hallucination"]
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


def test_comparison_in_chromium(report_runs, browser, tmp_path):
    compare = tmp_path / "compare.html"
    env = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY" and not k.startswith("CRUISE_")}
    proc = subprocess.run([sys.executable, "-m", "evaluator.report", str(report_runs["full"]),
                           str(report_runs["rag_baseline"]), "--out", str(compare)],
                          cwd=REPO_ROOT, env={**env, **report_env(tmp_path)}, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0 and proc.stdout.strip().endswith(str(compare)), proc.stdout[-3000:] + proc.stderr[-3000:]
    page = browser.open(compare.as_uri())
    page.screenshot(tmp_path / "compare.png")
    assert page.console_errors == []
    assert page.evaluate("document.querySelectorAll('#compare-table tr[data-run]').length") == 2
    assert page.evaluate("document.querySelectorAll('#differences-table tr').length") == 3

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


# Each breakdown table as the page lays it out: its header cells left to right, and per row its
# label and the point value in the cell under the "truthfulness" header (its interval below it).
BREAKDOWN_LAYOUT = r"""
[...document.querySelectorAll('table.breakdown')].map(table => {
  const leftToRight = cells => [...cells].sort((a, b) => a.getBoundingClientRect().left - b.getBoundingClientRect().left);
  const heads = leftToRight(table.querySelectorAll('th'));
  const truth = heads.find(th => th.innerText.trim() === 'truthfulness').getBoundingClientRect();
  const under = row => [...row.cells].find(c => {
    const r = c.getBoundingClientRect(), middle = (r.left + r.right) / 2;
    return middle > truth.left && middle < truth.right;
  });
  return {column: table.dataset.column, heads: heads.map(th => th.innerText.trim()),
          rows: [...table.querySelectorAll('tr')].filter(r => r.querySelector('td')).map(
            r => [leftToRight(r.cells)[0].innerText.trim(), under(r).innerText.trim().split(/\s/)[0]])};
})
"""


def test_truthfulness_stands_right_after_the_counts_in_every_breakdown(report_runs, browser):
    """Where it stands, not only that it is in view: a column moved to the end still fits at 1280 px.
    The only test that catches truthfulness moved last: the default tier checks the breakdown's
    figures (tests/test_scoring.py), not the page's layout, which only a browser lays out."""
    run = report_runs["full"]
    breakdowns = json.loads((run / "run_summary.json").read_text())["breakdowns"]
    page = browser.open((run / "report.html").as_uri())
    tables = page.evaluate(BREAKDOWN_LAYOUT)
    assert sorted(t["column"] for t in tables) == sorted(breakdowns)
    for table in tables:
        column = table["column"]
        assert table["heads"] == [column.replace("_", " "), "turns", "truthfulness", "accuracy", "missing",
                                  "hallucination"]
        # the rows' values, as the run's summary has them
        assert table["rows"] == [[entry[column], f"{entry['truthfulness']:+.3f}"] for entry in breakdowns[column]]


# Every cell that shows truthfulness: a header cell saying "truthfulness" and the cells below it,
# and every cell of a row whose label says "truthfulness". A cell counts as visible when it lies
# inside the window's width and inside every ancestor that clips or scrolls it sideways.
TRUTHFULNESS_CELLS = r"""
(() => {
  const cells = [];
  for (const table of document.querySelectorAll('table')) {
    for (const th of table.querySelectorAll('th')) {
      if (!/^truthfulness\b/.test(th.innerText.trim())) continue;
      const head = th.getBoundingClientRect();
      cells.push([table, th]);
      for (const td of table.querySelectorAll('td')) {
        const r = td.getBoundingClientRect(), middle = (r.left + r.right) / 2;
        if (r.top > head.top && middle > head.left && middle < head.right) cells.push([table, td]);
      }
    }
    for (const row of table.querySelectorAll('tr')) {
      if (row.cells.length && row.cells[0].innerText.trim() === 'truthfulness') cells.push(...[...row.cells].map(c => [table, c]));
    }
  }
  const hidden = [];
  for (const [table, cell] of cells) {
    const r = cell.getBoundingClientRect();
    let inView = r.left >= -0.5 && r.right <= document.documentElement.clientWidth + 0.5;
    for (let box = cell.parentElement; box; box = box.parentElement) {
      if (!['auto', 'scroll', 'hidden'].includes(getComputedStyle(box).overflowX)) continue;
      const b = box.getBoundingClientRect();
      inView = inView && r.left >= b.left - 0.5 && r.right <= b.left + box.clientWidth + 0.5;
    }
    if (!inView) hidden.push(`${table.id || table.className || '?'}: ${cell.innerText.replace(/\s+/g, ' ')}`);
  }
  return {cells: cells.length, hidden: hidden};
})()
"""


def test_truthfulness_is_in_view_at_1280_px(report_runs, browser, tmp_path):
    """Truthfulness, the headline score, is readable in every table of the report and of the
    comparison page without scrolling sideways, in a 1280 px window (the browser fixture's)."""
    from evaluator.report.html import build_comparison

    assert browser.size[0] == 1280
    page = browser.open((report_runs["full"] / "report.html").as_uri())
    page.screenshot(tmp_path / "report-1280.png", full_page=True)
    shown = page.evaluate(TRUTHFULNESS_CELLS)
    # by hand: the scores table's row (label, all, ego) 3, the unjudged banner's row 3, and four
    # breakdowns (domain, query category, dynamism, image quality) of 2 values each under a header: 4 x 3,
    # and the conversations section's rule-set row (label, kddcup2025, crag-mm) 3
    assert shown == {"cells": 3 + 3 + 4 * 3 + 3, "hidden": []}
    assert page.evaluate("document.documentElement.scrollWidth <= document.documentElement.clientWidth")
    compare = build_comparison([report_runs["full"], report_runs["rag_baseline"]], tmp_path / "compare.html")
    page = browser.open(compare.as_uri())
    page.screenshot(tmp_path / "compare-1280.png", full_page=True)
    shown = page.evaluate(TRUTHFULNESS_CELLS)
    # the Table-1 layout: 2 headers (all turns, egocentric) over 2 runs' values, and the paired
    # table's truthfulness row: its label and 2 x (A, B, B - A, interval)
    assert shown == {"cells": 2 + 2 * 2 + 1 + 2 * 4, "hidden": []}

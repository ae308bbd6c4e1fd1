"""The agentic system (agents/agentic/) in whole runs on the mini benchmark, its search pipeline real:

- beside CRUISE in `tools.compare_systems`, on the cpu profile's tiny in-process model (SmolLM2,
  the text protocol; a random-quality model that may never call a tool);
- through `evaluate()` with a served model that calls tools natively (testkit/tool_standins.py, in
  OpenAI's shape), where the report's turn pages show the calls and the stage diagnostics read the
  image search's hits;
- in pre-flight's dry run (`python -m tools.preflight --set system=agentic`, as a user runs it).
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys

from agents.agentic.trace import BRANCHES
from agents.profiles import REPO_ROOT
from evaluator import evaluate
from testkit.in_process import fresh_environment, offline_env
from testkit.tool_standins import ToolCallingStandIn
from tools.compare_systems import main


def read_traces(run) -> list[dict]:
    return [json.loads(line) for line in (run / "traces.jsonl").read_text().splitlines()]


def test_agentic_runs_beside_cruise_in_compare_systems_on_the_tiny_in_process_model(tmp_path):
    out = tmp_path / "out"
    with fresh_environment(offline_env(tmp_path)):
        assert main(["--profile", "cpu", "--systems", "full", "agentic", "--datasets", "single-turn",
                     "--num-conversations", "4", "--output-dir", str(out)]) == 0
    table = (out / "systems.md").read_text()
    assert "| `cruise (full)` |" in table and "| `agentic (full)` |" in table
    run = out / "runs" / "single-turn" / "agentic"
    traces = read_traces(run)
    assert len(traces) == 4 and {t["system"] for t in traces} == {"agentic"}
    for trace in traces:
        assert trace["tool_protocol"] == "text" and trace["tools_offered"] == ["image_search", "web_search"]
        assert isinstance(trace["tool_calls"], list) and trace["branch"] in BRANCHES
        assert "agentic_ask" in trace["stage_ms"] and trace["errors"] == []
        # a turn that answered answers with its model's reply
        if trace["branch"] == "answered":
            assert trace["final_answer"] and trace["agentic_replies"]
    summary = json.loads((run / "run_summary.json").read_text())
    assert summary["agent_summary"]["system"] == "agentic" and summary["stage_fault_turns"] == 0
    assert "Agentic: the model&#39;s searches" in (run / "report.html").read_text()
    assert not (out / "calibration-agentic.json").exists()  # no threshold to calibrate


def test_a_served_model_calling_tools_natively_runs_and_the_report_shows_its_calls(tmp_path):
    out = tmp_path / "run"
    with ToolCallingStandIn("openai") as server:
        result = evaluate(profile="cpu", set={"system": "agentic", "engine": "openai", "vlm_model": "standin-vl",
                                              "router_model": "standin-vl", "vlm_base_url": server.url,
                                              "turn_budget_s": 0},
                          num_conversations=4, eval_model="None", output_dir=str(out), no_progress=True)
    assert result.exit_status == 0 and server.refused() == []
    assert all(e.seen.tools == ["image_search", "web_search"] and e.seen.images == 1 for e in server.exchanges)
    traces = read_traces(out)
    answers = {json.loads(line)["interaction_id"]: json.loads(line) for line in
               (out / "answers.jsonl").read_text().splitlines()}
    assert traces
    for trace in traces:
        [call] = trace["tool_calls"]  # the stand-in searches the photo once, then answers
        assert call["tool"] == "image_search" and call["error"] is None and call["hits"]
        assert trace["tool_protocol"] == "native" and trace["branch"] in ("answered", "abstained")
        assert trace["retrieved"][0]["source"] == "image" and trace["kept_chunks"]
        assert trace["final_answer"] == answers[trace["interaction_id"]]["raw_answer"]
    pages = "".join(p.read_text() for p in (out / "report_turns").glob("*.html"))
    for trace in traces:
        assert trace["tool_calls"][0]["hits"][0]["name"] in pages
    assert pages.count("<b>image_search</b>") == len(traces)
    diagnostics = json.loads((out / "diagnostics.json").read_text())
    assert diagnostics["stages"]["image_retrieval@10"]["labelled"] > 0


def test_preflight_dry_runs_the_agentic_system():
    done = subprocess.run([sys.executable, "-m", "tools.preflight", "--profile", "cpu", "--set", "system=agentic"],
                          cwd=REPO_ROOT, capture_output=True, text=True, timeout=900,
                          env={**os.environ, "HF_HUB_OFFLINE": "1"})
    for name in ("import", "search", "agent load", "batch size", "stage faults"):
        assert re.search(rf"^PASS\s+{name}\b", done.stdout, re.M), done.stdout
    dry_run = re.search(r"^(PASS|FAIL)\s+dry run\s+(.*)$", done.stdout, re.M)
    assert dry_run and "(agentic_ask)" in dry_run.group(2), done.stdout
    # the dry run may fail for this shared machine's speed alone, never for a fault
    assert dry_run.group(1) == "PASS" or dry_run.group(2).startswith("OVER the"), done.stdout

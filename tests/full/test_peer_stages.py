"""The peers' optional stages (the `extended` preset) on the cpu profile's real models: SmolLM2,
MiniLM and the mini benchmark's indices, through `local_evaluation.py` (in this process). Their
readers, fallbacks and counts with scripted engines: tests/test_peer_stages.py.
"""
from __future__ import annotations

import json

import local_evaluation
from testkit.in_process import run_main

# The first N single-turn conversations: the plumbing shows on every turn, so a few suffice (six
# took 49 s on a quiet 2-core machine).
TURNS = 4


def test_extended_runs_on_the_cpu_profile_with_smollm2(tmp_path):
    """SmolLM2 is text-only (the crop and entity prompts reach it without the photo) and rarely
    keeps a format, so this proves the plumbing, not the stages' worth: every turn gets a trace
    with the peer keys, the run summary counts them and the report shows them."""
    out = tmp_path / "out"
    proc = run_main(local_evaluation.main, [  # in this process (testkit/in_process.py)
        "--profile", "cpu", "--preset", "extended", "--dataset-type", "single-turn", "--num-conversations", str(TURNS),
        "--exact-conversations", "--eval-model", "None", "--output-dir", str(out), "--no_progress",
        # plumbing, not time: on a loaded machine the 10 s budget skips the image search, and then
        # nothing below would be checked (tests/full/test_deadline_under_load.py covers the budget)
        "--set", "turn_budget_s=0"],
        env=dict(HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1", TRANSFORMERS_OFFLINE="1"))
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    traces = [json.loads(line) for line in (out / "traces.jsonl").read_text().splitlines()]
    assert len(traces) == TURNS and all(t["preset"] == "extended" and not t["errors"] for t in traces)
    assert all({"route_search", "crops_searched", "sub_queries", "entity_verdicts", "relevance"} <= set(t)
               for t in traces)
    # cpu crop_mode "tiles": every turn that searched images searched the five tiles too
    assert any("image" in t["searches_run"] for t in traces)
    assert all(t["crops_searched"] == ["centre", "tile_NW", "tile_NE", "tile_SW", "tile_SE"]
               for t in traces if "image" in t["searches_run"])
    summary = json.loads((out / "run_summary.json").read_text())
    assert max(summary["engine_calls_per_batch"]) <= 10  # route ... verify: one call per stage at most
    peer = summary["agent_summary"]["peer_stages"]  # the agent's own figures (agents/cruise/trace_view.py cruise_summary)
    assert peer["crops_searched"] == sum(len(t["crops_searched"]) for t in traces)
    assert peer["entities_checked"] == sum(len(t["entity_verdicts"]) for t in traces)
    report = (out / "report.html").read_text()
    assert "What the added stages did" in report

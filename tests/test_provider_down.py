"""A model provider that is down is a fault on every turn, never an answer: CRUISE over the served
engines (the real OpenAI-compatible client, agents/engines/openai_engine.py) pointed at a port
where nothing listens answers every turn "I don't know" under the branch "error", and the run's
scores count no hallucination (a wrong answer costs -1: a fault scored so would corrupt the
number people cite). The run is named a systemic fault and exits so."""
from __future__ import annotations

import json
import socket
from pathlib import Path

from agents.config.loading import load_config
from agents.cruise_agent import CruiseAgent
from agents.engines.base import Engines
from agents.engines.openai_engine import OpenAIChatEngine
from evaluator.harness.faults import SYSTEMIC_FAULT_EXIT_CODE
from testkit.fakes import FunctionReranker
from testkit.in_process import offline_env, run_main

MINI = Path(__file__).resolve().parents[1] / "data" / "crag-mm-mini" / "single-turn"


def closed_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class DownProviderAgent(CruiseAgent):
    """CRUISE whose router and VLM are served by a provider that is down."""

    def __init__(self, search_pipeline=None, config=None):
        url = f"http://127.0.0.1:{closed_port()}/v1"
        engines = Engines(router=OpenAIChatEngine("router", base_url=url, timeout_s=2.0),
                          vlm=OpenAIChatEngine("vlm", base_url=url, timeout_s=2.0, supports_images=True),
                          reranker=FunctionReranker(lambda q, c: 0.5))
        super().__init__(search_pipeline, config or load_config("cpu", "full"), engines=engines)


def test_a_provider_that_is_down_scores_no_hallucination_and_names_the_fault(tmp_path):
    import local_evaluation

    out = tmp_path / "run"
    argv = ["--dataset", str(MINI), "--dataset-type", "single-turn", "--num-conversations", "6",
            "--exact-conversations", "--profile", "cpu", "--agent", f"{__name__}:DownProviderAgent",
            "--search", "none", "--eval-model", "None", "--no_progress", "--display-conversations", "0",
            "--output-dir", str(out), "--set", "warmup_at_load=false"]
    proc = run_main(local_evaluation.main, argv, env=offline_env(tmp_path))
    assert proc.returncode == SYSTEMIC_FAULT_EXIT_CODE, proc.stdout[-3000:] + proc.stderr[-3000:]
    scores = json.loads((out / "scores_dictionary.json").read_text())["all"]
    assert (scores["total"], scores["hallucination"], scores["correct"], scores["miss"]) == (6.0, 0.0, 0.0, 6.0)
    traces = [json.loads(line) for line in (out / "traces.jsonl").read_text().splitlines()]
    assert [t["branch"] for t in traces] == ["error"] * 6 and [t["final_answer"] for t in traces] == ["I don't know"] * 6
    assert all(t["faults"][0]["stage"] == "route" and "ConnectError" in t["faults"][0]["exception"] for t in traces)
    summary = json.loads((out / "run_summary.json").read_text())
    assert summary["stage_fault_turns"] == 6 and summary["systemic_fault"]["stage"] is None

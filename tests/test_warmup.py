"""Warm-up at load (agents/warmup.py; CRUISE's own in agents/cruise/warmup.py): one dummy
batch through every stage when the agent is built, on by default on the GPU profile, kept out of
the first scored batch's ledger and out of what the deadline learns. The peer systems' warm-up:
tests/test_peer_systems.py."""
from __future__ import annotations

from agents.config.loading import load_config
from testkit.scripted_chain import WHERE, batch, make_agent, stages_called

# The scripted VLMs write the paper's "CONFIDENCE: x" CoV reply: every agent here runs the
# paper_finalizer preset over the cpu profile (agents/config/presets.py PRESETS).

MODEL_STAGES = ["route", "summarize", "rerank", "answer", "consistency", "verify"]


def test_warm_up_runs_every_stage_once_at_load_with_the_batch_size():
    agent = make_agent("full", warmup_at_load=True, batch_size=4)
    vlm_calls = agent.engines.vlm.calls  # (stage, requests) of every call so far: the warm-up's
    assert [s for s, _ in agent.engines.router.calls] == ["route"]
    assert vlm_calls == [("summarize", 4), ("answer", 8), ("consistency", 4), ("verify", 4)]
    assert set(agent.warmup_s) == set(MODEL_STAGES) | {"retrieve"}
    # Nothing of it reaches the deadline's estimates or the first scored batch's report.
    assert agent.costs.samples == {}
    agent.batch_generate_response(*batch([WHERE]))
    assert stages_called(agent) == ["route", "summarize", "rerank", "answer", "verify"]
    assert all(len(v) == 1 for v in agent.costs.samples.values())


def test_warm_up_is_on_for_the_gpu_profile_and_off_for_cpu():
    assert load_config("l40s").run.warmup_at_load and not load_config("cpu").run.warmup_at_load
    agent = make_agent("full")  # the cpu profile
    assert agent.warmup_s is None and agent.engines.vlm.calls == []


def test_a_failing_stage_does_not_stop_the_agent_loading():
    agent = make_agent("full", warmup_at_load=True, fail={"answer": lambda request: True})
    assert "answer" in agent.warmup_s and ("verify", 8) in agent.engines.vlm.calls


def warm_agent(pipeline, scored: list, **overrides):
    """A CRUISE agent warmed at load over `pipeline`; its reranker records every (query, chunk)."""
    from agents.cruise_agent import CruiseAgent
    from agents.engines.base import Engines
    from testkit.fakes import FunctionReranker, ScriptedEngine
    from testkit.scripted_chain import VLM_SCRIPT, route

    engines = Engines(ScriptedEngine({"route": route}), ScriptedEngine(VLM_SCRIPT, fail=overrides.pop("fail", None)),
                      FunctionReranker(lambda query, chunk: scored.append((query, chunk)) or 0.5))
    return CruiseAgent(pipeline, engines=engines, profile="cpu", preset="full+paper_finalizer", warmup_at_load=True,
                       batch_size=2, chunker="paper_fields", **overrides)


def test_where_the_search_finds_nothing_the_reranker_is_warmed_on_stand_in_passages_of_a_usual_size():
    from agents.cruise.warmup import PASSAGES
    from agents.warmup import QUESTION
    from testkit.fakes import FakePipeline

    scored = []
    warm_agent(FakePipeline([], None), scored)
    assert len(scored) == 2 * 10 * len(PASSAGES)  # each turn of the batch of 2, ten copies of each
    assert {chunk for _, chunk in scored} == set(PASSAGES)
    assert all(query.startswith(QUESTION) for query, _ in scored)


def test_where_the_search_finds_chunks_the_reranker_is_warmed_on_them():
    from agents.cruise.warmup import PASSAGES
    from testkit.fakes import FakePipeline
    from testkit.scripted_chain import IMAGE_HITS

    scored = []
    warm_agent(FakePipeline(IMAGE_HITS, None), scored)
    chunks = {chunk for _, chunk in scored}
    assert any("Route 24 runs from Pimlico to Camden." in chunk for chunk in chunks)
    assert not chunks & set(PASSAGES)


def test_a_healthy_warm_up_logs_nothing_and_a_failing_stage_logs_its_name_and_exception(caplog):
    from testkit.fakes import FakePipeline

    with caplog.at_level("WARNING", logger="agents.cruise.warmup"):
        healthy = warm_agent(FakePipeline([], None), [])
    assert caplog.records == []
    assert all(isinstance(s, float) and 0 <= s < 60 and s == round(s, 3) for s in healthy.warmup_s.values())
    with caplog.at_level("WARNING", logger="agents.cruise.warmup"):
        warm_agent(FakePipeline([], None), [], fail={"answer": lambda request: True})
    assert [r.getMessage() for r in caplog.records] == ["warm-up: stage answer failed: RuntimeError: scripted failure in answer"]

"""Stage cost priors: what the deadline expects of a stage before it has timed it.

The l40s profile's priors are worked out on paper (agents/config.py); a cold first batch uses
them, and a stage that the prior says cannot finish is not started.
"""
from __future__ import annotations

import pytest

from agents.config import CruiseConfig, l40s_stage_cost_priors, load_config
from agents.cruise.deadline import StageCosts
from tests.test_cruise_chain import WHERE, batch, make_agent, stages_called

CHAIN_STAGES = ["route", "summarize", "retrieve", "rerank", "answer", "consistency", "verify"]


def test_a_prior_stands_in_until_the_stage_is_timed():
    costs = StageCosts(priors={"answer": 2.0})
    assert costs.expect("answer", 8) == 16.0 and costs.expect("verify", 8) == 0.0
    costs.observe("answer", 8, 4.0)  # faster than the prior: the measurement wins
    assert costs.expect("answer", 8) == 4.0
    costs.observe("answer", 4, 4.0)  # then the slowest time seen, as before
    assert costs.expect("answer", 8) == 8.0


def test_l40s_priors_cover_every_stage_and_a_batch_of_8_fits_its_budget():
    cfg = load_config("l40s")
    priors = cfg.stage_cost_priors_s
    assert list(priors) == CHAIN_STAGES and all(v > 0 for v in priors.values())
    budget = cfg.turn_budget_s * cfg.batch_size - cfg.safety_margin_s
    assert sum(priors.values()) * cfg.batch_size < budget
    # Decoding dominates: the answer stage (2 requests per turn, 64 tokens) costs the most.
    assert max(priors, key=priors.get) == "answer"
    assert load_config("cpu").stage_cost_priors_s == {}


def test_l40s_priors_follow_the_generation_lengths():
    base = l40s_stage_cost_priors(CruiseConfig())
    longer = l40s_stage_cost_priors(CruiseConfig(answer_max_tokens=128, cov_full_output=True))
    assert longer["answer"] > base["answer"] and longer["verify"] > base["verify"]
    assert longer["route"] == base["route"]


def test_the_chain_visits_the_stages_the_priors_name():
    agent = make_agent("full")
    agent.batch_generate_response(*batch([WHERE]))
    assert list(agent.last_batch_report["traces"][0]["stage_ms"]) == CHAIN_STAGES


@pytest.mark.parametrize("prior_s, ran", [
    (0.01, ["route", "summarize", "rerank", "answer", "consistency", "verify"]),
    (100.0, ["route", "summarize", "rerank"]),
])
def test_a_cold_first_batch_does_not_start_a_stage_its_prior_says_cannot_finish(prior_s, ran):
    # consistency_skip_identical=False: the scripted answers agree word for word, and this test
    # wants every stage asked unless the deadline stops it
    agent = make_agent("full", stage_cost_priors_s={"answer": prior_s}, consistency_skip_identical=False)
    agent.batch_generate_response(*batch([WHERE]))  # the very first batch: nothing timed yet
    assert stages_called(agent) == ran
    assert agent.last_batch_report["traces"][0]["deadline_cut_before"] == (None if prior_s < 1 else "answer")

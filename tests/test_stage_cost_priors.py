"""Stage cost priors: what the deadline expects of a stage before it has timed it.

The l40s profile's priors are an H100 measurement projected to the L40S
(agents/runtime/cost_priors.py); a cold first batch uses them, and a stage that the prior says
cannot finish is not started. docs/engines.md's table must say what the code computes.
"""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from agents.config.loading import default_config, load_config
from agents.cruise.system import CRUISE
from agents.runtime import cost_priors
from agents.runtime.cost_priors import l40s_stage_cost_priors, stage_priors
from agents.runtime.deadline import StageCosts
from testkit.scripted_chain import WHERE, batch, make_agent, stages_called

# The scripted VLMs write the paper's "CONFIDENCE: x" CoV reply: every agent here runs the
# paper_finalizer preset over the cpu profile (agents/config/presets.py PRESETS).



def priced_on(cfg) -> list[str]:
    """CRUISE's stages that carry a cost prior and that `cfg` switches on, in its list's order:
    what the priors' total and the table's first rows cover."""
    return [s.name for s in CRUISE.stages if s.prior and (s.switch is None or cfg.value(s.switch))]


def test_a_prior_stands_in_until_the_stage_is_timed():
    costs = StageCosts(priors={"answer": 2.0})
    assert costs.expect("answer", 8) == 16.0 and costs.expect("verify", 8) == 0.0
    costs.observe("answer", 8, 4.0)  # faster than the prior: the measurement wins
    assert costs.expect("answer", 8) == 4.0
    costs.observe("answer", 4, 4.0)  # then a high quantile of what was measured (tests/test_deadline.py)
    assert costs.expect("answer", 8) == 8.0


def test_l40s_priors_cover_every_stage_and_a_batch_of_8_fits_its_budget():
    cfg = load_config("l40s")
    priors = stage_priors(CRUISE, cfg)
    # every stage with a prior is priced, switched on or not, search at its own estimated cost;
    # perception and the standalone question have none: the deadline times them on their first run
    assert set(priors) == {s.name for s in CRUISE.stages if s.prior}
    assert {"perceive", "standalone"}.isdisjoint(priors) and priors["retrieve"] == cost_priors.RETRIEVE_S_PER_TURN
    assert all(v > 0 for v in priors.values())
    budget = cfg.run.turn_budget_s * cfg.run.batch_size - cfg.run.safety_margin_s
    assert sum(priors[s] for s in priced_on(cfg)) * cfg.run.batch_size < budget
    # Decoding dominates: the answer stage (2 requests per turn, 64 tokens) costs the most.
    assert max(priors, key=priors.get) == "answer"
    # no prior model on cpu: nothing is priced before it is timed
    assert stage_priors(CRUISE, load_config("cpu", "full+paper_finalizer")) == {}


def test_l40s_priors_follow_the_generation_lengths():
    base = l40s_stage_cost_priors(CRUISE, default_config())
    longer = l40s_stage_cost_priors(CRUISE, default_config(answer_max_tokens=128, cov_full_output=True))
    assert longer["answer"] > base["answer"] and longer["verify"] > base["verify"]
    assert longer["route"] == base["route"]
    # A peer stage follows its own length and requests: three entity checks a turn cost three.
    one = l40s_stage_cost_priors(CRUISE, default_config(entity_check_max=1))["entity_check"]
    assert base["entity_check"] == pytest.approx(3 * one, abs=2e-4)
    assert l40s_stage_cost_priors(CRUISE, default_config(decompose_max_tokens=160))["decompose"] > base["decompose"]


def test_a_peer_systems_stage_is_priced_at_its_own_length():
    # QA-Dragon's verifier is priced like CRUISE's CoV, at QA-Dragon's verify length, not CoV's
    from agents.runtime.system import system_named

    dragon = system_named("qa_dragon")
    cfg = load_config("l40s", "qa_dragon")
    longer = l40s_stage_cost_priors(dragon, cfg.replace(qa_dragon_verify_max_tokens=cfg.value("qa_dragon_verify_max_tokens") * 4))
    assert longer["verify"] > l40s_stage_cost_priors(dragon, cfg)["verify"]
    assert l40s_stage_cost_priors(dragon, cfg)["verify"] != l40s_stage_cost_priors(CRUISE, load_config("l40s"))["verify"]


def test_the_agent_prices_its_stages_at_the_settings_in_force():
    # the priors are computed from the configuration the agent is built with, --set included
    default = stage_priors(CRUISE, load_config("l40s"))
    shorter = stage_priors(CRUISE, load_config("l40s", answer_max_tokens=16))
    assert shorter["answer"] < default["answer"] and shorter["verify"] == default["verify"]
    # a prior set outright wins over the model's; the grounding check costs nothing
    assert stage_priors(CRUISE, load_config("l40s", stage_cost_priors_s={"answer": 9.0}))["answer"] == 9.0
    assert stage_priors(CRUISE, load_config("l40s", cov_mode="grounding"))["verify"] == 0.0


def test_engines_page_table_says_what_the_code_computes():
    page = (Path(__file__).resolve().parent.parent / "docs" / "engines.md").read_text(encoding="utf-8")
    section = page.split("## Stage cost priors", 1)[1].split("\n## ", 1)[0]
    rows = dict(re.findall(r"^\| (\w+) \| ([0-9.]+) \| [0-9.]+ \|$", section, flags=re.M))
    priors = stage_priors(CRUISE, load_config("l40s"))
    assert set(rows) == set(priors) | {"total"}
    for stage, seconds in priors.items():
        assert float(rows[stage]) == pytest.approx(seconds, abs=0.0051), stage
    assert float(rows["total"]) == pytest.approx(sum(priors[s] for s in priced_on(load_config("l40s"))), abs=0.0051)
    assert cost_priors.priors_table(CRUISE, default_config()) in section


def test_priors_project_the_h100_parts_by_the_ratio_of_ceilings():
    # The answer stage: 16 images and the rest of its H100 time are compute, 64 steps decode.
    images = 16 * cost_priors.H100_IMAGE_ENCODE_S
    decode = 64 * cost_priors.H100_DECODE_STEP_S
    rest = cost_priors.H100_STAGE_MEDIAN_S["answer"] - images - decode
    expected = ((images + rest) * 800 / 362 + decode * 3020 / 864) / 8
    assert l40s_stage_cost_priors(CRUISE, default_config())["answer"] == pytest.approx(expected, abs=1e-4)
    # A batch of 8 with photos encodes 40 images.
    assert sum(cost_priors.IMAGES_PER_TURN.values()) * 8 == 40


def test_the_chain_visits_its_stages_in_its_lists_order_and_every_priced_stage_it_switches_on():
    agent = make_agent("full")
    agent.batch_generate_response(*batch([WHERE]))
    ran = list(agent.last_batch_report["traces"][0]["stage_ms"])
    order = CRUISE.stage_names()
    assert ran == sorted(ran, key=order.index) and set(priced_on(agent.config)) <= set(ran)


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


def test_the_ledger_says_which_stage_is_learned_per_request_and_which_per_turn(fake_clock):
    """No flag says whether a stage calls a model: the engines' ledger does. A stage that sent
    requests is learned per request (a run that sent none, every turn skipping it, teaches
    nothing); one that never sent any is learned per turn; an untimed stage starts."""
    from agents.engines.base import CallRecord, Ledger
    from agents.runtime.batch import BatchRun
    from agents.runtime.deadline import Deadline

    clock, ledger = fake_clock, Ledger()
    costs = StageCosts()
    costs.new_batch()

    def ask(group):  # a model stage: two requests a turn, 3 s each
        clock.sleep(6.0 * len(group))
        ledger.record(CallRecord("ask", "chat", requests=2 * len(group), prompt_tokens=0, output_tokens=0, wall_ms=1.0))
        return [None] * len(group)

    def tally(group):  # no model: a few ms a turn
        clock.sleep(0.001 * len(group))
        return [len(group)] * len(group)

    run = BatchRun(4, Deadline(100.0, clock=clock, start=clock()), costs, ledger=ledger)
    assert len(run.guarded("ask", ask, [0, 1, 2, 3])) == 4 and len(run.guarded("tally", tally, [0, 1, 2, 3])) == 4
    assert costs.model_stages == {"ask"} and costs.per_request_s("ask") == pytest.approx(3.0)
    assert costs.per_request_s("tally") == pytest.approx(0.001) and costs.requests_per_turn["tally"] == 1.0
    assert costs.expect("ask", 1) == pytest.approx(6.0)
    run.guarded("ask", lambda group: clock.sleep(0.01) or [None] * len(group), [0, 1])  # sent nothing this time
    assert costs.per_request_s("ask") == pytest.approx(3.0)  # not a sample of a request's cost
    # 5 s left for 4 turns: the model stage (24 s) is not started; the tally, and an untimed stage, are
    short = BatchRun(4, Deadline(5.0, clock=clock, start=clock()), costs, ledger=ledger)
    assert short.guarded("tally", tally, [0, 1, 2, 3]) == {0: 4, 1: 4, 2: 4, 3: 4}
    assert short.guarded("check", tally, [0, 1]) == {0: 2, 1: 2} and short.cut_before is None
    assert short.guarded("ask", ask, [0, 1, 2, 3]) == {} and short.cut_before == "ask"

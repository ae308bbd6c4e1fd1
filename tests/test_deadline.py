"""The deadline's cost estimate (agents/cruise/deadline.py): a decaying high quantile per stage,
per engine request, against the simpler rule of planning with the slowest per-turn time ever seen.

The chain runs for real over scripted engines; a fake clock stands in for time, so that a stage
"takes" exactly the seconds the scenario says and the test is deterministic on a busy machine.
"""
from __future__ import annotations

import pytest

from agents.base_agent import IDK_ANSWER
from agents.runtime.deadline import Deadline, StageCosts
from evaluator.harness.deadline_cuts import cut_stages
from testkit import fakes
from testkit.scripted_chain import WHERE, batch, make_agent

# The scripted VLMs write the paper's "CONFIDENCE: x" CoV reply: every agent here runs the
# paper_finalizer preset over the cpu profile (agents/config/presets.py PRESETS).


class WorstSeenCosts(StageCosts):
    """The simpler rule: the slowest per-turn time seen, else the prior."""

    def expect(self, stage: str, turns: int) -> float:
        worst = getattr(self, "worst", {})
        return worst.get(stage, self.priors.get(stage, 0.0)) * turns

    def observe(self, stage: str, turns: int, seconds: float, requests=None) -> None:
        self.worst = getattr(self, "worst", {})
        if turns > 0:
            self.worst[stage] = max(self.worst.get(stage, 0.0), seconds / turns)


@pytest.fixture
def clock(fake_clock):
    return fake_clock  # tests/conftest.py: ScriptedEngine's sleep advances it


NORMAL = {"route": 0.5, "summarize": 2.0, "answer": 4.0, "consistency": 1.0, "verify": 3.0}
BUDGET_PER_TURN = 6.0  # a batch of 2: 12 s; a normal batch takes 10.5 s


def run_batches(clock, costs: StageCosts, slow_batches: dict[int, dict], batches: int = 14):
    """Per batch: (seconds taken, turns whose stages the deadline cut)."""
    seconds = dict(NORMAL)
    agent = make_agent("full", sleep_s=seconds, safety_margin_s=0.0, engine_margin_s=0.0, turn_budget_s=BUDGET_PER_TURN,
                       consistency_skip_identical=False)
    agent.costs = costs
    out = []
    for b in range(batches):
        seconds.clear()
        seconds.update({**NORMAL, **slow_batches.get(b, {})})
        start = clock()
        agent.batch_generate_response(*batch([WHERE, WHERE]))
        cut = sum(1 for t in agent.last_batch_report["traces"] if t["deadline_cut"])
        out.append((clock() - start, cut))
    return out


def test_after_one_slow_batch_fewer_turns_are_cut_than_with_the_worst_seen_rule(clock):
    # Batch 3 meets a busy machine: its verify call takes 5.5 s (the batch overruns: nothing
    # could foresee it). Every other batch is normal.
    slow = {3: {"verify": 5.5}}
    old = run_batches(clock, WorstSeenCosts(), slow)
    new = run_batches(clock, StageCosts(), slow)
    budget = 2 * BUDGET_PER_TURN
    for runs in (old, new):
        assert [s > budget for s, _ in runs].count(True) == 1 and runs[3][0] > budget
        assert all(cut == 0 for _, cut in runs[:4])
    # The old rule expects 5.5 s of verify for good: every later batch cuts it.
    assert all(cut == 2 for _, cut in old[4:])
    # The new one forgets the slow sample and verifies again; no later batch overruns.
    old_cut, new_cut = sum(c for _, c in old[4:]), sum(c for _, c in new[4:])
    assert new_cut < old_cut and all(cut == 0 for _, cut in new[-3:])
    assert all(s <= budget for s, _ in new[4:])


def test_a_slower_machine_shows_at_once():
    costs = StageCosts()
    for _ in range(5):
        costs.new_batch()
        costs.observe("verify", 8, 8 * 0.3, requests=8)
    assert costs.expect("verify", 8) == pytest.approx(2.4)
    costs.new_batch()
    costs.observe("verify", 8, 8 * 0.9, requests=8)  # one slower batch: the estimate follows at once
    assert costs.expect("verify", 8) == pytest.approx(7.2)
    for _ in range(4):  # then normal ones: the slow sample stops counting after four
        costs.new_batch()
        costs.observe("verify", 8, 8 * 0.3, requests=8)
    assert costs.expect("verify", 8) == pytest.approx(2.4)


def test_the_estimate_is_per_request_and_scales_with_requests_per_turn():
    costs = StageCosts(priors={"answer": 9.0})
    costs.new_batch()
    assert costs.expect("answer", 4) == 36.0  # the prior, per turn, until measured
    costs.observe("answer", 4, 2.0, requests=8)  # two requests per turn, 0.25 s each
    assert costs.expect("answer", 6) == pytest.approx(6 * 2 * 0.25)
    # A run of a stage the ledger has seen call a model that sent no request (every turn skipped
    # it) is not a sample of a request's cost.
    costs.observe("answer", 8, 0.001, requests=0)
    assert costs.samples["answer"] == [(0.25, 1)]
    # A stage the ledger never saw send a request counts one per turn.
    costs.observe("retrieve", 4, 1.0, requests=0)
    assert costs.expect("retrieve", 8) == pytest.approx(2.0) and costs.model_stages == {"answer"}
    costs.observe("perceive", 4, 0.4)  # no ledger at all: per turn too
    assert costs.expect("perceive", 2) == pytest.approx(0.2)


class DeadlineBoundEngine(fakes.ScriptedEngine):
    """A scripted engine that keeps the engines' contract with the deadline: a call that would
    outlive `seconds_left()` takes only what is left and returns its requests cut."""

    def _generate(self, requests, sampling):
        from agents.engines.base import deadline_cut_result, seconds_left

        wanted, left = self.sleep_s.get(self._stage, 0.0), seconds_left()
        if left is None or wanted <= left:
            return super()._generate(requests, sampling)
        fakes.time.sleep(max(left, 0.0))
        return [deadline_cut_result() for _ in requests]


def test_an_engine_cut_ends_the_batch_inside_its_budget_and_the_trace_says_where(clock):
    # No estimate foresees it: the answer call of the first batch takes 30 s of a 12 s budget.
    seconds = {**NORMAL, "answer": 30.0}
    agent = make_agent("full", sleep_s=seconds, safety_margin_s=0.0, engine_margin_s=0.5,
                       turn_budget_s=BUDGET_PER_TURN, consistency_skip_identical=False)
    agent.engines.vlm.__class__ = DeadlineBoundEngine
    start = clock()
    answers = agent.batch_generate_response(*batch([WHERE, WHERE]))
    assert clock() - start <= 2 * BUDGET_PER_TURN
    traces = agent.last_batch_report["traces"]
    assert all(t["deadline_cut"] and t["deadline_cut_during"] == "answer" for t in traces)
    assert answers == [IDK_ANSWER, IDK_ANSWER]  # the cut answers read as unreadable: no answer
    assert [c["stage"] for c in agent.last_batch_report["engine_calls"]] == ["route", "summarize", "rerank", "answer"]
    # what the evaluator's notice says of these traces (evaluator/harness/deadline_cuts.py)
    assert cut_stages(traces + [{"deadline_cut": True, "deadline_cut_before": "consistency"},
                                {"deadline_cut": False, "deadline_cut_before": None}]) == {
        "during answer": 2, "before consistency": 1}


def test_a_stage_not_timed_lately_is_priced_at_its_prior_else_0_never_at_another_stages_cost():
    costs = StageCosts()
    costs.new_batch()
    assert costs.expect("route", 8) == 0.0  # nothing measured yet: the engines' own limit guards it
    costs.observe("summarize", 8, 1.6, requests=8)  # 0.2 s a request
    costs.observe("draft", 8, 40.0, requests=8)  # a long step: 5 s a request
    assert costs.expect("summarize", 8) == pytest.approx(1.6)
    assert costs.expect("fine_rerank", 8) == 0.0  # not timed yet: tried, not charged the draft's cost
    for _ in range(8):  # its sample ages out while it is not asked
        costs.new_batch()
    costs.observe("draft", 8, 40.0, requests=8)
    assert costs.per_request_s("summarize") is None and costs.expect("summarize", 8) == 0.0  # tried again
    # A prior, where the profile has one, still comes first.
    assert StageCosts(priors={"summarize": 0.1}).expect("summarize", 8) == pytest.approx(0.8)


def test_the_budget_counts_the_time_spent_reading_the_inputs(clock, monkeypatch):
    """The evaluator times the whole call: seconds spent decoding and shrinking the images (slow on
    a loaded machine) come out of the batch's budget, and the stages after them are cut to fit."""
    from agents import cruise_agent

    prepare = cruise_agent.prepare_turns

    def slow_prepare(*args, **kwargs):
        clock.sleep(8.0)  # of the batch's 12 s
        return prepare(*args, **kwargs)

    monkeypatch.setattr(cruise_agent, "prepare_turns", slow_prepare)
    agent = make_agent("full", sleep_s=dict(NORMAL), safety_margin_s=0.0, engine_margin_s=0.0,
                       turn_budget_s=BUDGET_PER_TURN, consistency_skip_identical=False)
    agent.engines.vlm.__class__ = DeadlineBoundEngine
    agent.engines.router.__class__ = DeadlineBoundEngine
    for _ in range(2):  # cold (nothing timed yet), then with the stages' costs learned
        start = clock()
        agent.batch_generate_response(*batch([WHERE, WHERE]))
        assert clock() - start <= 2 * BUDGET_PER_TURN
        assert all(t["deadline_cut"] for t in agent.last_batch_report["traces"])


def test_a_stage_is_expected_over_the_turns_it_asks_only(fake_clock):
    """skip_decided_turns: 1 of 8 turns needs the answer stage. At 2 s a request (2 a turn) it
    costs 4 s, which fits the 6 s left, where all 8 turns (32 s) would not."""
    from agents.engines.base import Ledger
    from agents.runtime.batch import BatchRun
    from agents.runtime.deadline import Deadline

    clock = fake_clock
    costs = StageCosts()
    costs.observe("answer", 1, 4.0, 2)  # an earlier batch: one turn, 2 requests, 4 s
    asked = [False] * 7 + [True]
    run = BatchRun(8, Deadline(6.0, clock=clock), costs, ledger=Ledger())

    def answer(group):
        clock.sleep(4.0)
        return ["answered" if asked[i] else "skipped" for i in group]

    out = run.guarded("answer", answer, [i for i in range(8) if asked[i]])
    assert run.cut_before is None and out == {7: "answered"}
    # over all 8 turns the same stage is expected at 32 s and does not start
    again = BatchRun(8, Deadline(6.0, clock=clock), costs, ledger=Ledger())
    assert again.guarded("answer", answer, list(range(8))) == {} and again.cut_before == "answer"


def test_a_stage_may_start_only_while_more_than_its_expected_cost_is_left():
    now = [100.0]
    deadline = Deadline(10.0, clock=lambda: now[0], start=95.0)  # began 5 s ago: 5 s left
    assert deadline.remaining() == 5.0
    assert deadline.allows(4.99) and not deadline.allows(5.0)  # exactly what is left is no margin
    now[0] = 106.0
    assert deadline.remaining() == -1.0 and not deadline.allows(0.0)


def test_a_sample_is_forgotten_once_its_weight_falls_below_the_floor_counted_from_its_own_batch():
    costs = StageCosts(decay=0.5, min_weight=0.25)  # weights 1, 0.5, 0.25 (kept), 0.125 (gone)
    for _ in range(3):
        costs.new_batch()
    costs.observe("verify", 1, 2.0)  # measured in batch 3, not batch 0
    costs.new_batch()
    costs.new_batch()
    assert costs.per_request_s("verify") == 2.0  # two batches old: weight exactly the floor, kept
    costs.new_batch()
    assert costs.per_request_s("verify") is None and costs.batch == 6


def test_the_quantile_is_the_smallest_value_whose_weight_reaches_it():
    costs = StageCosts(quantile=0.5)
    for seconds in (3.0, 1.0):
        costs.observe("answer", 1, seconds)
    assert costs.per_request_s("answer") == 1.0  # the lower of two equal weights reaches one half
    costs.observe("answer", 1, 5.0)
    assert costs.per_request_s("answer") == 3.0
    single = StageCosts()
    single.observe("route", 2, 0.5)
    assert single.per_request_s("route") == 0.25


def test_requests_per_turn_is_the_most_seen_and_a_run_of_skipped_turns_lowers_it_from_none():
    costs = StageCosts()
    costs.observe("consistency", 4, 2.0, requests=2)  # half the turns skipped: 0.5 request per turn
    assert costs.expect("consistency", 4) == pytest.approx(2.0)
    costs.observe("answer", 2, 4.0, requests=4)
    costs.observe("answer", 2, 1.0, requests=2)  # fewer requests later: the most seen stays
    assert costs.requests_per_turn["answer"] == 2.0
    costs.observe("retrieve", 1, 3.0, requests=1)  # one request: a sample like any other
    assert costs.per_request_s("retrieve") == 3.0
    costs.observe("rerank", 0, 1.0, requests=3)  # no turn served: nothing learnt
    assert "rerank" not in costs.samples and "rerank" not in costs.requests_per_turn


# --- what run_summary.json says of the cut turns (evaluator/harness/deadline_cuts.py) -------------

def _row(interaction_id: str, session_id: str, turn_idx: int, outcome: str, ego: bool) -> dict:
    """A judged turn as evaluator/scoring/scores.py reads it: correct, miss or hallucination."""
    return {"interaction_id": interaction_id, "session_id": session_id, "turn_idx": turn_idx, "is_ego": ego,
            "is_exact_match": outcome == "correct", "is_correct": outcome == "correct",
            "is_miss": outcome == "miss", "is_semantically_correct": outcome == "correct"}


# conversation a (not egocentric): a0 correct, a1 cut and abstained, a2 cut and correct;
# conversation b (egocentric): b0 cut and hallucinated, b1 not cut and abstained.
CUT_ROWS = [_row("a0", "a", 0, "correct", False), _row("a1", "a", 1, "miss", False),
            _row("a2", "a", 2, "correct", False), _row("b0", "b", 0, "hallucination", True),
            _row("b1", "b", 1, "miss", True)]


def _traces(budget):
    return [{"interaction_id": "a0", "deadline_cut": False, "turn_budget_s": budget},
            {"interaction_id": "a2", "deadline_cut": True, "deadline_cut_before": "verify", "turn_budget_s": budget},
            {"interaction_id": "a1", "deadline_cut": True, "deadline_cut_during": "answer", "turn_budget_s": budget},
            {"interaction_id": "b0", "deadline_cut": True, "deadline_cut_during": "answer",
             "deadline_cut_before": "verify", "turn_budget_s": budget},
            # "cut" only where the trace says True; a trace without its turn's id names no turn
            {"interaction_id": "b1", "deadline_cut": "yes", "turn_budget_s": budget},
            {"deadline_cut": True, "deadline_cut_during": "route"}]


def test_the_cut_turns_are_counted_placed_and_scored_apart_from_the_others():
    from evaluator.harness.deadline_cuts import deadline_cut_report
    from evaluator.scoring.rules import rule_set

    report = deadline_cut_report(CUT_ROWS, _traces(6.0), rule_set(None))
    assert (report["turns"], report["of_turns"], report["cut_answered"]) == (3, 5, 2)
    assert list(report["where"].items()) == [("during answer", 2), ("before verify", 1)]  # most first
    assert report["turn_budget_s"] == [6.0] and report["no_budget_flag"] == "--set turn_budget_s=0"
    assert report["budget"] == "6 s a turn (tighter than the competition's 10 s)"
    cut, kept = report["scores_cut"], report["scores_not_cut"]
    assert [cut["all"][k] for k in ("total", "correct", "miss", "hallucination")] == [3, 1, 1, 1]
    assert [cut["ego"][k] for k in ("total", "correct", "miss", "hallucination")] == [1, 0, 0, 1]
    assert [kept["all"][k] for k in ("total", "correct", "miss", "hallucination")] == [2, 1, 1, 0]
    assert kept["all"]["truthfulness_score"] == pytest.approx(0.5)
    assert report["notice"] == (
        "The deadline cut 3 of 5 turns, at 6 s a turn (tighter than the competition's 10 s): during answer 2, "
        "before verify 1. 1 of them were abstained for time, not for want of evidence, so the scores above mix "
        "the chain's own abstentions with the machine's speed. Turns not cut: all 2 turns: accuracy 50.0%, "
        "hallucination rate 0.0%, missing 50.0%, truthfulness +0.500; egocentric 1 turns: accuracy 0.0%, "
        "hallucination rate 0.0%, missing 100.0%, truthfulness +0.000. Run the same turns without the budget: "
        "add --set turn_budget_s=0 (the competition's 10 s a turn then no longer holds).")


def test_the_budget_is_each_one_the_traces_name_or_said_unknown():
    from evaluator.harness.deadline_cuts import deadline_cut_report, turn_budgets
    from evaluator.scoring.rules import rule_set

    mixed = _traces(6.0)[:3] + _traces(0)[3:]
    assert deadline_cut_report(CUT_ROWS, mixed, rule_set(None))["budget"].startswith(
        "none (turn_budget_s 0: the relaunched benchmark has no time limit; these timings are not the "
        "competition's 10 s a turn); 6 s a turn (tighter")
    unsaid = [{k: v for k, v in t.items() if k != "turn_budget_s"} for t in _traces(6.0)]
    report = deadline_cut_report(CUT_ROWS, unsaid, rule_set(None))
    assert report["turn_budget_s"] == [] and report["budget"] == "the agent's budget (its traces do not say which)"
    assert report["notice"].startswith("The deadline cut 3 of 5 turns, at the agent's budget (its traces do not")
    # budgets: each distinct number once, in order; a trace that is no dict or gives no number is skipped
    assert turn_budgets([{"turn_budget_s": 10}, None, {"turn_budget_s": "6"}, {"turn_budget_s": 2.5},
                         {"turn_budget_s": 10.0}, {}]) == [2.5, 10]


def test_no_cut_turn_gives_no_report():
    from evaluator.harness.deadline_cuts import deadline_cut_report
    from evaluator.scoring.rules import rule_set

    assert deadline_cut_report(CUT_ROWS, [{"interaction_id": "a0", "deadline_cut": False}], rule_set(None)) is None
    # a cut trace whose turn is not among the scored rows (a turn left out) cuts nothing here
    assert deadline_cut_report(CUT_ROWS[:1], [{"interaction_id": "zz", "deadline_cut": True}], rule_set(None)) is None
    assert cut_stages([{"deadline_cut": True}, {"deadline_cut": True, "deadline_cut_during": ""},
                       {"deadline_cut": 1, "deadline_cut_during": "answer"}]) == {"unnamed stage": 2}


@pytest.mark.parametrize("rules_name, correct_after_two_wrong", [("kddcup2025", 0), ("crag-mm", 1)])
def test_the_cut_and_the_other_turns_are_scored_under_the_runs_rule_set(rules_name, correct_after_two_wrong):
    """Two wrong turns, then a right one, among the cut turns and among the others: kddcup2025
    counts the third a miss after the multi-turn cut, crag-mm counts it correct (scores.py)."""
    from evaluator.harness.deadline_cuts import deadline_cut_report
    from evaluator.scoring.rules import rule_set

    rows = [_row(f"{s}{i}", s, i, outcome, True)
            for s in ("c", "k") for i, outcome in enumerate(("hallucination", "hallucination", "correct"))]
    traces = [{"interaction_id": i, "deadline_cut": True} for i in ("c0", "c1", "c2")]
    report = deadline_cut_report(rows, traces, rule_set(rules_name))
    assert report["cut_answered"] == 2 + correct_after_two_wrong
    for scores in (report["scores_cut"], report["scores_not_cut"]):
        assert scores["all"]["correct"] == correct_after_two_wrong
        assert scores["all"]["miss"] == 1 - correct_after_two_wrong


def test_each_stage_is_counted_once_per_cut_turn_after_turns_not_cut():
    traces = [{"deadline_cut": False, "deadline_cut_during": "route"},
              {"deadline_cut": True, "deadline_cut_before": "verify"},
              {"deadline_cut": True},
              {"deadline_cut": True, "deadline_cut_before": "verify"},
              {"deadline_cut": True}]
    assert cut_stages(traces) == {"before verify": 2, "unnamed stage": 2}

"""What a run says of the turns its judge left without a verdict (evaluator/harness/unjudged.py),
on hand-made judged rows: the rejudge command as a shell reads it, the causes, the scores with
those turns left out, the notice, and the exit code."""
from __future__ import annotations

import shlex
from pathlib import Path

import pytest

from evaluator.harness.unjudged import (
    UNJUDGED_EXIT_CODE,
    cause_text,
    exit_code,
    rejudge_command,
    scores_text,
    unjudged_report,
)
from evaluator.scoring.rules import rule_set


def _row(interaction_id: str, session_id: str, turn_idx: int, outcome: str, ego: bool) -> dict:
    return {"interaction_id": interaction_id, "session_id": session_id, "turn_idx": turn_idx, "is_ego": ego,
            "is_exact_match": outcome == "correct", "is_correct": outcome == "correct",
            "is_miss": outcome == "miss", "is_semantically_correct": outcome == "correct"}


# a: a0 correct, a1 unjudged (counted a hallucination); b (egocentric): b0 miss, b1 unjudged
ROWS = [_row("a0", "a", 0, "correct", False), _row("a1", "a", 1, "hallucination", False),
        _row("b0", "b", 0, "miss", True), _row("b1", "b", 1, "hallucination", True)]
UNJUDGED = {"a1", "b1"}


def test_the_rejudge_command_runs_as_printed_with_the_judges_own_flags():
    out = Path("/runs/my run")
    assert rejudge_command(out) == "python local_evaluation.py --rejudge --output-dir '/runs/my run'"
    command = rejudge_command(out, "my judge", "http://127.0.0.1:8000/v1")
    assert shlex.split(command)[3:] == ["--output-dir", "/runs/my run", "--eval-model", "my judge",
                                        "--eval-base-url", "http://127.0.0.1:8000/v1"]
    assert rejudge_command(out, None, "http://h/v1").endswith("'/runs/my run' --eval-base-url http://h/v1")
    assert rejudge_command(out, "", "") == rejudge_command(out)


def test_the_cause_names_each_reason_the_counts_give():
    assert cause_text({"judge_failures": 2, "judge_not_asked": 3}, llm_judge=False) == "no LLM judge was set"
    assert cause_text({"judge_failures": 2, "judge_not_asked": 3}, llm_judge=True) == (
        "the judge failed every attempt on 2; 3 were not sent to it after it gave up")
    assert cause_text({"judge_failures": 1}, llm_judge=True) == "the judge failed every attempt on 1"
    assert cause_text({"judge_failures": 0, "judge_not_asked": 4}, llm_judge=True) == (
        "4 were not sent to it after it gave up")
    assert cause_text({}, llm_judge=True) == "the judge gave no verdict"


def test_the_scores_text_shows_each_subset_that_has_turns():
    assert scores_text({}) == "0 turns"
    assert scores_text({"all": {"total": 0.0}, "ego": None}) == "0 turns"
    one = {"total": 1.0, "accuracy": 1.0, "hallucination_rate": 0.0, "missing": 0.0, "truthfulness_score": 0.0}
    assert scores_text({"all": one, "ego": {"total": 0.0}}) == (
        "all 1 turns: accuracy 100.0%, hallucination rate 0.0%, missing 0.0%, truthfulness +0.000")
    assert scores_text({"all": one, "ego": one}).count("turns:") == 2
    assert scores_text({"ego": one}).startswith("egocentric 1 turns: accuracy 100.0%")


def test_no_report_when_every_turn_has_its_verdict():
    assert unjudged_report(ROWS, set(), rule_set(None), Path("out"), {}, llm_judge=True) is None


def test_the_report_leaves_the_unjudged_turns_out_and_says_how_to_judge_them_again():
    rules = rule_set(None)
    counts = {"needing_judge": 3, "judge_failures": 2, "judge_gave_up": "the judge failed every attempt on 2"}
    report = unjudged_report(ROWS, UNJUDGED, rules, Path("out"), counts, llm_judge=True,
                             judge_model="other-judge", judge_base_url="http://h/v1")
    assert report["turns"] == 2 and report["llm_judge"] is True
    assert report["gave_up"] == "the judge failed every attempt on 2"
    assert report["cause"] == "the judge failed every attempt on 2"
    assert report["rejudge_command"] == (
        "python local_evaluation.py --rejudge --output-dir out --eval-model other-judge --eval-base-url http://h/v1")
    left = report["scores_without_unjudged"]
    assert [left["all"][k] for k in ("total", "correct", "miss", "hallucination")] == [2, 1, 1, 0]
    assert [left["ego"][k] for k in ("total", "correct", "miss", "hallucination")] == [1, 0, 1, 0]
    assert report["notice"] == (
        "2 of 3 turns that needed the judge have no verdict (the judge failed every attempt on 2). They count "
        "as not correct (hallucinated), as the official evaluator counts a failed judgement: accuracy and "
        "truthfulness are lower bounds, the hallucination rate an upper one. With them left out: all 2 turns: "
        "accuracy 50.0%, hallucination rate 0.0%, missing 50.0%, truthfulness +0.500; egocentric 1 turns: "
        "accuracy 0.0%, hallucination rate 0.0%, missing 100.0%, truthfulness +0.000. Judge them again: "
        "python local_evaluation.py --rejudge --output-dir out --eval-model other-judge --eval-base-url http://h/v1")


def test_the_rule_sets_own_judge_is_not_named_and_a_run_without_a_judge_is_told_to_set_one():
    rules = rule_set("crag-mm")
    report = unjudged_report(ROWS, UNJUDGED, rules, Path("out"), {}, llm_judge=False, judge_model=rules.judge_model)
    assert report["rejudge_command"] == "python local_evaluation.py --rejudge --output-dir out"
    assert report["gave_up"] is None and report["cause"] == "no LLM judge was set"
    assert report["notice"].startswith("2 of 2 turns that needed the judge have no verdict (no LLM judge was set).")
    assert report["notice"].endswith(
        "Judge them again: set OPENAI_API_KEY (or add --eval-base-url URL), then "
        "python local_evaluation.py --rejudge --output-dir out")


@pytest.mark.parametrize("rules_name, correct", [("kddcup2025", 0), ("crag-mm", 1)])
def test_the_left_out_scores_follow_the_runs_rule_set(rules_name, correct):
    """Two wrong turns and a right one stay once the unjudged turn is left out: kddcup2025 counts
    the third a miss after the multi-turn cut, crag-mm counts it correct."""
    rows = [_row(f"c{i}", "c", i, outcome, False)
            for i, outcome in enumerate(("hallucination", "hallucination", "hallucination", "correct"))]
    report = unjudged_report(rows, {"c2"}, rule_set(rules_name), Path("out"), {}, llm_judge=True)
    assert report["scores_without_unjudged"]["all"]["correct"] == correct


def test_only_a_run_whose_llm_judge_left_turns_exits_with_the_unjudged_code():
    assert exit_code({"unjudged": {"turns": 2, "llm_judge": True}}) == UNJUDGED_EXIT_CODE == 3
    assert exit_code({"unjudged": {"turns": 2, "llm_judge": False}}) == 0
    assert exit_code({"unjudged": {"turns": 0, "llm_judge": True}}) == 0
    assert exit_code({"unjudged": None}) == 0 and exit_code({}) == 0

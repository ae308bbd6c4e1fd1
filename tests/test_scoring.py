"""Scoring on hand-made turn tables whose scores were worked out by hand."""
import pytest

from evaluation.scoring import SCORE_KEYS, apply_conversation_rules, needs_judge, score_rows, verdict_fields


def turn(session, idx, answer, truth, verdict=None, ego=False):
    row = {"session_id": session, "interaction_id": f"{session}-{idx}", "turn_idx": idx, "is_ego": ego,
           "query": "q", "ground_truth": truth, "agent_response": answer}
    row.update(verdict_fields(answer, truth, verdict))
    return row


def test_verdict_fields_follow_the_official_rules():
    assert verdict_fields("  PARIS ", "paris", None) == {
        "is_exact_match": True, "is_correct": True, "is_miss": False,
        "is_semantically_correct": True, "api_response": None}
    assert verdict_fields("Well, I DON'T KNOW.", "x", True)["is_miss"] is True
    assert verdict_fields("Well, I DON'T KNOW.", "x", True)["is_correct"] is False  # judge not used
    judged = verdict_fields("The capital is Paris", "Paris", True)
    assert judged["is_correct"] and judged["is_semantically_correct"] and judged["api_response"] == {"accuracy": True}
    failed = verdict_fields("The capital is Paris", "Paris", None)  # judge gave no verdict
    assert not failed["is_correct"] and not failed["is_miss"] and failed["api_response"] is None
    assert needs_judge("The capital is Paris", "Paris") and not needs_judge("paris", "Paris")
    assert not needs_judge("i don't know", "Paris")


def test_single_turn_table():
    rows = [
        turn("a", 0, "Paris", "paris"),              # exact match
        turn("b", 0, "It is Rome", "Rome", True),    # judge: correct
        turn("c", 0, "Berlin", "Bonn", False),       # judge: wrong -> hallucination
        turn("d", 0, "I don't know", "Oslo"),        # miss
        turn("e", 0, "Madrid?", "Lisbon", None),     # judge failed -> hallucination
    ]
    scored, s = score_rows(rows)
    assert s == {
        "total": 5.0, "correct_exact": 1.0, "correct": 2.0, "miss": 1.0, "hallucination": 2.0,
        "exact_match": 0.2, "accuracy": 0.4, "missing": 0.2, "hallucination_rate": 0.4,
        "truthfulness_score": pytest.approx(0.0), "mean_multi_turn_conversation_score": pytest.approx(0.0),
    }
    assert list(s) == SCORE_KEYS
    assert [r["is_hallucination"] for r in scored] == [False, False, True, False, True]
    assert [r["multi_turn_conversation_score"] for r in scored] == [1.0, 1.0, -1.0, 0.0, -1.0]


def test_two_consecutive_incorrect_turns_make_the_rest_missing():
    rows = [  # given out of order on purpose: scoring sorts by (session_id, turn_idx)
        turn("s", 3, "Tiger", "tiger"),            # exact, but after the cut -> miss
        turn("s", 0, "Sure: a lion", "lion", True),
        turn("s", 2, "i don't know", "x"),          # second incorrect in a row: cut from here on
        turn("s", 1, "a cat", "a dog", False),
        turn("s", 4, "big cat", "big cat", None),
    ]
    scored, scores = apply_conversation_rules(rows)
    assert [r["turn_idx"] for r in scored] == [0, 1, 2, 3, 4]
    assert [r["is_correct"] for r in scored] == [True, False, False, False, False]
    assert [r["is_miss"] for r in scored] == [False, False, True, True, True]
    assert [r["is_exact_match"] for r in scored] == [False, False, False, False, False]
    assert [r["is_hallucination"] for r in scored] == [False, True, False, False, False]
    assert scores == {"s": pytest.approx(1 / 5 - 1 / 5)}
    # the input rows are left untouched
    assert next(r for r in rows if r["turn_idx"] == 3)["is_exact_match"] is True


def test_two_consecutive_idk_also_trigger_the_cut_and_only_the_first_pair_counts():
    rows = [turn("t", 0, "I don't know", "a"), turn("t", 1, "I don't know", "b"),
            turn("t", 2, "c", "c"), turn("t", 3, "nope", "d", False), turn("t", 4, "no", "e", False)]
    scored, _ = apply_conversation_rules(rows)
    assert [r["is_miss"] for r in scored] == [True, True, True, True, True]
    assert not any(r["is_correct"] or r["is_hallucination"] for r in scored)
    # an incorrect pair at the very end has nothing after it to cut
    rows = [turn("u", 0, "x", "x"), turn("u", 1, "no", "y", False), turn("u", 2, "no", "z", False)]
    scored, scores = apply_conversation_rules(rows)
    assert [r["is_hallucination"] for r in scored] == [False, True, True]
    assert scores["u"] == pytest.approx(1 / 3 - 2 / 3)


def test_multi_session_scores_and_ego_subset():
    rows = [
        turn("e1", 0, "yes", "yes", ego=True), turn("e1", 1, "wrong", "right", False, ego=True),
        turn("n1", 0, "I don't know", "k"), turn("n1", 1, "bad", "good", False),
        turn("n1", 2, "good", "good"),  # cut -> miss
        turn("e2", 0, "fine answer", "fine", True, ego=True),
    ]
    _, s = score_rows(rows)
    # all: 6 turns; correct e1/0, e2/0 = 2; miss n1/0, n1/2 = 2; hallucination e1/1, n1/1 = 2
    assert (s["total"], s["correct"], s["miss"], s["hallucination"], s["correct_exact"]) == (6, 2, 2, 2, 1)
    assert s["truthfulness_score"] == pytest.approx((2 * 2 + 2) / 6 - 1)
    # conversations: e1 = 1/2 - 1/2 = 0; n1 = 0 - 1/3; e2 = 1
    assert s["mean_multi_turn_conversation_score"] == pytest.approx((0 - 1 / 3 + 1) / 3)
    _, ego = score_rows([r for r in rows if r["is_ego"]])
    assert (ego["total"], ego["correct"], ego["miss"], ego["hallucination"]) == (3, 2, 0, 1)
    assert ego["accuracy"] == pytest.approx(2 / 3)
    assert ego["truthfulness_score"] == pytest.approx(1 / 3)
    assert ego["mean_multi_turn_conversation_score"] == pytest.approx(0.5)


def test_total_of_one_gives_zero_truthfulness_and_empty_gives_zeros():
    _, one = score_rows([turn("a", 0, "Paris", "Paris")])
    assert one["accuracy"] == 1.0 and one["truthfulness_score"] == 0.0  # official rule
    assert one["mean_multi_turn_conversation_score"] == 1.0
    _, empty = score_rows([])
    assert empty == {k: 0.0 for k in SCORE_KEYS}


def test_idk_that_is_also_an_exact_match_keeps_the_official_arithmetic():
    # ground truth "I don't know" answered verbatim: correct AND miss; the official code
    # computes hallucination = total - (correct + miss), which undercounts here
    _, s = score_rows([turn("a", 0, "I don't know", "i don't know"), turn("b", 0, "x", "y", False)])
    assert (s["correct"], s["miss"], s["hallucination"]) == (1.0, 1.0, 0.0)
    assert s["truthfulness_score"] == pytest.approx((2 + 1) / 2 - 1)

"""Scoring on hand-made turn tables whose scores were worked out by hand, and the official
scoring rules, written out here independently, run on the CSVs our finalize step writes."""
import json
import math

import pandas as pd
import pytest

from evaluator.harness.outputs import finalize
from evaluator.scoring.judge import Judge
from evaluator.scoring.rules import RULE_SETS
from evaluator.scoring.scores import (
    OFFICIAL_TURN_COLUMNS,
    SCORE_KEYS,
    apply_conversation_rules,
    breakdown,
    is_miss,
    needs_judge,
    score_rows,
    verdict_fields,
)
from testkit.scripted_agent import FakeOpenAIServer

CRAG_MM = RULE_SETS["crag-mm"]


def turn(session, idx, answer, truth, verdict=None, ego=False, rules=None):
    row = {"session_id": session, "interaction_id": f"{session}-{idx}", "turn_idx": idx, "is_ego": ego,
           "query": "q", "ground_truth": truth, "agent_response": answer}
    row.update(verdict_fields(answer, truth, verdict, rules))
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


def test_breakdown_truthfulness_is_worked_by_hand_per_label():
    """The figures only. Where report.html lays the column out (right after the turn count) is
    checked by the full tier alone, in Chromium (tests/full/test_report.py): moving it last passes
    this tier."""
    def labelled(domain, i, answer, truth, verdict=None):
        return {**turn(f"{domain}{i}", 0, answer, truth, verdict), "domain": domain}

    food = ([labelled("food", i, "Paris", "paris") for i in range(3)]                       # 3 correct
            + [labelled("food", i, "I don't know", "Oslo") for i in (3, 4)]                 # 2 missing
            + [labelled("food", 5, "Berlin", "Bonn", False)])                               # 1 wrong
    animal = [labelled("animal", 0, "cat", "cat")] + [labelled("animal", i, "dog", "fox", False) for i in (1, 2, 3)]
    scored, _ = score_rows(food + animal)
    table = {entry["domain"]: entry for entry in breakdown(scored, "domain")}
    # truthfulness = (2 * correct + missing) / count - 1, the official score's form, per label
    assert (table["food"]["count"], table["food"]["accuracy"], table["food"]["missing"]) == (6, 0.5, pytest.approx(2 / 6))
    assert table["food"]["hallucination"] == pytest.approx(1 / 6)
    assert table["food"]["truthfulness"] == pytest.approx((2 * 3 + 2) / 6 - 1)   # +1/3
    assert table["animal"]["truthfulness"] == pytest.approx((2 * 1 + 0) / 4 - 1)  # -1/2


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


def test_two_consecutive_wrong_answers_make_every_later_turn_missing():
    rows = [  # given out of order on purpose: scoring sorts by (session_id, turn_idx)
        turn("s", 3, "Tiger", "tiger"),            # exact, but after the cut -> miss
        turn("s", 0, "Sure: a lion", "lion", True),
        turn("s", 2, "a wolf", "a fox", False),     # second wrong answer in a row: the cut starts after it
        turn("s", 1, "a cat", "a dog", False),
        turn("s", 5, "a horse", "a mule", False),   # wrong, after the cut -> miss
        turn("s", 4, "big cat", "big cat", None),
    ]
    scored, scores = apply_conversation_rules(rows)
    assert [r["turn_idx"] for r in scored] == [0, 1, 2, 3, 4, 5]
    assert [r["is_correct"] for r in scored] == [True, False, False, False, False, False]
    # turn 2 stays a hallucination (a cut one turn early would make it a miss); turn 3, exact, is
    # cut (a cut one turn late would keep it correct)
    assert [r["is_miss"] for r in scored] == [False, False, False, True, True, True]
    assert [r["is_exact_match"] for r in scored] == [False] * 6
    assert [r["is_hallucination"] for r in scored] == [False, True, True, False, False, False]
    assert scores == {"s": pytest.approx(1 / 6 - 2 / 6)}
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


@pytest.mark.parametrize("rules", [None, CRAG_MM])
def test_total_of_one_gives_zero_truthfulness_and_empty_gives_nan_rates(rules):
    _, one = score_rows([turn("a", 0, "Paris", "Paris")], rules)
    assert one["accuracy"] == 1.0 and one["truthfulness_score"] == 0.0  # official rule, both sets
    assert one["mean_multi_turn_conversation_score"] == 1.0
    _, empty = score_rows([], rules)
    # as the official code: counts 0.0, rates NaN (0/0), truthfulness 0.0, conversation mean NaN
    counts = ("total", "correct_exact", "correct", "miss", "hallucination", "truthfulness_score")
    assert {k: empty[k] for k in counts} == {k: 0.0 for k in counts}
    assert all(math.isnan(empty[k]) for k in SCORE_KEYS if k not in counts)
    assert list(empty) == SCORE_KEYS


def test_idk_that_is_also_an_exact_match_keeps_the_official_arithmetic():
    # ground truth "I don't know" answered verbatim: correct AND miss; the official code
    # computes hallucination = total - (correct + miss), which undercounts here
    _, s = score_rows([turn("a", 0, "I don't know", "i don't know"), turn("b", 0, "x", "y", False)])
    assert (s["correct"], s["miss"], s["hallucination"]) == (1.0, 1.0, 0.0)
    assert s["truthfulness_score"] == pytest.approx((2 + 1) / 2 - 1)


def test_the_two_rule_sets_word_the_miss_test_differently():
    # kddcup2025: "i don't know" in the lower-cased answer; crag-mm: letters, digits and
    # whitespace only, then "i dont know" or "i do not know"
    assert is_miss("Sorry, I DON'T KNOW.") and is_miss("Sorry, I DON'T KNOW.", CRAG_MM)
    assert not is_miss("I do not know.") and is_miss("I do not know.", CRAG_MM)
    assert not is_miss("I don\u2019t know") and is_miss("I don\u2019t know", CRAG_MM)  # curly apostrophe
    # a line break is no space to either rule: the agent writes "I don't know" itself (s6_answer)
    assert not is_miss("I don't\nknow") and not is_miss("I don't\nknow", CRAG_MM)
    assert not is_miss("I dont know") and is_miss("I dont know", CRAG_MM)
    assert not is_miss("i don't knowingly lie") or is_miss("i don't knowingly lie", CRAG_MM)
    assert not needs_judge("I do not know.", "x", CRAG_MM) and needs_judge("I do not know.", "x")


def test_crag_mm_keeps_the_judge_reply_in_api_response():
    judged = verdict_fields("It is Rome", "Rome", True, CRAG_MM, reply="Same city.\nResult: CORRECT")
    assert judged["api_response"] == {"accuracy": True, "eval_result": "Same city.\nResult: CORRECT"}
    assert verdict_fields("It is Rome", "Rome", True, reply="ignored")["api_response"] == {"accuracy": True}


def test_crag_mm_counts_the_flags_before_the_cut_and_cuts_only_the_conversation_score():
    rows = [turn("s", 0, "Berlin", "Bonn", False, rules=CRAG_MM),   # hallucination
            turn("s", 1, "I don't know", "x", rules=CRAG_MM),       # miss: second incorrect in a row
            turn("s", 2, "tiger", "tiger", rules=CRAG_MM),          # exact, cut for the conversation score
            turn("s", 3, "big cat", "cat", True, rules=CRAG_MM)]    # judged right, cut as well
    counted, s = score_rows(rows, CRAG_MM)
    assert (s["total"], s["correct"], s["correct_exact"], s["miss"], s["hallucination"]) == (4, 2, 1, 1, 1)
    assert s["accuracy"] == 0.5 and s["truthfulness_score"] == pytest.approx(0.25)
    assert s["mean_multi_turn_conversation_score"] == pytest.approx(0 / 4 - 1 / 4)
    assert [r["is_correct"] for r in counted] == [False, False, True, True]
    assert [r["after_two_wrong"] for r in counted] == [False, False, True, True]
    _, kdd = score_rows(rows)  # kddcup2025: the same table counted after the cut
    assert (kdd["correct"], kdd["miss"], kdd["hallucination"]) == (0, 3, 1)


# ------------------------------------------------------------ official rules on our CSVs
def official_scores_from_csv(path, counts_after_cut: bool) -> dict:
    """The official scoring rules, written out here on their own: the CSV's flags are the ones
    before the multi-turn cut; per conversation, in turn order, the first pair of incorrect
    turns makes every later turn a miss (not correct, not exact); the conversation score is
    mean(correct) - mean(neither correct nor miss) after that cut; the 11 scores count either
    the cut flags (kddcup2025) or the CSV's own flags (crag-mm)."""
    table = pd.read_csv(path)
    assert list(table.columns) == OFFICIAL_TURN_COLUMNS
    flags_before, flags_after, conversation_scores = [], [], []
    for _, conversation in sorted(table.groupby("session_id"), key=lambda item: item[0]):
        conversation = conversation.sort_values("turn_idx")
        exact = [bool(v) for v in conversation["is_exact_match"]]
        correct = [bool(v) for v in conversation["is_correct"]]
        miss = [bool(v) for v in conversation["is_miss"]]
        flags_before += list(zip(exact, correct, miss))
        pair = next((i for i in range(1, len(correct)) if not correct[i] and not correct[i - 1]), None)
        if pair is not None:
            for j in range(pair + 1, len(correct)):
                exact[j], correct[j], miss[j] = False, False, True
        flags_after += list(zip(exact, correct, miss))
        n = len(correct)
        wrong = sum(1 for c, m in zip(correct, miss) if not c and not m)
        conversation_scores.append(sum(correct) / n - wrong / n)
    flags = flags_after if counts_after_cut else flags_before
    total = len(flags)
    n_exact, n_correct, n_miss = (sum(f[k] for f in flags) for k in range(3))
    n_wrong = total - n_correct - n_miss
    nan = float("nan")
    return {
        "total": float(total), "correct_exact": float(n_exact), "correct": float(n_correct),
        "miss": float(n_miss), "hallucination": float(n_wrong),
        "exact_match": n_exact / total if total else nan, "accuracy": n_correct / total if total else nan,
        "missing": n_miss / total if total else nan, "hallucination_rate": n_wrong / total if total else nan,
        "truthfulness_score": (2 * n_correct + n_miss) / total - 1 if total > 1 else 0.0,
        "mean_multi_turn_conversation_score": (sum(conversation_scores) / len(conversation_scores)
                                               if conversation_scores else nan),
    }


# session, ego, [(answer, ground truth)]; the judge server reads [yes]/[no]/[fail] in the answer
SESSIONS = [
    ("a", True, [("[no] red", "blue"), ("I do not know", "x"), ("Paris", "paris"), ("[yes] 42!", "42")]),
    ("b", False, [("[yes] a lion", "lion"), ("[no] cat", "dog"), ("[yes] fine", "fine thing")]),
    ("c", True, [("I don't know", "k"), ("i DON'T know", "m"), ("[yes] late", "late"), ("[no] x", "y")]),
    ("d", False, [("[fail] 1887", "1889")]),
    ("e", False, [("Moon", "moon "), ("[yes] sure", "sure")]),
]


def answers_folder(folder, ego_sessions=True):
    records = []
    for session, ego, turns in SESSIONS:
        for idx, (answer, truth) in enumerate(turns):
            records.append({
                "session_id": session, "interaction_id": f"{session}{idx}", "turn_idx": idx,
                "is_ego": ego and ego_sessions, "image_quality": "normal", "query_category": "simple",
                "domain": "d", "dynamism": "static", "query": f"q {session}{idx}", "ground_truth": truth,
                "agent_response": answer, "total_turn_count": len(turns),
                "interaction_id_history": [f"{session}{i}" for i in range(idx)], "raw_answer": answer,
                "error": None})
    folder.mkdir()
    (folder / "answers.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records[::-1]))
    return folder


def same_scores(ours: dict, theirs: dict) -> bool:
    return list(ours) == list(theirs) and all(
        (math.isnan(a) and math.isnan(b)) or a == pytest.approx(b, abs=1e-12)
        for a, b in zip(ours.values(), theirs.values()))


@pytest.mark.parametrize("rules_name", ["kddcup2025", "crag-mm"])
@pytest.mark.parametrize("with_ego", [True, False])
def test_official_rules_on_our_csvs_give_our_scores_dictionary(tmp_path, rules_name, with_ego):
    rules = RULE_SETS[rules_name]
    out = answers_folder(tmp_path / "run", ego_sessions=with_ego)
    with FakeOpenAIServer() as server:
        # max_wait_s=0: the [fail] turn's 500s cost attempts at once instead of being waited out
        judge = Judge("judge-model", server.url, None, rules=rules, num_workers=2, backoff_s=0.01,
                      max_wait_s=0.0, cache_path=tmp_path / "verdicts.jsonl")
        finalize(out, judge, rules=rules, progress=False)
    scores = json.loads((out / "scores_dictionary.json").read_text())
    assert list(scores)[:2] == ["all", "ego"]  # then our own keys (intervals_95)
    after_cut = rules.counts_after_cut
    assert same_scores(scores["all"], official_scores_from_csv(out / "turn_evaluation_results_all.csv", after_cut))
    assert same_scores(scores["ego"], official_scores_from_csv(out / "turn_evaluation_results_ego.csv", after_cut))
    official = pd.read_csv(out / "turn_evaluation_results_all.csv").set_index("interaction_id")
    # the official CSV holds the flags before the cut: c2 is right although c0, c1 were misses
    assert official.loc["c2", "is_correct"] and not official.loc["c2", "is_miss"]
    # "I do not know" is a miss only under crag-mm; there the judge is never asked about it
    assert bool(official.loc["a1", "is_miss"]) is (rules_name == "crag-mm")
    # our extended CSV: the flags the scores count, so its sums are the dictionary's counts
    extended = pd.read_csv(out / "turn_evaluation_results_all_extended.csv")
    assert list(extended.columns[:18]) == OFFICIAL_TURN_COLUMNS
    assert extended["is_correct"].sum() == scores["all"]["correct"]
    assert extended["is_miss"].sum() == scores["all"]["miss"]
    assert extended["is_hallucination"].sum() == scores["all"]["hallucination"]
    assert list(extended.set_index("interaction_id").loc[["c2", "c3"], "after_two_wrong"]) == [True, True]
    if not with_ego:
        assert "NaN" in (out / "scores_dictionary.json").read_text()
        assert math.isnan(scores["ego"]["accuracy"]) and scores["ego"]["truthfulness_score"] == 0.0

"""Both rule sets' multi-turn figures, by turn index and the early stop's toll
(evaluator/scoring/multi_turn.py), against a conversation set worked out by hand."""
from __future__ import annotations

import pytest

from evaluator.scoring.multi_turn import multi_turn_figures

# C = correct, W = wrong (answered, not correct: a hallucination), I = "I don't know" (a miss).
# The cut: at the first turn i where turns i-1 and i are both not correct, every turn after i
# becomes a miss.
CONVERSATIONS = {
    "a": "CWWC",  # W, W at turns 1-2 -> turn 3 (correct) is cut. Two wrong answers, then more turns.
    "b": "CIC",   # C, I: no two in a row -> no cut
    "c": "IIWW",  # I, I at turns 0-1 -> turns 2 and 3 (both wrong) are cut
    "d": "WC",    # no cut
}


def rows_of(conversations: dict[str, str]) -> list[dict]:
    return [{"session_id": session, "interaction_id": f"{session}-{i}", "turn_idx": i,
             "is_correct": outcome == "C", "is_miss": outcome == "I", "is_exact_match": False,
             "is_semantically_correct": outcome == "C"}
            for session, outcomes in conversations.items() for i, outcome in enumerate(outcomes)]


def test_both_rule_sets_side_by_side_on_the_hand_worked_conversations():
    figures = multi_turn_figures(rows_of(CONVERSATIONS))
    assert (figures["conversations"], figures["turns"]) == (4, 13)
    # Before the cut (crag-mm counts these): correct a2 + b2 + c0 + d1 = 5; misses a0 + b1 + c2 +
    # d0 = 3; wrong a2 + b0 + c2 + d1 = 5 -> accuracy 5/13, missing 3/13, hallucination 5/13,
    # truthfulness (2*5 + 3)/13 - 1 = 0.
    crag = figures["rule_sets"]["crag-mm"]
    assert crag["counts"] == "before the cut"
    assert (crag["scores"]["correct"], crag["scores"]["miss"], crag["scores"]["hallucination"]) == (5, 3, 5)
    assert crag["scores"]["accuracy"] == pytest.approx(5 / 13)
    assert crag["scores"]["missing"] == pytest.approx(3 / 13)
    assert crag["scores"]["truthfulness_score"] == pytest.approx(0.0)
    # After the cut (kddcup2025 counts these): a loses its last correct turn (C W W -), c its two
    # wrong ones (I I - -): correct 1 + 2 + 0 + 1 = 4; misses 1 + 1 + 4 + 0 = 6; wrong 2 + 0 + 0
    # + 1 = 3 -> accuracy 4/13, missing 6/13, hallucination 3/13, truthfulness (8 + 6)/13 - 1 = 1/13.
    kdd = figures["rule_sets"]["kddcup2025"]
    assert kdd["counts"] == "after the cut"
    assert (kdd["scores"]["correct"], kdd["scores"]["miss"], kdd["scores"]["hallucination"]) == (4, 6, 3)
    assert kdd["scores"]["accuracy"] == pytest.approx(4 / 13)
    assert kdd["scores"]["hallucination_rate"] == pytest.approx(3 / 13)
    assert kdd["scores"]["truthfulness_score"] == pytest.approx(1 / 13)
    # The conversation score is after the cut under both: a 1/4 - 2/4 = -1/4; b 2/3 - 0; c 0 - 0;
    # d 1/2 - 1/2 = 0 -> mean (-1/4 + 2/3) / 4 = 5/48.
    for name in ("crag-mm", "kddcup2025"):
        assert figures["rule_sets"][name]["scores"]["mean_multi_turn_conversation_score"] == pytest.approx(5 / 48)
        intervals = figures["rule_sets"][name]["intervals"]
        for key, value in figures["rule_sets"][name]["scores"].items():
            if key in intervals:
                low, high = intervals[key]
                assert low <= value + 1e-9 and value - 1e-9 <= high, (name, key)


def test_accuracy_and_answered_rate_by_turn_index_and_the_early_stops_toll():
    figures = multi_turn_figures(rows_of(CONVERSATIONS))
    by_turn = {entry["turn_idx"]: entry for entry in figures["by_turn"]}
    # Before the cut. Turn 0: C C I W -> 2/4 right, 3/4 answered. Turn 1: W I I C -> 1/4, 2/4.
    # Turn 2: W C W -> 1/3, 3/3. Turn 3: C W -> 1/2, 2/2; a's and c's turn 3 were cut, c's turn 2 too.
    expected = {0: (4, 2 / 4, 3 / 4, 0), 1: (4, 1 / 4, 2 / 4, 0), 2: (3, 1 / 3, 1.0, 1), 3: (2, 1 / 2, 1.0, 2)}
    assert set(by_turn) == set(expected)
    for index, (turns, accuracy, answered, cut) in expected.items():
        entry = by_turn[index]
        assert (entry["turns"], entry["cut"]) == (turns, cut), index
        assert entry["accuracy"] == pytest.approx(accuracy) and entry["answered"] == pytest.approx(answered), index
        low, high = entry["answered_ci"]
        assert low <= answered <= high, index
    # Turn 2: every turn answered, so every resample's answered rate is 1.
    assert by_turn[2]["answered_ci"] == pytest.approx([1.0, 1.0])
    # The stop took a's turn 3 (was correct) and c's turns 2 and 3 (both wrong).
    assert figures["early_stop"] == {"conversations": 2, "turns": 3, "correct": 1, "hallucination": 2, "miss": 0}


def test_two_wrong_answers_in_a_row_cut_the_rest_where_two_idks_would_too():
    """Two hallucinations trigger the stop exactly like two "I don't know"s: conversation a's
    right answer after them counts under crag-mm and not under kddcup2025."""
    figures = multi_turn_figures(rows_of({"a": "CWWCC"}))
    # before: 3 right, 2 wrong of 5; after: C W W - - -> 1 right, 2 wrong, 2 missed
    assert figures["rule_sets"]["crag-mm"]["scores"]["accuracy"] == pytest.approx(3 / 5)
    assert figures["rule_sets"]["kddcup2025"]["scores"]["accuracy"] == pytest.approx(1 / 5)
    assert figures["rule_sets"]["kddcup2025"]["scores"]["truthfulness_score"] == pytest.approx((2 * 1 + 2) / 5 - 1)
    assert figures["early_stop"] == {"conversations": 1, "turns": 2, "correct": 2, "hallucination": 0, "miss": 0}


def test_a_single_turn_run_has_no_multi_turn_figures_and_one_second_turn_gives_them():
    assert multi_turn_figures(rows_of({"a": "C", "b": "W", "c": "I"})) is None
    assert multi_turn_figures([]) is None
    figures = multi_turn_figures(rows_of({"a": "C", "b": "W", "c": "IW"}))  # c's second turn: a conversation
    assert (figures["conversations"], figures["turns"]) == (3, 4)
    assert figures["early_stop"] == {"conversations": 0, "turns": 0, "correct": 0, "hallucination": 0, "miss": 0}


def test_flags_read_back_from_a_csv_as_text_count_the_same():
    rows = [{**r, "is_correct": str(r["is_correct"]), "is_miss": str(r["is_miss"]), "turn_idx": str(r["turn_idx"])}
            for r in rows_of(CONVERSATIONS)]
    figures = multi_turn_figures(rows)
    assert figures == multi_turn_figures(rows_of(CONVERSATIONS))
    # "False" read as text is false: the hand-worked counts of the first test, not every turn right
    kdd = figures["rule_sets"]["kddcup2025"]["scores"]
    assert (kdd["correct"], kdd["miss"], kdd["hallucination"]) == (4, 6, 3)
    assert figures["early_stop"] == {"conversations": 2, "turns": 3, "correct": 1, "hallucination": 2, "miss": 0}

"""What an oracle run hands the agent (evaluator/harness/oracle.py): which agents may take which
oracle, and the record each labelled turn gets, at the edges of the CRAG-MM-Diagnostics labels
(a turn without the label, a box without its own frame, a frame that is not square)."""
from __future__ import annotations

from evaluator.harness.oracle import agent_oracles, refusal, scaled_box, turn_oracle


class TakesNone:
    pass


class TakesTwo:
    ORACLES = ["entity", "question"]


class SaysNone:
    ORACLES = None


def test_the_oracles_an_agent_class_declares():
    assert agent_oracles(TakesNone) == () and agent_oracles(SaysNone) == ()
    assert agent_oracles(TakesTwo) == ("entity", "question")


def test_an_oracle_is_refused_in_one_line_that_says_why():
    assert refusal(None, TakesNone) is None
    assert refusal("entity", TakesTwo) is None and refusal("question", TakesTwo) is None
    assert refusal("crop", TakesTwo) == "--oracle crop: choose one of region, entity, question"
    assert refusal("region", TakesTwo) == (
        f"--oracle region: the agent {__name__}.TakesTwo takes no such oracle (its ORACLES: entity, question)")
    assert refusal("entity", TakesNone) == (
        f"--oracle entity: the agent {__name__}.TakesNone takes no such oracle (its ORACLES: none)")


def test_a_box_is_scaled_across_and_down_apart_and_rounded_to_hundredths():
    # 300 x 200 -> 100 x 400: x by 1/3, y by 2
    assert scaled_box([30, 10, 100, 50], (300, 200), (100, 400)) == [10.0, 20.0, 33.33, 100.0]
    assert scaled_box([1, 2, 3, 4], [640, 480], (640, 480)) == [1, 2, 3, 4]
    # every corner rounded alike: 300 x 300 -> 100 x 200, x by 1/3, y by 2/3
    assert scaled_box([10, 10, 20, 20], (300, 300), (100, 200)) == [3.33, 6.67, 6.67, 13.33]


def test_each_stage_gets_its_record_and_a_turn_without_the_label_gets_none():
    labels = {"target_roi_bbox": [100, 50, 300, 150], "image_size": [400, 200],
              "target_object_name": "grey heron", "textual_only_question": "how tall is a grey heron?"}
    assert turn_oracle("region", labels, (200, 400)) == {"stage": "region", "box": [50.0, 100.0, 150.0, 300.0]}
    assert turn_oracle("entity", labels, None) == {"stage": "entity", "entity": "grey heron"}
    assert turn_oracle("question", labels, None) == {"stage": "question", "question": "how tall is a grey heron?"}
    # no oracle asked, or a turn with no labels at all
    assert turn_oracle(None, labels, (200, 400)) is None
    assert turn_oracle("entity", None, (200, 400)) is None and turn_oracle("entity", {}, (200, 400)) is None
    # a label with the other stages' fields only, or an empty one
    assert turn_oracle("region", {"target_object_name": "grey heron"}, (200, 400)) is None
    assert turn_oracle("region", labels, None) is None  # no image to place the box in
    assert turn_oracle("entity", {"textual_only_question": "q?"}, None) is None
    assert turn_oracle("entity", {"target_object_name": ""}, None) is None
    assert turn_oracle("question", {"target_object_name": "grey heron"}, None) is None
    assert turn_oracle("question", {"textual_only_question": ""}, None) is None

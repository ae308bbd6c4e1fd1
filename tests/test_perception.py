"""Perception for a VLM that cannot see (s0a_perceive), without running its models: reading order
from OCR boxes, no model run for a missing, tiny or corrupt image, none for a VLM that sees or with
perception off, and `auto` following the engine. The real OCR and classifier runs (one per
distinct image, the picture block in every prompt of a text-only VLM): tests/full/test_perception.py."""
from __future__ import annotations

import io
from pathlib import Path

import pytest
from PIL import Image

from agents.config.cruise_config import CruiseConfig
from agents.stages.prompts import load_prompt
from agents.stages.s0a_perceive import PerceptionCache, perceive_batch, reading_order
from testkit.fakes import ScriptedEngine, last_user_text
from testkit.perception_scenes import PROMPTED_STAGES, SCRIPT, BlindEngine, run_agent, sign, turn

CFG = CruiseConfig()


def test_the_benchmark_does_not_use_the_test_pictures():
    source = (Path(__file__).resolve().parents[1] / "minibench" / "images.py").read_text(encoding="utf-8")
    assert "grace_hopper" not in source and "DejaVu" not in source


def test_reading_order_from_boxes_in_rapidocr_shape():
    def box(x0, y0, x1, y1):
        return [[x0, y0], [x1, y0], [x1, y1], [x0, y1]]

    found = [  # the detector's order is not the reading order
        (box(300, 210, 420, 250), "EURO", 0.95),
        (box(40, 200, 280, 245), "PRICE 3", 0.97),
        (box(200, 20, 400, 60), "CAFE", 0.99),
        (box(40, 100, 250, 140), "ESPRESSO", 0.80),
    ]
    assert reading_order(found) == [("CAFE", 0.99), ("ESPRESSO", 0.80), ("PRICE 3 EURO", 0.95)]


def test_missing_tiny_and_corrupt_images_give_an_empty_block(model_runs):
    buffer = io.BytesIO()
    sign().save(buffer, format="JPEG")
    corrupt = Image.open(io.BytesIO(buffer.getvalue()[: len(buffer.getvalue()) // 2]))  # decoding fails only when the pixels are read
    seen = perceive_batch([turn(None), turn(Image.new("RGB", (1, 1))), turn(corrupt)], CFG, PerceptionCache())
    assert [p.block for p in seen] == ["", "", ""]
    assert "too small" in seen[1].error and seen[2].error
    assert model_runs == {"ocr": 0, "classifier": 0}


@pytest.mark.parametrize("vlm, perception", [(ScriptedEngine(SCRIPT), "auto"), (BlindEngine(SCRIPT), "off")])
def test_a_seeing_vlm_or_perception_off_leaves_the_prompts_as_written(model_runs, vlm, perception):
    agent = run_agent(vlm, perception)
    assert model_runs == {"ocr": 0, "classifier": 0}
    assert {stage for stage, _ in vlm.requests} == PROMPTED_STAGES
    for stage, request in vlm.requests:  # each user message opens as its prompt file does
        names = {"answer": ("answer_with_context", "answer_without_context"),
                 "verify": ("verify", "verify_yes_no")}.get(stage, (stage,))
        openings = [load_prompt(name).user.template.split("$")[0] for name in names]
        assert any(last_user_text(request).startswith(opening) for opening in openings), stage
    assert not any("What the picture shows" in last_user_text(r) for _, r in vlm.requests)
    assert agent.last_batch_report["traces"][0]["perception"] is None


def test_auto_follows_whether_the_vlm_engine_sees():
    from agents.config.loading import load_config
    from agents.engines.openai_engine import OpenAIChatEngine
    from agents.stages.s0a_perceive import perception_wanted

    served = load_config("served")
    blind = OpenAIChatEngine("smollm2", base_url="http://127.0.0.1:9/v1")  # a text-only served model
    seeing = OpenAIChatEngine(served.models.vlm_model, base_url="http://127.0.0.1:9/v1")
    assert perception_wanted(served, blind) and not perception_wanted(served, seeing)
    assert perception_wanted(served.replace(perception="on"), seeing)
    assert not perception_wanted(served.replace(perception="off"), blind)
    with pytest.raises(ValueError, match="perception"):
        load_config("cpu", perception="sometimes")

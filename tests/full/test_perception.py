"""Perception for a VLM that cannot see (s0a_perceive), with its real models (RapidOCR's PP-OCRv4,
the EfficientNet-Lite0 ImageNet classifier) on pictures the mini benchmark does not use: a sign
read in reading order, a common object named, one model run per distinct image, the picture block
in every prompt of a text-only VLM and on the report's turn page. Without the models:
tests/test_perception.py."""
from __future__ import annotations

from PIL import Image

from agents.config.cruise_config import CruiseConfig
from agents.stages import s0a_perceive
from agents.stages.s0a_perceive import PerceptionCache, perceive_batch
from testkit.fakes import last_user_text
from testkit.perception_scenes import GRACE_HOPPER, PROMPTED_STAGES, SCRIPT, BlindEngine, run_agent, sign, turn

CFG = CruiseConfig()


def test_a_rendered_sign_is_read_in_reading_order():
    [seen] = perceive_batch([turn(sign())], CFG, PerceptionCache())
    texts = [text for text, _ in seen.lines]
    assert [t.replace(" ", "").upper() for t in texts] == ["CLOSEDONMONDAYS", "PARKING5EURO"]
    assert all(score >= CFG.inputs.perception_min_ocr_score for _, score in seen.lines)
    assert seen.block.startswith("What the picture shows")
    assert seen.block.index(texts[0]) < seen.block.index(texts[1])
    assert not seen.error and seen.ms > 0


def test_a_common_object_is_named():
    photo = Image.open(GRACE_HOPPER).convert("RGB")
    [seen] = perceive_batch([turn(photo, "What is she wearing?")], CFG, PerceptionCache())
    names = [name for name, _ in seen.labels]
    assert len(names) == CFG.inputs.perception_top_k
    assert "military uniform" in names
    p = dict(seen.labels)["military uniform"]
    assert p >= CFG.inputs.perception_min_label_p and f"military uniform ({p:.0%})" in seen.block


def test_one_model_run_per_distinct_image(model_runs):
    cache = PerceptionCache()
    board, photo = sign(), Image.open(GRACE_HOPPER).convert("RGB")
    twin = board.copy()  # another object with the same pixels: a conversation's later turn
    first = perceive_batch([turn(board), turn(photo), turn(twin), turn(None)], CFG, cache)
    assert model_runs == {"ocr": 2, "classifier": 2}
    assert first[2].cached and first[2].block == first[0].block and first[2].ms == 0
    assert first[3].block == "" and first[3].labels == []
    again = perceive_batch([turn(twin.copy(), "And on Sundays?")], CFG, cache)
    assert model_runs == {"ocr": 2, "classifier": 2}
    assert again[0].block == first[0].block


def test_a_text_only_vlm_gets_the_picture_block_in_every_prompt(model_runs):
    s0a_perceive.SHARED_CACHE.entries.clear()
    vlm = BlindEngine(SCRIPT)
    agent = run_agent(vlm)
    # one warm-up run when the agent is built, then two turns of one picture: one run serves all stages
    assert model_runs == {"ocr": 2, "classifier": 2}
    # the summary is what was read (a VLM that cannot see is not asked to describe the photo)
    assert {stage for stage, _ in vlm.requests} == PROMPTED_STAGES - {"summarize"}
    for stage, request in vlm.requests:
        text = last_user_text(request)
        assert text.startswith("What the picture shows"), stage
        assert text.count("(end of what the picture shows)") == 1, stage
        assert "MONDAYS" in text.replace(" ", "").upper(), stage
    for trace in agent.last_batch_report["traces"]:
        assert "MONDAYS" in trace["summary"].replace(" ", "").upper()
    assert all(request.image is None for _, request in vlm.requests)  # the block stands in for it
    trace = agent.last_batch_report["traces"][1]
    assert trace["perception"]["cached"] and "(end of what the picture shows)" in trace["perception"]["block"]
    assert "perceive" in trace["stage_ms"]


def test_the_report_turn_page_shows_what_the_picture_shows(model_runs):
    from evaluator.harness.run_record import RunRecord
    from evaluator.report.html import template_environment, turn_renderer

    agent = run_agent(BlindEngine(SCRIPT))
    trace = agent.last_batch_report["traces"][0]
    row = dict(interaction_id="t-0", session_id="s-0", turn_idx=0, query="Where does this bus go?",
               domain="vehicle", query_category="simple", dynamism="static", image_quality="normal",
               is_ego=False, ground_truth="Camden", agent_response="Camden.")
    turn = dict(row=row, trace=trace, outcome="correct", branch=trace["branch"], thumbnail=None, answer={})
    turn_renderer(RunRecord(trace_view=type(agent).TRACE_VIEW))(turn)  # the agent's own turn template
    page = template_environment().from_string(
        '{% from "_turn.html.j2" import turn_details %}{{ turn_details(t) }}').render(t=turn)
    assert "<th>what the picture shows</th>" in page and "(end of what the picture shows)" in page
    for text, _ in trace["perception"]["ocr_lines"]:
        assert f"<q>{text}</q>" in page

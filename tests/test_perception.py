"""Perception for a VLM that cannot see (s0a_perceive): real OCR and classifier runs on pictures
the mini benchmark does not use, one model run per distinct image, and the picture block in the
prompts of a text-only VLM only."""
from __future__ import annotations

import io
from pathlib import Path

import matplotlib
import pytest
from PIL import Image, ImageDraw, ImageFont

from agents.config import CruiseConfig
from agents.cruise.prompts import load_prompt
from agents.cruise.stages import s0a_perceive
from agents.cruise.stages.s0a_perceive import PerceptionCache, perceive_batch, reading_order
from agents.cruise.types import Turn
from agents.engines import image_classifier, ocr
from testkit.fakes import FakePipeline, FunctionReranker, ScriptedEngine, last_user_text
from testkit.scripted_chain import IMAGE_HITS, VLM_SCRIPT, rerank_score, route

MPL_DATA = Path(matplotlib.get_data_path())
FONT = MPL_DATA / "fonts" / "ttf" / "DejaVuSans-Bold.ttf"
GRACE_HOPPER = MPL_DATA / "sample_data" / "grace_hopper.jpg"  # ImageNet's "military uniform"
CFG = CruiseConfig()


def sign(lines=("CLOSED ON MONDAYS", "PARKING 5 EURO"), size=(640, 360)) -> Image.Image:
    """A street sign: dark letters on a yellow board against a grey wall, a photo-sized canvas."""
    image = Image.new("RGB", size, (120, 120, 125))
    draw = ImageDraw.Draw(image)
    draw.rectangle((60, 60, size[0] - 60, size[1] - 60), fill=(250, 215, 40), outline=(20, 20, 20), width=6)
    font = ImageFont.truetype(str(FONT), 40)
    for row, text in enumerate(lines):
        draw.text((90, 110 + row * 90), text, font=font, fill=(15, 15, 15))
    return image


def turn(image, query="What does the sign say?") -> Turn:
    return Turn(query=query, image=image, history=[])


@pytest.fixture
def model_runs(monkeypatch):
    """Counts the images each model is run on, around the real functions (outside the stage)."""
    runs = {"ocr": 0, "classifier": 0}
    real_read, real_labels = ocr.read_text, image_classifier.top_labels

    def read_text(image, *args, **kwargs):
        runs["ocr"] += 1
        return real_read(image, *args, **kwargs)

    def top_labels(images, *args, **kwargs):
        runs["classifier"] += 1 if isinstance(images, Image.Image) else len(images)
        return real_labels(images, *args, **kwargs)

    monkeypatch.setattr(ocr, "read_text", read_text)
    monkeypatch.setattr(image_classifier, "top_labels", top_labels)
    return runs


def test_a_rendered_sign_is_read_in_reading_order():
    [seen] = perceive_batch([turn(sign())], CFG, PerceptionCache())
    texts = [text for text, _ in seen.lines]
    assert [t.replace(" ", "").upper() for t in texts] == ["CLOSEDONMONDAYS", "PARKING5EURO"]
    assert all(score >= CFG.perception_min_ocr_score for _, score in seen.lines)
    assert seen.block.startswith("What the picture shows")
    assert seen.block.index(texts[0]) < seen.block.index(texts[1])
    assert not seen.error and seen.ms > 0


def test_a_common_object_is_named():
    photo = Image.open(GRACE_HOPPER).convert("RGB")
    [seen] = perceive_batch([turn(photo, "What is she wearing?")], CFG, PerceptionCache())
    names = [name for name, _ in seen.labels]
    assert len(names) == CFG.perception_top_k
    assert "military uniform" in names
    p = dict(seen.labels)["military uniform"]
    assert p >= CFG.perception_min_label_p and f"military uniform ({p:.0%})" in seen.block


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


def test_missing_tiny_and_corrupt_images_give_an_empty_block(model_runs):
    buffer = io.BytesIO()
    sign().save(buffer, format="JPEG")
    corrupt = Image.open(io.BytesIO(buffer.getvalue()[: len(buffer.getvalue()) // 2]))  # decoding fails only when the pixels are read
    seen = perceive_batch([turn(None), turn(Image.new("RGB", (1, 1))), turn(corrupt)], CFG, PerceptionCache())
    assert [p.block for p in seen] == ["", "", ""]
    assert "too small" in seen[1].error and seen[2].error
    assert model_runs == {"ocr": 0, "classifier": 0}


# The two answers differ, so that the consistency check is asked too.
SCRIPT = {**VLM_SCRIPT, "answer": lambda req: "Camden." if "<<<NOTES" in last_user_text(req) else "Pimlico."}


class BlindEngine(ScriptedEngine):
    supports_images = False  # like SmolLM2: the engine drops images


def run_agent(vlm, perception="auto"):
    from agents.cruise_agent import CruiseAgent
    from agents.engines.base import Engines

    engines = Engines(router=ScriptedEngine({"route": route}), vlm=vlm, reranker=FunctionReranker(rerank_score))
    # cov_mode yes_no: a CoV that prompts the VLM (the cpu profile's grounding check asks no model)
    agent = CruiseAgent(FakePipeline(IMAGE_HITS), engines=engines, profile="cpu", preset="full",
                        chunker="paper_fields", perception=perception, cov_mode="yes_no")
    board = sign()
    question = "Where does this bus go?"
    agent.batch_generate_response([question, question], [board, board.copy()], [[], []])
    return agent


PROMPTED_STAGES = {"summarize", "answer", "consistency", "verify"}


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


def test_the_report_turn_page_shows_what_the_picture_shows(model_runs):
    from evaluator.report.html import template_environment, turn_renderer

    agent = run_agent(BlindEngine(SCRIPT))
    trace = agent.last_batch_report["traces"][0]
    row = dict(interaction_id="t-0", session_id="s-0", turn_idx=0, query="Where does this bus go?",
               domain="vehicle", query_category="simple", dynamism="static", image_quality="normal",
               is_ego=False, ground_truth="Camden", agent_response="Camden.")
    turn = dict(row=row, trace=trace, outcome="correct", branch=trace["branch"], thumbnail=None, answer={})
    turn_renderer({"trace_view": type(agent).TRACE_VIEW})(turn)  # the agent's own turn template
    page = template_environment().from_string(
        '{% from "_turn.html.j2" import turn_details %}{{ turn_details(t) }}').render(t=turn)
    assert "<th>what the picture shows</th>" in page and "(end of what the picture shows)" in page
    for text, _ in trace["perception"]["ocr_lines"]:
        assert f"<q>{text}</q>" in page


def test_auto_follows_whether_the_vlm_engine_sees():
    from agents.config import load_config
    from agents.cruise.stages.s0a_perceive import perception_wanted
    from agents.engines.openai_engine import OpenAIChatEngine

    served = load_config("served")
    blind = OpenAIChatEngine("smollm2", base_url="http://127.0.0.1:9/v1")  # a text-only served model
    seeing = OpenAIChatEngine(served.vlm_model, base_url="http://127.0.0.1:9/v1")
    assert perception_wanted(served, blind) and not perception_wanted(served, seeing)
    assert perception_wanted(served.replace(perception="on"), seeing)
    assert not perception_wanted(served.replace(perception="off"), blind)
    with pytest.raises(ValueError, match="perception"):
        load_config("cpu", perception="sometimes")

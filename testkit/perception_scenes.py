"""Pictures and a CruiseAgent for the perception tests (tests/test_perception.py,
tests/full/test_perception.py): a rendered street sign, a photo ImageNet knows (both shipped
with matplotlib, neither used by the mini benchmark), and the chain over scripted engines with a
VLM that can or cannot see. The fixture `model_runs` (tests/conftest.py) counts the real OCR and
classifier runs.
"""
from __future__ import annotations

from pathlib import Path

import matplotlib
from PIL import Image, ImageDraw, ImageFont

from agents.stages.types import Turn
from testkit.fakes import FakePipeline, FunctionReranker, ScriptedEngine, last_user_text
from testkit.scripted_chain import IMAGE_HITS, VLM_SCRIPT, rerank_score, route

MPL_DATA = Path(matplotlib.get_data_path())
FONT = MPL_DATA / "fonts" / "ttf" / "DejaVuSans-Bold.ttf"
GRACE_HOPPER = MPL_DATA / "sample_data" / "grace_hopper.jpg"  # ImageNet's "military uniform"


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

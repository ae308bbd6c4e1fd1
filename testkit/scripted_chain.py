"""A CruiseAgent over scripted engines and a fake search about one bus photo: three questions
(WHERE needs the KG hit, COLOR is answered from the photo, PRICE is real-time with weak evidence),
the engines' replies to each stage, and helpers to run a batch and list the stages it called.

The scripted verifier writes the paper's "CONFIDENCE: x" reply: `make_agent` runs its preset
with the paper's CoV reading and thresholds over the cpu profile (the paper_finalizer preset).
"""
from __future__ import annotations

from PIL import Image

from agents.cruise_agent import CruiseAgent
from agents.engines.base import Engines
from testkit.fakes import FakePipeline, FunctionReranker, ScriptedEngine, has_notes, last_user_text

WHERE, COLOR, PRICE = "Where does this bus go?", "What color is the bus?", "What does a ticket cost today?"


def route(req):
    text = last_user_text(req)
    if WHERE in text:
        return "Needs External Info: yes\nIs Real-Time: no"
    if COLOR in text:
        return "needs external info: No.\nis real-time: no"
    return "Needs External Info: yes\nIs Real-Time: yes"


def answer(req):
    text = last_user_text(req)
    if WHERE in text:
        return "Answer: Camden."
    if COLOR in text:
        return "Red"
    return "Five pounds" if has_notes(req) else "I'm not sure."


def verify(req):
    text = last_user_text(req)
    if "Proposed answer: Camden." in text:
        return "CONFIDENCE: 0.95\nREASONING: the notes say so"
    if "Proposed answer: Red" in text:
        return "Confidence: 1.0"
    return "CONFIDENCE: 0.2"


VLM_SCRIPT = {
    "summarize": lambda req: "A red double-decker bus at a stop. It is raining.",
    "answer": answer,
    "consistency": lambda req: "Yes, they agree.",
    "verify": verify,
}

IMAGE_HITS = [
    {
        "index": 0,
        "score": 0.91,
        "entities": [
            {
                "entity_name": "Route 24",
                "entity_attributes": {
                    "description": "Route 24 runs from Pimlico to Camden.\n\nIt uses red double-decker buses.",
                    "summary": "Route 24 runs from Pimlico to Camden.",  # duplicate paragraph: dropped
                    "opened": "1910",  # not a chunk field
                },
            }
        ],
    }
]


def rerank_score(query: str, chunk: str) -> float:
    if PRICE in query:
        return 0.3  # real-time question with weak evidence
    return 0.9 if "Camden" in chunk else 0.2


def make_agent(preset="full", sleep_s=None, fail=None, web_hits=None, **overrides):
    engines = Engines(
        router=ScriptedEngine({"route": route}, sleep_s=sleep_s),
        vlm=ScriptedEngine(VLM_SCRIPT, sleep_s=sleep_s, fail=fail),
        reranker=FunctionReranker(rerank_score),
    )
    # The fake hits are in the paper's KG shape (description / caption / summary); the chunks
    # the chain sees of the official infobox shape are tested in tests/test_chunking.py.
    overrides.setdefault("chunker", "paper_fields")
    # Every stage is asked about every turn here, decided or not (skip_decided_turns is tested on
    # its own in tests/test_cruise_chain.py).
    overrides.setdefault("skip_decided_turns", False)
    return CruiseAgent(FakePipeline(IMAGE_HITS, web_hits), engines=engines, profile="cpu",
                       preset=f"{preset}+paper_finalizer", **overrides)


def batch(queries):
    return queries, [Image.new("RGB", (64, 48), "red") for _ in queries], [[] for _ in queries]


def stages_called(agent):
    return [c["stage"] for c in agent.last_batch_report["engine_calls"]]

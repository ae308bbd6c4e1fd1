"""The peer systems' scripted world, from the seeds' own examples: QA-Dragon's Table 1 gives one
question per branch (seed 001, section 3.2), and the engines below reply as a capable model would
to each. Shared by tests/test_peer_systems.py and the in-process report test; `TableOneAgent`
is the real CruiseAgent over these engines, for runs through local_evaluation.py
(`--agent testkit.scripted_peers:TableOneAgent --preset qa_dragon+paper_finalizer`: the scripted
verifier writes text verdicts).

- "What is written on these umbrellas?": Direct Output (the draft succeeds, the question is
  self-contained: OCR);
- "In which year did the car on the right begin production?": Search Verify (the draft succeeds
  but is hedged: evidence is recommended; the text toolchain, then the verifier);
- "Who founded this cafe?": RAG (the draft fails; an entity is asked about; the tool router picks
  the searches).

The same engines answer SAM-RAG's steps over the same turns (a document is relevant when it holds
the fact asked about), so that both systems run on this world.
"""
from __future__ import annotations

from agents.cruise_agent import CruiseAgent
from agents.engines.base import Engines
from testkit.fakes import FakePipeline, FunctionReranker, ScriptedEngine, last_user_text

UMBRELLAS = "What is written on these umbrellas?"
CAR = "In which year did the car on the right begin production?"
CAFE = "Who founded this cafe?"

CAFE_HIT = {"index": 0, "score": 0.93, "entities": [{"entity_name": "Blue Bottle Coffee", "entity_attributes": {
    "description": "Blue Bottle Coffee is a coffee roaster founded by James Freeman in 2002."}}]}
CAR_PAGE = {"page_name": "Ford Mustang - history", "page_url": "https://example.org/mustang",
            "page_snippet": "The Ford Mustang began production in March 1964 in Dearborn, Michigan."}


def draft(request) -> str:
    """The D-CoT a capable model writes for each of Table 1's questions."""
    text = last_user_text(request)
    if UMBRELLAS in text:
        return ("Object: umbrellas\n1. The umbrellas carry printed words.\n2. The words read RAIN OR SHINE.\n"
                "Draft answer: RAIN OR SHINE")
    if CAR in text:
        return ("Object: Ford Mustang\n1. The car on the right is a Ford Mustang.\n"
                "2. It probably began production around 1964.\nDraft answer: 1964")
    return ("Object: cafe\n1. The photo shows the front of a cafe.\n"
            "2. I cannot determine who founded it from the photo.\nDraft answer: I don't know")


def post_answer(request) -> str:
    text = last_user_text(request)
    if CAR in text:
        return "Reason: The notes say the Ford Mustang began production in 1964.\nAnswer: 1964"
    if "James Freeman" in text:
        return "Reason: The notes say Blue Bottle Coffee was founded by James Freeman.\nAnswer: James Freeman"
    return "Reason: Nothing in the notes names the founder.\nAnswer: I don't know"


def sam_rag_answer(request) -> str:
    text = last_user_text(request)
    if UMBRELLAS in text:
        return "RAIN OR SHINE"
    return "1964" if "1964" in text else "James Freeman" if "James Freeman" in text else "I don't know"


def relevant(text: str) -> bool:
    return "founded" in text or "1964" in text


def qa_dragon_engines(verify=None, tool=None) -> Engines:
    vlm = ScriptedEngine({
        "draft": draft,
        # the cafe is not named, and who founded it is not in the photo: both searches
        "tool_route": tool or (lambda r: "yes"),
        "rephrase": lambda r: "Query: Blue Bottle Coffee founder",
        "entity_check": lambda r: "yes",
        "crop": lambda r: "Object: cafe\nBox: 100, 100, 700, 800",
        "fine_rerank": lambda r: "yes" if relevant(last_user_text(r)) else "no",
        "post_answer": post_answer,
        "verify": verify or (lambda r: "Verdict: correct\nWhy: the notes say so."),
        # SAM-RAG's steps over the same world (seed 002, Table 1)
        "summarize": lambda r: "Umbrellas, a car or a cafe front.",
        "is_rel": lambda r: "yes" if relevant(last_user_text(r).split("<<<DOCUMENT")[-1]) else "no",
        "answer": sam_rag_answer,
        "is_use": lambda r: "yes",
        "regenerate": sam_rag_answer,
        "is_sup": lambda r: "Supported: fully",
    })
    router = ScriptedEngine({"domain": lambda r: "Domain: Text understanding" if UMBRELLAS in last_user_text(r)
                             else "Domain: Vehicles" if CAR in last_user_text(r) else "Domain: Food"})
    return Engines(router, vlm, FunctionReranker(lambda q, c: 0.9 if relevant(c) else 0.3))


class TableOneAgent(CruiseAgent):
    """The real CruiseAgent over `qa_dragon_engines` and a search that holds the cafe's KG entity
    and the car's web page."""

    def __init__(self, search_pipeline=None, config=None):
        super().__init__(FakePipeline([CAFE_HIT], [CAR_PAGE]), config, engines=qa_dragon_engines())

"""The search router (seed 001, 3.2 and Table 1): each turn takes one of three branches.

- Direct Output: the draft stands, no search (the answer can be read off the photo: OCR text,
  a count, a sum, a colour);
- Search Verify: the draft is plausible but uncertain; the text toolchain fetches evidence and
  the post-answer module checks and refines it;
- RAG: the draft failed, or the question needs outside knowledge about a thing the draft could
  not name; the tool router picks the searches.

The paper's router is a small classifier trained on features of the D-CoT's trace and answer;
it lists the features and not the weights. Training-free, this module computes those features
and decides by a fixed rule over them (the order below is the rule):

    failed (an answerability flag)                         -> RAG
    self-contained (answer-type heuristic), not hedged     -> Direct Output
    open-world cue and the object not named                -> RAG
    hedged (an uncertainty pattern) or open-world cue      -> Search Verify
    otherwise                                              -> Direct Output

No model runs: milliseconds per batch.
"""
from __future__ import annotations

import re

from agents.base_agent import IDK_ANSWER
from agents.peers.qa_dragon.types import DomainRoute, Draft, SearchRoute
from agents.stages.types import Turn

# Answerability flags: the reasoning gives up on something the answer needs.
_FAILED = re.compile(
    r"\b(?:i\s+can(?:not|['’]t)\s+(?:determine|tell|identify|read|see|know)|cannot\s+be\s+(?:determined|told|identified)"
    r"|can(?:not|['’]t)\s+(?:determine|tell|identify)|unable\s+to|not\s+(?:enough|sufficient)\s+information"
    r"|no\s+(?:clear\s+)?information|i\s+do(?:\s+not|n['’]?t)\s+know|not\s+(?:visible|legible|readable|shown)"
    r"|is\s+unclear|is\s+unknown)\b", re.IGNORECASE)
# Uncertainty patterns: speculative or fallback wording.
_HEDGED = re.compile(
    r"\b(?:likely|probably|possibly|perhaps|maybe|might|may\s+be|appears?\s+to|seems?\s+to|looks?\s+like"
    r"|i\s+(?:think|believe|guess|assume)|could\s+be|approximately|roughly|around\s+\d|about\s+\d|not\s+(?:sure|certain)"
    r"|uncertain|presumably|guess)\b", re.IGNORECASE)
# Answer-type heuristics on the question: what is read, counted, computed or seen in the photo.
_OCR = re.compile(
    r"\b(?:written|say|says|said|text|word|words|letters?|spell|spelled|printed|read|label\s+say|sign\s+say"
    r"|title\s+of\s+(?:this|the)\s+(?:book|sign|poster|menu)|what\s+does\s+(?:the|this|that)\s+\w+\s+say)\b",
    re.IGNORECASE)
_COUNT = re.compile(r"^how\s+many\b.*\b(?:are\s+there|is\s+there|do\s+you\s+see|can\s+you\s+see|in\s+(?:the|this)\s+"
                    r"(?:photo|picture|image)|visible|shown|pictured)\b", re.IGNORECASE)
_ARITHMETIC = re.compile(r"\b(?:calculate|compute|add\s+up|sum\s+of|total\s+of|multiply|divide|subtract|solve|equation"
                         r"|\d+\s*[-+*/×x÷]\s*\d+)\b", re.IGNORECASE)
_VISUAL = re.compile(r"^(?:what|which)\s+(?:colou?r|shape)\b", re.IGNORECASE)
# Open-world cues: facts that no photo shows (origin, history, numbers about the thing).
_OPEN_WORLD = re.compile(
    r"\b(?:who\s+(?:made|makes|founded|designed|built|wrote|invented|owns|directed|painted|created|discovered"
    r"|manufactures|produced|published|sings|plays)|when\s+(?:was|were|did|is|does|will)|(?:what|which)\s+year"
    r"|how\s+old|history|founded|established|price|cost|costs|how\s+much|worth|where\s+(?:is|was|are|were|do|does)\b"
    r".{0,30}\b(?:from|made|located|built|grow|live|originate)|originate|population|how\s+(?:tall|high|long|big|far"
    r"|fast|heavy|deep|wide)|height|weigh|weight|calories|nutrition|ingredients?|released?|launched|manufacturer"
    r"|maker|native\s+to|lifespan|capacity|horsepower|top\s+speed|award|won|famous\s+for|known\s+for|named\s+after"
    r"|rating|reviews?|open(?:ing)?\s+hours|address)\b", re.IGNORECASE)
_NUMBER = re.compile(r"\d")
# Capitalised words that name nothing: sentence starts and determiners.
_GENERIC_CAPITALS = {"The", "A", "An", "This", "That", "These", "Those", "It", "Its", "My", "Your", "Our",
                     "Some", "One", "Unknown", "Unclear", "None", "I"}
_UNNAMED = re.compile(r"^\s*(?:unknown|unclear|none|n/?a|not\s+sure|nothing)\b", re.IGNORECASE)


def names_something(text: str) -> bool:
    """Whether a phrase holds a proper name or a model number ("Ford Mustang", "iPhone 13", "BMW"),
    not only a kind ("the red car", "Car"). A capital on the first word alone says nothing: models
    capitalise a lone kind."""
    if not text or _UNNAMED.match(text):
        return False
    words = re.findall(r"[\w'’&.-]+", text)
    if any(_NUMBER.search(w) for w in words):
        return True
    if any(any(c.isupper() for c in w[1:]) for w in words):  # inner capitals: iPhone, BMW, McDonald's
        return True
    return any(w[0].isupper() and w not in _GENERIC_CAPITALS for w in words[1:])


def in_picture(answer: str, picture_text: str) -> bool:
    """The answer's words are all among what perception read (only where perception ran)."""
    if not picture_text or not answer or answer == IDK_ANSWER:
        return False
    words = set(re.findall(r"[a-z0-9]+", answer.lower()))
    return bool(words) and words <= set(re.findall(r"[a-z0-9]+", picture_text.lower()))


def answer_type(turn: Turn, draft: Draft, domain: DomainRoute) -> str:
    """"ocr" | "count" | "arithmetic" | "visual" (the photo settles it) | "entity" | "number" | "other"."""
    question = " ".join(turn.query.split())
    if _OCR.search(question) or in_picture(draft.answer, turn.picture_text):
        return "ocr"
    if _COUNT.search(question):
        return "count"
    if _ARITHMETIC.search(question) or (domain.domain == "Math and science" and _NUMBER.search(question)):
        return "arithmetic"
    if _VISUAL.search(question):
        return "visual"
    if draft.answer != IDK_ANSWER and names_something(draft.answer):
        return "entity"
    if _NUMBER.search(draft.answer):
        return "number"
    return "other"


SELF_CONTAINED = ("ocr", "count", "arithmetic", "visual")


def route_features(turn: Turn, draft: Draft, domain: DomainRoute) -> dict:
    steps = " ".join(draft.steps)
    kind = answer_type(turn, draft, domain)
    return {
        "failed": draft.parsed is not True or draft.answer == IDK_ANSWER or bool(_FAILED.search(steps)),
        "hedged": bool(_HEDGED.search(steps) or _HEDGED.search(draft.answer)),
        "answer_type": kind,
        "self_contained": kind in SELF_CONTAINED,
        # the question asks what no photo shows, or the draft states a name or number the photo
        # does not (the paper's "entities, numbers")
        "open_world": bool(_OPEN_WORLD.search(turn.query)) or (kind in ("entity", "number")),
        "named": names_something(draft.object_name),
    }


def route_turn(turn: Turn, draft: Draft, domain: DomainRoute) -> SearchRoute:
    f = route_features(turn, draft, domain)
    if f["failed"]:
        return SearchRoute("rag", "the draft failed (an answerability flag)", f)
    if f["self_contained"] and not f["hedged"]:
        return SearchRoute("direct_output", f"self-contained ({f['answer_type']}) and not hedged", f)
    if f["open_world"] and not f["named"]:
        return SearchRoute("rag", "an open-world cue and the object is not named", f)
    if f["hedged"]:
        return SearchRoute("search_verify", "the draft is hedged (an uncertainty pattern)", f)
    if f["open_world"]:
        return SearchRoute("search_verify", "an open-world cue about a named object", f)
    return SearchRoute("direct_output", "nothing calls for a search", f)


def route_batch(turns: list[Turn], drafts: list[Draft], domains: list[DomainRoute]) -> list[SearchRoute]:
    return [route_turn(t, d, m) for t, d, m in zip(turns, drafts, domains)]

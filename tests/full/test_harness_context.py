"""Retrieval handed over by facebookresearch/CRAG-MM's harness (`rag_context_list`, `domains`).

The engines are scripted (the answer repeats the first note it was given, so it changes with
the kept context); the chunker, the MiniLM reranker and the MAD threshold are the real ones.
"""
from __future__ import annotations

import json

import pytest
from PIL import Image

from agents.cruise_agent import CruiseAgent
from agents.engines.base import Engines
from testkit.fakes import FakePipeline, ScriptedEngine, last_user_text

# The scripted VLMs write the paper's "CONFIDENCE: x" CoV reply: every agent here runs the
# paper_finalizer preset over the cpu profile (agents/config/presets.py PRESETS).

QUESTIONS = ["Who designed this building?", "How tall is this tower?", "When did the museum open?"]
DOMAINS = ["Sightseeing", "Sightseeing", "Others"]

SPRUCE = {"entity_name": "8 Spruce Street", "entity_attributes": {
    "name": "8 Spruce Street<br />(New York by Gehry)", "image": "8 Spruce Street (01030p).jpg",
    "architect": "[[Frank Gehry]]", "roof": "{{convert|870|ft|m|0|abbr|=|on}}", "floor_count": "76",
    "developer": "[[Forest City Ratner]]", "completion_date": "2010",
}}
MUSEUM = {"entity_name": "Guggenheim Museum Bilbao", "entity_attributes": {
    "architect": "[[Frank Gehry]]", "opened": "{{Start date|1997|10|18}}", "location": "[[Bilbao]], Spain",
    "description": "The Guggenheim Museum Bilbao is a museum of modern and contemporary art.",
}}
IMAGE_HITS = [
    {"index": 1, "score": 0.9995, "url": "https://example.org/a.jpg", "entities": [SPRUCE]},
    {"index": 2, "score": 0.9992, "url": "https://example.org/b.jpg", "entities": [SPRUCE, MUSEUM]},
]
WEB_HITS = [
    {"index": "https://example.org/spruce_chunk_0", "score": 0.61, "page_name": "8 Spruce Street - Wikipedia",
     "page_url": "https://example.org/spruce",
     "page_snippet": "8 Spruce Street is a 76-story skyscraper designed by Frank Gehry... 8 Spruce Street is a "
                     "76-story skyscraper designed by Frank Gehry. It was completed in 2010 and rises 870 feet "
                     "(265 m) above Lower Manhattan. The tower&#x27;s facade is stainless steel."},
    {"index": "https://example.org/bilbao_chunk_1", "score": 0.55, "page_name": "Visit Bilbao | Museums",
     "page_url": "https://example.org/bilbao",
     "page_snippet": "The Guggenheim Museum Bilbao opened to the public on 18 October 1997. " * 3},
]


def crag_mm_context(query: str, image_hits: list[dict], web_hits: list[dict]) -> str:
    """A context block laid out as facebookresearch/CRAG-MM's harness lays out its retrieval
    (utils/retriever.py there: instructions, a name list, "Entity N:" blocks with JSON
    attributes for each entity's first appearance, <DOC> blocks of web snippets). Our own
    wording of the instructions: the chunker must drop them whatever they say."""
    parts = ["<search results>"]
    if image_hits:
        names = []
        for hit in image_hits:
            for entity in hit["entities"]:
                if entity["entity_name"] not in names:
                    names.append(entity["entity_name"])
        parts.append("Some entities look like the photo; use them only if certain.\n\n")
        parts.append(f"Here is a list of entity names retrieved based on visual similarity to the provided image: "
                     f"{', '.join(names)}.\n\n")
        parts.append("Attributes of some of them follow.\n")
        for number, name in enumerate(names, start=1):
            entity = next(e for h in image_hits for e in h["entities"] if e["entity_name"] == name)
            attributes = json.dumps(entity["entity_attributes"], indent=2, ensure_ascii=False)
            parts.append(f"Entity {number}: {name}\nEntity attributes: {attributes}\n\n")
        parts.append("Use these entities only if they are the one in the photo.\n\n")
    if web_hits:
        parts.append(f'Web snippets for "{query}" follow; they may be irrelevant.\n\n')
        for number, hit in enumerate(web_hits, start=1):
            parts.append(f"<DOC>\nWebpage ID: [{number}]\nTitle: {hit['page_name']}\n"
                         f"Web content snippet: {hit['page_snippet']}\n</DOC>\n\n")
        parts.append("Use the web results only if they answer the question.\n\n")
    parts.append("</search results>")
    return "".join(parts)


def first_note(request) -> str:
    """The scripted VLM answers with the start of its first note, "I don't know" without notes:
    two runs give the same answers only if they kept the same context."""
    text = last_user_text(request)
    if "[Info 1] " not in text:
        return "I don't know"
    return text.split("[Info 1] ", 1)[1].split("\n", 1)[0][:60]


def engines(reranker):
    vlm = ScriptedEngine({
        "route": lambda r: "Needs External Info: yes\nIs Real-Time: no",
        "summarize": lambda r: "A tall steel tower in a city.",
        "answer": first_note,
        "consistency": lambda r: "yes",
        "verify": lambda r: "CONFIDENCE: 1.0",
    })
    return Engines(vlm, vlm, reranker)


@pytest.fixture(scope="module")
def reranker():
    from agents.engines.reranker import MiniLMReranker

    return MiniLMReranker("minilm")


def agent(reranker, pipeline=None, **overrides):
    return CruiseAgent(pipeline, engines=engines(reranker), profile="cpu", preset="full+paper_finalizer", **overrides)


def batch(n=len(QUESTIONS)):
    return QUESTIONS[:n], [Image.new("RGB", (64, 48), "grey") for _ in range(n)], [[] for _ in range(n)]


def chunk_view(trace):
    return [(c["text"], round(c["score"], 6)) for c in trace["chunks"]], trace["kept_chunks"], trace["theta"]


@pytest.mark.parametrize("handover", ["crag_mm_block", "hit_dicts", "strings"])
def test_both_harness_call_shapes_give_the_same_answers(reranker, handover):
    kit = agent(reranker, FakePipeline(IMAGE_HITS, WEB_HITS))
    kit_answers = kit.batch_generate_response(*batch())
    if handover == "crag_mm_block":
        contexts = [crag_mm_context(q, IMAGE_HITS, WEB_HITS) for q in QUESTIONS]
    elif handover == "hit_dicts":
        contexts = [IMAGE_HITS + WEB_HITS for _ in QUESTIONS]
    else:  # each hit as JSON text
        contexts = [[json.dumps(h) for h in IMAGE_HITS + WEB_HITS] for _ in QUESTIONS]
    published = agent(reranker)  # the published harness passes no search pipeline
    answers = published.batch_generate_response(*batch(), rag_context_list=contexts, domains=DOMAINS)
    assert answers == kit_answers
    assert all(a != "I don't know" for a in answers)  # the context decided every answer
    for ours, theirs in zip(kit.last_batch_report["traces"], published.last_batch_report["traces"]):
        assert chunk_view(theirs) == chunk_view(ours)
        assert {c["source"] for c in theirs["chunks"]} == {"harness:0"} if handover == "crag_mm_block" else True
    assert [t["harness_domain"] for t in published.last_batch_report["traces"]] == DOMAINS
    assert [t["harness_domain"] for t in kit.last_batch_report["traces"]] == [None] * 3


def test_the_crag_mm_block_keeps_no_instruction_text(reranker):
    published = agent(reranker)
    published.batch_generate_response(*batch(1), rag_context_list=[crag_mm_context(QUESTIONS[0], IMAGE_HITS, WEB_HITS)])
    texts = [c["text"] for c in published.last_batch_report["traces"][0]["chunks"]]
    assert "The photo may show: Guggenheim Museum Bilbao" in texts
    assert "8 Spruce Street: roof: 870 ft; floor count: 76" in texts
    assert not any("search results" in t or "only if" in t or "Webpage ID" in t for t in texts)


def test_harness_context_modes(reranker):
    own = FakePipeline(IMAGE_HITS[:1], None)
    handed = [[WEB_HITS[1]["page_snippet"]]]

    def sources(mode):
        a = agent(reranker, own, harness_context=mode)
        a.batch_generate_response(*batch(1), rag_context_list=handed)
        return {c["source"].split(":")[0] for c in a.last_batch_report["traces"][0]["chunks"]}

    assert sources("merge") == {"image", "harness"}
    assert sources("only") == {"harness"}
    assert sources("ignore") == {"image"}
    # The kit's call (nothing handed over) searches with our pipeline in every mode.
    for mode in ("merge", "only", "ignore"):
        a = agent(reranker, own, harness_context=mode)
        a.batch_generate_response(*batch(1))
        assert {c["source"].split(":")[0] for c in a.last_batch_report["traces"][0]["chunks"]} == {"image"}
    with pytest.raises(ValueError, match="harness_context"):
        agent(reranker, harness_context="both")


def test_odd_passages_neither_crash_nor_overflow(reranker):
    sentence = "The Guggenheim Museum Bilbao was designed by Frank Gehry and opened in 1997. "
    huge = sentence * (100_000 // len(sentence) + 1)
    one_word = "x" * 100_000
    passages = ["", "   ", sentence, sentence, huge, one_word, 42, None, 3.5, b"bytes of text", {"text": sentence},
                {"weird": [1, 2]}, ["nested", "list"], {"entities": [{"entity_name": "Y" * 5000}], "score": 1.0},
                {"page_name": "T" * 5000, "page_snippet": sentence}]
    a = agent(reranker)
    answers = a.batch_generate_response(*batch(2), rag_context_list=[passages, "\x00<DOC>\nbroken"])
    assert len(answers) == 2 and all(isinstance(x, str) for x in answers)
    cap = a.config.retrieval.max_chunk_chars
    for trace in a.last_batch_report["traces"]:
        assert trace["errors"] == []
        assert trace["chunks"] and all(0 < len(c["text"]) <= cap for c in trace["chunks"])
    texts = [c["text"] for c in a.last_batch_report["traces"][0]["chunks"]]
    assert len(texts) == len({t.lower() for t in texts})  # duplicates reranked once
    assert sum(t == sentence.strip() for t in texts) == 1
    assert a.last_batch_report["traces"][0]["harness_passages"] == 12  # 15 given; "", "   " and None dropped


def test_wrong_lengths_are_a_clear_error(reranker):
    a = agent(reranker)
    with pytest.raises(ValueError, match="rag_context_list"):
        a.batch_generate_response(*batch(2), rag_context_list=[""])
    with pytest.raises(ValueError, match="domains"):
        a.batch_generate_response(*batch(2), domains=["Book"])


def test_the_router_gate_applies_to_handed_over_passages(reranker):
    vlm = ScriptedEngine({"route": lambda r: "Needs External Info: no\nIs Real-Time: no",
                          "answer": first_note, "consistency": lambda r: "yes", "verify": lambda r: "CONFIDENCE: 1.0"})
    a = CruiseAgent(None, engines=Engines(vlm, vlm, reranker), profile="cpu", preset="full+paper_finalizer")
    a.batch_generate_response(*batch(1), rag_context_list=[crag_mm_context(QUESTIONS[0], IMAGE_HITS, WEB_HITS)])
    trace = a.last_batch_report["traces"][0]
    assert trace["chunks"] == [] and trace["harness_passages"] == 1

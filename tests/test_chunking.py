"""Chunking of real CRAG-MM search results: infobox wiki markup, layout fields, web snippets.

The image hit below is the documented example of the official image search (the Beekman Tower
photo, entity 8 Spruce Street), with its attribute values verbatim, named parameters split as
`abbr|=|on` the way the dump holds them.
"""
from __future__ import annotations

import re

import pytest

from agents.config.loading import load_config
from agents.stages.s3_retrieve import retrieve_one
from agents.stages.s4_chunk import (
    chunks_from_image_hit,
    chunks_from_web_hit,
    dedupe_sentences,
    entity_chunks,
    is_layout_field,
)
from agents.stages.types import Turn
from agents.stages.wikitext import clean_wikitext
from testkit.fakes import FakePipeline, FunctionReranker, echo_engine

SPRUCE_ATTRIBUTES = {
    "name": "8 Spruce Street<br />(New York by Gehry)",
    "image": "8 Spruce Street (01030p).jpg",
    "image_size": "200px",
    "address": "8 Spruce Street<br />[[Manhattan]], New York, U.S. 10038",
    "mapframe_wikidata": "yes",
    "coordinates": "{{coord|40|42|39|N|74|00|20|W|region:US-NY_type:landmark|display|=|inline,title}}",
    "status": "Complete",
    "start_date": "2006",
    "completion_date": "2010",
    "opening": "February 2011",
    "building_type": "[[Mixed-use development|Mixed-use]]",
    "architectural_style": "[[Deconstructivism]]",
    "roof": "{{convert|870|ft|m|0|abbr|=|on}}",
    "top_floor": "{{convert|827|ft|abbr|=|on}}",
    "floor_count": "76",
    "floor_area": "{{convert|1000000|sqft|m2|abbr|=|on}}",
    "architect": "[[Frank Gehry]]",
    "structural_engineer": "[[WSP Group|WSP Cantor Seinuk]]",
    "main_contractor": "Kreisler Borg Florman",
    "developer": "[[Forest City Ratner]]",
    "engineer": "[[Jaros, Baum & Bolles]] (MEP)",
    "owner": "8 Spruce (NY) Owner LLC",
    "management": "Beam Living",
    "website": "{{URL|https://live8spruce.com/}}",
}
SPRUCE_ENTITY = {"entity_name": "8 Spruce Street", "entity_attributes": SPRUCE_ATTRIBUTES}
SPRUCE_HITS = [
    {"index": 17030, "score": 0.9064, "url": "https://upload.wikimedia.org/wikipedia/commons/8/8e/8_Spruce_Street.jpg",
     "entities": [SPRUCE_ENTITY]},
    {"index": 17031, "score": 0.8712, "url": "https://upload.wikimedia.org/wikipedia/commons/a/a0/Beekman_Tower.jpg",
     "entities": [SPRUCE_ENTITY]},
]
MARKUP = re.compile(r"\[\[|\]\]|\{\{|\}\}|<[a-z/!]|&[a-z#0-9]+;|\|", re.I)


@pytest.fixture
def cfg():
    # the chunk size the examples below were written for: whole snippets fit in one chunk (the
    # size rule itself does not depend on it)
    return load_config("cpu", "full", max_chunk_chars=800)


def test_spruce_street_chunks_carry_the_name_and_no_markup(cfg):
    chunks = chunks_from_image_hit(SPRUCE_HITS[0], cfg)
    assert len(chunks) >= 10
    for chunk in chunks:
        assert chunk.startswith("8 Spruce Street: "), chunk
        assert not MARKUP.search(chunk), chunk
    text = "\n".join(chunks)
    assert "architect: Frank Gehry" in text
    assert "floor count: 76" in text
    assert "roof: 870 ft" in text and "top floor: 827 ft" in text
    assert "floor area: 1,000,000 sq ft" in text
    assert "structural engineer: WSP Cantor Seinuk" in text
    assert "engineer: Jaros, Baum & Bolles (MEP)" in text
    assert "website: https://live8spruce.com/" in text
    assert "address: 8 Spruce Street; Manhattan, New York, U.S. 10038" in text
    assert "name: 8 Spruce Street (New York by Gehry)" in text  # the alternative name says something


def test_spruce_street_layout_fields_are_dropped(cfg):
    text = "\n".join(chunks_from_image_hit(SPRUCE_HITS[0], cfg)).lower()
    for gone in ("01030p", "200px", "mapframe", "image size", "coordinates", "40 42 39", "region:", "inline"):
        assert gone not in text
    for key in ("image", "image_size", "alt", "mapframe_wikidata", "mapframe_zoom", "coordinates", "pushpin_map",
                "logo_size", "image_caption_align"):
        assert is_layout_field(key), key
    for key in ("architect", "floor_count", "caption", "website", "height", "location"):
        assert not is_layout_field(key), key


def test_one_fact_per_chunk_or_grouped(cfg):
    single = entity_chunks(SPRUCE_ENTITY, cfg.retrieval.max_chunk_chars, fields_per_chunk=1)
    grouped = entity_chunks(SPRUCE_ENTITY, cfg.retrieval.max_chunk_chars, fields_per_chunk=4)
    assert "8 Spruce Street: architect: Frank Gehry" in single
    assert len(grouped) == -(-len(single) // 4)
    assert any("architect: Frank Gehry" in c and "; " in c for c in grouped)


def test_paper_fields_are_kept_and_named(cfg):
    entity = {"entity_name": "Espresso", "entity_attributes": {
        "description": "Espresso is a concentrated coffee.\nIt comes from [[Italy]].",
        "caption": "A cup of espresso", "summary": "Italian coffee", "image": "Espresso.jpg"}}
    chunks = entity_chunks(entity, cfg.retrieval.max_chunk_chars)
    assert chunks == ["Espresso is a concentrated coffee.", "Espresso: It comes from Italy.",
                      "A cup of espresso", "Espresso: Italian coffee"]


def test_the_old_chunker_finds_nothing_in_an_infobox(cfg):
    old = cfg.replace(chunker="paper_fields")
    assert chunks_from_image_hit(SPRUCE_HITS[0], old) == []
    assert chunks_from_image_hit(SPRUCE_HITS[0], cfg) != []


@pytest.mark.parametrize("raw, clean", [
    ("[[Mixed-use development|Mixed-use]]", "Mixed-use"),
    ("[[Deconstructivism]]", "Deconstructivism"),
    ("[[Foo (band)|]] and [[Bar#History|the bar]]", "Foo and the bar"),
    ("[[File:Logo.svg|20px]] Acme", "Acme"),
    ("line one<br />line two<br>line three", "line one; line two; line three"),
    ("Caf&eacute; &amp; bar &#x27;A&#x27; &quot;B&quot; 5&nbsp;m", "Café & bar 'A' \"B\" 5 m"),
    ("1813<ref>{{cite book|title=Austen|year=1900}}</ref> and 1814<ref name=\"x\"/>", "1813 and 1814"),
    ("{{convert|870|ft|m|0|abbr|=|on}}", "870 ft"),
    ("{{convert|870|ft|m|0|abbr=on}}", "870 ft"),
    ("{{convert|1000000|sqft|m2|abbr|=|on}}", "1,000,000 sq ft"),
    ("{{convert|3|-|5|kg|lb|abbr=on}}", "3 - 5 kg"),
    ("{{URL|https://live8spruce.com/}}", "https://live8spruce.com/"),
    ("{{Start date|1851|10|18}}", "18 October 1851"),
    ("{{start date|1851|10}}", "October 1851"),
    ("{{Start date|1851}}", "1851"),
    ("{{birth date and age|1956|11|19|df=y}}", "19 November 1956"),
    ("{{ubl|Red|Green|Blue}}", "Red, Green, Blue"),
    ("{{hlist|[[Silver]]|[[Bronze]]}}", "Silver, Bronze"),
    ("{{plainlist|\n* [[Kunming Lake]]\n* Longevity Hill\n}}", "Kunming Lake, Longevity Hill"),
    ("{{coord|40|42|39|N|74|00|20|W|region:US-NY_type:landmark|display|=|inline,title}}", ""),
    ("{{lang|zh|佛香閣}}", "佛香閣"),
    ("''[[Felis catus]]''", "Felis catus"),
    ("[https://example.org Example site]", "Example site"),
    ("{{some unknown template|alpha|beta|key=value}}", "alpha beta"),
    ("{{convert|57.91|e6km|e6mi|abbr=on}}", "57.91 million km"),
    ("{{abbr|MEP|mechanical, electrical and plumbing}}", "MEP"),
    ("{{US$|69.75 million|long=no}}", "US$69.75 million"),
    ("{{nbsp}}76{{snd}}77<!-- hidden note -->", "76 – 77"),
])
def test_each_markup_kind(raw, clean):
    assert clean_wikitext(raw) == clean


@pytest.mark.parametrize("raw, clean", [
    # templates inside templates
    ("{{ubl|LEO: {{convert|22800|kg|lb|abbr=on}}|GTO: {{convert|8300|kg|lb|abbr=on}}}}", "LEO: 22,800 kg, GTO: 8,300 kg"),
    ("{{nowrap|{{Start date|2010|6|4}}}}", "4 June 2010"),
    # links inside templates, a link label holding a pipe-free template
    ("{{ubl|[[STS-63]] (pilot)|[[STS-93]] (commander)}}", "STS-63 (pilot), STS-93 (commander)"),
    ("{{hlist|[[Caffè macchiato|Macchiato]]|[[Ristretto]]}}", "Macchiato, Ristretto"),
    ("{{plainlist|\n* [[Harper &amp; Brothers]]\n* {{nowrap|[[Richard Bentley (publisher)|Richard Bentley]]}}\n}}",
     "Harper & Brothers, Richard Bentley"),
    ("[[Second Opium War|war of {{Start date|1860}}]]", "war of 1860"),
    ("{{Start date|1851|10|18}} (London)<br />{{Start date|1851|11|14}} (New York)",
     "18 October 1851 (London); 14 November 1851 (New York)"),
])
def test_nested_templates_and_links_inside_templates(raw, clean):
    assert clean_wikitext(raw) == clean


def test_web_snippet_with_entities_and_repeats(cfg):
    snippet = ("Herman Melville sailed on the whaler Acushnet in 1841 before he wrote &#x27;Moby-Dick&#x27; ... "
               "Herman Melville sailed on the whaler Acushnet in 1841 before he wrote &#x27;Moby-Dick&#x27; in New York. "
               "He called it &quot;a wicked book&quot;. He called it &quot;a wicked book&quot;. "
               "Melville &amp; Hawthorne were friends.")
    hit = {"index": "https://books.example/melville_chunk_0", "score": 0.57, "page_name": "Herman Melville - Wikipedia",
           "page_snippet": snippet, "page_url": "https://books.example/melville"}
    chunks = chunks_from_web_hit(hit, cfg)
    text = " ".join(chunks)
    assert text.count("Acushnet") == 1 and text.count("wicked book") == 1
    assert "'Moby-Dick' in New York." in text and '"a wicked book"' in text and "Melville & Hawthorne" in text
    assert not MARKUP.search(text)
    assert all(c.startswith("Herman Melville: ") for c in chunks)  # the page title, without the site
    assert chunks_from_web_hit(hit, cfg.replace(chunker="paper_fields")) == [" ".join(snippet.split())]


def test_long_snippets_become_paragraphs_within_the_reranker_input(cfg):
    sentences = [f"Sentence number {i} says something about the page and its topic." for i in range(80)]
    hit = {"page_snippet": " ".join(sentences), "page_name": "x", "page_url": "https://x.example/"}
    chunks = chunks_from_web_hit(hit, cfg)
    assert len(chunks) > 1 and all(len(c) <= cfg.retrieval.max_chunk_chars for c in chunks)
    assert all(c.endswith(".") for c in chunks)  # cut on sentence boundaries
    assert dedupe_sentences(" ".join(sentences)) == sentences


WEB_HITS = [{"index": "https://x.example/p_chunk_0", "score": 0.6, "page_name": "Page - Site",
             "page_snippet": "Frank Gehry designed it.", "page_url": "https://x.example/p"}]


def _turn():
    from PIL import Image

    return Turn(query="who designed this building?", image=Image.new("RGB", (8, 8)), history=[])


def test_names_of_confident_hits_become_chunks_and_join_the_web_query(cfg):
    pipeline = FakePipeline(SPRUCE_HITS, WEB_HITS)
    cfg = cfg.replace(image_score_floor=0.85)  # the official CLIP's scale: both hits are confident
    found = retrieve_one(_turn(), "A tall steel tower.", pipeline, cfg)
    assert "The photo may show: 8 Spruce Street" in found.chunks
    assert sum("architect: Frank Gehry" in c for c in found.chunks) == 1  # two hits, one entity
    assert pipeline.text_queries == ["who designed this building? A tall steel tower. 8 Spruce Street"]
    assert found.query == "who designed this building? A tall steel tower."  # the reranker's q'


def test_fusion_and_name_chunks_follow_the_floor_and_the_switch(cfg):
    low = [dict(h, score=0.2) for h in SPRUCE_HITS]
    pipeline = FakePipeline(low, WEB_HITS)
    found = retrieve_one(_turn(), "", pipeline, cfg.replace(image_score_floor=0.5))
    assert not any(c.startswith("The photo may show") for c in found.chunks)
    assert pipeline.text_queries == ["who designed this building?"]
    assert any("architect: Frank Gehry" in c for c in found.chunks)  # attributes of every hit are reranked
    pipeline = FakePipeline(SPRUCE_HITS, WEB_HITS)
    retrieve_one(_turn(), "", pipeline, cfg.replace(image_score_floor=0.85, fusion_query=False))
    assert pipeline.text_queries == ["who designed this building?"]


def test_the_agent_traces_infobox_chunks_under_the_public_names():
    from PIL import Image

    from agents.cruise_agent import CruiseAgent
    from agents.engines.base import Engines

    engine = echo_engine()
    reranker = FunctionReranker(lambda q, c: 0.95 if "Gehry" in c else 0.3)
    agent = CruiseAgent(FakePipeline(SPRUCE_HITS, WEB_HITS), engines=Engines(router=engine, vlm=engine, reranker=reranker),
                        profile="cpu", preset="full", image_score_floor=0.85)
    agent.batch_generate_response(["who designed this building?"], [Image.new("RGB", (32, 32))], [[]])
    trace = agent.last_batch_report["traces"][0]
    texts = [c["text"] for c in trace["chunks"]]
    assert "The photo may show: 8 Spruce Street" in texts
    assert all(t.startswith(("8 Spruce Street: ", "The photo may show: ", "Page: ")) for t in texts)
    assert any("architect: Frank Gehry" in t for t in trace["kept_chunks"])
    assert trace["web_query"].endswith("8 Spruce Street")

"""The shipped crag-mm-mini dataset: loadable with `datasets`, CRAG-MM schema, coverage, determinism."""
from __future__ import annotations

import json
import re

import pytest

from agents.profiles import REPO_ROOT
from minibench.build_benchmark import SPLIT_FILE, build

DATA = REPO_ROOT / "data" / "crag-mm-mini"
CATEGORIES = {"simple recognition", "simple knowledge", "multi-hop", "comparison", "aggregation", "reasoning"}
DYNAMISM = {"static", "slow-changing", "fast-changing", "real-time"}
TURN_KEYS = {"interaction_id", "domain", "query_category", "dynamism", "query"}


@pytest.fixture(scope="module")
def splits(tmp_path_factory):
    import datasets

    cache = tmp_path_factory.mktemp("hf-datasets")
    return {kind: datasets.load_dataset(str(DATA / kind), cache_dir=str(cache))
            for kind in ("single-turn", "multi-turn")}


def _rows(splits, kind):
    return list(splits[kind]["validation"])


def test_both_splits_load_with_the_crag_mm_schema(splits):
    from PIL import Image

    for kind, dd in splits.items():
        assert list(dd) == ["validation"]
        ds = dd["validation"]
        assert set(ds.column_names) == {"session_id", "image", "image_url", "image_quality", "turns", "answers"}
        for row in ds:
            assert isinstance(row["session_id"], str)
            assert isinstance(row["image"], Image.Image) and max(row["image"].size) <= 384
            assert row["image_url"] is None or row["image_url"].startswith("https://")
            assert isinstance(row["image_quality"], str) and row["image_quality"]
            # single-turn questions also carry CRAG-MM-Diagnostics' stage labels (None where unlabelled)
            assert all(set(t) == TURN_KEYS | ({"metadata"} if kind == "single-turn" else set()) for t in row["turns"])
            # the official keys first, in order; then the offline judge's two extra keys
            assert all(list(a) == ["interaction_id", "ans_full", "ans_accepted", "abstain_expected"]
                       and a["ans_full"] for a in row["answers"])


def test_sizes_and_turn_counts(splits):
    single, multi = _rows(splits, "single-turn"), _rows(splits, "multi-turn")
    assert len(single) == 55 and all(len(r["turns"]) == 1 for r in single)
    assert len(multi) >= 30 and all(2 <= len(r["turns"]) <= 6 for r in multi)
    assert sum(len(r["turns"]) for r in multi) >= 100
    ids = [r["session_id"] for r in single + multi]
    assert len(ids) == len(set(ids))


def test_coverage_of_categories_domains_ego_and_real_time(splits):
    rows = _rows(splits, "single-turn") + _rows(splits, "multi-turn")
    turns = [t for r in rows for t in r["turns"]]
    assert {t["query_category"] for t in turns} == CATEGORIES
    assert {t["dynamism"] for t in turns} == DYNAMISM
    assert len({t["domain"] for t in turns}) >= 11
    assert any(r["image_url"] is None for r in rows) and any(r["image_url"] for r in rows)
    assert {"normal", "low light", "blurred"} <= {r["image_quality"] for r in rows}
    for kind in splits:  # both splits have real-time turns and ego/non-ego sessions
        kind_rows = _rows(splits, kind)
        assert any(t["dynamism"] == "real-time" for r in kind_rows for t in r["turns"])
        assert any(r["image_url"] is None for r in kind_rows) and any(r["image_url"] for r in kind_rows)


def test_every_answer_matches_a_turn_in_order(splits):
    for kind in splits:
        for row in _rows(splits, kind):
            assert [a["interaction_id"] for a in row["answers"]] == [t["interaction_id"] for t in row["turns"]]
    all_ids = [t["interaction_id"] for k in splits for r in _rows(splits, k) for t in r["turns"]]
    assert len(all_ids) == len(set(all_ids))


def test_provenance_covers_every_turn_and_every_source(splits):
    provenance = json.loads((DATA / "provenance.json").read_text())
    for kind in splits:
        notes = {n["session_id"]: n for n in provenance[kind]}
        for row in _rows(splits, kind):
            where = [t["interaction_id"] for t in notes[row["session_id"]]["turns"]]
            assert where == [t["interaction_id"] for t in row["turns"]]
    sources = {t["answer_source"] for k in provenance for n in provenance[k] for t in n["turns"]}
    assert sources == {"image", "kg", "web", "none"}


def test_abstain_expected_marks_exactly_the_answers_no_source_holds(splits):
    """What docs/evaluation.md and the offline judge say of `abstain_expected`: set where the
    answer source is "none", and not for being real-time (a real-time question whose answer a
    source holds is judged like any other)."""
    provenance = json.loads((DATA / "provenance.json").read_text())
    source = {t["interaction_id"]: t["answer_source"] for k in provenance for n in provenance[k] for t in n["turns"]}
    rows = _rows(splits, "single-turn") + _rows(splits, "multi-turn")
    dynamism = {t["interaction_id"]: t["dynamism"] for r in rows for t in r["turns"]}
    marked = {a["interaction_id"]: a["abstain_expected"] for r in rows for a in r["answers"]}
    assert marked == {iid: source[iid] == "none" for iid in marked}
    assert any(dynamism[iid] == "real-time" and not flag for iid, flag in marked.items())


def test_build_is_deterministic_and_matches_the_shipped_files(tmp_path):
    build(tmp_path / "a")
    build(tmp_path / "b")
    for kind in ("single-turn", "multi-turn"):
        first = (tmp_path / "a" / kind / SPLIT_FILE).read_bytes()
        assert first == (tmp_path / "b" / kind / SPLIT_FILE).read_bytes()
        assert first == (DATA / kind / SPLIT_FILE).read_bytes(), "rebuild data/ with python -m minibench.build_benchmark"
    assert (tmp_path / "a" / "provenance.json").read_text() == (DATA / "provenance.json").read_text()


def test_dataset_is_small():
    total = sum(p.stat().st_size for p in DATA.rglob("*") if p.is_file())
    assert total < 2_000_000


# --- the image KG and web pages in the official shapes (../shared/FORMATS.md) --------------

def _turns_with_sources():
    from minibench import content

    for picture, turn in content.SINGLE_TURN:
        yield picture, turn
    for picture, conversation in content.MULTI_TURN:
        for turn in conversation:
            yield picture, turn


def _picture_entities(picture):
    from minibench import content

    return [{"entity_name": name, "entity_attributes": attrs}
            for pic, entities in content.KG_ENTRIES if pic == picture for name, attrs in entities.items()]


def test_kg_entities_are_infoboxes_in_wiki_markup():
    from minibench import content

    entities = [(name, attrs) for _, found in content.KG_ENTRIES for name, attrs in found.items()]
    assert all(8 <= len(attrs) <= 30 for _, attrs in entities)
    assert not any({"description", "summary"} & set(attrs) for _, attrs in entities)
    values = " ".join(str(v) for _, attrs in entities for v in attrs.values())
    for markup in ("[[", "|", "{{convert|", "{{URL|", "{{Start date|", "{{ubl|", "{{hlist|", "{{coord|", "<br />",
                   "<ref>", "&ndash;", "&quot;", "abbr|=|on"):
        assert markup in values, markup
    assert re.search(r"\{\{[^{}]*\{\{", values)  # templates inside templates
    assert re.search(r"\{\{[^{}]*\[\[", values)  # links inside templates
    for layout in ("image", "image_size", "alt", "coordinates", "mapframe"):
        assert any(layout in attrs for _, attrs in entities), layout
    assert any(len(found) == 2 for _, found in content.KG_ENTRIES)  # hits with two entities
    assert sum(isinstance(pic, tuple) for pic, _ in content.KG_ENTRIES) >= 8  # look-alike negatives
    # The official KG is keyed by entity name: one name, one set of attributes.
    by_name = {}
    for name, attrs in entities:
        assert by_name.setdefault(name, attrs) == attrs


def test_web_pages_look_like_official_hits():
    import html as html_lib

    from minibench import content
    from minibench.build_indices import web_records

    for page in content.WEB_PAGES:
        snippet = page["page_snippet"]
        assert " - " in page["page_name"] and page["page_name"].rsplit(" - ", 1)[1] in content.SITES.values()
        assert len(snippet) <= 2100 and "..." in snippet
        plain = html_lib.unescape(snippet)
        extract = plain.split(" ...", 1)[0]
        assert plain.count(extract) >= 2  # the extract's sentences come again in full
    assert sum("&#x27;" in p["page_snippet"] or "&quot;" in p["page_snippet"] for p in content.WEB_PAGES) >= 5
    chunks = {}
    for chunk_id, _, meta in web_records():
        chunks[meta["page_url"]] = chunks.get(meta["page_url"], 0) + 1
    assert all(n >= 2 for n in chunks.values())


def test_answers_are_reachable_where_the_provenance_says():
    """A KG answer is in the chunks of its picture's KG entities; a web answer is in some page's
    snippet and not in the picture's KG; a "none" answer is in neither (checked on the same
    chunks the agent reranks)."""
    from agents.config.loading import load_config
    from agents.stages.s4_chunk import chunks_from_image_hit, chunks_from_web_hit
    from evaluator.scoring.coverage import answer_in_context
    from minibench import content

    cfg = load_config("cpu", "full")
    web_text = "\n".join(c for p in content.WEB_PAGES for c in chunks_from_web_hit(p, cfg))
    whole_kg = "\n".join(c for _, found in content.KG_ENTRIES for c in chunks_from_image_hit(
        {"entities": [{"entity_name": n, "entity_attributes": a} for n, a in found.items()]}, cfg))
    checked = {"kg": 0, "web": 0}
    for picture, (_, _, _, query, answer, where) in _turns_with_sources():
        kg_text = "\n".join(chunks_from_image_hit({"entities": _picture_entities(picture)}, cfg))
        keys = content.ANSWER_KEYS.get(query)
        if where == "kg":  # a comparison may need a look-alike's entity too, but starts from the picture's
            assert answer_in_context(keys, whole_kg) and answer_in_context(keys[:1], kg_text), query
            checked["kg"] += 1
        elif where == "web":
            assert answer_in_context(keys, web_text), query
            assert not answer_in_context(keys, kg_text), query
            checked["web"] += 1
        else:
            assert query not in content.ANSWER_KEYS, query
    assert checked["kg"] >= 30 and checked["web"] >= 15


# --- the conversations' follow-ups and what they refer to -----------------------------------

def test_every_follow_up_names_its_referent_only_through_the_conversation(splits):
    """provenance.json's `referent` of each follow-up is consistent with the turns it points at:
    a name the follow-up itself does not contain (unless it is marked "self") and that the
    earlier question / gold answer it cites does contain; `photo_entity` exactly where a name
    is part of one of the picture's KG entity names (what image search hands the agent)."""
    from evaluator.scoring.coverage import key_in_text
    from minibench import content

    provenance = {n["session_id"]: n for n in json.loads((DATA / "provenance.json").read_text())["multi-turn"]}
    follow_ups = 0
    for row in _rows(splits, "multi-turn"):
        note = provenance[row["session_id"]]
        entities = " | ".join(name for pic, found in content.KG_ENTRIES if pic == note["picture"] for name in found)
        assert "referent" not in note["turns"][0]
        for t in range(1, len(row["turns"])):
            ref, query = note["turns"][t]["referent"], row["turns"][t]["query"]
            names = ref["names"]
            follow_ups += 1
            assert ref["source"] in {"question", "answer", "photo", "self"}, query
            named = lambda text: any(key_in_text(n, text) for n in names)  # noqa: E731
            if ref["source"] == "self":
                assert named(query), query
                continue
            assert not named(query), query  # the follow-up leaves its subject out
            if ref["source"] in ("question", "answer"):
                assert 0 <= ref["turn"] < t, query
                earlier = row["turns"][ref["turn"]]["query"] if ref["source"] == "question" \
                    else row["answers"][ref["turn"]]["ans_full"]
                assert named(earlier), query
            assert ref["photo_entity"] == (bool(names) and named(entities)), query
    assert follow_ups >= 65


def test_the_follow_ups_cover_every_kind_of_referent():
    """Enough follow-ups of each kind to measure on: referents named only in an earlier answer
    that image search cannot supply, referents from an earlier question, and turns whose subject
    has left the picture, most of them answered from the KG or the web."""
    from minibench import content

    follow_ups = [turn for _, conversation in content.MULTI_TURN for turn in conversation[1:]]
    queries = [turn[3] for _, conversation in content.MULTI_TURN for turn in conversation]
    assert len(queries) == len(set(queries)), "REFERENTS and ANSWER_KEYS are keyed by the query"
    assert set(content.REFERENTS) == {turn[3] for turn in follow_ups}
    refs = [(content.REFERENTS[turn[3]], turn[5]) for turn in follow_ups]
    retrieval = [(r, where) for r, where in refs if where in ("kg", "web")]
    assert sum(not r.photo_entity for r, _ in retrieval) >= 15
    assert sum(r.photo_entity for r, _ in retrieval) >= 15
    assert sum(r.source == "question" for r, _ in refs) >= 3
    assert sum(not r.about_photo for r, _ in refs) >= 20


def test_the_diagnostics_folder_holds_the_labelled_questions_and_the_composed_photos():
    """data/crag-mm-mini/diagnostics in CRAG-MM-Diagnostics' published layout (flat rows, split
    test): one knowledge question per labelled photo, then the composed photos, whose target box
    is the half the target was pasted into; every text-only question names its target."""
    from evaluator.harness.dataset import load_split, read_conversations
    from evaluator.scoring.diagnostics import named_in, target_names
    from minibench import content

    ds, split, _ = load_split(str(DATA / "diagnostics"), None, "test")
    assert split == "test" and {"id", "question", "answer", "image", "metadata"} <= set(ds.column_names)
    labelled = list(content.TARGETS)  # one knowledge question per photo
    conversations = read_conversations(ds)
    assert len(conversations) == len(labelled) + len(content.COMPOSED)
    assert all(query != content.TEXT_ONLY[query] for query in ds["question"])
    for conv in conversations:
        labels = conv.turns[0].stage_labels
        assert named_in(target_names(labels), labels["textual_only_question"]), labels
    for conv, ((left, right), target, *_rest) in zip(conversations[len(labelled):], content.COMPOSED):
        x1, y1, x2, y2 = conv.turns[0].stage_labels["target_roi_bbox"]
        width, height = conv.turns[0].stage_labels["image_size"]
        half = width / 2
        assert (x1 >= half) == ((left, right).index(target) == 1) and x2 - x1 <= half and 0 <= y1 < y2 <= height
        assert conv.turns[0].stage_labels["target_object_name"] == content.TARGETS[target]["name"]

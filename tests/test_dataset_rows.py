"""evaluator/harness/dataset.py at its edges: the two shapes of `turns`/`answers`, CRAG-MM-Diagnostics'
flat rows and their stage labels (metadata as the published parquet holds it, or as JSON text),
the agent's view of an image (egocentric frames resized, third-person ones as they are), the
rule set's image_url fixes, and fetching an image_url: http(s) only, redirects only to http(s),
a size cap, a timeout and the on-disk cache. The web is a local http.server on 127.0.0.1."""
from __future__ import annotations

import hashlib
import http.server
import io
import socket
import threading
import urllib.error

import pytest
from PIL import Image

from evaluator.harness import dataset
from evaluator.harness.dataset import (
    EGO_IMAGE_SIZE,
    LABEL_FIELDS,
    Conversation,
    DatasetTurn,
    apply_image_url_updates,
    conversation_from_row,
    diagnostics_conversation,
    fetch_image_bytes,
    image_for_agent,
    is_egocentric,
    label_name,
    label_vocabularies,
    load_split,
    normalise_records,
    read_conversations,
    stage_labels,
)
from testkit.diagnostics_layout import SIZE, TARGET, TARGET_BOX

HERON_PAGE = "https://en.wikipedia.org/wiki/Great_blue_heron"


def _metadata(**changes) -> dict:
    """One row's `metadata` as CRAG-MM-Diagnostics publishes it (testkit/diagnostics_layout.py)."""
    metadata = {"target_roi_bbox": list(TARGET_BOX), "image_size": list(SIZE), "target_object_name": TARGET,
                "wikipedia_url": HERON_PAGE, "referring_expression_category": "spatial",
                "disambiguated_question": "what is the blue animal on the right?",
                "textual_only_question": f"what is the {TARGET}?"}
    metadata.update(changes)
    return metadata


def _row(**changes) -> dict:
    row = {"id": "d0", "question": "what is the animal on the right?", "answer": TARGET,
           "image_url": "https://images.example/d0.jpg", "metadata": _metadata()}
    row.update(changes)
    return row


# ---- normalise_records: `turns` / `answers` as a list of dicts or a dict of lists ----

def test_a_dict_of_lists_becomes_one_record_per_position():
    answers = {"interaction_id": ["t0", "t1"], "ans_full": ["a heron", "in 1990"]}
    assert normalise_records(answers) == [{"interaction_id": "t0", "ans_full": "a heron"},
                                          {"interaction_id": "t1", "ans_full": "in 1990"}]


def test_a_list_of_dicts_is_copied_so_the_dataset_row_is_never_changed():
    turns = [{"interaction_id": "t0", "query": "what is this?"}]
    records = normalise_records(turns)
    records[0]["query"] = "changed"
    assert records == [{"interaction_id": "t0", "query": "changed"}]
    assert turns == [{"interaction_id": "t0", "query": "what is this?"}]


@pytest.mark.parametrize("value", [None, {}, []])
def test_absent_or_empty_records_are_no_records(value):
    assert normalise_records(value) == []


def test_lists_of_different_lengths_are_refused_with_their_lengths():
    with pytest.raises(ValueError, match=r"different lengths: \[1, 2\]$"):
        normalise_records({"interaction_id": ["t0", "t1"], "ans_full": ["a heron"]})


# ---- stage_labels: a turn's labelled target ----

def test_published_metadata_gives_every_stage_label():
    assert stage_labels(_metadata()) == {
        "target_roi_bbox": TARGET_BOX, "image_size": [200, 100], "target_object_name": TARGET,
        "wikipedia_url": HERON_PAGE, "referring_expression_category": "spatial",
        "disambiguated_question": "what is the blue animal on the right?",
        "textual_only_question": f"what is the {TARGET}?"}


def test_metadata_as_json_text_reads_as_the_dict():
    import json

    assert stage_labels(json.dumps(_metadata())) == stage_labels(_metadata())


@pytest.mark.parametrize("metadata", ["{not json", "[1, 2]", None, [("target_object_name", TARGET)], 7])
def test_metadata_that_is_not_a_dict_gives_no_labels(metadata):
    assert stage_labels(metadata) is None


def test_numbers_written_as_text_are_read_and_the_size_becomes_whole_pixels():
    labels = stage_labels(_metadata(target_roi_bbox=["100", "0", "200.5", "100"], image_size=[200.0, "100"]))
    assert labels["target_roi_bbox"] == [100.0, 0.0, 200.5, 100.0]
    assert labels["image_size"] == [200, 100] and all(type(v) is int for v in labels["image_size"])


@pytest.mark.parametrize("box", [
    [100, 0, 100, 100],        # no width
    [100, 0, 200, 0],          # no height
    [200, 0, 100, 100],        # x2 left of x1
    [100, 50, 200, 10],        # y2 above y1
    [100, 0, 200],             # three numbers
    [100, 0, 200, 100, 5],     # five numbers
    ["left", 0, 200, 100],     # not a number
    7,                         # not a list
])
def test_a_box_that_is_not_a_real_rectangle_is_dropped_not_guessed(box):
    labels = stage_labels(_metadata(target_roi_bbox=box))
    assert labels["target_roi_bbox"] is None
    assert labels["target_object_name"] == TARGET  # the named target still counts


def test_a_box_one_pixel_wide_and_high_is_kept():
    assert stage_labels(_metadata(target_roi_bbox=[10, 20, 11, 21]))["target_roi_bbox"] == [10.0, 20.0, 11.0, 21.0]


@pytest.mark.parametrize("size", [[0, 100], [200, 0], [-200, 100], [200], [200, 100, 3], ["wide", 100], 200])
def test_an_image_size_that_is_not_two_positive_numbers_is_dropped(size):
    assert stage_labels(_metadata(image_size=size))["image_size"] is None


def test_a_one_pixel_image_size_is_kept():
    assert stage_labels(_metadata(image_size=[1, 1]))["image_size"] == [1, 1]


def test_text_labels_have_their_spaces_collapsed_and_blank_ones_become_none():
    labels = stage_labels(_metadata(target_object_name="  Blue \n heron ", referring_expression_category="   ",
                                    wikipedia_url=None, disambiguated_question="",
                                    textual_only_question=12))
    assert labels["target_object_name"] == "Blue heron"
    assert labels["referring_expression_category"] is None
    assert labels["wikipedia_url"] is None and labels["disambiguated_question"] is None
    assert labels["textual_only_question"] == "12"


def test_missing_fields_are_none():
    labels = stage_labels({"target_object_name": TARGET})
    assert labels == {"target_roi_bbox": None, "image_size": None, "target_object_name": TARGET,
                      "wikipedia_url": None, "referring_expression_category": None,
                      "disambiguated_question": None, "textual_only_question": None}


def test_a_box_without_a_name_is_still_a_target():
    labels = stage_labels({"target_roi_bbox": TARGET_BOX, "target_object_name": " "})
    assert labels["target_roi_bbox"] == TARGET_BOX and labels["target_object_name"] is None


@pytest.mark.parametrize("metadata", [
    {},
    {"wikipedia_url": HERON_PAGE, "image_size": [200, 100], "textual_only_question": "what is it?"},
    {"target_object_name": "  ", "target_roi_bbox": [5, 5, 5, 5]},
])
def test_a_turn_with_neither_a_target_name_nor_a_box_has_no_labels(metadata):
    assert stage_labels(metadata) is None


# ---- diagnostics_conversation: a flat row as a one-turn conversation ----

def test_a_published_row_is_one_turn_conversation_named_by_its_id():
    conv = diagnostics_conversation(3, _row())
    assert (conv.index, conv.session_id, conv.image_url, conv.image_quality) == (3, "d0", "https://images.example/d0.jpg", None)
    assert not conv.is_ego
    [turn] = conv.turns
    assert (turn.interaction_id, turn.query, turn.ground_truth) == ("d0", "what is the animal on the right?", TARGET)
    assert (turn.domain, turn.query_category, turn.dynamism) == (None, None, None)
    assert turn.labels == {name: None for name in LABEL_FIELDS}
    assert turn.ans_accepted is None and turn.abstain_expected is None
    assert turn.stage_labels == stage_labels(_metadata())


def test_a_row_without_an_image_url_is_egocentric():
    for url in (None, ""):
        conv = diagnostics_conversation(0, _row(image_url=url))
        assert conv.image_url is None and conv.is_ego
    assert diagnostics_conversation(0, {k: v for k, v in _row().items() if k != "image_url"}).is_ego


def test_ids_and_answers_that_are_not_text_become_text():
    conv = diagnostics_conversation(0, _row(id=17, answer=1990, question=None))
    assert conv.session_id == "17" and conv.turns[0].interaction_id == "17"
    assert conv.turns[0].ground_truth == "1990" and conv.turns[0].query == ""


def test_the_mini_benchmarks_answer_keys_are_read_where_present():
    turn = diagnostics_conversation(0, _row(ans_accepted=["heron", 1990], abstain_expected=0)).turns[0]
    assert turn.ans_accepted == ["heron", "1990"] and turn.abstain_expected is False
    turn = diagnostics_conversation(0, _row(ans_accepted=[], abstain_expected=1)).turns[0]
    assert turn.ans_accepted == [] and turn.abstain_expected is True


def test_a_row_without_metadata_has_no_stage_labels():
    row = {k: v for k, v in _row().items() if k != "metadata"}
    assert diagnostics_conversation(0, row).turns[0].stage_labels is None


@pytest.mark.parametrize("answer", [None, ""])
def test_a_row_without_an_answer_is_refused_naming_the_row(answer):
    with pytest.raises(ValueError, match=r"^row d7: no answer$"):
        diagnostics_conversation(0, _row(id="d7", answer=answer))


def test_a_row_missing_its_answer_key_is_refused():
    row = {k: v for k, v in _row().items() if k != "answer"}
    with pytest.raises(ValueError, match="no answer"):
        diagnostics_conversation(0, row)


# ---- conversation_from_row: a CRAG-MM row (the mini benchmark's strings, v0.1.2's class labels) ----

def _crag_row(turns_shape="list", **changes) -> dict:
    turns = [{"interaction_id": "s1-t0", "query": "what bird is this?", "domain": "animal",
              "query_category": "simple", "dynamism": "static", "image_quality": "normal"},
             {"interaction_id": "s1-t1", "query": "where does it nest?", "domain": "animal",
              "query_category": "multi-hop", "dynamism": "slow-changing", "image_quality": "normal"}]
    answers = [{"interaction_id": "s1-t0", "ans_full": "a great blue heron"},
               {"interaction_id": "s1-t1", "ans_full": "in trees near water"}]
    if turns_shape == "dict":
        turns = {k: [t[k] for t in turns] for k in turns[0]}
        answers = {k: [a[k] for a in answers] for k in answers[0]}
    row = {"session_id": "s1", "image": None, "image_url": "https://images.example/s1.jpg",
           "turns": turns, "answers": answers}
    row.update(changes)
    return row


@pytest.mark.parametrize("shape", ["list", "dict"])
def test_a_crag_mm_row_gives_its_turns_in_order_with_answers_and_labels(shape):
    conv = conversation_from_row(4, _crag_row(shape))
    assert (conv.index, conv.session_id, conv.image_url, conv.image_quality) == (4, "s1", "https://images.example/s1.jpg", None)
    assert [(t.interaction_id, t.query, t.ground_truth) for t in conv.turns] == [
        ("s1-t0", "what bird is this?", "a great blue heron"), ("s1-t1", "where does it nest?", "in trees near water")]
    first = conv.turns[0]
    assert (first.domain, first.query_category, first.dynamism) == ("animal", "simple", "static")
    assert first.labels == {"domain": "animal", "query_category": "simple", "dynamism": "static", "image_quality": "normal"}
    assert first.ans_accepted is None and first.abstain_expected is None and first.stage_labels is None


def test_class_labels_are_named_through_the_vocabularies_and_the_rows_image_quality_wins():
    row = _crag_row(image_quality=1)
    for turn in row["turns"]:
        turn.update(domain=0, query_category=-1, dynamism=None, image_quality=0)
    conv = conversation_from_row(0, row, {"domain": ["animal", "plant"], "query_category": ["simple"],
                                          "image_quality": ["normal", "low light"]})
    assert conv.image_quality == 1
    assert conv.turns[0].labels == {"domain": "animal", "query_category": None, "dynamism": None,
                                    "image_quality": "low light"}
    assert conv.turns[0].domain == 0  # the raw value stays for the official CSVs


def test_the_mini_benchmarks_answer_keys_and_a_turns_stage_labels_are_read():
    row = _crag_row()
    row["answers"][0].update(ans_accepted=["heron", 7], abstain_expected=0)
    row["answers"][1].update(ans_accepted=None, abstain_expected=1)
    row["turns"][0]["metadata"] = _metadata()
    row["turns"][1].update(target_object_name=TARGET)
    first, second = conversation_from_row(0, row).turns
    assert (first.ans_accepted, first.abstain_expected) == (["heron", "7"], False)
    assert (second.ans_accepted, second.abstain_expected) == (None, True)
    assert first.stage_labels == stage_labels(_metadata())
    assert second.stage_labels["target_object_name"] == TARGET


def test_a_turn_without_its_answer_is_refused_naming_session_and_turn():
    row = _crag_row()
    row["answers"][1]["ans_full"] = ""
    with pytest.raises(ValueError, match=r"^session s1: no ground-truth answer for interaction s1-t1$"):
        conversation_from_row(0, row)
    row["answers"].pop()
    with pytest.raises(ValueError, match="interaction s1-t1$"):
        conversation_from_row(0, row)


def test_a_row_without_turns_is_refused():
    for turns in (None, []):
        with pytest.raises(ValueError, match=r"^session s1 has no turns$"):
            conversation_from_row(0, _crag_row(turns=turns))


def test_a_flat_row_is_read_as_a_diagnostics_row():
    conv = conversation_from_row(2, _row())
    assert conv.index == 2 and conv.session_id == "d0" and conv.turns[0].stage_labels == stage_labels(_metadata())


def test_a_row_with_turns_is_read_in_the_crag_mm_layout_whatever_else_it_carries():
    for extra in ({"id": "x"}, {"id": "x", "question": "what is this?"}):
        assert conversation_from_row(0, _crag_row(**extra)).session_id == "s1"
    without_turns = {k: v for k, v in _crag_row().items() if k != "turns"}
    with pytest.raises(ValueError, match="^session s1 has no turns$"):
        conversation_from_row(0, without_turns)


def test_a_turn_without_a_query_has_an_empty_one():
    row = _crag_row()
    row["turns"][0]["query"] = None
    assert conversation_from_row(0, row).turns[0].query == ""


@pytest.mark.parametrize("value, names, expected", [
    (None, ["a"], None), ("", None, None), ("  ", ["a"], None), ("normal", None, "normal"),
    (1, ["normal", "low light"], "low light"), (0, ["normal"], "normal"), (-1, ["normal"], None),
    (2, ["normal", "low light"], None), (True, ["normal", "low light"], "True"), (3, None, "3"),
])
def test_label_names(value, names, expected):
    assert label_name(value, names) == expected


# ---- label vocabularies, splits and whole datasets (datasets' own objects, no hub) ----

def _class_label_features(shape: str):
    """v0.1.2's features: class labels inside `turns` (a Sequence of a dict, or a List of dicts)."""
    from datasets import ClassLabel, Features, List, Sequence, Value

    turn = {"interaction_id": Value("string"), "query": Value("string"),
            "domain": ClassLabel(names=["animal", "plant"]), "query_category": ClassLabel(names=["simple", "multi-hop"]),
            "dynamism": Value("string"), "image_quality": ClassLabel(names=["normal", "low light"])}
    wrap = Sequence if shape == "dict" else List
    return Features({"session_id": Value("string"), "turns": wrap(turn)})


@pytest.mark.parametrize("shape", ["dict", "list"])
def test_vocabularies_are_read_from_class_labels_inside_turns(shape):
    assert label_vocabularies(_class_label_features(shape)) == {
        "domain": ["animal", "plant"], "query_category": ["simple", "multi-hop"], "image_quality": ["normal", "low light"]}


def test_image_quality_as_a_class_label_of_the_row_is_read_and_string_labels_have_none():
    from datasets import ClassLabel, Features, List, Value

    features = Features({"session_id": Value("string"), "image_quality": ClassLabel(names=["normal", "blurred"]),
                         "turns": List({"interaction_id": Value("string"), "domain": Value("string")})})
    assert label_vocabularies(features) == {"image_quality": ["normal", "blurred"]}
    assert label_vocabularies(None) == {}
    assert label_vocabularies(Features({"session_id": Value("string")})) == {}


def _crag_dataset(rows: int = 3):
    import datasets

    return datasets.Dataset.from_list([_crag_row(session_id=f"s{i}") for i in range(rows)])


def test_read_conversations_keeps_dataset_order_and_honours_the_limit():
    ds = _crag_dataset(3)
    assert [c.session_id for c in read_conversations(ds)] == ["s0", "s1", "s2"]
    assert [c.index for c in read_conversations(ds)] == [0, 1, 2]
    assert [c.session_id for c in read_conversations(ds, limit=2)] == ["s0", "s1"]
    assert [c.session_id for c in read_conversations(ds, limit=0)] == []
    assert len(read_conversations(ds, limit=-1)) == len(read_conversations(ds, limit=9)) == 3


def test_read_conversations_names_the_class_labels_through_the_features():
    import datasets

    row = _crag_row()
    for turn in row["turns"]:
        turn.update(domain=1, query_category=0, dynamism="static", image_quality=1)
    features = _class_label_features("list")
    features.update({"image_url": datasets.Value("string"), "image": datasets.Image(),
                     "answers": datasets.List({"interaction_id": datasets.Value("string"),
                                               "ans_full": datasets.Value("string")})})
    ds = datasets.Dataset.from_list([row], features=features)
    assert read_conversations(ds)[0].turns[0].labels == {"domain": "plant", "query_category": "simple",
                                                         "dynamism": "static", "image_quality": "low light"}


def test_every_malformed_row_is_named_at_once():
    import datasets

    rows = [_crag_row(session_id="good"), _crag_row(session_id="no-turns", turns=[]),
            _crag_row(session_id="no-answer", answers=[])]
    with pytest.raises(ValueError) as caught:
        read_conversations(datasets.Dataset.from_list(rows))
    assert str(caught.value).splitlines() == [
        "2 malformed conversation(s):", "row 1: ValueError: session no-turns has no turns",
        "row 2: ValueError: session no-answer: no ground-truth answer for interaction s1-t0"]


def test_load_split_picks_the_asked_split_or_says_which_it_used(tmp_path):
    import datasets

    splits = datasets.DatasetDict({"validation": _crag_dataset(1), "public_test": _crag_dataset(2)})
    splits.save_to_disk(str(tmp_path / "saved"))
    ds, used, notice = load_split(str(tmp_path / "saved"), None, "public_test")
    assert (len(ds), used, notice) == (2, "public_test", None)
    ds, used, notice = load_split(str(tmp_path / "saved"), None, "test")
    assert (len(ds), used) == (1, "validation")
    assert notice == "split 'test' not in ['validation', 'public_test']; using 'validation'"


def test_load_split_reads_a_saved_single_split_and_a_folder_of_data_files(tmp_path):
    _crag_dataset(2).save_to_disk(str(tmp_path / "one"))
    ds, used, notice = load_split(str(tmp_path / "one"), None, "validation")
    assert (len(ds), used, notice) == (2, "validation", None)
    (tmp_path / "files" / "data").mkdir(parents=True)
    _crag_dataset(3).to_parquet(str(tmp_path / "files" / "data" / "test-00000-of-00001.parquet"))
    ds, used, notice = load_split(str(tmp_path / "files"), None, "test")
    assert (len(ds), used, notice) == (3, "test", None)


def test_a_name_that_is_no_local_folder_is_loaded_from_the_hub_at_its_revision(monkeypatch):
    import datasets

    asked = []

    def hub(name, revision=None):  # the hub is outside the unit: answer as load_dataset does
        asked.append((name, revision))
        return datasets.DatasetDict({"validation": _crag_dataset(1)})

    monkeypatch.setattr(datasets, "load_dataset", hub)
    ds, used, notice = load_split("crag-mm-2025/crag-mm-single-turn-public", "v0.1.2", "validation")
    assert asked == [("crag-mm-2025/crag-mm-single-turn-public", "v0.1.2")]
    assert (len(ds), used, notice) == (1, "validation", None)


def test_images_are_not_decoded_when_conversations_are_read():
    import datasets

    features = datasets.Features({"session_id": datasets.Value("string"), "image": datasets.Image(),
                                  "image_url": datasets.Value("string"),
                                  "turns": datasets.List({k: datasets.Value("string") for k in _crag_row()["turns"][0]}),
                                  "answers": datasets.List({"interaction_id": datasets.Value("string"),
                                                            "ans_full": datasets.Value("string")})})
    row = _crag_row(image={"bytes": b"not an image at all", "path": None})
    assert [c.session_id for c in read_conversations(datasets.Dataset.from_list([row], features=features))] == ["s1"]


def test_a_long_list_of_malformed_rows_names_the_first_twenty_and_counts_all():
    import datasets

    rows = [_crag_row(session_id=f"bad{i}", turns=[]) for i in range(22)]
    with pytest.raises(ValueError) as caught:
        read_conversations(datasets.Dataset.from_list(rows))
    lines = str(caught.value).splitlines()
    assert lines[0] == "22 malformed conversation(s):" and len(lines) == 21
    assert lines[-1] == "row 19: ValueError: session bad19 has no turns"


def test_load_split_refuses_a_dataset_with_no_split(tmp_path):
    import datasets

    datasets.DatasetDict({}).save_to_disk(str(tmp_path / "empty"))
    with pytest.raises(ValueError, match="holds no split$"):
        load_split(str(tmp_path / "empty"), None, "validation")


# ---- the agent's image ----

def _conversation(session_id, url):
    return Conversation(0, session_id, url, "normal", [DatasetTurn(f"{session_id}-t0", "what is this?", "a heron")])


@pytest.mark.parametrize("url, ego", [(None, True), ("", True), ("https://images.example/a.jpg", False)])
def test_egocentric_means_no_image_url(url, ego):
    assert is_egocentric(url) is ego


@pytest.mark.parametrize("url", [None, ""])
def test_an_egocentric_frame_reaches_the_agent_at_960_by_1280(url):
    frame = Image.new("RGB", SIZE, (30, 30, 220))
    seen = image_for_agent(frame, url)
    assert seen.size == EGO_IMAGE_SIZE == (960, 1280)
    assert seen.getpixel((480, 640)) == (30, 30, 220)


def test_a_third_person_image_reaches_the_agent_as_it_is():
    picture = Image.new("RGB", SIZE, (220, 30, 30))
    assert image_for_agent(picture, "https://images.example/a.jpg") is picture


def test_a_row_with_neither_image_nor_url_is_refused():
    for url in (None, ""):
        with pytest.raises(ValueError, match="^row has neither an image nor an image_url$"):
            image_for_agent(None, url)


def test_a_missing_image_is_read_from_its_url_at_its_own_size(cache):
    url = "https://images.example/heron.png"
    buffer = io.BytesIO()
    Image.new("RGB", SIZE, (30, 30, 220)).save(buffer, format="PNG")
    (cache / "images").mkdir(parents=True)
    (cache / "images" / hashlib.sha256(url.encode()).hexdigest()).write_bytes(buffer.getvalue())
    seen = image_for_agent(None, url)
    assert seen.size == SIZE and seen.getpixel((150, 50)) == (30, 30, 220)


def test_image_url_fixes_change_only_the_listed_sessions_and_name_them_in_order():
    conversations = [_conversation("s0", "https://old.example/0.jpg"), _conversation("s1", None),
                     _conversation("s2", "https://old.example/2.jpg")]
    changed = apply_image_url_updates(conversations, {"s2": "https://new.example/2.jpg", "s0": "https://new.example/0.jpg",
                                                      "gone": "https://new.example/x.jpg"})
    assert changed == ["s0", "s2"]
    assert [c.image_url for c in conversations] == ["https://new.example/0.jpg", None, "https://new.example/2.jpg"]
    assert apply_image_url_updates(conversations, {}) == []


# ---- fetch_image_bytes over a local web server ----

PICTURE = b"\x89PNG picture bytes"


@pytest.fixture
def cache(tmp_path, monkeypatch):
    """The cache folder, in a folder that does not exist yet."""
    folder = tmp_path / "not-yet" / "cache"
    monkeypatch.setattr(dataset, "cache_dir", lambda: folder)
    return folder


@pytest.fixture
def site():
    """A web server on 127.0.0.1: /picture, /sized/N (N bytes), /stalled/N (N bytes, then nothing
    until the test ends, the connection still open) and /to?url (302 to url). It records each
    request's path and User-Agent."""
    seen = []
    release = threading.Event()

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            seen.append((self.path, self.headers.get("User-Agent")))
            if self.path.startswith("/to?"):
                self.send_response(302)
                self.send_header("Location", self.path[len("/to?"):])
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            body = PICTURE if self.path == "/picture" else b"x" * int(self.path.rsplit("/", 1)[1])
            if self.path.startswith("/stalled/"):
                self.send_response(200)
                self.end_headers()
                self.wfile.write(body)
                self.wfile.flush()
                release.wait(10)
                return
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    server.base = f"http://127.0.0.1:{server.server_address[1]}"
    server.seen = seen
    yield server
    release.set()
    server.shutdown()
    server.server_close()


@pytest.mark.parametrize("url", ["ftp://images.example/a.jpg", "file:///etc/hostname", "images.example/a.jpg",
                                 "", None, b"http://images.example/a.jpg"])
def test_only_http_urls_are_fetched(url, cache):
    with pytest.raises(ValueError, match=r"^image_url must be http\(s\), got "):
        fetch_image_bytes(url)
    assert not cache.exists()


def test_an_image_is_fetched_once_then_read_from_the_cache(site, cache):
    url = f"{site.base}/picture"
    assert fetch_image_bytes(url) == PICTURE
    assert fetch_image_bytes(url) == PICTURE
    assert site.seen == [("/picture", "cruise-local-evaluation")]
    assert [p.name for p in (cache / "images").iterdir()] == [hashlib.sha256(url.encode()).hexdigest()]


def test_each_url_has_its_own_cache_entry(site, cache):
    assert fetch_image_bytes(f"{site.base}/picture") == PICTURE
    assert fetch_image_bytes(f"{site.base}/sized/3") == b"xxx"
    assert len(list((cache / "images").iterdir())) == 2


def test_the_scheme_is_matched_whatever_its_case(site, cache):
    assert fetch_image_bytes(site.base.replace("http", "HTTP") + "/picture") == PICTURE


def test_an_image_at_the_size_cap_is_whole_and_one_byte_more_is_refused_and_not_cached(site, cache):
    assert fetch_image_bytes(f"{site.base}/sized/64", max_bytes=64) == b"x" * 64
    with pytest.raises(ValueError, match=r"larger than 64 bytes$"):
        fetch_image_bytes(f"{site.base}/sized/65", max_bytes=64)
    assert len(list((cache / "images").iterdir())) == 1


def test_a_redirect_to_http_is_followed(site, cache):
    for scheme in ("http", "HTTP"):
        target = site.base.replace("http", scheme) + "/picture"
        assert fetch_image_bytes(f"{site.base}/to?{target}") == PICTURE
    assert [path for path, _ in site.seen] == [f"/to?{site.base}/picture", "/picture",
                                               f"/to?{site.base.replace('http', 'HTTP')}/picture", "/picture"]


def test_an_endless_body_is_refused_once_it_passes_the_cap_without_waiting_for_its_end(site, cache):
    with pytest.raises(ValueError, match=r"larger than 64 bytes$"):
        fetch_image_bytes(f"{site.base}/stalled/65", max_bytes=64, timeout=5)


def test_a_redirect_to_https_is_followed(site, cache):
    # no TLS server here: following it means trying TLS on the plain server, which fails there
    with pytest.raises(urllib.error.URLError) as caught:
        fetch_image_bytes(f"{site.base}/to?{site.base.replace('http', 'https')}/picture")
    assert "refusing redirect" not in str(caught.value)
    with pytest.raises(urllib.error.URLError) as caught:
        fetch_image_bytes(f"{site.base}/to?{site.base.replace('http', 'HTTPS')}/picture")
    assert "refusing redirect" not in str(caught.value)


def test_a_redirect_to_ftp_is_refused(site, cache):
    with pytest.raises(urllib.error.URLError, match="refusing redirect to a non-http URL: 'ftp://127.0.0.1:9/a.jpg'"):
        fetch_image_bytes(f"{site.base}/to?ftp://127.0.0.1:9/a.jpg")
    assert not cache.exists()


def test_a_redirect_to_a_local_file_is_refused(site, cache, tmp_path):
    secret = tmp_path / "secret"
    secret.write_bytes(b"not for the web")
    with pytest.raises(urllib.error.URLError):
        fetch_image_bytes(f"{site.base}/to?{secret.as_uri()}")
    assert not cache.exists()


def test_a_server_that_never_answers_times_out(cache):
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen()
        with pytest.raises((TimeoutError, urllib.error.URLError)):
            fetch_image_bytes(f"http://127.0.0.1:{silent.getsockname()[1]}/picture", timeout=0.2)
    assert not cache.exists()

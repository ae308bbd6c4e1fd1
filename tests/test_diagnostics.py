"""Stage-wise diagnostics against CRAG-MM-Diagnostics' human stage labels, and oracle runs.

The dataset here is written to the layout McGill-NLP/crag-mm-diagnostics' data_loader.py reads
(flat rows: `id`, `question`, `answer`, `image`, `metadata` with `target_roi_bbox` [x1, y1, x2,
y2] in the image's pixels, `image_size` (width, height), `target_object_name`,
`referring_expression_category`, `textual_only_question`, ...; the hub's `data/test-*.parquet`
naming), not to our loader. Each photo holds two objects side by side: a red one on the left and
the blue target on the right, so a crop of the wrong half finds the wrong entity.

The agent is the real CruiseAgent chain (rag_baseline with the crop step on) over scripted models
(testkit/fakes.py ScriptedEngine: the models are outside the unit) and a search pipeline that
finds an entity by the colour of the image it is given. QA-Dragon and SAM-RAG are given each
oracle in the world of testkit/scripted_peers.py; the measures themselves are checked on turns
worked by hand, at the edges of each rule.
"""
from __future__ import annotations

import json
import shutil
from types import SimpleNamespace

import pytest
from PIL import Image

from agents.config.loading import load_config
from agents.cruise_agent import CruiseAgent
from agents.engines.base import Engines
from evaluator import evaluate
from evaluator.scoring import diagnostics
from testkit.diagnostics_layout import SIZE, TARGET, TARGET_BOX, write_published_layout
from testkit.diagnostics_layout import photo as _photo
from testkit.fakes import FakePipeline, FunctionReranker, ScriptedEngine
from testkit.scripted_peers import CAFE, CAFE_HIT, CAR_PAGE, UMBRELLAS, qa_dragon_engines

DECOY = "Red fox"


def _entity(name: str) -> dict:
    return {"entity_name": name, "entity_attributes": {"habitat": f"The {name} lives near water."}}


class ColourPipeline:
    """Image search by colour: an image mostly blue finds the target, anything else the decoy."""

    def __init__(self):
        self.queries: list[str] = []

    def __call__(self, query, k=5):
        if isinstance(query, str):
            self.queries.append(query)
            raise ValueError("Text input is not supported as web search is not enabled.")
        red, _, blue = query.convert("RGB").resize((1, 1), Image.Resampling.BOX).getpixel((0, 0))
        name = TARGET if blue > 1.5 * red else DECOY
        return [{"index": 0 if name == TARGET else 1, "score": 0.95 if name == TARGET else 0.9,
                 "url": None, "entities": [_entity(name)]}][:k]


def _answer(request) -> str:
    """The gold answer where the target's name reached the prompt (notes, picture block or question)."""
    text = "\n".join(str(m["content"]) for m in request.messages)
    return TARGET if TARGET in text else "I don't know"


class DiagnosedAgent(CruiseAgent):
    """CruiseAgent whose crop step boxes the left half (the decoy), over ColourPipeline."""

    def __init__(self, search_pipeline=None, config=None):
        engine = ScriptedEngine({
            "summarize": lambda r: "A photo of two animals.",
            "crop": lambda r: "Object: animal\nBox: 0, 0, 500, 1000",
            "answer": _answer,
        })
        super().__init__(ColourPipeline(), config, engines=Engines(engine, engine, FunctionReranker(lambda q, c: 0.9)))


def _run(dataset, out, *, oracle=None, crop=True, **more):
    return evaluate(dataset=str(dataset), split="test", dataset_type="single-turn", profile="cpu",
                    preset="rag_baseline", set=["use_crop_search=true", "crop_mode=box"] if crop else [],
                    agent="tests.test_diagnostics:DiagnosedAgent", search="none", eval_model="None",
                    output_dir=str(out), no_progress=True, display_conversations=0, oracle=oracle, **more)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("diagnostics")
    dataset = write_published_layout(root / "crag-mm-diagnostic")
    found = {name: _run(dataset, root / name, oracle=None if name == "plain" else name).output_dir
             for name in ("plain", "region", "entity", "question")}
    # a chain without a crop step of its own: the region oracle's crop is searched all the same
    found["region_no_crop"] = _run(dataset, root / "region_no_crop", oracle="region", crop=False).output_dir
    return found


def _read(out, name):
    return json.loads((out / name).read_text())


def _traces(out) -> list[dict]:
    return [json.loads(line) for line in (out / "traces.jsonl").read_text().splitlines()]


def test_a_dataset_in_the_published_layout_runs_each_row_as_one_turn_with_its_labels(runs):
    answers = [json.loads(line) for line in (runs["plain"] / "answers.jsonl").read_text().splitlines()]
    assert sorted(a["interaction_id"] for a in answers) == ["d0", "d1", "d2", "d3"]
    assert all(a["session_id"] == a["interaction_id"] and a["turn_idx"] == 0 for a in answers)
    labels = answers[0]["stage_labels"]
    assert labels["target_roi_bbox"] == TARGET_BOX and labels["image_size"] == list(SIZE)
    assert labels["textual_only_question"] == f"what is the {TARGET}?"
    assert _read(runs["plain"], "run_config.json")["split"] == "test"


def test_the_plain_run_loses_the_answer_at_grounding(runs):
    """The crop boxes the decoy: IoU 0 with the target, image search finds only the decoy, nothing
    names the target, and no answer is right."""
    found = _read(runs["plain"], "diagnostics.json")
    stages = found["stages"]
    assert found["labelled_turns"] == 4
    assert (stages["grounding"]["labelled"], stages["grounding"]["passed"]) == (4, 0)
    assert stages["image_retrieval@10"]["passed"] == 0 and stages["identification"]["passed"] == 0
    assert stages["knowledge"]["passed"] == 0
    assert set(stages["knowledge"]["by_category"]) == {"not enough cue (ambiguous)", "spatial"}
    section = (runs["plain"] / "report.html").read_text().split('id="diagnostics"', 1)[1].split("<h2", 1)[0]
    assert "each stage against human labels" in section and 'data-stage="image_retrieval@5"' in section


@pytest.mark.parametrize("name", ["plain", "region", "entity", "question", "region_no_crop"])
def test_grounding_is_the_iou_of_the_traced_crop_boxes_and_knowledge_the_correct_count(runs, name):
    """Recomputed here from the run's own files: each trace's searched crops against the target box
    (both in pixels of the searched image, here the photo itself), and the scores' correct count."""
    def overlap(a, b):
        w = max(0.0, min(a[2], b[2]) - max(a[0], b[0]))
        h = max(0.0, min(a[3], b[3]) - max(a[1], b[1]))
        return w * h / ((a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - w * h)

    out = runs[name]
    cropped = [t["regions_searched"] for t in _traces(out) if t["regions_searched"]["boxes"]]
    passed = sum(1 for r in cropped if max(overlap(TARGET_BOX, b["box"]) for b in r["boxes"]) >= 0.5)
    assert all(r["image_size"] == list(SIZE) for r in cropped)
    grounding = _read(out, "diagnostics.json")["stages"]["grounding"]
    assert (grounding["labelled"], grounding["passed"]) == (len(cropped), passed)
    knowledge = _read(out, "diagnostics.json")["stages"]["knowledge"]
    correct = _read(out, "scores_dictionary.json")["all"]["correct"]
    assert knowledge["passed"] == correct and knowledge["labelled"] == 4


@pytest.mark.parametrize("name", ["region", "region_no_crop"])
def test_the_region_oracle_crops_to_the_target_and_image_search_finds_it(runs, name):
    traces = _traces(runs[name])
    assert len(traces) == 4
    for trace in traces:
        assert trace["oracle"] == {"stage": "region", "box": TARGET_BOX}
        assert trace["regions_searched"]["boxes"] == [{"view": "oracle", "box": [100, 0, 200, 100]}]
        assert TARGET in [item["name"] for item in trace["retrieved"]]
    found = _read(runs[name], "diagnostics.json")
    assert found["oracle"] == "region" and _read(runs[name], "run_config.json")["oracle"] == "region"
    assert found["stages"]["grounding"]["passed"] == 4 and found["stages"]["image_retrieval@1"]["passed"] == 4
    assert found["stages"]["knowledge"]["passed"] == 4
    assert found["accuracy_given"]["grounding"]["passed"]["rate"] == 1.0


def test_the_entity_oracle_names_the_target_in_the_search_and_the_prompts(runs):
    for trace in _traces(runs["entity"]):
        assert trace["oracle"] == {"stage": "entity", "entity": TARGET}
        assert TARGET in trace["retrieval_query"]
    stages = _read(runs["entity"], "diagnostics.json")["stages"]
    assert stages["identification"]["passed"] == 4 and stages["knowledge"]["passed"] == 4
    assert stages["image_retrieval@10"]["passed"] == 0  # the photo's search itself is unchanged


def test_the_question_oracle_asks_the_text_only_question(runs):
    for trace in _traces(runs["question"]):
        assert trace["oracle"] == {"stage": "question", "question": f"what is the {TARGET}?"}
        assert trace["retrieval_query"].startswith(f"what is the {TARGET}?")
    assert _read(runs["question"], "diagnostics.json")["stages"]["knowledge"]["passed"] == 4


def test_an_agent_that_takes_no_oracle_is_refused_before_it_loads(tmp_path):
    from evaluator import EvaluationRefused

    dataset = write_published_layout(tmp_path / "ds", rows=1)
    with pytest.raises(EvaluationRefused, match="takes no such oracle"):
        evaluate(dataset=str(dataset), split="test", profile="cpu", agent="testkit.scripted_agent:ScriptedAgent",
                 search="none", eval_model="None", output_dir=str(tmp_path / "out"), oracle="region")


# --- QA-Dragon and SAM-RAG given each oracle --------------------------------------------------

class SearchedImages(FakePipeline):
    """FakePipeline that also keeps the size of every image it is asked to search."""

    def __init__(self, *args):
        super().__init__(*args)
        self.sizes: list[tuple[int, int]] = []

    def __call__(self, query, k=5):
        if not isinstance(query, str):
            self.sizes.append(query.size)
        return super().__call__(query, k)


def _peer_turn(system: str, question: str, oracle: dict | None) -> SimpleNamespace:
    """One turn of Table 1's world (testkit/scripted_peers.py) through the real CruiseAgent running
    `system`, given `oracle` as the harness hands it (evaluator/harness/oracle.py): its answer,
    trace, the search it asked (`searched`) and the text of every prompt its VLM was sent."""
    searched = SearchedImages([CAFE_HIT], [CAR_PAGE])
    config = load_config("cpu", system, stack="llama-3.2-vision", chunker="paper_fields")
    agent = CruiseAgent(searched, config=config, engines=qa_dragon_engines())
    given = {"oracle": [oracle]} if oracle is not None else {}
    (answer,) = agent.batch_generate_response([question], [Image.new("RGB", (64, 48), "gray")], [[]], **given)
    prompts = [str(m["content"]) for _, request in agent.engines.vlm.requests for m in request.messages]
    return SimpleNamespace(answer=answer, trace=agent.last_batch_report["traces"][0], searched=searched,
                           prompts=prompts)


@pytest.mark.parametrize("system", ["qa_dragon", "sam_rag"])
def test_a_peer_system_given_the_region_searches_that_region(system):
    """QA-Dragon answers the umbrellas' words by Direct Output and searches nothing (its search
    gate); given a region, the region is image-searched all the same, as CRUISE does. SAM-RAG
    always searches: given a region, it searches that crop of the photo (30 x 22 pixels)."""
    plain = _peer_turn(system, UMBRELLAS, None)
    box = [10, 8, 40, 30]
    given = _peer_turn(system, UMBRELLAS, {"stage": "region", "box": box})
    assert given.answer == "RAIN OR SHINE" and given.trace["system"] == system
    assert given.trace["regions_searched"] == {"image_size": [64, 48], "boxes": [{"view": "oracle", "box": box}]}
    assert (30, 22) in given.searched.sizes and (30, 22) not in plain.searched.sizes
    if system == "qa_dragon":
        assert plain.trace["branch"] == given.trace["branch"] == "direct_output" and plain.searched.calls == []


@pytest.mark.parametrize("system", ["qa_dragon", "sam_rag"])
def test_a_peer_system_given_the_entity_searches_for_it(system):
    name = "Rainbow Umbrella Co"
    plain = _peer_turn(system, UMBRELLAS, None)
    given = _peer_turn(system, UMBRELLAS, {"stage": "entity", "entity": name})
    assert name in given.trace["retrieval_query"] and name not in plain.trace["retrieval_query"]
    assert "image" in given.searched.calls and any(name in q for q in given.searched.text_queries)
    if system == "qa_dragon":  # the Direct Output turn is searched for the given name
        assert given.trace["branch"] == "direct_output" and plain.searched.calls == []


@pytest.mark.parametrize("system", ["qa_dragon", "sam_rag"])
def test_a_peer_system_given_the_question_asks_it_instead(system):
    """The text-only question replaces the turn's own, in every search and every prompt."""
    question = "Who founded Blue Bottle Coffee?"
    given = _peer_turn(system, CAFE, {"stage": "question", "question": question})
    assert given.trace["retrieval_query"].startswith(question) and given.searched.text_queries
    assert all(CAFE not in text for text in [given.trace["retrieval_query"], *given.searched.text_queries,
                                             *given.prompts])
    assert any(question in prompt for prompt in given.prompts)


# --- the oracle and the selection of turns decide whether a run may be resumed -------------------

def _folder_files(folder) -> dict:
    return {p.relative_to(folder): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


@pytest.mark.parametrize("name, oracle, line", [("plain", "region", "oracle: (not set) -> region"),
                                                ("region", None, "oracle: region -> (not set)"),
                                                ("region", "entity", "oracle: region -> entity")])
def test_a_run_does_not_resume_as_another_oracles_run(runs, tmp_path, name, oracle, line):
    """An oracle run is another system: its folder and a plain run's are not continued as one."""
    from evaluator import EvaluationRefused

    out = shutil.copytree(runs[name], tmp_path / name)  # a resume that went on would change the run's files
    before = _folder_files(out)
    dataset = json.loads((out / "run_config.json").read_text())["dataset"]
    with pytest.raises(EvaluationRefused) as refused:
        _run(dataset, out, oracle=oracle, resume=True)
    assert f"the earlier run used another system:\n  {line}\n" in str(refused.value)
    assert _folder_files(out) == before


def test_a_resume_that_switches_exact_conversations_is_refused_in_one_line(runs, tmp_path):
    from evaluator import EvaluationRefused

    out = shutil.copytree(runs["plain"], tmp_path / "plain")
    before = _folder_files(out)
    dataset = json.loads((out / "run_config.json").read_text())["dataset"]
    with pytest.raises(EvaluationRefused) as refused:
        _run(dataset, out, resume=True, exact_conversations=True)
    assert str(refused.value).splitlines()[:2] == [
        f"cannot resume {out}: the earlier run covered another selection of turns:",
        "  --exact-conversations: False then, True now"]
    assert _folder_files(out) == before


# --- the measures, against hand-worked values ----------------------------------------------

def test_iou_of_hand_worked_boxes():
    assert diagnostics.iou([0, 0, 10, 10], [5, 0, 15, 10]) == pytest.approx(50 / 150)
    assert diagnostics.iou([0, 0, 10, 10], [0, 0, 10, 10]) == 1.0
    assert diagnostics.iou([0, 0, 10, 10], [10, 0, 20, 10]) == 0.0  # touching edges share no area
    assert diagnostics.iou([0, 0, 4, 4], [1, 1, 3, 3]) == pytest.approx(4 / 16)


def test_the_fuzzy_match_is_difflibs_ratio_at_0_85_case_folded():
    # "Eiffel Tower" vs "Eifel Tower": ratio 2*11/23 = 0.957; vs "Eiffel": 2*6/18 = 0.667
    assert diagnostics.similar("Eiffel Tower", "eifel tower")
    assert not diagnostics.similar("Eiffel Tower", "Eiffel")
    labels = {"target_object_name": "Great blue heron", "wikipedia_url": "https://en.wikipedia.org/wiki/Ardea_herodias"}
    trace = {"retrieved": [{"source": "web", "name": "Great blue heron"},
                           {"source": "image", "entities": ["Heron"]},
                           {"source": "image", "entities": ["Little egret", "Ardea herodias"]}]}
    assert diagnostics.retrieval_rank(labels, trace) == 2  # the second image hit, by its page title
    assert diagnostics.named_in(["Great blue heron"], "a photo of a great blu heron by a lake")
    assert not diagnostics.named_in(["Great blue heron"], "a photo of a bird by a lake")


# --- three labelled turns and one unlabelled, worked by hand ---------------------------------
# The target (a heron) is labelled in a 960 x 1280 frame at [200, 400, 600, 1000]; turn h1 searched
# a 480 x 320 copy of its photo, so its box there is [200*0.5, 400*0.25, 600*0.5, 1000*0.25] =
# [100, 100, 300, 250] (sx = 480/960 = 0.5, sy = 320/1280 = 0.25: a scale other than 1, and not
# the same across and down).
HERON = "Great blue heron"
HERON_PAGE = "https://en.wikipedia.org/wiki/Great_blue_heron"


def _heron_labels(box, frame, category):
    return {"target_roi_bbox": box, "image_size": frame, "target_object_name": HERON, "wikipedia_url": HERON_PAGE,
            "referring_expression_category": category}


def _image_hits(*names):
    return [{"source": "image", "entities": [name]} for name in names]


def _hand_worked_run():
    records = [
        {"interaction_id": "h1", "stage_labels": _heron_labels([200, 400, 600, 1000], [960, 1280], "spatial")},
        {"interaction_id": "h2", "stage_labels": _heron_labels([100, 0, 200, 100], [200, 100], "spatial")},
        {"interaction_id": "h3", "stage_labels": _heron_labels([100, 0, 200, 100], [200, 100], None)},
        {"interaction_id": "h4", "stage_labels": None},  # a row the diagnostic set does not label
    ]
    # h1: judged correct, though not word for word the gold answer; h2 wrong; h3 an exact match;
    # h4 correct, but unlabelled
    rows = [{"interaction_id": iid, "session_id": iid, "query": "what bird is this?", "is_correct": correct,
             "is_exact_match": exact, "is_miss": False}
            for iid, correct, exact in (("h1", True, False), ("h2", False, False), ("h3", True, True),
                                        ("h4", True, True))]
    traces = [
        # crop [100, 100, 300, 400] (200 x 300 = 60,000) holds the whole target (200 x 150 = 30,000):
        # IoU = 30,000 / 60,000 = 0.5 exactly. The heron is the second image hit. Its summary names
        # no heron.
        {"interaction_id": "h1", "summary": "A grey wading bird on one leg.",
         "regions_searched": {"image_size": [480, 320], "boxes": [{"view": "box", "box": [100, 100, 300, 400]}]},
         "retrieved": _image_hits("Little egret", "Great Blue Heron")},
        # crops [0, 0, 100, 100] (IoU 0) and [50, 0, 150, 100]: 50 x 100 = 5,000 shared, union
        # 10,000 + 10,000 - 5,000 = 15,000, IoU 1/3: the best, under 0.5. The heron is the sixth
        # image hit (a web hit before it does not count). The summary names it.
        {"interaction_id": "h2", "summary": "A great blue heron standing in the water.",
         "regions_searched": {"image_size": [200, 100], "boxes": [{"view": "box", "box": [0, 0, 100, 100]},
                                                                  {"view": "box", "box": [50, 0, 150, 100]}]},
         "retrieved": [{"source": "web", "name": HERON},
                       *_image_hits("Little egret", "Grey heron", "Snowy egret", "Cattle egret", "Purple heron",
                                    HERON)]},
        # no crop searched (grounding does not apply), no image hit, and the search query names
        # the heron only in the question's own words
        {"interaction_id": "h3", "summary": "", "retrieval_query": "what bird is this? fish",
         "regions_searched": {"image_size": [200, 100], "boxes": []}, "retrieved": []},
        {"interaction_id": "h4", "summary": HERON, "retrieved": _image_hits(HERON)},
    ]
    return records, rows, traces


def _counts(figure) -> tuple:
    return figure["labelled"], figure["passed"]


def test_each_stage_on_hand_worked_turns_at_its_edges():
    found = diagnostics.diagnose(*_hand_worked_run())
    stages = found["stages"]
    # h4 carries no labels: three labelled turns, whatever h4's trace and verdict say
    assert found["labelled_turns"] == 3 and [t["interaction_id"] for t in found["turns"]] == ["h1", "h2", "h3"]
    # grounding applies to h1 (IoU 0.5: passes, the rule is >= 0.5) and h2 (1/3: fails)
    assert [t["iou"] for t in found["turns"]] == [0.5, 0.3333, None]
    assert _counts(stages["grounding"]) == (2, 1)
    # ranks 2 (h1), 6 (h2), none (h3), over all three labelled turns: @1 none, @5 h1, @10 h1 and h2
    assert [t["retrieval_rank"] for t in found["turns"]] == [2, 6, None]
    assert [_counts(stages[f"image_retrieval@{k}"]) for k in (1, 5, 10)] == [(3, 0), (3, 1), (3, 2)]
    # identification: only h2's summary names the heron
    assert _counts(stages["identification"]) == (3, 1)
    # knowledge: the judge's verdicts, h1 (not an exact match) and h3
    assert _counts(stages["knowledge"]) == (3, 2) and stages["knowledge"]["rate"] == pytest.approx(2 / 3)
    # by category: h1 and h2 "spatial" (h1 right), h3 without one (right)
    assert {c: _counts(f) for c, f in stages["knowledge"]["by_category"].items()} == \
        {"spatial": (2, 1), diagnostics.NO_CATEGORY: (1, 1)}
    # the answer where each earlier stage passed / failed: grounding h1 / h2; @5 h1 / h2, h3;
    # @10 h1, h2 / h3; identification h2 / h1, h3
    given = {stage: {outcome: _counts(found["accuracy_given"][stage][outcome]) for outcome in ("passed", "failed")}
             for stage in ("grounding", "image_retrieval@1", "image_retrieval@5", "image_retrieval@10",
                           "identification")}
    assert given == {"grounding": {"passed": (1, 1), "failed": (1, 0)},
                     "image_retrieval@1": {"passed": (0, 0), "failed": (3, 2)},
                     "image_retrieval@5": {"passed": (1, 1), "failed": (2, 1)},
                     "image_retrieval@10": {"passed": (2, 1), "failed": (1, 1)},
                     "identification": {"passed": (1, 0), "failed": (2, 2)}}


def test_the_region_oracle_scales_the_labelled_box_across_and_down_apart():
    """The label's box is in its own frame (960 x 1280); the agent receives a 480 x 320 photo:
    x by 480/960 = 0.5, y by 320/1280 = 0.25."""
    from evaluator.harness.oracle import turn_oracle

    labels = {"target_roi_bbox": [200, 400, 600, 1000], "image_size": [960, 1280], "target_object_name": HERON}
    assert turn_oracle("region", labels, (480, 320)) == {"stage": "region", "box": [100.0, 100.0, 300.0, 250.0]}
    # a label without a frame of its own is in the photo's pixels
    assert turn_oracle("region", {"target_roi_bbox": [1, 2, 3, 4]}, (480, 320))["box"] == [1, 2, 3, 4]


def test_the_headroom_comparison_prints_each_oracles_paired_difference(runs, capsys):
    """Region, entity and question each turn all 4 turns from "I don't know" to right: +1.000 in
    accuracy and truthfulness, 4 fixed, 0 broken, for each oracle."""
    from tools.oracle_headroom import main

    main(["--compare", str(runs["plain"]), str(runs["region"]), str(runs["entity"]), str(runs["question"])])
    table = capsys.readouterr().out.split("paired over the same turns", 1)[1]
    rows = [line for line in table.splitlines() if line.startswith("| cruise (rag_baseline)")]  # system (preset)
    assert [row.split(" | ")[1] for row in rows] == ["region", "entity", "question"]
    for row in rows:
        cells = row.split(" | ")
        assert cells[3] == "0.000 -> 1.000" and cells[4].startswith("+1.000")
        assert cells[-2:] == ["4", "0 |"]


def test_a_region_oracle_is_searched_where_the_router_wanted_no_search():
    """CRUISE's router may decide a turn needs nothing from outside: the oracle's region is image-
    searched all the same (what the run measures), the web is not."""
    from agents.config.loading import load_config
    from agents.stages.s3_retrieve import retrieve_batch
    from agents.stages.types import Route, Turn
    from testkit.fakes import FakePipeline

    pipeline = FakePipeline([{"index": 0, "score": 0.9, "entities": [_entity(TARGET)]}], web_hits=[])
    turn = Turn(query="what is it?", image=_photo(), history=[], oracle_box=[100, 0, 200, 100])
    cfg = load_config("cpu", "full")
    found = retrieve_batch([turn], [Route(needs_external=False, is_real_time=False)], [""], pipeline, cfg)[0]
    assert found.searches == ["image"] and found.regions_searched == [{"view": "oracle", "box": [100, 0, 200, 100]}]
    assert pipeline.calls == ["image", "image"] and pipeline.text_queries == []


def test_an_entity_oracle_is_searched_where_the_router_wanted_no_search():
    """The entity oracle too: where the router decided nothing was needed from outside, the turn is
    searched all the same with the given name in its query (what the run measures)."""
    from agents.config.loading import load_config
    from agents.stages.s3_retrieve import retrieve_batch
    from agents.stages.types import Route, Turn
    from testkit.fakes import FakePipeline

    pipeline = FakePipeline([{"index": 0, "score": 0.9, "entities": [_entity(TARGET)]}], web_hits=[])
    turn = Turn(query="what is it?", image=_photo(), history=[], given_entity=TARGET)
    cfg = load_config("cpu", "full")
    found = retrieve_batch([turn], [Route(needs_external=False, is_real_time=False)], [""], pipeline, cfg)[0]
    assert "image" in found.searches and TARGET in found.query
    plain = retrieve_batch([Turn(query="what is it?", image=_photo(), history=[])],
                           [Route(needs_external=False, is_real_time=False)], [""], pipeline, cfg)[0]
    assert plain.searches == []  # without the oracle the router's no stands


def test_an_entity_oracle_is_searched_where_the_tool_router_ruled_out_every_search():
    """QA-Dragon's tool router may rule out both searches: the given name is searched all the same."""
    from agents.config.loading import load_config
    from agents.stages.s3_retrieve import retrieve_batch
    from agents.stages.types import Route, Turn
    from testkit.fakes import FakePipeline

    pipeline = FakePipeline([{"index": 0, "score": 0.9, "entities": [_entity(TARGET)]}], web_hits=[])
    from agents.peers.qa_dragon.search_agents import search_agent_settings

    cfg = search_agent_settings(load_config("cpu", "qa_dragon"))  # its search agents' settings: the tool gate on
    route = Route(needs_external=False, is_real_time=False, search="none")
    found = retrieve_batch([Turn(query="what is it?", image=_photo(), history=[], given_entity=TARGET)],
                           [route], [""], pipeline, cfg)[0]
    assert "image" in found.searches and TARGET in found.query

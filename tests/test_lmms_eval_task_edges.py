"""The CRAG-MM tasks for lmms-eval at their edges, without lmms-eval and without a judge
(integrations/lmms_eval/cruise_lmms_eval: crag_mm.py and its parts): a task's YAML settings refused or read,
the search results a RAG prompt shows, crag_mm_agentic's tool calls and budgets, the records a
document's replies become, and what the aggregation hands the scorer.

The documents are rows of small CRAG-MM-schema datasets (testkit/scripted_agent.py's
build_dataset), handed over as lmms-eval hands them: without their image column. The search
pipeline is a stand-in that records what it was asked; scoring (evaluator/imported_runs.py's
score_turns, outside this module) is a recorder where only what the task hands it matters.
tests/test_lmms_eval_tasks.py scores the tasks' runs end to end.
"""
from __future__ import annotations

import copy
import dataclasses
import json
import logging
from pathlib import Path
from types import SimpleNamespace

import pytest
from PIL import Image

from agents.config.loading import load_config
from evaluator.imported_runs import TURNS_KEY
from evaluator.settings import ScoringSettings
from integrations.lmms_eval.cruise_lmms_eval import documents, metrics, results, search
from integrations.lmms_eval.cruise_lmms_eval.crag_mm import CragMMTask
from integrations.lmms_eval.cruise_lmms_eval.metrics import METRICS, MULTI_TURN_METRICS
from integrations.lmms_eval.cruise_lmms_eval.results import NO_REPLY
from integrations.lmms_eval.cruise_lmms_eval.search import search_chunks, within
from integrations.lmms_eval.cruise_lmms_eval.settings import TaskSettings
from integrations.lmms_eval.cruise_lmms_eval.tools import TOOLS, agentic_answer, agentic_trace
from testkit.scripted_agent import build_dataset

IDK = "I don't know"
# a session whose image link the crag-mm rule set replaces (evaluator/scoring/rules.py)
FIXED_SESSION = "0df99a9a-6a5d-4ff4-b8e4-e3ee90209dfe"


@pytest.fixture(scope="module")
def chunking():
    return load_config("cpu", preset="rag_baseline")


@pytest.fixture(scope="module")
def single(tmp_path_factory) -> Path:
    """Three single-turn conversations: a photo, one with neither image nor link, and the
    session whose link a rule set fixes."""
    return build_dataset(tmp_path_factory.mktemp("single"), [
        dict(session_id="photo", image=Image.new("RGB", (64, 48), "red"), image_url="http://example.invalid/a.png",
             image_quality="normal", turns=[("photo-0", "Who built this tower?", "Gustave Eiffel", "place", "simple",
                                             "static")]),
        dict(session_id="blank", image=None, image_url="", image_quality="normal",
             turns=[("blank-0", "What is this?", "a lamp", "other", "simple", "static")]),
        dict(session_id=FIXED_SESSION, image=Image.new("RGB", (8, 8)), image_url="http://example.invalid/old.png",
             image_quality="normal", turns=[("fixed-0", "Which car is this?", "BMW 5 series", "vehicle", "simple",
                                             "static")]),
    ], form="list")


@pytest.fixture(scope="module")
def multi(tmp_path_factory) -> Path:
    return build_dataset(tmp_path_factory.mktemp("multi"), [
        dict(session_id="talk", image=Image.new("RGB", (64, 48), "blue"), image_url="http://example.invalid/b.png",
             image_quality="normal", turns=[("talk-0", "What is this?", "a heron", "animal", "simple", "static"),
                                            ("talk-1", "Where does it live?", "wetlands", "animal", "simple", "static"),
                                            ("talk-2", "What does it eat?", "fish", "animal", "simple", "static")]),
    ], form="list")


class Index:
    """A search pipeline stand-in: what it was asked (an image as its size), and the hits it
    has for an image and for a text."""

    def __init__(self, image_hits=(), web_hits=(), web_search=True):
        self.image_hits, self.web_hits, self.web_search, self.asked = image_hits, web_hits, web_search, []

    def __call__(self, query, k):
        self.asked.append((query if isinstance(query, str) else query.size, k))
        hits = self.web_hits if isinstance(query, str) else self.image_hits
        if isinstance(hits, Exception):
            raise hits
        return hits


def entity_hit(name: str, **attributes) -> dict:
    return {"score": 0.9, "entities": [{"entity_name": name, "entity_attributes": attributes}]}


TOWER = entity_hit("Eiffel Tower", architect="Gustave Eiffel", height="330 m")
BRIDGE = entity_hit("Tower Bridge", river="Thames")
PAGE = {"page_name": "Eiffel Tower", "page_url": "https://example.invalid/eiffel",
        "page_snippet": "The tower was finished in 1889."}


def task_over(folder: Path, chunking=None, index: Index | None = None, **settings) -> tuple[CragMMTask, list, list]:
    """The task over `folder`'s split; its documents as lmms-eval hands them (no image) and the
    search pipeline builds it made."""
    built = []

    def factory(profile):
        built.append(profile)
        return index, chunking

    task = CragMMTask(TaskSettings(dataset=str(folder), **settings), pipeline_factory=factory)
    docs = list(task.load().remove_columns(["image"]))
    return task, docs, built


def doc_of(docs: list[dict], session: str) -> dict:
    return next(doc for doc in docs if doc["session_id"] == session)


# --------------------------------------------------------------------------- settings
@pytest.mark.parametrize("settings, says", [
    ({"dataset_type": "two-turn"}, "dataset_type 'two-turn': choose one of ['single-turn', 'multi-turn']"),
    ({"prompt": "chat"}, "prompt 'chat': choose one of ['question', 'rag', 'agentic']"),
    ({"prompt": "agentic", "dataset_type": "multi-turn"}, "prompt 'agentic' is for single-turn tasks"),
    ({"prompt": "rag", "dataset_type": "multi-turn"}, "prompt 'rag' is for single-turn tasks"),
    ({"profile": "gpu9000"}, "gpu9000"),
    ({"scoring": ScoringSettings(rules="crag")}, "unknown rule set 'crag'"),
])
def test_a_task_setting_out_of_its_choices_is_refused_in_one_line(settings, says):
    with pytest.raises(ValueError) as refused:
        TaskSettings(**settings)
    assert says in str(refused.value) and "\n" not in str(refused.value)


def test_the_agentic_and_rag_prompts_are_for_single_turn_tasks_and_the_question_prompt_for_both():
    for prompt in ("question", "rag", "agentic"):
        assert TaskSettings(prompt=prompt).prompt == prompt
    assert TaskSettings(prompt="question", dataset_type="multi-turn").multi_turn is True


def test_a_single_turn_task_reports_the_turn_metrics_and_a_multi_turn_task_the_conversation_ones_too():
    single, multi = TaskSettings(), TaskSettings(dataset_type="multi-turn")
    assert single.multi_turn is False
    assert single.metrics == METRICS
    assert multi.metrics == {**METRICS, **MULTI_TURN_METRICS}
    assert list(multi.metrics)[-4:] == ["conversation_score", "truthfulness_kddcup2025", "truthfulness_crag_mm",
                                        "early_stop"]


def test_a_task_config_without_metadata_or_dataset_fields_gives_the_defaults():
    assert TaskSettings.from_task_config({}) == TaskSettings()
    assert TaskSettings.from_task_config({"metadata": None, "dataset_kwargs": None}) == TaskSettings()
    # empty lmms-eval fields and an empty revision leave the defaults as they are
    empty = {"task": "", "dataset_path": "", "test_split": "", "dataset_kwargs": {"revision": ""}}
    assert TaskSettings.from_task_config(empty) == TaskSettings()


def test_lmms_evals_own_metadata_and_what_a_task_recorded_of_itself_are_not_settings():
    config = {"task": "crag_mm_x", "dataset_path": "some/data", "test_split": "test",
              "dataset_kwargs": {"revision": "v9", "token": True},
              "metadata": {"version": 2, "crag_mm": {"dataset": "elsewhere", "rules": "crag-mm"},
                           "search_hits": 5, "context_chars": 100, "eval_model": "None", "rules": "crag-mm"}}
    settings = TaskSettings.from_task_config(config)
    assert settings == TaskSettings(task="crag_mm_x", dataset="some/data", split="test", revision="v9", search_hits=5,
                                    context_chars=100, scoring=ScoringSettings(eval_model="None", rules="crag-mm"))
    assert config["metadata"]["version"] == 2 and "crag_mm" in config["metadata"]  # the config is left as it was


@pytest.mark.parametrize("key", ["split", "dataset", "task", "revision", "scoring", "seplit"])
def test_a_setting_lmms_eval_gives_by_its_own_field_or_a_misspelt_one_is_refused_as_metadata(key):
    config = {"metadata": {key: "x"}}
    with pytest.raises(ValueError) as refused:
        TaskSettings.from_task_config(config)
    own = ["context_chars", "dataset_type", "max_tool_calls", "output_dir", "profile", "prompt", "search_hits"]
    judge = sorted(f.name for f in dataclasses.fields(ScoringSettings))
    assert str(refused.value) == f"unknown metadata of a CRAG-MM task: ['{key}'] (settings: {own}; judge: {judge})"


# --------------------------------------------------------------------------- lmms-eval's public form
TASKS_DIR = Path(__file__).resolve().parents[1] / "integrations" / "lmms_eval" / "tasks"
PACKAGE = TASKS_DIR.parent / "cruise_lmms_eval"


def yaml_of(name: str) -> dict:
    """A task's YAML as lmms-eval 0.7.3 reads it (`include`d files under its own keys), each
    `!function` kept as ("!function", its text)."""
    import yaml

    class Loader(yaml.SafeLoader):
        pass

    Loader.add_constructor("!function", lambda loader, node: ("!function", loader.construct_scalar(node)))
    config = yaml.load((TASKS_DIR / f"{name}.yaml").read_text(), Loader=Loader)
    base = yaml_of(Path(config.pop("include")).stem) if "include" in config else {}
    return {**base, **config}


@pytest.mark.parametrize("name", ["crag_mm_single", "crag_mm_single_rag", "crag_mm_agentic", "crag_mm_multi"])
def test_each_task_yaml_names_its_hooks_and_lists_every_metric_with_its_aggregation_as_lmms_evals_tasks_do(name):
    from integrations.lmms_eval.cruise_lmms_eval import hooks

    config = yaml_of(name)
    settings = TaskSettings.from_task_config({k: v for k, v in config.items() if k != "class"})
    for hook in ("doc_to_visual", "doc_to_text", "doc_to_target", "process_results"):
        assert config[hook] == ("!function", f"cruise_lmms_eval.hooks.{hook}") and callable(getattr(hooks, hook))
    listed = [(m["metric"], m["aggregation"], m["higher_is_better"]) for m in config["metric_list"]]
    assert listed == [(metric, ("!function", f"cruise_lmms_eval.hooks.{metric}"), higher)
                      for metric, (_, higher) in settings.metrics.items()]
    assert all(getattr(hooks, metric).__name__ == metric for metric in settings.metrics)
    assert config["class"] == ("!function", "cruise_lmms_eval.task.CragMMTaskClass")


def test_the_task_class_overrides_nothing_of_lmms_evals_and_sets_no_attribute():
    """Only its constructor, which edits the config it is handed before lmms-eval reads it: no
    method of ConfigurableTask overridden, no attribute of it set (lmms-eval's next release may
    rename its private ones)."""
    import ast

    tree = ast.parse((PACKAGE / "task.py").read_text())
    (cls,) = [node for node in tree.body if isinstance(node, ast.ClassDef)]
    assert [node.name for node in cls.body if isinstance(node, ast.FunctionDef)] == ["__init__"]
    assert not [node for node in ast.walk(cls) if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store)]
    for path in PACKAGE.glob("*.py"):
        assert "_prepare_metric_and_aggregation" not in path.read_text(), path


def test_the_hooks_find_each_documents_task_by_its_name_and_a_stranger_is_refused_in_one_line(single, monkeypatch):
    from integrations.lmms_eval.cruise_lmms_eval import crag_mm, hooks

    monkeypatch.setattr(crag_mm, "TASKS", {})
    monkeypatch.setattr(hooks, "TASKS", crag_mm.TASKS)
    scorer = Scorer()
    monkeypatch.setattr(metrics, "score_turns", scorer)
    plain, docs, _ = task_over(single, task="crag_mm_plain")
    other, other_docs, _ = task_over(single, task="crag_mm_other", prompt="agentic")
    crag_mm.register(plain)
    crag_mm.register(other)
    doc = doc_of(docs, "photo")
    assert doc[crag_mm.TASK_COLUMN] == "crag_mm_plain" and doc_of(other_docs, "photo")[crag_mm.TASK_COLUMN] == \
        "crag_mm_other"
    assert hooks.doc_to_text(doc) == plain.doc_to_text(doc) != hooks.doc_to_text(doc_of(other_docs, "photo"))
    assert hooks.doc_to_target(doc) == "Gustave Eiffel"
    assert [im.size for im in hooks.doc_to_visual(doc)] == [(64, 48)]
    out = hooks.process_results(doc, ["Gustave Eiffel"])
    assert out[TURNS_KEY]["task"] == "crag_mm_plain" and out[TURNS_KEY]["records"][0]["agent_response"] == \
        "Gustave Eiffel"
    assert hooks.truthfulness([out["truthfulness"]]) == 0.25 and scorer.calls[0]["run_config"].imported["task"] == \
        "crag_mm_plain"
    with pytest.raises(ValueError) as refused:
        hooks.doc_to_text({**doc, crag_mm.TASK_COLUMN: "crag_mm_gone"})
    assert "a document of task 'crag_mm_gone'" in str(refused.value) and "\n" not in str(refused.value)
    mixed = [out["truthfulness"], hooks.process_results(doc_of(other_docs, "photo"), ["x"])["truthfulness"]]
    with pytest.raises(ValueError, match="not one registered CRAG-MM task"):
        hooks.truthfulness(mixed)


def test_lmms_eval_is_told_to_load_the_split_the_task_found(single, tmp_path):
    """The dataset fields the task class hands lmms-eval: a folder of data files as it is, one
    saved by save_to_disk with load_from_disk, a hub id at its revision, and the split found
    (here the fallback's)."""
    import datasets

    task = CragMMTask(TaskSettings(dataset=str(single), split="public_test"))
    task.load()
    assert documents.lmms_eval_fields(task.loaded) == {"dataset_path": str(single), "dataset_kwargs": {},
                                                       "test_split": "validation"}
    ds = datasets.load_dataset(str(single))["validation"]
    datasets.DatasetDict({"test": ds}).save_to_disk(str(tmp_path / "saved"))
    saved = CragMMTask(TaskSettings(dataset=str(tmp_path / "saved"), split="test"))
    saved.load()
    assert documents.lmms_eval_fields(saved.loaded) == {"dataset_path": str(tmp_path / "saved"),
                                                        "dataset_kwargs": {"load_from_disk": True}, "test_split": "test"}
    hub = documents.LoadedSplit("crag-mm-2025/crag-mm-single-turn-public", "v0.1.2", "public_test", None, {}, {})
    assert documents.lmms_eval_fields(hub) == {"dataset_path": "crag-mm-2025/crag-mm-single-turn-public",
                                               "dataset_kwargs": {"revision": "v0.1.2"}, "test_split": "public_test"}
    ds.save_to_disk(str(tmp_path / "alone"))
    alone = documents.LoadedSplit(str(tmp_path / "alone"), None, "validation", None, {}, {})
    with pytest.raises(ValueError, match="holds one split saved alone: lmms-eval reads a DatasetDict"):
        documents.lmms_eval_fields(alone)


# --------------------------------------------------------------------------- the documents and the image
def test_the_split_read_is_described_and_a_missing_split_falls_back_with_a_notice(single, caplog):
    task = CragMMTask(TaskSettings(dataset=str(single), split="public_test"))
    before = task.described()
    assert before == {"dataset": str(single), "split": "public_test", "revision": "v0.1.2",
                      "dataset_type": "single-turn", "prompt": "question", "profile": "cpu",
                      **dataclasses.asdict(ScoringSettings())}
    with caplog.at_level(logging.WARNING, logger=documents.__name__):
        task.load()
    assert task.loaded.split == "validation" and task.loaded.notice
    assert [r.getMessage() for r in caplog.records if r.name == documents.__name__] == [task.loaded.notice]
    assert task.described()["split"] == "validation" and task.described()["dataset"] == str(single)
    assert copy.deepcopy(task) is task  # lmms-eval deep-copies the config that holds the task's methods

    quiet = CragMMTask(TaskSettings(dataset=str(single)))
    with caplog.at_level(logging.WARNING, logger=documents.__name__):
        caplog.clear()
        quiet.load()
    assert quiet.loaded.notice is None and not caplog.records


def test_a_document_without_its_image_gets_the_photo_of_its_row_and_one_without_any_gets_none(single, caplog):
    task, docs, _ = task_over(single)
    assert "image" not in docs[0]
    assert [im.size for im in task.doc_to_visual(doc_of(docs, "photo"))] == [(64, 48)]
    with caplog.at_level(logging.WARNING, logger=documents.__name__):
        assert task.doc_to_visual(doc_of(docs, "blank")) == []
    assert "session blank: image not loaded (ValueError: row has neither an image nor an image_url)" in \
        [r.getMessage() for r in caplog.records]
    # a document that carries its image is shown that one
    carried = {**doc_of(docs, "photo"), "image": Image.new("RGB", (30, 20))}
    assert [im.size for im in task.doc_to_visual(carried)] == [(30, 20)]
    # a document of another split: no row to take its photo from
    stranger = {**doc_of(docs, "photo"), "session_id": "elsewhere", "image_url": ""}
    assert task.doc_to_visual(stranger) == []
    assert task.trace(task.conversation(doc_of(docs, "photo")), 0) == {"funnel": {"image loaded": True}}
    assert task.trace(task.conversation(doc_of(docs, "blank")), 0) == {"funnel": {"image loaded": False}}


def test_the_rule_sets_fixed_image_links_apply_to_their_dataset_type_only(single):
    fixed_url = "https://web.archive.org/web/20250521025904/https://upload.wikimedia.org/wikipedia/commons/1/13/" \
                "BMW_5_SERIES_LWB_SEDAN_(G30)_China_(82).jpg"
    task, docs, _ = task_over(single, scoring=ScoringSettings(rules="crag-mm"))
    assert task.conversation(doc_of(docs, FIXED_SESSION)).image_url == fixed_url
    assert task.conversation(doc_of(docs, "photo")).image_url == "http://example.invalid/a.png"
    kdd, docs, _ = task_over(single)
    assert kdd.conversation(doc_of(docs, FIXED_SESSION)).image_url == "http://example.invalid/old.png"


def test_a_conversations_target_is_its_ground_truths_one_a_line(multi):
    task, docs, _ = task_over(multi, dataset_type="multi-turn")
    assert task.doc_to_target(docs[0]) == "a heron\nwetlands\nfish"


# --------------------------------------------------------------------------- rounds of a conversation
def test_a_conversations_rounds_end_after_its_last_turn_and_the_first_round_is_the_first_prompt(multi):
    task, docs, _ = task_over(multi, dataset_type="multi-turn")
    doc = docs[0]
    first = task.doc_to_text(doc)
    assert first.endswith("What is this?") and "<conversation_history>" not in first
    assert task.doc_to_text(doc, round_idx=0) == first
    info = {"round": 3}
    assert task.doc_to_text(doc, previous_output=["a", "b", "c"], round_idx=3, previous_round_info=info) == \
        (None, None, True, ["a", "b", "c"], info)
    assert task.doc_to_text(doc, previous_output=["a", "b", "c", "d"], round_idx=4)[:3] == (None, None, True)
    visuals, text, ended, _, _ = task.doc_to_text(doc, previous_output=["a heron", "wetlands", "extra"], round_idx=2)
    history = text.split("<conversation_history>")[1].split("</conversation_history>")[0]
    assert history.strip() == "User: What is this?\n\nAssistant: a heron\n\nUser: Where does it live?\n\n" \
                              "Assistant: wetlands"
    assert ended is False and text.endswith("What does it eat?") and [im.size for im in visuals] == [(64, 48)]
    # fewer earlier replies than rounds: each missing one stands as "I don't know"
    text = task.doc_to_text(doc, previous_output=["a heron"], round_idx=2)[1]
    assert text.split("<conversation_history>")[1].split("</conversation_history>")[0].strip() == \
        "User: What is this?\n\nAssistant: a heron\n\nUser: Where does it live?\n\nAssistant: I don't know"
    # a reply that is a fault (None, empty, a failed request) stands as "I don't know", as our
    # own runs give a turn whose agent failed
    for fault in (None, "  ", "[LMMS_EVAL_REQUEST_FAILED after 3 retries] Connection error.", OSError("down")):
        text = task.doc_to_text(doc, previous_output=[fault, "wetlands"], round_idx=2)[1]
        assert text.split("<conversation_history>")[1].split("</conversation_history>")[0].strip() == \
            "User: What is this?\n\nAssistant: I don't know\n\nUser: Where does it live?\n\nAssistant: wetlands"


# --------------------------------------------------------------------------- the RAG prompt's search
def test_the_search_results_are_each_hits_passages_once_with_what_was_found(chunking):
    from agents.stages.s4_chunk import chunks_from_image_hit, chunks_from_web_hit

    index = Index(image_hits=[TOWER, "not a hit", None, TOWER],
                  web_hits=[PAGE, {"page_url": "https://example.invalid/u", "page_snippet": "Paris has a tower."},
                            {"page_snippet": "Towers are tall."}, 7])
    image = Image.new("RGB", (20, 10))
    kept, found = search_chunks(index, image, "http://who built it", chunking, 2)
    assert index.asked == [((20, 10), 2), ("search: http://who built it", 2)]  # a link-like question stays text
    assert found == {"image_hits": 2, "web_hits": 3, "errors": [], "retrieved": [
        {"source": "image", "entities": ["Eiffel Tower"]}, {"source": "image", "entities": ["Eiffel Tower"]},
        {"source": "web", "name": "Eiffel Tower"}, {"source": "web", "name": "https://example.invalid/u"},
        {"source": "web", "name": ""}]}
    expected = chunks_from_image_hit(TOWER, chunking)
    for hit in index.web_hits[:3]:
        expected += [c for c in chunks_from_web_hit(hit, chunking, "http://who built it") if c not in expected]
    assert kept == expected and len(kept) == len(set(kept))  # the second TOWER adds nothing


def test_a_failed_search_costs_its_own_results_and_a_pipeline_without_web_search_is_not_asked(chunking):
    index = Index(image_hits=RuntimeError("x" * 300), web_hits=[PAGE])
    kept, found = search_chunks(index, Image.new("RGB", (4, 4)), "When was it built?", chunking, 3)
    assert found["errors"] == ["image search: RuntimeError: " + "x" * 200]
    assert (found["image_hits"], found["web_hits"]) == (0, 1) and kept and "1889" in kept[0]

    index = Index(image_hits=None, web_hits=RuntimeError("down"))
    kept, found = search_chunks(index, Image.new("RGB", (4, 4)), "q", chunking, 3)
    assert (kept, found["image_hits"], found["errors"]) == ([], 0, ["web search: RuntimeError: down"])

    offline = Index(image_hits=[TOWER], web_hits=[PAGE], web_search=False)
    kept, found = search_chunks(offline, Image.new("RGB", (4, 4)), "q", chunking, 3)
    assert offline.asked == [((4, 4), 3)] and found["web_hits"] == 0 and found["retrieved"] == [
        {"source": "image", "entities": ["Eiffel Tower"]}]


def test_the_rag_budget_counts_the_blank_line_between_passages_as_two_characters():
    assert within([], 10) == []
    assert within(["a" * 10], 10) == ["a" * 10]
    assert within(["a" * 11], 10) == ["a" * 10]  # a first passage over the budget is cut
    assert within(["a" * 4, "b" * 4], 10) == ["a" * 4, "b" * 4]  # 4 + 2 + 4
    assert within(["a" * 4, "b" * 5], 10) == ["a" * 4]
    assert within(["a" * 2, "b" * 2, "c" * 2], 10) == ["a" * 2, "b" * 2, "c" * 2]  # two blank lines: 10
    assert within(["a" * 2, "b" * 2, "c" * 3], 10) == ["a" * 2, "b" * 2]
    assert within(["a" * 4, "b" * 20, "c"], 10) == ["a" * 4]  # the first that does not fit ends them


def test_a_rag_prompt_searches_once_per_turn_and_a_turn_without_an_image_says_so(single, chunking):
    index = Index(image_hits=[TOWER], web_hits=[PAGE])
    task, docs, built = task_over(single, chunking, index, prompt="rag", search_hits=1, profile="cpu")
    doc = doc_of(docs, "photo")
    first = task.doc_to_text(doc)
    assert task.doc_to_text(doc) == first and index.asked == [((64, 48), 1), ("Who built this tower?", 1)]
    assert built == ["cpu"]
    context, trace = task.context(task.conversation(doc), doc)
    assert "<search_results>" in first and context in first and context == "\n\n".join(trace["passages"])
    assert trace["funnel"] == {"image loaded": True, "search found passages": True, "passages in the prompt": True}
    assert trace["image_hits"] == 1 and trace["web_hits"] == 1

    blank = doc_of(docs, "blank")
    task.doc_to_text(blank)
    assert task.trace(task.conversation(blank), 0) == {
        "funnel": {"image loaded": False, "search found passages": False, "passages in the prompt": False},
        "errors": ["no image"], "passages": []}
    assert len(index.asked) == 2 and built == ["cpu"]  # the pipeline is built once per task
    # a turn the task never prompted has no trace
    assert task.trace(task.conversation(doc_of(docs, FIXED_SESSION)), 0) is None


def test_a_rag_prompts_passages_keep_to_the_budget_and_nothing_found_leaves_them_empty(single, chunking):
    index = Index(image_hits=[TOWER, BRIDGE], web_hits=[PAGE])
    task, docs, _ = task_over(single, chunking, index, prompt="rag", context_chars=40)
    doc = doc_of(docs, "photo")
    task.doc_to_text(doc)
    passages = task.trace(task.conversation(doc), 0)["passages"]
    assert len(passages) == 1 and len(passages[0]) == 40

    empty = Index()
    task, docs, _ = task_over(single, chunking, empty, prompt="rag")
    doc = doc_of(docs, "photo")
    task.doc_to_text(doc)
    assert task.trace(task.conversation(doc), 0)["funnel"] == {"image loaded": True, "search found passages": False,
                                                               "passages in the prompt": False}


# --------------------------------------------------------------------------- crag_mm_agentic
def call(name: str, arguments) -> str:
    return "<tool_call>" + json.dumps({"name": name, "arguments": arguments}) + "</tool_call>"


def test_the_agentic_prompt_shows_the_tools_and_how_to_call_them_before_the_question(single):
    from agents.stages.prompts import load_prompt_lines

    task, docs, _ = task_over(single, prompt="agentic")
    text = task.doc_to_text(doc_of(docs, "photo"))
    alone, docs, _ = task_over(single)
    assert "<search_results>" not in alone.doc_to_text(doc_of(docs, "photo"))
    assert text == "\n\n".join([load_prompt_lines("lmms_agentic_tools"), json.dumps(TOOLS),
                                load_prompt_lines("lmms_agentic_call"), alone.doc_to_text(doc_of(docs, "photo"))])


def test_a_tool_call_runs_and_its_results_grow_the_prompt_until_the_budget_says_answer(single, chunking):
    from agents.stages.prompts import load_prompt_lines

    index = Index(image_hits=[TOWER], web_hits=[PAGE])
    task, docs, _ = task_over(single, chunking, index, prompt="agentic", max_tool_calls=2, search_hits=4)
    doc = doc_of(docs, "photo")
    first = task.doc_to_text(doc)
    outputs = [call("web_search", {"query": "eiffel tower year"})]
    visuals, prompt, ended, kept, info = task.doc_to_text(doc, previous_output=outputs, round_idx=1)
    assert (visuals, ended, kept) == (None, False, outputs) and index.asked == [("eiffel tower year", 4)]
    assert prompt.startswith(first + "\n\n" + outputs[0] + "\n<tool_result>\n")
    assert prompt.endswith("1889.\n</tool_result>") and load_prompt_lines("lmms_agentic_last") not in prompt
    assert [c["tool"] for c in info["calls"]] == ["web_search"] and info["state"] == {"calls": info["calls"]}
    # the counts lmms-eval's own fallback record reads from the round state
    assert (info["tool_calls"], info["valid_tool_calls"], info["invalid_steps"]) == (1, 1, 0)

    outputs.append(call("image_search", {}))
    _, prompt, ended, _, info = task.doc_to_text(doc, previous_output=outputs, round_idx=2, previous_round_info=info)
    assert ended is False and prompt.endswith("\n\n" + load_prompt_lines("lmms_agentic_last"))
    assert len(info["transcript"]) == 2 and "Gustave Eiffel" in info["transcript"][1]

    outputs.append(call("web_search", {"query": "one more"}))  # past the budget: ends unanswered
    _, prompt, ended, final, info = task.doc_to_text(doc, previous_output=outputs, round_idx=3,
                                                     previous_round_info=info)
    assert (prompt, ended) == (None, True) and len(index.asked) == 2
    assert final[:-1] == outputs[:-1] and json.loads(final[-1]) == {"answer": IDK, "calls": info["calls"],
                                                                    "ended": "call budget"}
    assert [c["tool"] for c in info["state"]["calls"]] == ["web_search", "image_search"]
    assert info["tool_calls"] == 2


def test_calls_in_one_reply_run_in_order_and_those_past_the_budget_get_a_result_saying_so(single, chunking):
    """A model that calls tools natively may ask for several at once: each runs in turn, each with
    its result after it; past the budget a call is not run, but its result says why, and the
    prompt says to answer."""
    from agents.stages.prompts import load_prompt_lines

    index = Index(image_hits=[TOWER], web_hits=[PAGE])
    task, docs, _ = task_over(single, chunking, index, prompt="agentic", max_tool_calls=3)
    doc = doc_of(docs, "photo")
    first = call("web_search", {"query": "tower"}) + "\n" + call("image_search", {})
    _, prompt, ended, _, info = task.doc_to_text(doc, previous_output=[first], round_idx=1)
    assert ended is False and index.asked == [("tower", 3), ((64, 48), 3)]
    assert [c["tool"] for c in info["calls"]] == ["web_search", "image_search"]
    assert prompt.count("<tool_result>") == 2 and prompt.index("1889") < prompt.index("Gustave Eiffel")
    assert load_prompt_lines("lmms_agentic_last") not in prompt
    second = call("web_search", {"query": "paris"}) + call("web_search", {"query": "never run"})
    _, prompt, ended, _, info = task.doc_to_text(doc, previous_output=[first, second], round_idx=2,
                                                 previous_round_info=info)
    assert ended is False and index.asked[-1] == ("paris", 3) and len(index.asked) == 3
    assert prompt.count("<tool_result>") == 4 and info["tool_calls"] == 3
    assert prompt.endswith("not run: the call budget of this turn is spent\n</tool_result>\n\n"
                           + load_prompt_lines("lmms_agentic_last"))


def test_a_reply_without_a_tool_call_ends_the_turn_with_its_answer(single):
    task, docs, _ = task_over(single, prompt="agentic")
    doc = doc_of(docs, "photo")
    _, prompt, ended, final, info = task.doc_to_text(doc, previous_output=["  Gustave Eiffel. \n"], round_idx=1)
    assert (prompt, ended) == (None, True)
    assert json.loads(final[0]) == {"answer": "Gustave Eiffel.", "calls": [], "ended": "answered"}
    assert info == {"calls": [], "transcript": [], "state": {"calls": []}, "tool_calls": 0, "valid_tool_calls": 0,
                    "invalid_steps": 0}
    _, _, ended, final, _ = task.doc_to_text(doc, previous_output=[], round_idx=1)
    assert ended is True and json.loads(final[0]) == {"answer": "", "calls": [], "ended": "answered"}
    _, _, ended, final, _ = task.doc_to_text(doc, previous_output=[None], round_idx=1)
    assert ended is True and json.loads(final[0]) == {"answer": "", "calls": [], "ended": "answered"}


def test_a_tool_call_gives_its_record_and_its_passages_within_the_budget(single, chunking):
    index = Index(image_hits=[TOWER, "junk", BRIDGE], web_hits=[PAGE, PAGE])
    task, docs, built = task_over(single, chunking, index, prompt="agentic", search_hits=2, profile="cpu")
    doc = doc_of(docs, "photo")
    record, text = task.run_tool(doc, json.dumps({"name": "image_search", "arguments": {"box": [0, 0, 32, 24]}}))
    assert index.asked == [((32, 24), 2)]  # the box's crop of the photo
    from agents.stages.s4_chunk import chunks_from_image_hit

    shown = chunks_from_image_hit(TOWER, chunking) + chunks_from_image_hit(BRIDGE, chunking)
    assert record == {"tool": "image_search", "arguments": {"box": [0, 0, 32, 24]}, "hits": 2,
                      "entities": [["Eiffel Tower"], ["Tower Bridge"]], "passages": shown, "error": None}
    assert text == "\n\n".join(shown)
    assert "Gustave Eiffel" in text and "Thames" in text
    # arguments given as a JSON string, as some chat templates give them; the same page twice is one passage
    record, text = task.run_tool(doc, json.dumps({"name": "web_search",
                                                        "arguments": json.dumps({"query": "tower year"})}))
    assert {k: v for k, v in record.items() if k != "passages"} == {
        "tool": "web_search", "arguments": {"query": "tower year"}, "hits": 2, "entities": [], "error": None}
    assert "\n\n".join(record["passages"]) == text
    assert index.asked[-1] == ("tower year", 2) and text.count("1889") == 1
    record, _ = task.run_tool(doc, json.dumps({"name": "image_search", "arguments": None}))
    assert index.asked[-1] == ((64, 48), 2) and record["arguments"] == {} and record["error"] is None
    assert built == ["cpu"]

    tight, docs, _ = task_over(single, chunking, Index(image_hits=[TOWER, BRIDGE]), prompt="agentic",
                               context_chars=25)
    _, text = tight.run_tool(doc_of(docs, "photo"), json.dumps({"name": "image_search"}))
    assert len(text) == 25


@pytest.mark.parametrize("text, says", [
    (json.dumps({"name": "calculator", "arguments": {}}), "error: ValueError: unknown tool 'calculator': image_search "
                                                          "or web_search"),
    (json.dumps({"name": "web_search", "arguments": {}}), "error: ValueError: web_search needs a query: got None"),
    (json.dumps({"name": "web_search", "arguments": {"query": "  \n"}}),
     "error: ValueError: web_search needs a query: got '  \\n'"),
    (json.dumps({"name": "web_search", "arguments": {"query": 7}}), "error: ValueError: web_search needs a query: got 7"),
    (json.dumps({"name": "web_search", "arguments": ["q"]}), "error: ValueError: arguments ['q']: an object of"),
    (json.dumps({"name": "image_search", "arguments": {"box": [80, 0, 90, 10]}}),
     "error: ValueError: box [80, 0, 90, 10] holds no part of the 64x48 photo"),
    (json.dumps({"name": "image_search", "arguments": {"box": [10, 10, 5, 20]}}),
     "error: ValueError: box [10, 10, 5, 20] holds no part of the 64x48 photo"),
    (json.dumps({"name": "image_search", "arguments": {"box": [0, 0, 10]}}),
     "error: ValueError: box [0, 0, 10]: four numbers [x1, y1, x2, y2]"),
    (json.dumps({"name": "image_search", "arguments": {"box": [0, "a", 10, 10]}}),
     "error: ValueError: box [0, 'a', 10, 10]: four numbers [x1, y1, x2, y2]"),
    ('{"name": "image_search", "arguments": {"box": [0, 0, NaN, 10]}}',
     "error: ValueError: box [0, 0, nan, 10]: four finite numbers"),
    ('{"name": "web_search", "arguments": {"query": ', "error: JSONDecodeError: "),
])
def test_a_malformed_tool_call_is_an_error_the_model_reads_and_searches_nothing(single, chunking, text, says):
    index = Index(image_hits=[TOWER], web_hits=[PAGE])
    task, docs, _ = task_over(single, chunking, index, prompt="agentic")
    record, result = task.run_tool(doc_of(docs, "photo"), text)
    assert result.startswith(says) and record["error"] == result[len("error: "):] and record["hits"] == 0
    assert index.asked == [] and record["passages"] == []


def test_a_box_is_cut_to_the_photo(single, chunking):
    index = Index(image_hits=[TOWER])
    task, docs, _ = task_over(single, chunking, index, prompt="agentic")
    record, _ = task.run_tool(doc_of(docs, "photo"), json.dumps({"name": "image_search",
                                                                 "arguments": {"box": [-5, 40, 100, 90]}}))
    assert record["error"] is None and index.asked == [((64, 8), 3)]


def test_a_tool_call_that_finds_nothing_or_has_no_photo_says_so(single, chunking):
    task, docs, _ = task_over(single, chunking, Index(image_hits=[], web_hits=RuntimeError("y" * 300)),
                              prompt="agentic")
    photo, blank = doc_of(docs, "photo"), doc_of(docs, "blank")
    record, text = task.run_tool(photo, json.dumps({"name": "image_search"}))
    assert (record["hits"], text) == (0, "nothing found")
    record, text = task.run_tool(blank, json.dumps({"name": "image_search"}))
    assert (record["tool"], record["error"], text) == ("image_search", "ValueError: no image", "error: ValueError: "
                                                                                                "no image")
    record, text = task.run_tool(photo, json.dumps({"name": "web_search",
                                                                              "arguments": {"query": "q"}}))
    assert record["error"] == "RuntimeError: " + "y" * 200 and text == "error: " + record["error"]


def test_the_agentic_final_reply_gives_the_answer_and_calls_or_a_miss_when_the_rounds_ran_out():
    calls = [{"tool": "web_search", "hits": 1}]
    answered = {"calls": [], "ended": "answered"}
    assert agentic_answer(json.dumps({"answer": "Paris", "calls": calls, "ended": "answered"})) == (
        "Paris", {"calls": calls, "ended": "answered"})
    assert agentic_answer(json.dumps({"answer": IDK, "calls": calls, "ended": "call budget"})) == (
        IDK, {"calls": calls, "ended": "call budget"})
    assert agentic_answer(json.dumps({"answer": None, "calls": None})) == ("", answered)
    assert agentic_answer(json.dumps({"answer": 1889})) == ("1889", answered)
    # lmms-eval's fallback record once max_agentic_steps ran out
    fallback = {"success": False, "error": "max_agentic_steps_reached", "state": {"calls": calls},
                "last_model_output": "<tool_call>", "trace": []}
    assert agentic_answer(json.dumps(fallback)) == (IDK, {"calls": calls, "ended": "step budget"})
    assert agentic_answer(json.dumps({**fallback, "state": "lost"})) == (IDK, {"calls": [], "ended": "step budget"})
    assert agentic_answer(json.dumps({"state": {}})) == (IDK, {"calls": [], "ended": "step budget"})
    # a reply that is not the task's JSON is the answer as it is
    assert agentic_answer("Paris") == ("Paris", answered)
    assert agentic_answer('["Paris"]') == ('["Paris"]', answered)


def test_a_turns_trace_with_its_tool_calls_counts_only_the_calls_that_ran():
    calls = [{"tool": "image_search", "hits": 2, "entities": [["Eiffel Tower"], ["Tower Bridge"]], "error": None,
              "passages": ["tower a", "bridge b"]},
             {"tool": "image_search", "hits": 5, "entities": [["never"]], "error": "ValueError: no image",
              "passages": ["never shown"]},
             {"tool": "web_search", "hits": 2, "entities": [], "error": None, "passages": ["page c"]},
             {"tool": "web_search", "hits": 3, "entities": [], "error": "ValueError: web_search needs a query"},
             {"tool": "web_search", "hits": None, "entities": [], "error": None},
             {"tool": "image_search", "hits": None, "entities": [], "error": None},
             {"tool": None, "hits": 0, "entities": [], "error": "JSONDecodeError: x"}]
    trace = agentic_trace({"funnel": {"image loaded": True}, "kept": 1}, {"calls": calls, "ended": "answered"})
    assert trace == {"funnel": {"image loaded": True, "called a tool": True, "a search found something": True},
                     "kept": 1, "tool_calls": calls, "calls_run": 7, "ended_by": "answered", "branch": "called tools",
                     "image_hits": 2, "passages": ["tower a", "bridge b", "page c"],
                     "retrieved": [{"source": "image", "entities": ["Eiffel Tower"]},
                                   {"source": "image", "entities": ["Tower Bridge"]},
                                   {"source": "web"}, {"source": "web"}]}
    assert agentic_trace(None, {"calls": [], "ended": "answered"}) == {
        "tool_calls": [], "calls_run": 0, "ended_by": "answered", "passages": [], "retrieved": [], "image_hits": 0,
        "branch": "answered without a tool", "funnel": {"called a tool": False, "a search found something": False}}
    nothing = agentic_trace({}, {"calls": [{"tool": "web_search", "hits": 0, "entities": [], "error": None}],
                                 "ended": "answered"})
    assert nothing["funnel"] == {"called a tool": True, "a search found something": False}
    for ended in ("call budget", "step budget"):
        trace = agentic_trace({}, {"calls": calls[:1], "ended": ended})
        assert (trace["branch"], trace["ended_by"], trace["calls_run"]) == (f"{ended} ended the turn", ended, 1)


# --------------------------------------------------------------------------- the records a document's replies become
def test_a_single_turn_documents_reply_becomes_its_record_under_every_metric(single):
    task, docs, _ = task_over(single)
    doc = doc_of(docs, "photo")
    task.doc_to_visual(doc)
    out = task.process_results(doc, ["  Gustave Eiffel  "])
    assert list(out) == list(TaskSettings().metrics) and all(value is out[TURNS_KEY] for value in out.values())
    record = out[TURNS_KEY]["records"][0]
    assert (record["interaction_id"], record["agent_response"], record["raw_answer"], record["error"]) == (
        "photo-0", "  Gustave Eiffel  ", "  Gustave Eiffel  ", None)
    assert out[TURNS_KEY]["traces"] == [{"interaction_id": "photo-0", "session_id": "photo", "turn_idx": 0,
                                         "funnel": {"image loaded": True}}]
    # a document never shown to the model has no trace
    assert task.process_results(doc_of(docs, FIXED_SESSION), ["BMW"])[TURNS_KEY]["traces"] == []


FAILED = "[LMMS_EVAL_REQUEST_FAILED after 1 retries] Connection error."


@pytest.mark.parametrize("reply, error, raw", [
    (None, "the model's reply had no content", ""),
    ("", "the model's reply had no content", ""),
    (" \n\t", "the model's reply had no content", " \n\t"),
    (FAILED, "the request failed: " + FAILED, FAILED),
    ("  " + FAILED + "\n more", "the request failed: " + FAILED + " more", "  " + FAILED + "\n more"),
    (TimeoutError("read timed out"), "the request failed: TimeoutError: read timed out", "read timed out"),
])
def test_a_failed_request_or_a_reply_without_content_is_an_error_turn_not_an_answer(single, caplog, reply, error, raw):
    """lmms-eval's API models hand back `[LMMS_EVAL_REQUEST_FAILED after N retries] ...` once their
    retries are spent: that, an exception and a reply with no content are our agent-error turns
    (I don't know, the reason as the error), never the model's answer."""
    task, docs, _ = task_over(single)
    with caplog.at_level(logging.WARNING, logger=results.__name__):
        record = task.process_results(doc_of(docs, "photo"), [reply])[TURNS_KEY]["records"][0]
    assert (record["agent_response"], record["raw_answer"], record["error"]) == (IDK, raw, error)
    assert not caplog.records
    # the marker inside a reply, not at its start, is the model's own text
    said = "It says [LMMS_EVAL_REQUEST_FAILED after 1 retries] on the screen."
    record = task.process_results(doc_of(docs, "photo"), [said])[TURNS_KEY]["records"][0]
    assert (record["agent_response"], record["error"]) == (said, None)


def test_no_result_at_all_is_no_reply(single, caplog):
    """No result at all leaves the turn without a reply, answered I don't know with the reason."""
    task, docs, _ = task_over(single)
    with caplog.at_level(logging.WARNING, logger=results.__name__):
        record = task.process_results(doc_of(docs, "photo"), [])[TURNS_KEY]["records"][0]
    assert (record["agent_response"], record["raw_answer"], record["error"]) == (IDK, "", NO_REPLY)
    assert "1 of 1 turns without a reply" in caplog.text


def test_a_conversations_replies_become_its_turns_records_and_a_lone_string_is_its_first(multi, caplog):
    task, docs, _ = task_over(multi, dataset_type="multi-turn")
    doc = docs[0]
    records = task.process_results(doc, [("a heron", None, "fish", "one too many")])[TURNS_KEY]["records"]
    assert [(r["agent_response"], r["raw_answer"], r["error"]) for r in records] == [
        ("a heron", "a heron", None), (IDK, "", "the model's reply had no content"), ("fish", "fish", None)]
    records = task.process_results(doc, [[FAILED, "wetlands", ""]])[TURNS_KEY]["records"]
    assert [(r["agent_response"], r["error"]) for r in records] == [
        (IDK, "the request failed: " + FAILED), ("wetlands", None), (IDK, "the model's reply had no content")]
    with caplog.at_level(logging.WARNING, logger=results.__name__):
        records = task.process_results(doc, ["a heron"])[TURNS_KEY]["records"]
    assert [(r["agent_response"], r["raw_answer"], r["error"]) for r in records] == [
        ("a heron", "a heron", None), (IDK, "", NO_REPLY), (IDK, "", NO_REPLY)]
    assert [r.getMessage() for r in caplog.records] == ["session talk: 2 of 3 turns without a reply"]
    assert [r["turn_idx"] for r in records] == [0, 1, 2]
    assert list(task.process_results(doc, [["a heron"]])) == list(TaskSettings(dataset_type="multi-turn").metrics)


def test_an_agentic_documents_final_reply_gives_its_answer_and_its_tool_calls_trace(single):
    task, docs, _ = task_over(single, prompt="agentic")
    doc = doc_of(docs, "photo")
    task.doc_to_visual(doc)
    calls = [{"tool": "image_search", "hits": 1, "entities": [["Eiffel Tower"]], "error": None}]
    out = task.process_results(doc, [json.dumps({"answer": "Gustave Eiffel", "calls": calls})])[TURNS_KEY]
    record, trace = out["records"][0], out["traces"][0]
    assert (record["agent_response"], record["raw_answer"]) == ("Gustave Eiffel", "Gustave Eiffel")
    assert trace["tool_calls"] == calls and trace["retrieved"] == [{"source": "image", "entities": ["Eiffel Tower"]}]
    assert (trace["interaction_id"], trace["turn_idx"], trace["branch"]) == ("photo-0", 0, "called tools")
    assert trace["funnel"] == {"image loaded": True, "called a tool": True, "a search found something": True}
    # no reply at all: I don't know with the reason, and no tool call to trace
    out = task.process_results(doc, [])[TURNS_KEY]
    assert (out["records"][0]["agent_response"], out["records"][0]["error"]) == (IDK, NO_REPLY)
    assert "branch" not in out["traces"][0]
    # an empty reply, or a failed request as the last reply: an error turn that called no tool
    for reply, error in (("", "the model's reply had no content"), (FAILED, "the request failed: " + FAILED)):
        final = json.dumps({"answer": reply, "calls": [], "ended": "answered"})
        out = task.process_results(doc, [final])[TURNS_KEY]
        assert (out["records"][0]["agent_response"], out["records"][0]["error"]) == (IDK, error)
        assert out["traces"][0]["branch"] == "answered without a tool"


# --------------------------------------------------------------------------- what the aggregation scores
class Scorer:
    """score_turns' stand-in: what the task hands it, and a scored run of known figures."""

    def __init__(self):
        self.calls = []

    def __call__(self, output_dir, records, traces, run_config, scoring, console):
        self.calls.append({"output_dir": Path(output_dir), "parent_existed": Path(output_dir).parent.is_dir(),
                           "records": records, "traces": traces, "run_config": run_config, "scoring": scoring,
                           "console": console})
        scores = {"all": {"truthfulness_score": 0.25 * len(self.calls), "mean_multi_turn_conversation_score": 0.5},
                  "ego": {"truthfulness_score": -1.0}}
        summary = {"turns_answered": len(records), "multi_turn": {"early_stop": {"turns": 2}}}
        return SimpleNamespace(scores=scores, summary=summary)


def test_the_aggregation_scores_the_documents_turns_once_as_an_imported_run(single, monkeypatch, tmp_path):
    from evaluator.imported_runs import imported_run_config

    scorer = Scorer()
    monkeypatch.setattr(metrics, "score_turns", scorer)
    task, docs, _ = task_over(single, task="crag_mm_single", scoring=ScoringSettings(rules="crag-mm"),
                              output_dir=str(tmp_path / "kept"))
    items = [task.process_results(doc, ["a reply"])[TURNS_KEY] for doc in docs]
    assert task.aggregate("truthfulness", items) == 0.25
    assert task.aggregate(TURNS_KEY, items) == 3 and task.aggregate("ego_truthfulness", items) == -1.0
    assert len(scorer.calls) == 1  # every metric reads the one scored run
    seen = scorer.calls[0]
    assert seen["output_dir"] == tmp_path / "kept" / "crag_mm_single"
    assert seen["records"] == [r for item in items for r in item["records"]] and seen["traces"] == []
    assert (seen["scoring"], seen["console"]) == (ScoringSettings(rules="crag-mm"), task.console)
    assert seen["run_config"] == imported_run_config(
        dataset=str(single), dataset_type="single-turn", split="validation", revision="v0.1.2", rules="crag-mm",
        agent="a model run by lmms-eval", turns=3, conversations=3, task="crag_mm_single",
        model="named in lmms-eval's results file")
    # other replies are another scored run
    other = [task.process_results(doc, ["another reply"])[TURNS_KEY] for doc in docs[:2]]
    assert task.aggregate("truthfulness", other) == 0.5 and len(scorer.calls) == 2
    assert scorer.calls[1]["run_config"].expected_turns == 2
    assert task.aggregate("truthfulness", items) == 0.25 and len(scorer.calls) == 2
    with pytest.raises(KeyError):
        task.aggregate("conversation_score", items)  # a single-turn task reports no conversation score


def test_a_multi_turn_tasks_aggregation_reads_its_conversation_figures_from_a_run_scored_in_a_removed_folder(
        multi, monkeypatch):
    scorer = Scorer()
    monkeypatch.setattr(metrics, "score_turns", scorer)
    task, docs, _ = task_over(multi, dataset_type="multi-turn")
    items = [task.process_results(docs[0], [("a", "b", "c")])[TURNS_KEY]]
    assert task.aggregate("conversation_score", items) == 0.5
    assert task.aggregate("early_stop", items) == {"turns": 2}
    seen = scorer.calls[0]
    assert seen["output_dir"].name == "run" and seen["output_dir"].parent.name.startswith("crag_mm_scored_")
    assert seen["parent_existed"] and not seen["output_dir"].parent.exists()
    assert (seen["traces"], seen["scoring"], seen["console"]) == ([], ScoringSettings(), task.console)
    assert (seen["run_config"].expected_turns, seen["run_config"].served_conversations) == (3, 1)
    assert seen["run_config"].dataset_type == "multi-turn" and seen["run_config"].rules == "kddcup2025"


def test_the_default_search_pipeline_is_the_profiles_with_web_search_and_the_rag_baselines_chunking(monkeypatch):
    from evaluator.harness.resolved import resolve_run
    from evaluator.search import pipeline

    built = []
    monkeypatch.setattr(pipeline, "build_search_pipeline", lambda search, web: built.append((search, web)) or "index")
    index, cfg = search.default_pipeline("cpu")
    assert index == "index" and built == [(resolve_run("cpu").search, True)]
    assert cfg == load_config("cpu", preset="rag_baseline")
    _, gpu = search.default_pipeline("l40s")
    assert gpu == load_config("l40s", preset="rag_baseline") and gpu != cfg

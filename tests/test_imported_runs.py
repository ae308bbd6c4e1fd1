"""evaluator/imported_runs.py's reading of another harness's run: the trace a turn gets from what
the task recorded of its prompt, the run an lmms-eval output folder holds, and its tasks' turns
and settings. The folders are laid out as lmms-eval 0.7.3 writes them with --log_samples
(`<date>_results.json`, one `<date>_samples_<task>.jsonl` per task, in a sub-folder named after
the model where it was given `pretrained=`); scoring them is tests/test_lmms_eval_tasks.py's."""
from __future__ import annotations

import json

import pytest

from evaluator.commands import EvaluationRefused
from evaluator.imported_runs import (
    IMAGE_RETRIEVAL,
    NO_IDENTIFICATION,
    TURNS_KEY,
    chosen_run,
    imported_trace,
    lmms_eval_tasks,
    run_name,
)

RECORD = {"interaction_id": "c1-t0", "session_id": "c1", "turn_idx": 0}


def test_a_turn_the_task_left_no_trace_of_gets_one_that_says_the_model_answered_alone():
    trace = imported_trace(RECORD, None)
    assert trace == {"interaction_id": "c1-t0", "session_id": "c1", "turn_idx": 0, "chunks": [], "kept_chunks": [],
                     "retrieved": [], "stages_not_run": NO_IDENTIFICATION + IMAGE_RETRIEVAL,
                     "branch": "the model alone"}


def test_the_rag_tasks_passages_and_named_hits_make_its_context_and_its_image_retrieval_scored():
    given = {"passages": ["Espresso is brewed under pressure.", 3],
             "retrieved": [{"source": "image", "entities": ["Espresso"]}]}
    trace = imported_trace(RECORD, given)
    assert trace["chunks"] == trace["kept_chunks"] == ["Espresso is brewed under pressure.", "3"]
    assert trace["stages_not_run"] == NO_IDENTIFICATION and trace["branch"] == "search results in the prompt"
    assert trace["retrieved"] == given["retrieved"] and "passages" not in RECORD


def test_a_run_logged_before_its_hits_were_named_keeps_their_number_and_its_image_retrieval_unscored():
    trace = imported_trace(RECORD, {"passages": ["p"], "image_hits": 2, "web_hits": "1"})
    assert trace["retrieved"] == [{"source": "image"}, {"source": "image"}, {"source": "web"}]
    assert trace["stages_not_run"] == NO_IDENTIFICATION + IMAGE_RETRIEVAL


@pytest.mark.parametrize("calls, image_scored", [
    ([{"tool": "web_search"}, "not a call"], False),
    ([{"tool": "web_search"}, {"tool": "image_search"}], True),
    # an image_search that could not search (a box outside the photo): image retrieval did not run
    ([{"tool": "image_search", "error": "ValueError: box [80, 0, 90, 10] holds no part of the 64x48 photo"}], False),
])
def test_the_agentic_tasks_image_retrieval_is_scored_only_where_the_model_called_image_search(calls, image_scored):
    trace = imported_trace(RECORD, {"tool_calls": calls, "retrieved": [], "image_hits": 1})
    assert trace["stages_not_run"] == NO_IDENTIFICATION + ([] if image_scored else IMAGE_RETRIEVAL)
    assert trace["branch"] == "search results in the prompt"  # image_hits: it searched


def test_what_the_task_recorded_is_kept_over_the_defaults():
    given = {"interaction_id": "other", "session_id": "s9", "turn_idx": 4, "branch": "mine", "chunks": ["a"],
             "stages_not_run": []}
    assert imported_trace(RECORD, given) == {**given, "kept_chunks": [], "retrieved": []}


# --------------------------------------------------------------------------- lmms-eval's folder
def task_config(name: str, **crag_mm) -> dict:
    return {"task": name, "metadata": {"version": 1, "crag_mm": crag_mm}}


def write_run(folder, date: str, samples: dict[str, list], configs: dict | None = None,
              config: dict | None = None):
    """A results file and one samples file per task, each sample holding a document's turns."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{date}_results.json").write_text(json.dumps({
        "results": {name: {} for name in samples}, "configs": configs or {},
        "config": {"model": "scripted", "model_args": "x=1"} if config is None else config}))
    for name, documents in samples.items():
        lines = [json.dumps({"doc_id": i, **({TURNS_KEY: turns} if turns is not None else {})}) for i, turns in
                 enumerate(documents)]
        (folder / f"{date}_samples_{name}.jsonl").write_text("\n".join(lines) + "\n\n")


def turns(session: str, count: int, traced: bool = True) -> dict:
    records = [{"interaction_id": f"{session}-t{i}", "session_id": session, "turn_idx": i} for i in range(count)]
    return {"records": records, "traces": [{"interaction_id": r["interaction_id"]} if traced else None
                                           for r in records]}


def test_a_runs_tasks_carry_their_turns_settings_and_the_model_that_answered(tmp_path):
    write_run(tmp_path / "out", "20261128_101500", {
        "crag_mm_single": [turns("a", 1), turns("b", 1, traced=False), None],
        "crag_mm_multi": [turns("c", 2), turns("d", 3)],
        "ai2d": [None]},  # lmms-eval's own task, first in name order: no turns of ours
        configs={"crag_mm_multi": task_config("crag_mm_multi", dataset="data/mini", dataset_type="multi-turn",
                                              split="validation", revision="v0.1.2", rules="crag_mm_2026",
                                              eval_model="gpt-4o", not_a_setting=1)})
    multi, single = lmms_eval_tasks(tmp_path / "out")
    assert (multi.name, single.name) == ("crag_mm_multi", "crag_mm_single")  # files in name order
    assert [r["interaction_id"] for r in multi.records] == ["c-t0", "c-t1", "d-t0", "d-t1", "d-t2"]
    assert len(single.records) == 2 and [t["interaction_id"] for t in single.traces] == ["a-t0"]
    assert (multi.scoring.rules, multi.scoring.eval_model) == ("crag_mm_2026", "gpt-4o")
    config = multi.run_config
    assert (config.dataset, config.dataset_type, config.split, config.revision) == \
        ("data/mini", "multi-turn", "validation", "v0.1.2")
    assert (config.rules, config.expected_turns, config.served_conversations) == ("crag_mm_2026", 5, 2)
    assert config.agent == "lmms-eval model scripted (x=1)"
    assert config.imported == {"harness": "lmms-eval", "model": "scripted (x=1)", "task": "crag_mm_multi"}
    # a task whose config says nothing of itself: unknown fields, the 2025 rules
    assert (single.run_config.dataset, single.run_config.split, single.run_config.revision) == ("?", "?", None)
    assert single.run_config.rules == "kddcup2025" and single.scoring.rules is None


def test_each_task_of_a_run_is_scored_into_its_own_folder_with_the_judge_options_given(tmp_path, monkeypatch):
    from rich.console import Console

    from evaluator import imported_runs

    scored = []
    monkeypatch.setattr(imported_runs, "score_turns", lambda target, records, traces, run_config, scoring, console:
                        scored.append((target, [r["interaction_id"] for r in records], run_config.imported["task"], scoring)))
    write_run(tmp_path / "two", "20261128_101500", {"crag_mm_single": [turns("a", 1)], "crag_mm_multi": [turns("c", 2)]},
              configs={"crag_mm_multi": task_config("crag_mm_multi", rules="crag_mm_2026", eval_model="gpt-4o")})
    printed = Console(record=True, width=200)
    imported_runs.from_lmms_eval(tmp_path / "two", tmp_path / "out", printed, eval_model=None, eval_base_url="http://judge")
    (multi_dir, multi, _, multi_scoring), (single_dir, single, _, single_scoring) = scored
    assert (multi_dir, multi, single_dir, single) == (tmp_path / "out" / "crag_mm_multi", ["c-t0", "c-t1"],
                                                      tmp_path / "out" / "crag_mm_single", ["a-t0"])
    # an option given replaces the task's own; one left None keeps it
    assert (multi_scoring.rules, multi_scoring.eval_model, multi_scoring.eval_base_url) == (
        "crag_mm_2026", "gpt-4o", "http://judge")
    assert single_scoring.eval_base_url == "http://judge"
    assert printed.export_text().splitlines() == [f"crag_mm_multi: 2 turns from {tmp_path / 'two'}",
                                                  f"crag_mm_single: 1 turns from {tmp_path / 'two'}"]
    # a run of one task is scored into the folder given
    scored.clear()
    write_run(tmp_path / "one", "20261128_101500", {"crag_mm_single": [turns("a", 1)]})
    imported_runs.from_lmms_eval(tmp_path / "one", tmp_path / "out1", Console(quiet=True))
    assert [(target, task) for target, _, task, _ in scored] == [(tmp_path / "out1", "crag_mm_single")]


def test_a_model_given_without_model_args_is_named_so(tmp_path):
    write_run(tmp_path, "20261128_101500", {"crag_mm_single": [turns("a", 1)]}, config={"model": "qwen2_5_vl"})
    assert lmms_eval_tasks(tmp_path)[0].run_config.agent == "lmms-eval model qwen2_5_vl (no model_args)"


def test_a_run_without_a_crag_mm_tasks_samples_is_refused(tmp_path):
    write_run(tmp_path, "20261128_101500", {"other_task": [None, turns("a", 0)]})
    with pytest.raises(EvaluationRefused, match=r"holds no samples of a CRAG-MM task \(run lmms-eval with "
                                                r"--log_samples"):
        lmms_eval_tasks(tmp_path)


def test_only_the_chosen_runs_samples_are_read(tmp_path):
    write_run(tmp_path, "20261127_090000", {"crag_mm_single": [turns("old", 4)]})
    write_run(tmp_path, "20261128_101500", {"crag_mm_single": [turns("new", 1)]})
    (task,) = lmms_eval_tasks(tmp_path, run="20261128_101500")
    assert [r["session_id"] for r in task.records] == ["new"]


def test_a_folder_names_its_runs_by_their_path_and_one_is_chosen_by_name_or_by_date(tmp_path):
    for name in ("20261129_080000", "model-a/20261128_101500", "model-b/20261128_101500"):
        path = tmp_path / f"{name}_results.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("{}")
    assert run_name(tmp_path, tmp_path / "model-a" / "20261128_101500_results.json") == "model-a/20261128_101500"
    assert chosen_run(tmp_path, "model-b/20261128_101500") == tmp_path / "model-b" / "20261128_101500_results.json"
    assert chosen_run(tmp_path, "20261129_080000") == tmp_path / "20261129_080000_results.json"
    with pytest.raises(EvaluationRefused, match=r"^--run 20261128_101500: more than one run of .* has that name; "
                                                r"its runs: model-a/20261128_101500, model-b/20261128_101500, "
                                                r"20261129_080000$"):
        chosen_run(tmp_path, "20261128_101500")  # the date alone names two
    with pytest.raises(EvaluationRefused, match=r"--run 20261130_000000: no run of "):
        chosen_run(tmp_path, "20261130_000000")
    with pytest.raises(EvaluationRefused, match=r"holds 3 lmms-eval runs \(model-a/20261128_101500, "
                                                r"model-b/20261128_101500, 20261129_080000\): pick one"):
        chosen_run(tmp_path, None)
    assert chosen_run(tmp_path / "model-a", None) == tmp_path / "model-a" / "20261128_101500_results.json"

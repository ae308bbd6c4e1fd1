"""The CRAG-MM tasks for lmms-eval and the cruise_agent model, without lmms-eval
(integrations/lmms_eval/cruise_lmms_eval: crag_mm.py, model_args.py, agent_run.py; and
evaluator/imported_runs.py). The documents are rows of CRAG-MM-schema datasets in the official
layout (testkit/evaluation_world.py's conversations with its scripted judge, the mini benchmark);
what lmms-eval itself does with them runs in the full tier (tests/full/test_lmms_eval.py).
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from PIL import Image

import local_evaluation
from agents.profiles import REPO_ROOT
from evaluator.commands import EvaluationRefused
from evaluator.imported_runs import TURNS_KEY, from_lmms_eval
from evaluator.scoring.truncate import load_truncator
from evaluator.settings import EvaluationSettings
from integrations.lmms_eval.cruise_lmms_eval.agent_run import AgentRun
from integrations.lmms_eval.cruise_lmms_eval.crag_mm import CragMMTask
from integrations.lmms_eval.cruise_lmms_eval.model_args import evaluation_settings, parse_model_args
from integrations.lmms_eval.cruise_lmms_eval.prompts import prompt_text
from integrations.lmms_eval.cruise_lmms_eval.search import within
from integrations.lmms_eval.cruise_lmms_eval.settings import TaskSettings
from testkit.evaluation_world import LONG_APPLES, run_env, write_script
from testkit.in_process import fresh_environment
from testkit.scripted_agent import build_dataset

TASKS = REPO_ROOT / "integrations" / "lmms_eval" / "tasks"
IDK = "I don't know"


def task_yaml(name: str) -> dict:
    """A task's YAML as lmms-eval reads it: `include`d files first, then its own keys over them
    (the `!function` tag kept as its text)."""
    class Loader(yaml.SafeLoader):
        pass

    Loader.add_constructor("!function", lambda loader, node: loader.construct_scalar(node))
    config = yaml.load((TASKS / f"{name}.yaml").read_text(), Loader=Loader)
    base = task_yaml(Path(config.pop("include")).stem) if "include" in config else {}
    return {**base, **config}


def world_task(world, **metadata) -> CragMMTask:
    """The multi-turn task over the evaluation world's dataset, judged by its scripted judge."""
    config = {**task_yaml("crag_mm_multi"), "dataset_path": str(world["dataset"])}
    config["metadata"] = {**config["metadata"], "eval_model": "judge-model", "eval_base_url": world["server"].url,
                          "judge_retry_wait": 0.01, "judge_max_wait": 0.0, **metadata}
    task = CragMMTask(TaskSettings.from_task_config(config))
    task.ds = task.load()
    return task


def docs_of(ds) -> list[dict]:
    return list(ds.remove_columns(["image"]))


def saved(folder: Path, name: str) -> list[dict]:
    return [json.loads(line) for line in (folder / name).read_text().splitlines() if line.strip()]


# --------------------------------------------------------------------------- the tasks' YAML
def test_each_task_yaml_reads_as_its_settings():
    single, rag, multi = (TaskSettings.from_task_config(task_yaml(name))
                          for name in ("crag_mm_single", "crag_mm_single_rag", "crag_mm_multi"))
    assert (single.dataset_type, single.prompt, single.dataset, single.split) == ("single-turn", "question", None,
                                                                                  "validation")
    assert (rag.dataset_type, rag.prompt, rag.search_hits) == ("single-turn", "rag", 3)
    assert (multi.dataset_type, multi.prompt) == ("multi-turn", "question")
    assert "conversation_score" in multi.metrics and "conversation_score" not in single.metrics
    for settings in (single, rag, multi):
        assert settings.profile == "cpu" and settings.scoring.rules == "kddcup2025"


def test_a_yaml_of_ones_own_names_the_dataset_split_revision_and_judge_by_lmms_evals_fields():
    config = {**task_yaml("crag_mm_single"), "dataset_path": "crag-mm-2025/crag-mm-single-turn-public",
              "test_split": "public_test", "dataset_kwargs": {"revision": "v0.1.3"}}
    config["metadata"] = {**config["metadata"], "rules": "crag-mm", "judge_prompt_from": "/src/CRAG-MM",
                          "profile": "l40s"}
    settings = TaskSettings.from_task_config(config)
    assert (settings.dataset, settings.split, settings.revision, settings.profile) == (
        "crag-mm-2025/crag-mm-single-turn-public", "public_test", "v0.1.3", "l40s")
    assert (settings.scoring.rules, settings.scoring.judge_prompt_from) == ("crag-mm", "/src/CRAG-MM")


@pytest.mark.parametrize("metadata, says", [
    ({"rulez": "crag-mm"}, "unknown metadata of a CRAG-MM task: ['rulez']"),
    ({"rules": "crag"}, "unknown rule set 'crag'"),
    ({"prompt": "rag", "dataset_type": "multi-turn"}, "prompt 'rag' is for single-turn tasks"),
])
def test_a_bad_setting_is_refused_in_one_line(metadata, says):
    config = task_yaml("crag_mm_single")
    config["metadata"] = {**config["metadata"], **metadata}
    with pytest.raises(ValueError, match=says.replace("[", r"\[").replace("]", r"\]")):
        TaskSettings.from_task_config(config)


# --------------------------------------------------------------------------- what the model is given
def test_the_image_as_the_official_iterator_hands_it_over(world):
    task = world_task(world)
    rows = {row["session_id"]: row for row in task.ds}
    ego = task.doc_to_visual(rows["s1-ego"])
    third = task.doc_to_visual(rows["s2-url"])  # fetched from the judge server's /img/ route
    assert [im.size for im in ego] == [(960, 1280)]  # egocentric: resized
    assert [im.size for im in third] == [(40, 30)]  # third person: as it is


def test_a_conversations_later_rounds_carry_the_models_earlier_answers_cut_to_75_tokens(world):
    task = world_task(world)
    doc = next(row for row in task.ds if row["session_id"] == "s1-ego")
    first = task.doc_to_text(doc)
    assert first.endswith("s1q0") and "<conversation_history>" not in first
    visuals, text, ended, previous, info = task.doc_to_text(doc, previous_output=[LONG_APPLES, "blue"],
                                                            round_idx=2, previous_round_info={"k": 1})
    cut = load_truncator().truncate([LONG_APPLES])[0]
    assert cut != LONG_APPLES.strip()
    history = text.split("<conversation_history>")[1].split("</conversation_history>")[0]
    assert history.strip() == f"User: s1q0\n\nAssistant: {cut}\n\nUser: s1q1\n\nAssistant: blue"
    assert text.endswith("s1q2") and not ended and previous == [LONG_APPLES, "blue"] and info == {"k": 1}
    assert [im.size for im in visuals] == [(960, 1280)]
    assert task.doc_to_text(doc, previous_output=["a", "b", "c"], round_idx=3)[2] is True  # three turns: ended


def test_a_later_round_whose_earlier_replies_are_missing_carries_i_dont_know_for_each_of_them(world):
    """lmms-eval hands over fewer earlier outputs than rounds (a model that gave none): each
    missing reply stands in the history as "I don't know", so no earlier turn is lost."""
    task = world_task(world)
    doc = next(row for row in task.ds if row["session_id"] == "s1-ego")
    for previous in (["blue"], [], None):
        text = task.doc_to_text(doc, previous_output=previous, round_idx=2)[1]
        history = text.split("<conversation_history>")[1].split("</conversation_history>")[0]
        first = previous[0] if previous else "I don't know"
        assert history.strip() == f"User: s1q0\n\nAssistant: {first}\n\nUser: s1q1\n\nAssistant: I don't know"
        assert text.endswith("s1q2")



@pytest.mark.parametrize("fault", ["[LMMS_EVAL_REQUEST_FAILED after 2 retries] Connection error.", None, " \n",
                                   TimeoutError("read timed out")])
def test_a_later_round_whose_earlier_reply_was_no_answer_carries_i_dont_know_for_it(world, fault):
    """An earlier reply that is no answer (lmms-eval's failure marker, an exception, no content)
    is scored "I don't know" (results.py), and the later rounds show it so: the history holds what
    the scores count, never the marker or "None" as the model's words."""
    task = world_task(world)
    doc = next(row for row in task.ds if row["session_id"] == "s1-ego")
    text = task.doc_to_text(doc, previous_output=[fault, "blue"], round_idx=2)[1]
    history = text.split("<conversation_history>")[1].split("</conversation_history>")[0]
    assert history.strip() == "User: s1q0\n\nAssistant: I don't know\n\nUser: s1q1\n\nAssistant: blue"

def test_the_model_alone_gets_the_baselines_prompt_and_rag_the_search_results_within_their_budget(tmp_path):
    folder = build_dataset(tmp_path / "single", [dict(session_id="q1", image=Image.new("RGB", (50, 40)),
                                                      image_url="http://example.invalid/a.png", image_quality="normal",
                                                      turns=[("q1-0", "Who built this tower?", "Gustave Eiffel",
                                                              "place", "simple", "static")])], form="list")
    seen = []

    def pipeline(query, k):
        seen.append(("text" if isinstance(query, str) else "image", k))
        if isinstance(query, str):
            raise ConnectionError("web index down")  # costs the web results only
        return [{"score": 0.9, "entities": [{"entity_name": "Eiffel Tower",
                                             "entity_attributes": {"architect": "Gustave Eiffel", "height": "330 m"}}]}]

    def task_of(name, **metadata):
        config = {**task_yaml(name), "dataset_path": str(folder)}
        config["metadata"] = {**config["metadata"], **metadata}
        task = CragMMTask(TaskSettings.from_task_config(config), pipeline_factory=lambda profile: (pipeline, cfg))
        return task, docs_of(task.load())[0]  # lmms-eval builds the prompts from documents without their media

    from agents.config.loading import load_config

    cfg = load_config("cpu", preset="rag_baseline")
    alone, doc = task_of("crag_mm_single")
    text = alone.doc_to_text(doc)
    assert text.startswith("You are a helpful assistant that answers the user's question about an image truthfully.")
    assert text.endswith("Who built this tower?") and "search_results" not in text and not seen

    rag, doc = task_of("crag_mm_single_rag", search_hits=2)
    text = rag.doc_to_text(doc)
    assert seen == [("image", 2), ("text", 2)]
    notes = text.split("<search_results>")[1].split("</search_results>")[0]
    assert "Gustave Eiffel" in notes and "330 m" in notes
    trace = rag.trace(rag.conversation(doc), 0)
    assert trace["funnel"] == {"image loaded": True, "search found passages": True, "passages in the prompt": True}
    assert trace["image_hits"] == 1 and trace["errors"] == ["web search: ConnectionError: web index down"]
    # a budget smaller than the passages keeps the first ones that fit
    assert within(["a" * 30, "b" * 30, "c" * 30], 64) == ["a" * 30, "b" * 30]
    assert within(["a" * 30, "b" * 28], 60) == ["a" * 30, "b" * 28]  # joined by a blank line: 60 characters
    assert within(["a" * 30, "b" * 29], 60) == ["a" * 30]  # 61 with the blank line's two characters
    assert within(["a" * 20, "b" * 18, "c" * 18], 60) == ["a" * 20, "b" * 18, "c" * 18]  # two separators: 60
    assert within(["a" * 20, "b" * 18, "c" * 19], 60) == ["a" * 20, "b" * 18]
    assert within(["a" * 30], 10) == ["a" * 10]
    tight, doc = task_of("crag_mm_single_rag", context_chars=5)
    assert tight.doc_to_text(doc).split("<search_results>")[1].split("</search_results>")[0].strip() == \
        tight.trace(tight.conversation(doc), 0)["passages"][0]
    assert len(tight.trace(tight.conversation(doc), 0)["passages"][0]) == 5


def test_the_baselines_messages_flatten_with_the_history_by_role():
    messages = [{"role": "system", "content": "S"}, {"role": "user", "content": "<conversation_history>"},
                {"role": "user", "content": "q0"}, {"role": "assistant", "content": "a0"},
                {"role": "user", "content": "</conversation_history>"}, {"role": "user", "content": "q1"}]
    assert prompt_text(messages) == ("S\n\n<conversation_history>\n\nUser: q0\n\nAssistant: a0\n\n"
                                     "</conversation_history>\n\nq1")


# --------------------------------------------------------------------------- scores
def lmms_eval_results(task: CragMMTask, answers: dict[str, str]) -> list[dict]:
    """What lmms-eval's postprocessing gets from the task for each document, when the model
    replied `answers` (query -> reply) to every turn of it."""
    out = []
    for doc in docs_of(task.ds):
        replies = tuple(answers[q] for q in (doc["turns"]["query"]))
        out.append(task.process_results(doc, [replies]))
    return out


def test_crag_mm_multi_scores_as_local_evaluation_does_on_the_same_answers(world, full_run):
    """The conversation score and the early stop's figures (and every other metric) of the
    task's aggregation equal local_evaluation.py's on the same replies, judged by the same judge."""
    task = world_task(world)
    env = run_env(world, write_script(world, "lmms-multi"), None, None)
    with fresh_environment(env):
        per_doc = lmms_eval_results(task, world["answers"])
        got = {name: task.aggregate(name, [doc[name] for doc in per_doc]) for name in task.settings.metrics}
    scores = json.loads((full_run["out"] / "scores_dictionary.json").read_text())
    summary = json.loads((full_run["out"] / "run_summary.json").read_text())
    assert got["truthfulness"] == scores["all"]["truthfulness_score"]
    assert got["accuracy"] == scores["all"]["accuracy"]
    assert got["hallucination"] == scores["all"]["hallucination_rate"]
    assert got["missing"] == scores["all"]["missing"]
    assert got["ego_truthfulness"] == scores["ego"]["truthfulness_score"]
    assert got["truthfulness_ci95"] == scores["intervals_95"]["all"]["truthfulness_score"]
    assert got["conversation_score"] == scores["all"]["mean_multi_turn_conversation_score"]
    assert got["early_stop"] == summary["multi_turn"]["early_stop"]
    assert got["early_stop"]["turns"] == 3  # s2-2, s2-3 (after W, I) and s5-2 (after I, I): testkit/evaluation_world.py
    for rules in ("kddcup2025", "crag-mm"):
        key = f"truthfulness_{rules.replace('-', '_')}"
        assert got[key] == summary["multi_turn"]["rule_sets"][rules]["scores"]["truthfulness_score"]
    # every document's turns are logged with the sample, in the records answers.jsonl holds
    records = [r for doc in per_doc for r in doc[TURNS_KEY]["records"]]
    ours = {r["interaction_id"]: r for r in saved(full_run["out"], "answers.jsonl")}
    assert {r["interaction_id"]: r["agent_response"] for r in records} == \
        {iid: r["agent_response"] for iid, r in ours.items()}


def test_turns_a_model_left_without_a_reply_are_scored_as_i_dont_know(world):
    task = world_task(world, eval_model="None")
    doc = next(d for d in docs_of(task.ds) if d["session_id"] == "s2-url")
    records = task.process_results(doc, [("Lion", "savanna")])[TURNS_KEY]["records"]
    assert [r["agent_response"] for r in records] == ["Lion", "savanna", "I don't know", "I don't know"]
    assert [bool(r["error"]) for r in records] == [False, False, True, True]


# --------------------------------------------------------------------------- cruise_agent's model_args
def test_model_args_keep_every_set_whether_repeated_or_joined_by_semicolons():
    args = parse_model_args('system=qa_dragon,profile=cpu,set=turn_budget_s=0;tau_low=0.8,'
                            'set=domain_prompts={"a": 1, "b": 2},preset=no_cov')
    assert args == {"system": "qa_dragon", "profile": "cpu", "preset": "no_cov",
                    "set": ["turn_budget_s=0", "tau_low=0.8", 'domain_prompts={"a": 1, "b": 2}']}
    settings = evaluation_settings(args)
    assert settings.set == ("system=qa_dragon", "turn_budget_s=0", "tau_low=0.8", 'domain_prompts={"a": 1, "b": 2}')
    assert (settings.profile, settings.preset, settings.agent) == ("cpu", "no_cov", EvaluationSettings().agent)
    assert evaluation_settings(parse_model_args("")).set == ()


@pytest.mark.parametrize("text, says", [
    ("profile=cpu,profile=l40s", "given twice"),
    ("temperature=0", "unknown model_args key 'temperature'"),
    ("cpu", "not KEY=VALUE"),
])
def test_model_args_that_would_be_lost_or_misread_are_refused(text, says):
    with pytest.raises(ValueError, match=says):
        parse_model_args(text)


# --------------------------------------------------------------------------- cruise_agent's answers
def test_the_agent_answers_lmms_evals_documents_as_local_evaluation_does(world, full_run, tmp_path):
    """Same replies per turn, the same batches (the scripted agent's log of its calls)."""
    script = write_script(world, "lmms-agent")
    settings = EvaluationSettings(agent="testkit.scripted_agent:ScriptedAgent", profile="cpu",
                                  search="testkit.scripted_agent:make_fake_search", suppress_web_search_api=True,
                                  set=("k_recall=7",))
    task = world_task(world)
    with fresh_environment(run_env(world, script, None, None)):
        run = AgentRun(settings)
        replies = run.answer(task.ds, list(range(len(task.ds))), tmp_path / "agent")
    ours = {r["interaction_id"]: r["raw_answer"] for r in saved(full_run["out"], "answers.jsonl")}
    got = {}
    for doc_id, doc in enumerate(docs_of(task.ds)):
        got.update(zip(doc["turns"]["interaction_id"], replies[doc_id]))
    assert got == ours
    calls = [(c["queries"], c["histories"]) for c in saved(world["root"], "lmms-agent.log.jsonl")]
    assert calls == [(c["queries"], c["histories"]) for c in full_run["log"]]
    assert (tmp_path / "agent" / "traces.jsonl").exists()


# --------------------------------------------------------------------------- from an lmms-eval run
def test_an_lmms_eval_runs_samples_score_as_our_run_with_its_report(world, full_run, tmp_path):
    """lmms-eval's output folder, as it writes it with --log_samples: the results file (the task
    config with what the task recorded of itself) and one samples file per task."""
    task = world_task(world)
    env = run_env(world, write_script(world, "lmms-import"), None, None)
    with fresh_environment(env):
        per_doc = lmms_eval_results(task, world["answers"])
    lmms = tmp_path / "lmms-out"
    lmms.mkdir()
    (lmms / "20261128_101500_results.json").write_text(json.dumps({
        "results": {"crag_mm_multi": {"truthfulness,none": 0.0}},
        "configs": {"crag_mm_multi": {"task": "crag_mm_multi", "metadata": {"version": 1,
                                                                              "crag_mm": task.described()}}},
        "config": {"model": "scripted", "model_args": "x=1"}}))
    with (lmms / "20261128_101500_samples_crag_mm_multi.jsonl").open("w") as f:
        for doc_id, result in enumerate(per_doc):
            f.write(json.dumps({"doc_id": doc_id, "target": "", "filtered_resps": [], **result}) + "\n")
    # an earlier run into the same folder: its samples are not this run's, and the folder of two
    # runs is refused, naming them, until one is picked
    (lmms / "20261127_090000_results.json").write_text((lmms / "20261128_101500_results.json").read_text())
    (lmms / "20261127_090000_samples_crag_mm_multi.jsonl").write_text(
        (lmms / "20261128_101500_samples_crag_mm_multi.jsonl").read_text().replace("[yes]", "[no]"))
    with pytest.raises(EvaluationRefused, match=r"holds 2 lmms-eval runs \(20261127_090000, 20261128_101500\): "
                                                r"pick one with --run NAME"):
        from_lmms_eval(lmms, tmp_path / "scored", local_evaluation_console())
    with fresh_environment(env):
        results = from_lmms_eval(lmms, tmp_path / "scored", local_evaluation_console(), run="20261128_101500")
    scores = json.loads((full_run["out"] / "scores_dictionary.json").read_text())
    assert results[0].scores["all"] == scores["all"] and results[0].scores["ego"] == scores["ego"]
    assert (tmp_path / "scored" / "report.html").exists()
    config = json.loads((tmp_path / "scored" / "run_config.json").read_text())
    assert config["agent"] == "lmms-eval model scripted (x=1)" and config["dataset"] == str(world["dataset"])


def local_evaluation_console():
    from rich.console import Console

    return Console(quiet=True)


def test_from_lmms_eval_is_a_command_of_local_evaluation(tmp_path):
    (tmp_path / "empty").mkdir()
    with pytest.raises(SystemExit, match="holds no lmms-eval results file"):
        local_evaluation.main(["from-lmms-eval", str(tmp_path / "empty"), "--output-dir", str(tmp_path / "out")])
    (tmp_path / "two" / "model-a").mkdir(parents=True)
    for name in ("two/20261128_101500_results.json", "two/model-a/20261128_101500_results.json"):
        (tmp_path / name).write_text("{}")
    command = ["from-lmms-eval", str(tmp_path / "two"), "--output-dir", str(tmp_path / "out")]
    with pytest.raises(SystemExit, match=r"holds 2 lmms-eval runs \(20261128_101500, model-a/20261128_101500\)"):
        local_evaluation.main(command)
    with pytest.raises(SystemExit, match=r"--run 20261129_000000: no run of .*; its runs: 20261128_101500, "
                                         r"model-a/20261128_101500"):
        local_evaluation.main([*command, "--run", "20261129_000000"])
    with pytest.raises(SystemExit, match="holds no samples of a CRAG-MM task"):  # the one named, read
        local_evaluation.main([*command, "--run", "model-a/20261128_101500"])



def test_an_imported_runs_selection_says_how_many_conversations_and_turns_it_served():
    from evaluator.harness.run_record import RunRecord
    from evaluator.imported_runs import imported_run_config

    config = imported_run_config(dataset="d", dataset_type="multi-turn", split="validation", revision=None,
                                 rules="kddcup2025", agent="m", turns=7, conversations=3, task="crag_mm_multi",
                                 model="gemma3")
    assert config == RunRecord(dataset="d", dataset_type="multi-turn", split="validation", revision=None,
                               rules="kddcup2025", agent="m", profile=None, preset=None,
                               imported={"harness": "lmms-eval", "model": "gemma3", "task": "crag_mm_multi"},
                               tokenizer=load_truncator().name, expected_turns=7, served_conversations=3,
                               conversation_selection="all conversations (3 served, 7 turns)")


def imported_task_run(tmp_path, name: str, pipeline) -> Path:
    """`name` over CRAG-MM-Diagnostics' layout (stage labels: the heron on the right), each
    document answered "a heron", scored into a kept run folder as the aggregation scores it."""
    from agents.config.loading import load_config
    from testkit.diagnostics_layout import write_published_layout

    folder = tmp_path / "diagnostics-data"
    if not folder.exists():
        write_published_layout(folder, rows=3)
    config = {**task_yaml(name), "dataset_path": str(folder), "test_split": "test"}
    config["metadata"] = {**config["metadata"], "output_dir": str(tmp_path / "kept")}
    cfg = load_config("cpu", preset="rag_baseline")
    task = CragMMTask(TaskSettings.from_task_config(config), pipeline_factory=lambda profile: (pipeline, cfg))
    items = []
    for doc in docs_of(task.load()):
        task.doc_to_visual(doc)
        task.doc_to_text(doc)
        items.append(task.process_results(doc, ["a heron"])[TURNS_KEY])
    task.scored(items)
    return tmp_path / "kept" / name


def heron_search(query, k):
    """Image search finds the target first; web search finds a page."""
    if isinstance(query, str):
        return [{"page_name": "Herons", "page_url": "https://example.invalid/herons",
                 "page_snippet": "Herons wade in shallow water.", "score": 0.5}]
    return [{"score": 0.9, "entities": [{"entity_name": "Great blue heron",
                                         "entity_attributes": {"habitat": "wetlands"}}]}][:k]


def test_an_imported_runs_report_counts_the_passages_it_gave_and_only_the_stages_it_ran(tmp_path):
    """The report of a task's run: coverage from the passages the RAG prompt held (agreeing with
    the funnel), image retrieval scored against the task's own image search, the stages no task
    runs (and, for the model alone, image search too) n/a rather than failed; the header names the
    task and model, and every turn row its branch."""
    rag = imported_task_run(tmp_path / "rag", "crag_mm_single_rag", heron_search)
    summary = json.loads((rag / "run_summary.json").read_text())
    assert summary["evidence_coverage"]["retrieved_share"] == 1.0
    assert summary["evidence_coverage"]["context_share"] == 1.0
    stages = json.loads((rag / "diagnostics.json").read_text())["stages"]
    assert stages["image_retrieval@1"]["labelled"] == 3 and stages["image_retrieval@1"]["passed"] == 3
    assert stages["identification"]["labelled"] == 0 and stages["grounding"]["labelled"] == 0
    assert stages["knowledge"]["labelled"] == 3
    page = (rag / "report.html").read_text()
    assert "<title>CRAG-MM report: crag_mm_single_rag: lmms-eval model" in page and "profile <b>None</b>" not in page
    assert "task <b>crag_mm_single_rag</b>" in page and "no trace" not in page
    assert "search results in the prompt" in page
    row = page.split('data-stage="identification"')[1].split("</tr>")[0]
    assert "n/a" in row

    alone = imported_task_run(tmp_path / "alone", "crag_mm_single", heron_search)
    stages = json.loads((alone / "diagnostics.json").read_text())["stages"]
    assert all(stages[f"image_retrieval@{k}"]["labelled"] == 0 for k in (1, 5, 10))
    assert json.loads((alone / "run_summary.json").read_text())["evidence_coverage"]["retrieved_share"] == 0.0
    page = (alone / "report.html").read_text()
    assert "the model alone" in page and "no trace" not in page
    assert 'n/a' in page.split('data-stage="image_retrieval@1"')[1].split("</tr>")[0]


def test_the_early_stop_is_worded_as_the_rule_applies():
    """The rule stops a conversation after two turns in a row that are not correct, a miss among
    them (evaluator/scoring/scores.py apply_conversation_rules): "wrong" would read as two
    hallucinations."""
    for text in ((TASKS / "crag_mm_multi.yaml").read_text(), (REPO_ROOT / "docs" / "evaluation.md").read_text()):
        flat = " ".join(text.replace("#", " ").split())
        assert "two turns in a row that are not correct" in flat and "two wrong" not in flat


def agentic_turn(task: CragMMTask, doc: dict, model, max_steps: int) -> tuple[str, list[str]]:
    """lmms-eval 0.7.3's generate_until_agentic for a simple model (evaluator.py
    `_run_generate_until_agentic`): the model's reply to each prompt, the task's doc_to_text after
    it, and its fallback record where the rounds run out with a round state and a last reply that
    is not JSON. Returns the final response and the prompts the model was given."""
    context, outputs, info, final, prompts = task.doc_to_text(doc), [], None, "", []
    for round_idx in range(max_steps):
        prompts.append(context)
        outputs.append(model(context))
        final = outputs[-1]
        _, following, ended, updated, info = task.doc_to_text(doc, previous_output=outputs, round_idx=round_idx + 1,
                                                              previous_round_info=info)
        if updated is not None:
            outputs = list(updated)
            final = outputs[-1] if outputs else final
        if ended:
            break
        if following is not None:
            context = following
    if info is not None and not final.strip().startswith("{"):
        final = json.dumps({"success": False, "error": "max_agentic_steps_reached", "state": info.get("state", {}),
                            "tool_calls": float(info.get("tool_calls", 0)),
                            "last_model_output": final, "trace": outputs})
    return final, prompts


def agentic_run(tmp_path, model, max_steps: int = 6, **metadata) -> tuple[Path, list[list[str]]]:
    """crag_mm_agentic over three documents of CRAG-MM-Diagnostics' layout (heron_search as the
    search pipeline), `model(prompt)` answering each round, or `model(prompt, task, doc)` where it
    takes three arguments (a model that needs the document: its photo, its conversation)."""
    import inspect

    takes_doc = len(inspect.signature(model).parameters) == 3
    from agents.config.loading import load_config
    from testkit.diagnostics_layout import write_published_layout

    folder = tmp_path / "diagnostics-data"
    write_published_layout(folder, rows=3)
    config = {**task_yaml("crag_mm_agentic"), "dataset_path": str(folder), "test_split": "test"}
    config["metadata"] = {**config["metadata"], "output_dir": str(tmp_path / "kept"), **metadata}
    cfg = load_config("cpu", preset="rag_baseline")
    task = CragMMTask(TaskSettings.from_task_config(config), pipeline_factory=lambda profile: (heron_search, cfg))
    items, prompts = [], []
    for doc in docs_of(task.load()):
        asked = (lambda prompt, doc=doc: model(prompt, task, doc)) if takes_doc else model
        final, seen = agentic_turn(task, doc, asked, max_steps)
        prompts.append(seen)
        items.append(task.process_results(doc, [final])[TURNS_KEY])
    task.scored(items)
    return tmp_path / "kept" / "crag_mm_agentic", prompts


def test_crag_mm_agentic_runs_the_models_tool_calls_and_records_them(tmp_path):
    """A scripted tool caller: an image search on a box of the photo, a web search, then its
    answer. Each result goes back into its prompt; each call is recorded with its hits and the
    image hits' entities, which the diagnostics match against the labelled target."""
    def model(prompt: str) -> str:
        if "<tool_result>" not in prompt:
            return '<tool_call>{"name": "image_search", "arguments": {"box": [100, 0, 200, 100]}}</tool_call>'
        if "Herons wade" not in prompt:
            return '<tool_call>{"name": "web_search", "arguments": {"query": "great blue heron habitat"}}</tool_call>'
        return "A great blue heron."

    run, prompts = agentic_run(tmp_path, model)
    assert '"name": "image_search"' in prompts[0][0] and '"type": "function"' in prompts[0][0]
    assert "wetlands" in prompts[0][1] and len(prompts[0]) == 3
    answers = [json.loads(line) for line in (run / "answers.jsonl").read_text().splitlines()]
    assert [a["agent_response"] for a in answers] == ["A great blue heron."] * 3
    traces = [json.loads(line) for line in (run / "traces.jsonl").read_text().splitlines()]
    calls = traces[0]["tool_calls"]
    assert [(c["tool"], c["hits"], c["error"]) for c in calls] == [("image_search", 1, None), ("web_search", 1, None)]
    assert calls[0]["arguments"] == {"box": [100, 0, 200, 100]} and calls[0]["entities"] == [["Great blue heron"]]
    stages = json.loads((run / "diagnostics.json").read_text())["stages"]
    assert stages["image_retrieval@1"]["labelled"] == 3 and stages["image_retrieval@1"]["passed"] == 3
    # the coverage reads the tool results the model was shown, as the funnel does
    assert traces[0]["kept_chunks"] == [p for c in calls for p in c["passages"]] and "wetlands" in \
        " ".join(traces[0]["kept_chunks"])
    coverage = json.loads((run / "run_summary.json").read_text())["evidence_coverage"]
    assert coverage["retrieved_share"] == coverage["context_share"] == 1.0
    assert all(t["funnel"]["a search found something"] for t in traces)
    assert [(t["ended_by"], t["calls_run"]) for t in traces] == [("answered", 2)] * 3


def test_crag_mm_agentic_coverage_is_none_where_the_tools_found_nothing(tmp_path):
    """A model whose one call searches nothing (an empty query: a tool error, not a search):
    no context and no hits, in the funnel and the coverage alike."""
    def model(prompt: str) -> str:
        if "<tool_result>" not in prompt:
            return '<tool_call>{"name": "web_search", "arguments": {"query": "   "}}</tool_call>'
        return "A heron."

    run, prompts = agentic_run(tmp_path, model)
    assert "error: ValueError: web_search needs a query" in prompts[0][1]
    traces = [json.loads(line) for line in (run / "traces.jsonl").read_text().splitlines()]
    assert all(not t["funnel"]["a search found something"] and t["kept_chunks"] == [] for t in traces)
    coverage = json.loads((run / "run_summary.json").read_text())["evidence_coverage"]
    assert coverage["retrieved_share"] == coverage["context_share"] == 0.0


def test_crag_mm_agentic_without_a_tool_call_scores_as_crag_mm_single(tmp_path):
    alone = imported_task_run(tmp_path / "single", "crag_mm_single", heron_search)
    run, prompts = agentic_run(tmp_path / "agentic", lambda prompt: "a heron")
    assert all(len(seen) == 1 for seen in prompts)
    fields = ("interaction_id", "agent_response", "raw_answer")
    read = [[{k: json.loads(line)[k] for k in fields} for line in (folder / "answers.jsonl").read_text().splitlines()]
            for folder in (alone, run)]
    assert read[0] == read[1]
    scores = [json.loads((folder / "scores_dictionary.json").read_text())["all"] for folder in (alone, run)]
    assert scores[0]["truthfulness_score"] == scores[1]["truthfulness_score"]
    assert scores[0]["accuracy"] == scores[1]["accuracy"] and scores[0]["missing"] == scores[1]["missing"]
    # it searched no image: image retrieval did not run, and is not counted as failed
    assert json.loads((run / "diagnostics.json").read_text())["stages"]["image_retrieval@1"]["labelled"] == 0


def test_crag_mm_agentic_keeps_to_its_budgets(tmp_path):
    """A model that only ever calls tools: after max_tool_calls it is told to answer, a further
    call ends the turn unanswered; where lmms-eval's rounds run out first, its fallback record
    still gives the calls, and the turn is a miss. A malformed call is an error the model reads."""
    def caller(prompt: str) -> str:
        return '<tool_call>{"name": "web_search", "arguments": {"query": "heron"}}</tool_call>'

    run, prompts = agentic_run(tmp_path / "calls", caller, max_tool_calls=2)
    assert len(prompts[0]) == 3 and "No tool calls are left" in prompts[0][2]
    traces = [json.loads(line) for line in (run / "traces.jsonl").read_text().splitlines()]
    assert len(traces[0]["tool_calls"]) == 2
    assert (traces[0]["ended_by"], traces[0]["calls_run"], traces[0]["branch"]) == ("call budget", 2,
                                                                                   "call budget ended the turn")
    assert {json.loads(line)["agent_response"] for line in (run / "answers.jsonl").read_text().splitlines()} == \
        {"I don't know"}

    run, _ = agentic_run(tmp_path / "steps", caller, max_steps=2, max_tool_calls=4)
    traces = [json.loads(line) for line in (run / "traces.jsonl").read_text().splitlines()]
    assert len(traces[0]["tool_calls"]) == 2
    assert (traces[0]["ended_by"], traces[0]["calls_run"]) == ("step budget", 2)
    assert {json.loads(line)["agent_response"] for line in (run / "answers.jsonl").read_text().splitlines()} == \
        {"I don't know"}

    run, prompts = agentic_run(tmp_path / "bad", lambda p: "Herons." if "<tool_result>" in p else
                               '<tool_call>{"name": "calculator", "arguments": {}}</tool_call>')
    assert "error: ValueError: unknown tool 'calculator'" in prompts[0][1]
    traces = [json.loads(line) for line in (run / "traces.jsonl").read_text().splitlines()]
    assert traces[0]["tool_calls"][0]["error"].startswith("ValueError")


# --------------------------------------------------------------------------- faults and few documents
FAILED = "[LMMS_EVAL_REQUEST_FAILED after 1 retries] Connection error."


def scored_task(tmp_path, name: str, rows: int, reply) -> tuple[CragMMTask, list[dict]]:
    """`name` over the mini benchmark's first `rows` documents (as `--limit rows` gives them),
    each answered `reply`, its scored run kept in tmp_path/kept: the task and each document's
    results."""
    config = task_yaml(name)
    config["metadata"] = {**config["metadata"], "output_dir": str(tmp_path / "kept")}
    task = CragMMTask(TaskSettings.from_task_config(config))
    per_doc = [task.process_results(doc, [reply]) for doc in docs_of(task.load())[:rows]]
    return task, per_doc


@pytest.mark.parametrize("rows", [1, 2])
def test_one_or_two_documents_give_every_metric_a_figure_or_none_where_the_run_has_none(tmp_path, rows):
    """`--limit 1` and `--limit 2`: a figure the scored run does not have (the interval of one
    conversation) is None, which lmms-eval writes as null and shows as N/A; the rest are the
    run's."""
    task, per_doc = scored_task(tmp_path, "crag_mm_single", rows, "a great blue heron")
    got = {name: task.aggregate(name, [doc[name] for doc in per_doc]) for name in task.settings.metrics}
    scores = json.loads((tmp_path / "kept" / "crag_mm_single" / "scores_dictionary.json").read_text())
    assert got["truthfulness"] == scores["all"]["truthfulness_score"] and got[TURNS_KEY] == rows
    assert got["agent_errors"] == 0
    # one conversation has no bootstrap interval; two have one
    if rows == 1:
        assert got["truthfulness_ci95"] is None and "truthfulness_score" not in scores["intervals_95"]["all"]
    else:
        assert got["truthfulness_ci95"] == scores["intervals_95"]["all"]["truthfulness_score"]
    assert all(value is None or isinstance(value, (int, float, list)) for value in got.values()), got


def test_a_provider_that_is_down_scores_no_hallucination_and_each_turn_is_an_agent_error(tmp_path):
    """Every reply lmms-eval's failure marker: no answer given, so truthfulness 0 and no
    hallucination; the agent_errors metric and the report made with from-lmms-eval count them."""
    task, per_doc = scored_task(tmp_path, "crag_mm_single", 3, FAILED)
    got = {name: task.aggregate(name, [doc[name] for doc in per_doc]) for name in task.settings.metrics}
    assert (got["hallucination"], got["truthfulness"], got["accuracy"], got["agent_errors"]) == (0.0, 0.0, 0.0, 3)
    lmms = tmp_path / "lmms-out"
    lmms.mkdir()
    (lmms / "20261207_101500_results.json").write_text(json.dumps({
        "results": {"crag_mm_single": {}}, "config": {"model": "openai", "model_args": "model=down"},
        "configs": {"crag_mm_single": {"metadata": {"version": 1, "crag_mm": task.described()}}}}))
    (lmms / "20261207_101500_samples_crag_mm_single.jsonl").write_text(
        "".join(json.dumps({"doc_id": i, **result}) + "\n" for i, result in enumerate(per_doc)))
    printed = tmp_path / "printed.txt"
    with printed.open("w") as out:
        from rich.console import Console

        (result,) = from_lmms_eval(lmms, tmp_path / "scored", Console(file=out, width=200))
    assert result.summary["agent_error_turns"] == 3 and result.scores["all"]["hallucination"] == 0
    assert result.summary["agent_errors"] == ["the request failed: " + FAILED]
    assert "agent-error turns 3" in printed.read_text()


# --------------------------------------------------------------------------- native tool calls (openai_tools)
def heron_caller(body: dict) -> dict:
    """A model that calls tools natively: both tools at once (content null, as OpenAI's models
    send it), then its answer once it has their results."""
    if not any(m["role"] == "tool" for m in body["messages"]):
        return {"content": None, "tool_calls": [
            ("call_img", "image_search", "{}"),
            ("call_web", "web_search", json.dumps({"query": "great blue heron habitat"}))]}
    return {"content": "A great blue heron."}


def native_run(tmp_path, server_url: str, max_retries: int = 0, **metadata):
    """crag_mm_agentic's rounds (lmms-eval's loop, agentic_turn) answered by openai_tools' client
    against `server_url`."""
    from integrations.lmms_eval.cruise_lmms_eval.openai_chat import ToolCallingClient

    client = ToolCallingClient("heron-caller", server_url, "none", 10.0, max_retries)
    gen_kwargs = task_yaml("crag_mm_agentic")["generation_kwargs"]

    def model(prompt, task, doc):
        return client.answer(prompt, gen_kwargs, task.doc_to_visual(doc), ("crag_mm_agentic", "test", doc["id"]))

    return agentic_run(tmp_path, model, **metadata)


def test_native_tool_calls_run_as_the_tasks_calls_and_their_results_come_back_as_tool_messages(tmp_path):
    from testkit.tool_calling_server import ToolCallingServer

    with ToolCallingServer(heron_caller) as server:
        run, prompts = native_run(tmp_path, server.url)
        refused = server.bodies(400)
        bodies = server.bodies()
    assert refused == [] and len(bodies) == 6  # two requests a document, none refused
    for body in bodies:
        assert [t["function"]["name"] for t in body["tools"]] == ["image_search", "web_search"]
        assert body["tool_choice"] == "auto"
        # the photo once, in the first message; the text protocol's instructions left out
        parts = [p for m in body["messages"] if isinstance(m.get("content"), list) for p in m["content"]]
        assert [p["type"] for p in parts] == ["image_url", "text"] and parts[0]["image_url"]["url"].startswith(
            "data:image/png;base64,")
        assert "<tool_call>" not in parts[1]["text"] and parts[1]["text"].endswith(
            "what is the animal on the right?")
    follow_up = bodies[1]["messages"]
    assert [m["role"] for m in follow_up] == ["user", "assistant", "tool", "tool"]
    assert "content" not in follow_up[1] and [c["id"] for c in follow_up[1]["tool_calls"]] == ["call_img", "call_web"]
    assert [m["tool_call_id"] for m in follow_up[2:]] == ["call_img", "call_web"]
    assert "Great blue heron" in follow_up[2]["content"] and "Herons wade" in follow_up[3]["content"]
    # the task ran the calls as the text route runs them, and the answers reach the results
    assert "<tool_result>" in prompts[0][1] and len(prompts[0]) == 2
    answers = [json.loads(line) for line in (run / "answers.jsonl").read_text().splitlines()]
    assert [(a["agent_response"], a["error"]) for a in answers] == [("A great blue heron.", None)] * 3
    traces = [json.loads(line) for line in (run / "traces.jsonl").read_text().splitlines()]
    assert [[(c["tool"], c["arguments"], c["hits"]) for c in t["tool_calls"]] for t in traces] == \
        [[("image_search", {}, 1), ("web_search", {"query": "great blue heron habitat"}, 1)]] * 3
    assert traces[0]["tool_calls"][0]["entities"] == [["Great blue heron"]]


def test_native_calls_past_the_budget_still_get_their_tool_messages(tmp_path):
    """Both calls at once with one call left: the second is not run, but its id gets a tool
    message saying so (the API refuses a request with a call left unanswered)."""
    from testkit.tool_calling_server import ToolCallingServer

    with ToolCallingServer(heron_caller) as server:
        run, _ = native_run(tmp_path, server.url, max_tool_calls=1)
        refused, bodies = server.bodies(400), server.bodies()
    assert refused == []
    tools = [m for m in bodies[1]["messages"] if m["role"] == "tool"]
    assert [m["tool_call_id"] for m in tools] == ["call_img", "call_web"]
    assert tools[1]["content"] == "not run: the call budget of this turn is spent"
    assert bodies[1]["messages"][-1] == {"role": "user", "content": "No tool calls are left: answer now, without a "
                                                                      "tool call."}
    traces = [json.loads(line) for line in (run / "traces.jsonl").read_text().splitlines()]
    assert [c["tool"] for c in traces[0]["tool_calls"]] == ["image_search"]


def test_a_provider_down_is_an_agent_error_never_an_answer(tmp_path):
    """Nothing listens: the request fails, the task counts an agent error, no hallucination. (A
    reply without content: test_openai_tools_asks_the_other_tasks_prompts_with_the_photo_and_no_tools
    and tests/test_lmms_eval_task_edges.py.)"""
    run, _ = native_run(tmp_path / "down", "http://127.0.0.1:9/v1")
    answers = [json.loads(line) for line in (run / "answers.jsonl").read_text().splitlines()]
    assert all(a["agent_response"] == IDK and a["error"].startswith(
        "the request failed: [LMMS_EVAL_REQUEST_FAILED after 0 retries] APIConnectionError") for a in answers)
    scores = json.loads((run / "scores_dictionary.json").read_text())["all"]
    assert scores["hallucination"] == 0 and scores["truthfulness_score"] == 0


def test_native_arguments_that_are_no_json_and_calls_written_as_text_reach_the_model_as_the_task_answers_them(
        tmp_path):
    """Rounds of every kind: a native call whose arguments are no JSON (the task's error comes back
    as that call's tool message, the reply's own text kept with its call), a call the model
    writes as text in its content (its result comes back as a user message: there is no
    tool_call_id to answer), then a native call with empty arguments (an image search of the whole
    photo), then the answer."""
    from testkit.tool_calling_server import ToolCallingServer

    def model(body: dict) -> dict:
        rounds = sum(m["role"] == "assistant" for m in body["messages"])
        if rounds == 0:
            return {"content": "Let me look.", "tool_calls": [("call_bad", "web_search", "{query: heron")]}
        if rounds == 1:
            return {"content": '<tool_call>{"name": "web_search", "arguments": {"query": "heron"}}</tool_call>'}
        if rounds == 2:
            return {"content": None, "tool_calls": [("call_img", "image_search", "")]}
        return {"content": "A heron."}

    with ToolCallingServer(model) as server:
        run, _ = native_run(tmp_path, server.url)
        refused, bodies = server.bodies(400), server.bodies()
    assert refused == [] and len(bodies) == 12
    last = bodies[3]["messages"]
    assert [m["role"] for m in last] == ["user", "assistant", "tool", "assistant", "user", "assistant", "tool"]
    assert last[1]["content"] == "Let me look." and [c["id"] for c in last[1]["tool_calls"]] == ["call_bad"]
    assert last[2]["tool_call_id"] == "call_bad" and last[2]["content"].startswith("error: JSONDecodeError")
    assert last[4]["content"].startswith('<tool_call>{"name": "web_search"') and "Herons wade" in last[4]["content"]
    assert last[6]["tool_call_id"] == "call_img" and "Great blue heron" in last[6]["content"]
    traces = [json.loads(line) for line in (run / "traces.jsonl").read_text().splitlines()]
    assert [(c["tool"], c["arguments"], bool(c["error"])) for c in traces[0]["tool_calls"]] == [
        ("web_search", "{query: heron", True), ("web_search", {"query": "heron"}, False), ("image_search", {}, False)]


def test_a_documents_first_prompt_asked_again_starts_a_new_conversation(tmp_path):
    """The same document asked again from its first prompt (lmms-eval's --repeats, a second run
    of the model): a new conversation, not the old one grown."""
    from integrations.lmms_eval.cruise_lmms_eval.openai_chat import ToolCallingClient
    from integrations.lmms_eval.cruise_lmms_eval.prompts import agentic_prompt
    from testkit.tool_calling_server import ToolCallingServer

    first = agentic_prompt("What is this?")
    with ToolCallingServer(lambda body: {"content": None, "tool_calls": [("call_1", "web_search", '{"query": "q"}')]}
                           ) as server:
        client = ToolCallingClient("m", server.url, "none", 10.0, 0)
        photo = Image.new("RGB", (8, 6))
        for _ in range(2):
            assert client.answer(first, {}, [photo], ("t", "s", 0)).startswith('<tool_call>{"name": "web_search"')
        bodies = server.bodies()
    assert [[m["role"] for m in b["messages"]] for b in bodies] == [["user"], ["user"]]
    text = bodies[1]["messages"][0]["content"][1]["text"]
    assert text == load_prompt_text("lmms_agentic_native") + "\n\nWhat is this?"


def load_prompt_text(name: str) -> str:
    from agents.stages.prompts import load_prompt_lines

    return load_prompt_lines(name)


def test_openai_tools_asks_the_other_tasks_prompts_with_the_photo_and_no_tools(tmp_path):
    from integrations.lmms_eval.cruise_lmms_eval.openai_chat import ToolCallingClient
    from testkit.tool_calling_server import ToolCallingServer

    replies = iter([{"content": "Paris."}, {"content": None}])
    with ToolCallingServer(lambda body: next(replies)) as server:
        client = ToolCallingClient("m", server.url, "none", 10.0, 0)
        photo = Image.new("RGB", (8, 6))
        assert client.answer("Where is this?", {"max_new_tokens": 7}, [photo], ("t", "s", 0)) == "Paris."
        assert client.answer("Where is this?", {}, [photo], ("t", "s", 1)) == ""  # no content: "", never "None"
        bodies = server.bodies()
    assert "tools" not in bodies[0] and bodies[0]["max_completion_tokens"] == 7 and bodies[0]["temperature"] == 0
    assert [p["type"] for p in bodies[0]["messages"][0]["content"]] == ["image_url", "text"]
    assert bodies[0]["messages"][0]["content"][1]["text"] == "Where is this?"

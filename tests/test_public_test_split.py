"""`--split public_test` (the relaunched repo's scripts run it) picks that split when the dataset holds it.

facebookresearch/CRAG-MM example_scripts/run_task_generation.sh passes `--split public_test`; its
local_evaluation.py picks the split so:
    split_to_use = args.split if args.split in available_splits else available_splits[0]
"""
from __future__ import annotations

import json

import local_evaluation
from evaluator.harness.dataset import load_split
from testkit.in_process import run_main
from testkit.scripted_agent import build_dataset


def test_public_test_is_chosen_over_validation_when_both_are_there(tmp_path):
    import datasets

    both = datasets.DatasetDict({
        "validation": datasets.Dataset.from_dict({"session_id": ["v1", "v2"]}),
        "public_test": datasets.Dataset.from_dict({"session_id": ["p1"]}),
    })
    both.save_to_disk(str(tmp_path / "ds"))
    rows, used, notice = load_split(str(tmp_path / "ds"), None, "public_test")
    assert (used, notice, rows["session_id"]) == ("public_test", None, ["p1"])
    rows, used, notice = load_split(str(tmp_path / "ds"), None, "validation")
    assert (used, rows["session_id"]) == ("validation", ["v1", "v2"])


def _conversations(prefix: str, count: int) -> list[dict]:
    from PIL import Image

    return [dict(session_id=f"{prefix}{i}", image=Image.new("RGB", (32, 24), (20, 40, 60)), image_url=None, image_quality="normal",
                 turns=[(f"{prefix}{i}-0", f"{prefix}q{i}", f"{prefix}a{i}", "misc", "simple", "static")])
            for i in range(count)]


def _run(dataset, out, split, tmp_path):
    script = tmp_path / "script.json"
    # the first public_test answer is its ground truth (an exact match), the rest abstain
    script.write_text(json.dumps({"answers": {"pq0": "pa0"}, "batch_size": 2}))
    env = dict(HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1", HF_DATASETS_CACHE=str(tmp_path / "hf-datasets"),
               CRUISE_CACHE=str(tmp_path / "cache"), SCRIPTED_AGENT_SCRIPT=str(script))
    argv = ["--dataset", str(dataset), "--dataset-type", "single-turn", "--split", split, "--profile", "cpu",
            "--agent", "testkit.scripted_agent:ScriptedAgent", "--search", "testkit.scripted_agent:make_fake_search",
            "--eval-model", "None", "--no_progress", "--output-dir", str(out)]
    proc = run_main(local_evaluation.main, argv, env=env)  # in this process (testkit/in_process.py)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return proc


def test_a_run_with_split_public_test_answers_and_scores_that_split_only(tmp_path):
    # a hub snapshot's layout: data/<split>-*.parquet, turns/answers as dicts of columns (v0.1.2)
    dataset = tmp_path / "crag-mm-single-turn-public"
    build_dataset(dataset, _conversations("v", 3), form="dict-parquet", split="validation")
    build_dataset(dataset, _conversations("p", 2), form="dict-parquet", split="public_test")
    out = tmp_path / "public_test"
    proc = _run(dataset, out, "public_test", tmp_path)
    assert "not in" not in proc.stdout  # no fallback notice
    config = json.loads((out / "run_config.json").read_text())
    assert config["split"] == "public_test"
    answered = [json.loads(line)["interaction_id"] for line in (out / "answers.jsonl").read_text().splitlines()]
    assert sorted(answered) == ["p0-0", "p1-0"]
    scores = json.loads((out / "scores_dictionary.json").read_text())["all"]
    assert (scores["total"], scores["correct_exact"], scores["miss"]) == (2.0, 1.0, 1.0)
    summary = json.loads((out / "run_summary.json").read_text())
    assert not any("split" in notice for notice in summary["notices"])


def test_a_dataset_without_public_test_falls_back_to_its_first_split_and_says_so(tmp_path):
    dataset = tmp_path / "validation-only"
    build_dataset(dataset, _conversations("v", 2), form="dict-parquet", split="validation")
    out = tmp_path / "fallback"
    proc = _run(dataset, out, "public_test", tmp_path)
    notice = "split 'public_test' not in ['validation']; using 'validation'"
    assert notice in " ".join(proc.stdout.split())
    assert json.loads((out / "run_config.json").read_text())["split"] == "validation"
    assert notice in json.loads((out / "run_summary.json").read_text())["notices"]

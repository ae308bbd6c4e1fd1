"""Class-label datasets: the mini benchmark re-encoded as the public v0.1.2 data is (integer class
labels for domain, query_category, dynamism and image_quality inside `turns`, named by the
dataset's features), in both shapes of `turns`. Breakdowns show names; scores do not move; the
official CSVs keep the values as the harnesses write them."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

import local_evaluation
from agents.profiles import REPO_ROOT
from evaluator.harness.dataset import LABEL_FIELDS, label_name, label_vocabularies, load_split, read_conversations
from testkit.in_process import run_main

MINI_SINGLE = REPO_ROOT / "data" / "crag-mm-mini" / "single-turn"


def reencode(ds, shape: str):
    """The split with every label a ClassLabel, image_quality moved from the row into `turns`
    (where v0.1.2 keeps it). shape "dict": `turns` is a Sequence of a dict, so rows hold a dict of
    lists (the published data, which facebookresearch/CRAG-MM reads); "list": a List of dicts."""
    from datasets import ClassLabel, Dataset, Features, Image, List, Sequence, Value

    rows = ds.cast_column("image", Image(decode=False))
    vocab = {f: set() for f in LABEL_FIELDS}
    for row in rows:
        for turn in row["turns"]:
            for f in ("domain", "query_category", "dynamism"):
                vocab[f].add(turn[f])
        vocab["image_quality"].add(row["image_quality"])
    classes = {f: ClassLabel(names=sorted(v)) for f, v in vocab.items()}
    turn_fields = {"interaction_id": Value("string"), **{f: classes[f] for f in LABEL_FIELDS}, "query": Value("string")}
    answer_fields = {"interaction_id": Value("string"), "ans_full": Value("string")}
    # the mini benchmark's extra answer keys (accepted forms) travel along, so both copies are judged alike
    answer_fields.update({k: v for k, v in ds.features["answers"].feature.items() if k not in answer_fields})
    records = []
    for row in rows:
        turns = [{"interaction_id": t["interaction_id"], "query": t["query"],
                  "image_quality": classes["image_quality"].str2int(row["image_quality"]),
                  **{f: classes[f].str2int(t[f]) for f in ("domain", "query_category", "dynamism")}}
                 for t in row["turns"]]
        answers = list(row["answers"])
        if shape == "dict":
            turns = {k: [t[k] for t in turns] for k in turn_fields}
            answers = {k: [a[k] for a in answers] for k in answer_fields}
        records.append({"session_id": row["session_id"], "image": row["image"], "image_url": row["image_url"],
                        "turns": turns, "answers": answers})
    wrap = Sequence if shape == "dict" else List
    features = Features({"session_id": Value("string"), "image": Image(), "image_url": Value("string"),
                         "turns": wrap(turn_fields), "answers": wrap(answer_fields)})
    return Dataset.from_list(records, features=features)


@pytest.fixture(scope="module")
def copies(tmp_path_factory):
    root = tmp_path_factory.mktemp("labels")
    original, _, _ = load_split(str(MINI_SINGLE), None, "validation")
    out = {"strings": MINI_SINGLE}
    for shape in ("dict", "list"):
        path = root / f"mini-{shape}"
        reencode(original, shape).save_to_disk(str(path))
        out[shape] = path
    return root, out


def test_labels_are_read_by_name_in_both_shapes(copies):
    _, paths = copies
    names = {}
    for kind, path in paths.items():
        ds, _, _ = load_split(str(path), None, "validation")
        vocab = label_vocabularies(ds.features)
        assert set(vocab) == (set() if kind == "strings" else set(LABEL_FIELDS))
        names[kind] = [(t.interaction_id, t.labels) for c in read_conversations(ds) for t in c.turns]
        if kind != "strings":  # the raw values stay the integers
            conv = read_conversations(ds, 1)[0]
            assert isinstance(conv.turns[0].domain, int) and conv.image_quality is None
    assert names["dict"] == names["strings"] and names["list"] == names["strings"]
    assert {labels["domain"] for _, labels in names["strings"]} >= {"food"}


def test_a_row_level_class_label_and_string_columns():
    from datasets import ClassLabel, Features, List, Value

    features = Features({"image_quality": ClassLabel(names=["normal", "low light"]),
                         "turns": List({"domain": Value("string"), "dynamism": ClassLabel(names=["static"])})})
    assert label_vocabularies(features) == {"dynamism": ["static"], "image_quality": ["normal", "low light"]}
    assert label_vocabularies(None) == {}


def test_label_name_edge_cases():
    assert label_name(2, ["a", "b", "c"]) == "c"
    assert label_name(-1, ["a"]) is None and label_name(None, ["a"]) is None and label_name("", None) is None
    assert label_name("food", ["a"]) == "food" and label_name(3, None) == "3"


def run_evaluation(root: Path, dataset: Path, name: str, *extra: str) -> tuple[Path, str]:
    """local_evaluation.py in this process with the scripted agent (no models, no judge): it answers the gold
    answer on every third turn, a wrong one on the next, "I don't know" otherwise."""
    original, _, _ = load_split(str(MINI_SINGLE), None, "validation")
    answers = {}
    for i, conv in enumerate(read_conversations(original)):
        turn = conv.turns[0]
        answers[turn.query] = [turn.ground_truth, "certainly not " + turn.ground_truth, "I don't know"][i % 3]
    script = root / f"{name}.json"
    script.write_text(json.dumps({"answers": answers, "batch_size": 8}))
    out = root / f"out-{name}"
    env = dict(HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1", HF_DATASETS_CACHE=str(root / "hf-datasets"),
               CRUISE_CACHE=str(root / "cache"), SCRIPTED_AGENT_SCRIPT=str(script))
    argv = ["--dataset", str(dataset), "--profile", "cpu", "--agent", "testkit.scripted_agent:ScriptedAgent",
            "--search", "none", "--output-dir", str(out), "--no_progress", "--display-conversations", "0", *extra]
    proc = run_main(local_evaluation.main, argv, env=env)  # in this process (testkit/in_process.py)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return out, proc.stdout


@pytest.fixture(scope="module")
def base_out(copies):
    root, paths = copies
    return run_evaluation(root, paths["strings"], "strings")[0]


@pytest.mark.parametrize("shape", ["dict", "list"])
def test_the_class_label_benchmark_scores_the_same_with_named_breakdowns(copies, base_out, shape):
    import pandas as pd

    root, paths = copies
    out, stdout = run_evaluation(root, paths[shape], shape)
    assert json.loads((out / "scores_dictionary.json").read_text()) == json.loads(
        (base_out / "scores_dictionary.json").read_text())
    summary = json.loads((out / "run_summary.json").read_text())
    base_summary = json.loads((base_out / "run_summary.json").read_text())
    assert summary["breakdowns"] == base_summary["breakdowns"]  # the same names, counts and rates
    domains = {entry["domain"] for entry in summary["breakdowns"]["domain"]}
    assert "food" in domains and not any(d.isdigit() for d in domains)
    assert "food" in stdout and "By image_quality" in stdout
    html = (out / "report.html").read_text()
    assert "food" in html and "simple recognition" in html
    # The official CSV holds what both harnesses write for this data: the integers, and no
    # image_quality (they read it from the row, where v0.1.2 has none).
    official = pd.read_csv(out / "turn_evaluation_results_all.csv")
    assert official["domain"].dtype.kind == "i" and official["image_quality"].isna().all()
    extended = pd.read_csv(out / "turn_evaluation_results_all_extended.csv")
    assert set(extended["domain_name"]) == domains


def test_crag_mm_rules_write_its_response_jsonl_with_its_labels(copies, base_out):
    """facebookresearch/CRAG-MM writes its generated turns to response.jsonl: 13 keys, the label
    columns as the dataset holds them (integers here; image_quality empty, read from the row)."""
    import pandas as pd

    root, paths = copies
    out, _ = run_evaluation(root, paths["dict"], "cragmm", "--rules", "crag-mm")
    lines = [json.loads(line) for line in (out / "response.jsonl").read_text().splitlines()]
    official = pd.read_csv(out / "turn_evaluation_results_all.csv")
    assert len(lines) == len(official) == 55
    assert list(lines[0]) == list(official.columns[:13])
    assert [r["interaction_id"] for r in lines] == list(official["interaction_id"])
    assert all(isinstance(r["domain"], int) and r["image_quality"] is None for r in lines)
    assert [r["agent_response"] for r in lines] == list(official["agent_response"].fillna(""))
    assert not (base_out / "response.jsonl").exists()  # the kit's rules write no such file

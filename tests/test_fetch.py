"""tools.fetch offline: the plan, sizes, the missing list, the disk check and the messages.

Only the hub client (repo_info, snapshot_download) is faked: it is outside the unit.
"""
from __future__ import annotations

from types import SimpleNamespace

import pytest
import requests

from evaluator.harness.models import loaded_models
from evaluator.harness.resolved import resolve_settings
from evaluator.search.pipeline import search_config
from evaluator.settings import EvaluationSettings
from tools import fetch

GB = 1e9


def plan(profile: str, tasks: tuple[str, ...] = ("single-turn", "multi-turn"), **options) -> list[fetch.Item]:
    """What tools.fetch fetches for the run of `profile` with these options (local_evaluation.py's names)."""
    return fetch.plan(resolve_settings(EvaluationSettings(profile=profile, **options)), tasks)
SECRET = "hf_NOTAREALTOKEN0123456789"


class FakeHub:
    """repo_info as the hub answers it: siblings with rfilename and size."""

    def __init__(self, files: dict[str, dict[str, int]], unreachable: bool = False):
        self.files, self.unreachable, self.asked = files, unreachable, []

    def repo_info(self, repo_id, repo_type=None, revision=None, files_metadata=False, timeout=None):
        self.asked.append(repo_id)
        if self.unreachable:
            raise requests.ConnectionError("Failed to establish a new connection")
        if repo_id not in self.files:
            raise RuntimeError("401 Client Error: gated")
        return SimpleNamespace(siblings=[SimpleNamespace(rfilename=name, size=size)
                                         for name, size in self.files[repo_id].items()])


def _cached(cache, item, names, incomplete=False):
    folder = fetch.repo_folder(cache, item)
    snapshot = folder / "snapshots" / "abc123"
    snapshot.mkdir(parents=True)
    (folder / "refs").mkdir()
    (folder / "refs" / (item.revision or "main")).write_text("abc123")
    for name in names:
        (snapshot / name).parent.mkdir(parents=True, exist_ok=True)
        (snapshot / name).write_text("x")
    if incomplete:
        (folder / "blobs").mkdir()
        (folder / "blobs" / "deadbeef.incomplete").write_text("x")


def test_the_l40s_plan_is_every_hub_model_index_and_dataset_the_run_loads():
    items = plan("l40s")
    search = search_config("l40s")
    models = loaded_models(resolve_settings(EvaluationSettings(profile="l40s")))
    assert [i.repo_id for i in items if i.repo_type == "model"] == models
    assert "meta-llama/Llama-3.2-11B-Vision-Instruct" in models
    datasets = [(i.repo_id, i.revision) for i in items if i.repo_type == "dataset"]
    # the datasets at the revision local_evaluation.py evaluates by default, the indices at main
    assert datasets == [(search.image_index, None), (search.web_index, None),
                        ("crag-mm-2025/crag-mm-single-turn-public", "v0.1.2"),
                        ("crag-mm-2025/crag-mm-multi-turn-public", "v0.1.2")]
    assert [i.repo_id for i in items if i.gated] == ["meta-llama/Llama-3.2-11B-Vision-Instruct",
                                                     "meta-llama/Llama-3.2-1B-Instruct"]
    assert [i.repo_id for i in plan("l40s", ("single-turn",)) if "turn" in i.repo_id] == [
        "crag-mm-2025/crag-mm-single-turn-public"]


def test_the_indices_are_the_public_test_pair_unless_validation_is_chosen(monkeypatch, capsys):
    def index_ids(items):
        return [i.repo_id for i in items if i.role.endswith("index")]

    public = ["crag-mm-2025/image-search-index-public-test", "crag-mm-2025/web-search-index-public-test"]
    validation = ["crag-mm-2025/image-search-index-validation", "crag-mm-2025/web-search-index-validation"]
    assert index_ids(plan("l40s")) == public == index_ids(plan("served"))
    assert index_ids(plan("l40s", indices="validation")) == validation
    monkeypatch.setenv("CRAG_MM_INDICES", "validation")  # the environment does not choose them
    assert index_ids(plan("l40s")) == public
    # every index id has a size estimate, and the offline table says it is one
    monkeypatch.setattr("huggingface_hub.constants.HF_HUB_OFFLINE", True)
    for choice, ids in (("validation", validation), ("public-test", public)):
        assert fetch.main(["--profile", "l40s", "--dry-run", "--indices", choice]) == 0
        out = capsys.readouterr().out
        for repo in ids:
            assert next(line for line in out.splitlines() if repo in line).split()[-2] == "estimate"
    with pytest.raises(SystemExit):
        fetch.main(["--indices", "test"])


def test_the_plan_is_the_runs_a_task_1_run_reads_no_web_and_a_run_without_search_no_index():
    task1 = {i.repo_id for i in plan("l40s", suppress_web_search_api=True)}
    assert {"openai/clip-vit-large-patch14-336", "crag-mm-2025/image-search-index-public-test"} <= task1
    assert not {"BAAI/bge-large-en-v1.5", "crag-mm-2025/web-search-index-public-test"} & task1
    assert "crag-mm-2025/web-search-contents-db-private-v0.1.2" not in {
        i.repo_id for i in plan("l40s", suppress_web_search_api=True, web_contents="default")}
    unsearched = plan("l40s", search="none")  # the agent gets no pipeline: the chain's models and the datasets
    assert {i.role for i in unsearched} == {"chain model", "single-turn dataset", "multi-turn dataset"}


def test_the_cpu_profile_fetches_nothing(capsys):
    assert plan("cpu") == []
    assert fetch.main(["--profile", "cpu", "--dry-run"]) == 0
    assert "nothing to fetch" in capsys.readouterr().out


def test_sizes_come_from_the_hub_without_the_files_nothing_loads(tmp_path):
    vlm = fetch.Item("chain model", "meta-llama/Llama-3.2-11B-Vision-Instruct", "model")
    hub = FakeHub({vlm.repo_id: {"config.json": 5_000, "model-00001-of-00002.safetensors": 10 * 10**9,
                                 "model-00002-of-00002.safetensors": 11 * 10**9,
                                 "original/consolidated.pth": 21 * 10**9, "tf_model.h5": 9 * 10**9}})
    [row] = fetch.survey([vlm], tmp_path, hub)
    assert (row.source, row.size, row.state) == ("hub", 21 * 10**9 + 5_000, "missing")


def test_sizes_fall_back_to_the_table_and_the_hub_is_asked_once_when_unreachable(tmp_path):
    items = plan("l40s")
    hub = FakeHub({}, unreachable=True)
    rows = fetch.survey(items, tmp_path, hub)
    assert len(hub.asked) == 1
    assert all(r.source == "estimate" for r in rows)
    web = next(r for r in rows if r.item.repo_id == "crag-mm-2025/web-search-index-public-test")
    assert web.size == 9.5 * GB
    gated_refused = fetch.survey([items[2]], tmp_path, FakeHub({}))  # answers, but refuses the repo
    assert gated_refused[0].source == "estimate"


def test_present_partial_and_missing_are_told_apart(tmp_path):
    clip = fetch.Item("image search model", "openai/clip-vit-large-patch14-336", "model")
    bge = fetch.Item("web search model", "BAAI/bge-large-en-v1.5", "model")
    index = fetch.Item("web index", "crag-mm-2025/web-search-index-public-test", "dataset")
    dataset = fetch.Item("single-turn dataset", "crag-mm-2025/crag-mm-single-turn-public", "dataset", "v0.1.2")
    _cached(tmp_path, fetch.Item("", dataset.repo_id, "dataset"), ["data/validation.parquet"])  # main, not v0.1.2
    _cached(tmp_path, clip, ["config.json", "model.safetensors"])
    _cached(tmp_path, bge, ["config.json"])  # the weights never arrived
    _cached(tmp_path, index, ["chroma.sqlite3"], incomplete=True)
    hub = FakeHub({clip.repo_id: {"config.json": 1, "model.safetensors": 2, "tf_model.h5": 3},
                   bge.repo_id: {"config.json": 1, "model.safetensors": 2},
                   index.repo_id: {"chroma.sqlite3": 5}, dataset.repo_id: {"data/validation.parquet": 7}})
    rows = {r.item.repo_id: r for r in fetch.survey([clip, bge, index, dataset], tmp_path, hub)}
    assert [rows[i.repo_id].state for i in (clip, bge, index, dataset)] == ["present", "partial", "partial", "missing"]
    assert fetch.needed_bytes(list(rows.values())) == 3 + 5 + 7


def test_the_disk_check_names_what_is_needed_and_free(tmp_path):
    rows = [fetch.Row(fetch.Item("web index", "x/web", "dataset"), 9.5 * GB, "estimate", "missing"),
            fetch.Row(fetch.Item("chain model", "x/vlm", "model"), 21.4 * GB, "hub", "present")]
    assert fetch.disk_problem(rows, free=11 * GB, cache=tmp_path) is None
    message = fetch.disk_problem(rows, free=10 * GB, cache=tmp_path)
    assert f"into {tmp_path}: 10.4 GB needed" in message and "10.0 GB free" in message


@pytest.fixture
def hub_env(monkeypatch, tmp_path):
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setenv("HF_TOKEN", SECRET)
    sizes = {i.repo_id: {"config.json": 10**9} for i in plan("l40s")}
    monkeypatch.setattr("huggingface_hub.HfApi", lambda: FakeHub(sizes))
    calls = []
    monkeypatch.setattr("huggingface_hub.snapshot_download", lambda **kw: calls.append(kw))
    return SimpleNamespace(calls=calls, cache=tmp_path / "hub")


def test_dry_run_lists_what_is_missing_and_downloads_nothing(hub_env, capsys):
    assert fetch.main(["--profile", "l40s", "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert hub_env.calls == []
    assert "dry run: 9 of 9 to download" in out and "still to download 9.0 GB" in out
    assert "crag-mm-2025/web-search-index-public-test" in out and "meta-llama/Llama-3.2-1B-Instruct (gated)" in out
    assert "token: set" in out and SECRET not in out


def test_too_little_disk_stops_before_any_download(hub_env, monkeypatch, capsys):
    monkeypatch.setattr(fetch.shutil, "disk_usage", lambda path: SimpleNamespace(free=5 * GB))
    assert fetch.main(["--profile", "l40s"]) == 2
    err = capsys.readouterr().err
    assert hub_env.calls == []
    assert "9.9 GB needed" in err and "5.0 GB free" in err


def test_downloads_resumably_what_is_missing_skipping_unused_files(hub_env, monkeypatch, capsys):
    monkeypatch.setattr(fetch.shutil, "disk_usage", lambda path: SimpleNamespace(free=500 * GB))
    present = fetch.Item("image search model", "openai/clip-vit-large-patch14-336", "model")
    _cached(hub_env.cache, present, ["config.json"])
    assert fetch.main(["--profile", "l40s"]) == 0
    out = capsys.readouterr().out
    fetched = [c["repo_id"] for c in hub_env.calls]
    assert present.repo_id not in fetched and len(fetched) == 8
    vlm = next(c for c in hub_env.calls if c["repo_id"] == "meta-llama/Llama-3.2-11B-Vision-Instruct")
    assert vlm["repo_type"] == "model" and "original/*" in vlm["ignore_patterns"]
    index = next(c for c in hub_env.calls if c["repo_id"] == "crag-mm-2025/web-search-index-public-test")
    assert index["repo_type"] == "dataset" and index["ignore_patterns"] is None and index["revision"] is None
    dataset = next(c for c in hub_env.calls if c["repo_id"] == "crag-mm-2025/crag-mm-multi-turn-public")
    assert dataset["revision"] == "v0.1.2"
    assert SECRET not in out


def test_a_refused_gated_model_is_named_and_the_rest_still_downloads():
    rows = [fetch.Row(fetch.Item("chain model", "meta-llama/Llama-3.2-1B-Instruct", "model"), 1, "hub", "missing"),
            fetch.Row(fetch.Item("web index", "crag-mm-2025/web-search-index-public-test", "dataset"), 1, "hub",
                      "missing")]
    done = []

    def snapshot_download(**kw):
        if kw["repo_id"].startswith("meta-llama/"):
            raise RuntimeError("403 Client Error: you must accept the licence")
        done.append(kw["repo_id"])

    failures = fetch.download(rows, snapshot_download, print_=lambda *a: None)
    assert done == ["crag-mm-2025/web-search-index-public-test"]
    assert len(failures) == 1 and failures[0].startswith("meta-llama/Llama-3.2-1B-Instruct: RuntimeError: accept the licence")


def test_the_contents_database_is_planned_sized_as_an_estimate_and_a_shard_gap_is_partial(tmp_path, capsys):
    contents_id = "crag-mm-2025/web-search-contents-db-private-v0.1.2"
    items = plan("l40s", web_contents="default")  # a bare --web-contents
    assert [i.repo_id for i in items if i.role == fetch.CONTENTS_ROLE] == [contents_id]
    assert not any(i.role == fetch.CONTENTS_ROLE for i in plan("l40s"))
    item = next(i for i in items if i.role == fetch.CONTENTS_ROLE)
    [row] = fetch.survey([item], tmp_path, FakeHub({}, unreachable=True))
    assert (row.source, row.size, row.state) == ("estimate", 15.0 * GB, "missing")
    _cached(tmp_path, item, ["shard_0.mdb", "shard_2.mdb"])  # shard_1 never arrived
    assert fetch.survey([item], tmp_path, None)[0].state == "partial"
    (tmp_path / f"datasets--{contents_id.replace('/', '--')}" / "snapshots" / "abc123" / "shard_1.mdb").write_text("x")
    assert fetch.survey([item], tmp_path, None)[0].state == "present"

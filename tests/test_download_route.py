"""One download route: every message that says a model, dataset, search index or full-content
database is not in the cache names `python -m tools.fetch` with the flags that fetch it, and none
names another route (`huggingface-cli download` would also pull the 11B model's original/
checkpoints, ~21 GB nothing loads). In-process, against an empty cache, offline.
"""
from __future__ import annotations

import shlex

import pytest

from agents.profiles import PROFILES, PUBLISHED_INDICES
from evaluator.harness.models import dataset_problem, loaded_models, missing_models_message, preload_problem
from evaluator.harness.resolved import resolve_settings
from evaluator.search import index_check
from evaluator.settings import EvaluationSettings
from tools import fetch, preflight

INDEX_SETS = PUBLISHED_INDICES
WEB_CONTENTS = {name: profile.search.web_contents for name, profile in PROFILES.items()}


@pytest.fixture
def empty_cache(tmp_path, monkeypatch):
    from huggingface_hub import constants

    hub = tmp_path / "hf" / "hub"
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(hub))
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    monkeypatch.setenv("HF_DATASETS_CACHE", str(tmp_path / "hf" / "datasets"))
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    return hub


def assert_one_route(message: str, command: str) -> None:
    assert command in message, message
    assert "huggingface-cli download" not in message and "HF_HUB_OFFLINE=0" not in message


@pytest.mark.parametrize("profile", ["l40s", "served"])
def test_missing_models_name_the_fetch_command_of_their_profile(empty_cache, profile):
    message = missing_models_message(resolve_settings(EvaluationSettings(profile=profile)))
    assert message.splitlines()[-2 if profile == "l40s" else -1] == f"  python -m tools.fetch --profile {profile}"
    assert_one_route(message, f"python -m tools.fetch --profile {profile}")


def test_a_run_of_another_vlm_family_names_the_command_that_fetches_its_models(empty_cache, capsys):
    """`--profile l40s --model-name Qwen/...`: the hint names the command that fetches the Qwen
    checkpoint, not the profile's gated Llama pair, and that command's plan is what the run loads."""
    qwen = "Qwen/Qwen2.5-VL-7B-Instruct"
    run = resolve_settings(EvaluationSettings(profile="l40s", model_name=qwen))
    message = preload_problem(run, "crag-mm-2025/crag-mm-single-turn-public", None)
    command = f"python -m tools.fetch --profile l40s --model-name {qwen}"
    assert f"  {command}" in message.splitlines() and f"  {qwen}" in message.splitlines()
    assert "meta-llama" not in message  # neither listed as missing nor told to log in for
    assert_one_route(message, command)
    # the four models of that run (search's two, the Qwen VLM, the reranker): fetch plans exactly these
    run_loads = {"openai/clip-vit-large-patch14-336", "BAAI/bge-large-en-v1.5", qwen, "BAAI/bge-reranker-v2-m3"}
    assert set(loaded_models(run)) == run_loads
    assert {i.repo_id for i in fetch.plan(run) if i.repo_type == "model"} == run_loads
    assert fetch.main(["--profile", "l40s", "--model-name", qwen, "--dry-run", "--task", "single-turn"]) == 0
    table = capsys.readouterr().out
    assert qwen in table and "meta-llama" not in table


def test_the_fetch_command_of_a_run_carries_every_flag_that_changes_what_it_loads(empty_cache, capsys):
    """A --set that swaps the reranker, under a preset and another family's VLM: the missing-models
    message names the run's own command, and that command, run as written, fetches what the run
    loads (the profile's own reranker is neither named nor fetched)."""
    qwen, reranker = "Qwen/Qwen2.5-VL-7B-Instruct", "BAAI/bge-reranker-base"
    run = resolve_settings(EvaluationSettings(profile="l40s", model_name=qwen, preset="no_cov",
                                              set=(f"reranker_model={reranker}",)))
    command = f"python -m tools.fetch --profile l40s --preset no_cov --model-name {qwen} --set reranker_model={reranker}"
    message = missing_models_message(run)
    assert f"  {command}" in message.splitlines() and f"  {reranker}" in message.splitlines()
    assert_one_route(message, command)
    assert "bge-reranker-v2-m3" not in message
    argv = shlex.split(command)[3:]
    assert fetch.main([*argv, "--dry-run", "--task", "single-turn"]) == 0
    table = capsys.readouterr().out
    assert reranker in table and "bge-reranker-v2-m3" not in table
    assert {i.repo_id for i in fetch.plan(run) if i.repo_type == "model"} == set(loaded_models(run))


@pytest.mark.parametrize("repo_id, command", [
    ("crag-mm-2025/crag-mm-single-turn-public", "python -m tools.fetch --profile l40s --task single-turn"),
    ("crag-mm-2025/crag-mm-multi-turn-public", "python -m tools.fetch --profile l40s --task multi-turn"),
    (INDEX_SETS["public-test"][0], "python -m tools.fetch --profile l40s"),
    (INDEX_SETS["public-test"][1], "python -m tools.fetch --profile l40s"),
    (INDEX_SETS["validation"][1], "python -m tools.fetch --profile l40s --indices validation"),
    (WEB_CONTENTS["l40s"], "python -m tools.fetch --profile l40s --web-contents"),
])
def test_missing_datasets_and_indices_name_the_fetch_command(empty_cache, repo_id, command):
    message = dataset_problem(repo_id, None)
    assert "is not in the Hugging Face cache" in message
    assert message.endswith(f"; fetch it with: {command}")
    assert_one_route(message, command)


def test_a_dataset_fetch_does_not_know_gets_no_false_command(empty_cache):
    message = dataset_problem("someone/own-dataset", "v1")
    assert "tools.fetch" not in message and "not in the Hugging Face cache" in message


@pytest.mark.parametrize("kind, repo_id, command", [
    ("image", INDEX_SETS["public-test"][0], "python -m tools.fetch --profile l40s"),
    ("web", INDEX_SETS["validation"][1], "python -m tools.fetch --profile l40s --indices validation"),
    ("contents", WEB_CONTENTS["l40s"], "python -m tools.fetch --profile l40s --web-contents"),
    ("contents", "someone/contents-db", "python -m tools.fetch --profile l40s --web-contents someone/contents-db"),
])
def test_a_missing_index_names_the_fetch_command_and_no_hub_hint(empty_cache, kind, repo_id, command):
    with pytest.raises(index_check.SearchIndexError) as caught:
        index_check.snapshot_path(index_check.IndexSpec(kind, repo_id, None))
    message = str(caught.value)
    assert "it is not in the Hugging Face cache, and this process does not download" in message
    assert message.endswith(f"; fetch it with: {command}")
    assert_one_route(message, command)


def test_the_preflight_cache_lines_name_the_fetch_command(empty_cache):
    disk, checks = preflight.check_cache(resolve_settings(EvaluationSettings(profile="l40s")))
    assert len(checks) == 7 and not any(c.ok for c in checks)
    for check in checks:
        assert_one_route(check.detail, "python -m tools.fetch --profile l40s")
    assert "python -m tools.fetch --profile l40s" in disk.detail


def test_fetch_refuses_an_unknown_profile_and_a_bad_setting(capsys):
    with pytest.raises(SystemExit) as stopped:  # the flag's choices, as local_evaluation.py's
        fetch.main(["--profile", "bogus", "--dry-run"])
    assert stopped.value.code == 2
    captured = capsys.readouterr()
    assert captured.out == "" and "argument --profile: invalid choice: 'bogus'" in captured.err
    assert fetch.main(["--profile", "l40s", "--set", "no_such_field=1", "--dry-run"]) == 2  # in one line
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.startswith("tools.fetch: --set 'no_such_field=1': unknown config field 'no_such_field'")
    assert captured.err.count("\n") == 1


def test_the_route_knows_the_evaluators_default_datasets():
    from evaluator.search.fetch_route import fetch_command

    for profile in ("l40s", "served"):
        for task in ("single-turn", "multi-turn"):
            assert fetch_command(profile, f"crag-mm-2025/crag-mm-{task}-public") == \
                f"python -m tools.fetch --profile {profile} --task {task}"


def test_the_fetch_command_of_a_run_with_full_pages_fetches_them_and_one_without_web_search_does_not(empty_cache):
    """--web-contents is part of what a run loads: its fetch command carries the database the run
    resolved it to; with web search suppressed the run reads no pages, and its command names none."""
    contents = PROFILES["l40s"].search.web_contents
    with_pages = resolve_settings(EvaluationSettings(profile="l40s", web_contents="default"))
    assert with_pages.fetch_command() == f"python -m tools.fetch --profile l40s --web-contents {contents}"
    no_web = resolve_settings(EvaluationSettings(profile="l40s", web_contents="default", suppress_web_search_api=True))
    assert no_web.fetch_command() == "python -m tools.fetch --suppress-web-search-api --profile l40s"


def test_a_resolved_runs_options_are_the_flags_it_was_resolved_from(tmp_path):
    """What tools.fetch and a worker are handed again: the agent, its calibration and the search as told."""
    from evaluator.harness.resolved import resolve_run

    calibration = tmp_path / "calibration.json"
    calibration.write_text("{}")
    told = EvaluationSettings(agent="testkit.scripted_agent:ScriptedAgent", profile="cpu", search="none",
                              calibration=str(calibration), suppress_web_search_api=True)
    assert resolve_settings(told).options() == told
    # a run resolved for its search alone (a benchmark) names no agent: the evaluation's default one
    assert resolve_run("cpu", search="none").options() == EvaluationSettings(profile="cpu", search="none")


def test_a_run_told_other_indices_fetches_them_and_one_told_no_search_builds_the_default_one():
    from evaluator.harness.resolved import resolve_run

    told = EvaluationSettings(profile="l40s", indices="validation")
    assert resolve_settings(told).options() == told
    assert resolve_settings(told).fetch_command() == "python -m tools.fetch --profile l40s --indices validation"
    assert resolve_run("l40s", indices="validation").indices == "validation"
    assert resolve_run("cpu").builds_default_search

"""What a run loads from the hub and the look before it loads (evaluator/harness/models.py), in
process, against a Hugging Face cache laid out in a temporary folder as huggingface_hub lays it
out (models--ORG--NAME/refs/main + snapshots/HASH/config.json). The hub itself is outside the
unit: where a test needs it online, a stand-in HfApi answers."""
from __future__ import annotations

import dataclasses

import pytest

from evaluator.harness import models
from evaluator.harness.models import (
    HubUnreachable,
    dataset_is_cached,
    dataset_problem,
    is_hub_id,
    loaded_models,
    missing_models_message,
    preload_problem,
)
from evaluator.harness.resolved import resolve_settings
from evaluator.settings import EvaluationSettings

L40S_MODELS = ["openai/clip-vit-large-patch14-336", "BAAI/bge-large-en-v1.5",
               "meta-llama/Llama-3.2-11B-Vision-Instruct", "meta-llama/Llama-3.2-1B-Instruct",
               "BAAI/bge-reranker-v2-m3"]
DATASET = "crag-mm-2025/crag-mm-single-turn-public"


@pytest.fixture
def cache(tmp_path, monkeypatch):
    """An empty hub cache and datasets cache; online unless a test switches the hub off."""
    from huggingface_hub import constants

    hub = tmp_path / "hf" / "hub"
    hub.mkdir(parents=True)
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(hub))
    monkeypatch.setattr(constants, "HF_HOME", str(tmp_path / "hf"))
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    monkeypatch.delenv("HF_DATASETS_CACHE", raising=False)
    monkeypatch.delenv("HF_DATASETS_OFFLINE", raising=False)
    return hub


def cache_model(hub, repo_id: str) -> None:
    folder = hub / ("models--" + repo_id.replace("/", "--"))
    (folder / "refs").mkdir(parents=True)
    (folder / "refs" / "main").write_text("a" * 40)
    snapshot = folder / "snapshots" / ("a" * 40)
    snapshot.mkdir(parents=True)
    (snapshot / "config.json").write_text("{}")


class StandinHub:
    """huggingface_hub.HfApi as dataset_problem asks it: records the call, answers as told."""
    calls: list = []
    answer: BaseException | None = None

    def dataset_info(self, repo_id, revision=None, timeout=None):
        StandinHub.calls.append((repo_id, revision, timeout))
        if StandinHub.answer is not None:
            raise StandinHub.answer
        return object()


@pytest.fixture
def hub_api(monkeypatch):
    import huggingface_hub

    StandinHub.calls, StandinHub.answer = [], None
    monkeypatch.setattr(huggingface_hub, "HfApi", StandinHub)
    return StandinHub


def with_agent_problems(run, problems: list[str]):
    """The run with its agent class's own pre-load answer (a model server's state) told, not probed."""
    cls = type("Standin", (run.agent.cls,), {"preload_problems": classmethod(lambda cls, config: problems)})
    return dataclasses.replace(run, agent=dataclasses.replace(run.agent, cls=cls))


def test_a_hub_id_is_one_slash_and_no_folder_here(tmp_path, monkeypatch):
    assert is_hub_id("org/name")
    assert not is_hub_id("smollm2") and not is_hub_id("a/b/c")
    assert not is_hub_id("./models") and not is_hub_id("/models") and not is_hub_id("~/models")
    (tmp_path / "org" / "name").mkdir(parents=True)
    monkeypatch.chdir(tmp_path)
    assert not is_hub_id("org/name")  # a folder on this machine by that name is loaded from disk


def test_the_models_a_run_loads_search_first_each_once_and_no_text_model_without_web(cache):
    assert loaded_models(resolve_settings(EvaluationSettings(profile="l40s"))) == L40S_MODELS
    no_web = resolve_settings(EvaluationSettings(profile="l40s", suppress_web_search_api=True))
    assert loaded_models(no_web) == [m for m in L40S_MODELS if m != "BAAI/bge-large-en-v1.5"]
    run = resolve_settings(EvaluationSettings(profile="l40s"))
    twice = dataclasses.replace(run, agent=dataclasses.replace(run.agent, cls=type(
        "Twice", (), {"hub_models": classmethod(lambda cls, config: ["BAAI/bge-large-en-v1.5", "local-alias"])})))
    assert loaded_models(twice) == L40S_MODELS[:2]  # the agent's copy of a search model is listed once
    assert loaded_models(dataclasses.replace(run, agent=None)) == L40S_MODELS[:2]


def test_the_missing_models_message_names_each_missing_one_the_gated_ones_and_the_command(cache):
    run = resolve_settings(EvaluationSettings(profile="l40s"))
    for cached in L40S_MODELS[:2]:
        cache_model(cache, cached)
    lines = missing_models_message(run).splitlines()
    assert lines == [
        f"cannot start: 3 of the 5 models that the l40s profile loads are not in the Hugging Face cache ({cache}):",
        "  meta-llama/Llama-3.2-11B-Vision-Instruct  (gated)",
        "  meta-llama/Llama-3.2-1B-Instruct  (gated)",
        "  BAAI/bge-reranker-v2-m3",
        "Fetch them into that cache (on a machine with network access), then run again:",
        "  python -m tools.fetch --profile l40s",
        "The meta-llama models are gated: accept their licence on the model's Hugging Face page and log in first "
        "(huggingface-cli login, or HF_TOKEN)."]
    for cached in L40S_MODELS[2:4]:
        cache_model(cache, cached)
    lines = missing_models_message(run).splitlines()
    assert lines[1:] == ["  BAAI/bge-reranker-v2-m3", lines[2], "  python -m tools.fetch --profile l40s"]
    cache_model(cache, L40S_MODELS[4])
    assert missing_models_message(run) is None


def test_a_dataset_is_cached_as_a_hub_snapshot_or_a_prepared_copy(cache, tmp_path, monkeypatch):
    snapshots = cache / "datasets--org--data" / "snapshots"
    snapshots.mkdir(parents=True)
    assert not dataset_is_cached("org/data")  # an empty snapshots folder holds nothing
    (snapshots / ("b" * 40)).mkdir()
    assert dataset_is_cached("org/data")
    (tmp_path / "hf" / "datasets" / "org___prepared").mkdir(parents=True)
    assert dataset_is_cached("org/prepared")  # under HF_HOME/datasets by default
    monkeypatch.setenv("HF_DATASETS_CACHE", str(tmp_path / "elsewhere"))
    assert not dataset_is_cached("org/prepared")
    (tmp_path / "elsewhere" / "org___prepared").mkdir(parents=True)
    assert dataset_is_cached("org/prepared")


def test_a_local_or_cached_dataset_is_no_problem_and_the_hub_is_not_asked(cache, tmp_path, hub_api):
    assert dataset_problem(str(tmp_path), None) is None
    (cache / "datasets--org--data" / "snapshots" / "c").mkdir(parents=True)
    assert dataset_problem("org/data", "v1") is None
    assert hub_api.calls == []


@pytest.mark.parametrize("switch", ["hub", "1", "on", "Yes", "TRUE"])
def test_offline_the_hub_is_not_asked_and_the_line_says_it_is_switched_off(cache, hub_api, monkeypatch, switch):
    from huggingface_hub import constants

    if switch == "hub":
        monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    else:
        monkeypatch.setenv("HF_DATASETS_OFFLINE", switch)
    assert dataset_problem(DATASET, "v2") == (
        f"cannot load the dataset '{DATASET}' (revision v2): it is not in the Hugging Face cache, and the hub is "
        "switched off (HF_HUB_OFFLINE / HF_DATASETS_OFFLINE); fetch it with: python -m tools.fetch --profile l40s "
        "--task single-turn")
    assert hub_api.calls == []


def test_datasets_offline_set_to_anything_else_leaves_the_hub_on(cache, hub_api, monkeypatch):
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "0")
    assert dataset_problem("org/data", None) is None
    assert hub_api.calls == [("org/data", None, 5.0)]


def test_online_the_hub_is_asked_once_and_its_refusal_or_silence_said_in_one_line(cache, hub_api):
    import requests

    hub_api.answer = KeyError("gated")
    assert dataset_problem("org/data", "v1") == "cannot load the dataset 'org/data' (revision v1): the hub refuses it (KeyError)"
    assert hub_api.calls == [("org/data", "v1", 5.0)]
    for silence in (requests.ConnectionError("refused"), requests.Timeout("slow")):
        hub_api.answer = silence
        with pytest.raises(HubUnreachable) as caught:
            dataset_problem(DATASET, None)
        assert str(caught.value) == (
            f"cannot load the dataset '{DATASET}': it is not in the Hugging Face cache, and the hub cannot be reached "
            "(one try, 5 s timeout); fetch it with: python -m tools.fetch --profile l40s --task single-turn")
    calls = len(hub_api.calls)
    assert dataset_problem("org/data", None, hub_reachable=False) == (
        "cannot load the dataset 'org/data': it is not in the Hugging Face cache, and the hub cannot be reached")
    assert len(hub_api.calls) == calls  # known unreachable: not asked again


def test_the_preload_check_says_everything_missing_at_once_and_an_unreachable_hub_once(cache, hub_api):
    import requests

    run = with_agent_problems(resolve_settings(EvaluationSettings(profile="served")), ["the model server is not up"])
    for model in loaded_models(run):
        cache_model(cache, model)
    hub_api.answer = requests.ConnectionError("refused")
    message = preload_problem(run, DATASET, None)
    lines = message.splitlines()
    assert lines[0] == "the model server is not up"
    assert lines[1].startswith(f"cannot load the dataset '{DATASET}': it is not in the Hugging Face cache, and the "
                               "hub cannot be reached (one try, 5 s timeout)")
    # the two indices after it are not asked for, and each is named without the probe's detail
    assert lines[2:] == [
        "cannot load the dataset 'crag-mm-2025/image-search-index-public-test': it is not in the Hugging Face cache, "
        "and the hub cannot be reached; fetch it with: python -m tools.fetch --profile l40s",
        "cannot load the dataset 'crag-mm-2025/web-search-index-public-test': it is not in the Hugging Face cache, "
        "and the hub cannot be reached; fetch it with: python -m tools.fetch --profile l40s"]
    assert [c[0] for c in hub_api.calls] == [DATASET]


def test_the_preload_check_asks_for_the_web_index_only_with_web_search_and_nothing_when_all_is_there(cache, hub_api):
    run = with_agent_problems(resolve_settings(EvaluationSettings(profile="served", suppress_web_search_api=True)), [])
    for model in loaded_models(run):
        cache_model(cache, model)
    assert preload_problem(run, DATASET, "v3") is None
    assert hub_api.calls == [(DATASET, "v3", 5.0), ("crag-mm-2025/image-search-index-public-test", None, 5.0)]
    assert models.HUB_PROBE_TIMEOUT_S == 5.0


def test_a_search_providers_own_indices_are_not_asked_for(cache, hub_api, tmp_path):
    run = with_agent_problems(resolve_settings(EvaluationSettings(profile="cpu")), [])
    assert run.search.provider is not None and loaded_models(run) == []
    assert preload_problem(run, str(tmp_path), None) is None
    assert preload_problem(run, "org/data", None) is None
    assert hub_api.calls == [("org/data", None, 5.0)]  # the dataset only; crag-mm-mini's indices are built


def test_a_run_without_the_default_search_loads_and_asks_for_the_agents_share_only(cache, hub_api):
    run = with_agent_problems(resolve_settings(EvaluationSettings(profile="l40s", search="none")), [])
    assert loaded_models(run) == L40S_MODELS[2:]
    for model in L40S_MODELS[2:]:
        cache_model(cache, model)
    assert preload_problem(run, DATASET, None) is None
    assert hub_api.calls == [(DATASET, None, 5.0)]


def test_a_full_content_database_is_asked_for_with_web_search_only(cache, hub_api, tmp_path):
    # crag-mm-mini's provider builds its own indices; the database told with --web-contents is the hub's
    run = with_agent_problems(resolve_settings(EvaluationSettings(profile="cpu", web_contents="org/contents")), [])
    assert preload_problem(run, str(tmp_path), None) is None
    assert hub_api.calls == [("org/contents", None, 5.0)]
    hub_api.calls.clear()
    off = with_agent_problems(resolve_settings(EvaluationSettings(profile="cpu", web_contents="org/contents",
                                                                  suppress_web_search_api=True)), [])
    assert preload_problem(off, str(tmp_path), None) is None
    assert hub_api.calls == []

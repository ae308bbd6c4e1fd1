"""`python -m tools.preflight --profile l40s` on a machine whose Hugging Face cache is empty: every
check it can make, one line each, before any download; the cache items fail with the command that
fetches them, the checks that need them are skipped, and the exit code is 1. In-process, with the
cache pointed at a temporary folder.
"""
from __future__ import annotations

import re
from importlib import metadata

import pytest

from agents.hardware import profile_for_gpu
from evaluator.harness.models import loaded_models
from evaluator.harness.resolved import resolve_settings
from evaluator.search.pipeline import search_config
from evaluator.settings import EvaluationSettings
from tools import preflight

L40S_ITEMS = loaded_models(resolve_settings(EvaluationSettings(profile="l40s"))) + [
    search_config("l40s").image_index, search_config("l40s").web_index]
COMMIT = "0" * 40


@pytest.fixture
def empty_cache(tmp_path, monkeypatch):
    """An empty Hugging Face cache, as huggingface_hub reads it (constants are read at import)."""
    from huggingface_hub import constants

    hub = tmp_path / "hf" / "hub"
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    monkeypatch.setenv("HF_HUB_CACHE", str(hub))
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(hub))
    for key in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_DATASETS_OFFLINE", "CRUISE_PROFILE"):
        monkeypatch.setenv(key, "")  # restored afterwards: the pre-flight sets them itself
    return hub


def table(printed: str) -> dict[str, tuple[str, str]]:
    """check name -> (verdict, detail) from the printed lines."""
    rows = {}
    for line in printed.splitlines():
        match = re.match(r"^(PASS|FAIL|SKIP)  (.+?)\s{2,}(.*)$", line)
        if match:
            rows[match.group(2)] = (match.group(1), match.group(3))
    return rows


def test_an_empty_cache_gives_the_whole_table_and_exit_code_1(empty_cache, capsys):
    code = preflight.main(["--profile", "l40s"])
    printed = capsys.readouterr().out
    assert code == 1
    rows = table(printed)
    for name in ("import", "requirements", "pins", "aicrowd", "gpu memory", "disk"):
        assert name in rows, printed
    assert rows["import"][0] == "PASS" and rows["aicrowd"][0] == "PASS" and rows["requirements"][0] == "PASS"
    verdict, detail = rows["gpu memory"]
    assert verdict == "PASS" and ("no GPU here" in detail or "here: " in detail)
    assert "python -m tools.fetch --profile l40s still has" in rows["disk"][1]
    for repo_id in L40S_ITEMS:
        verdict, detail = rows[f"cache: {repo_id.split('/')[-1]}"]
        assert verdict == "FAIL" and f"{repo_id} is not in the cache (" in detail
        assert detail.endswith(": python -m tools.fetch --profile l40s")
    assert rows["batch size"] == ("SKIP", f"not run: {len(L40S_ITEMS)} cache items are missing")
    assert rows["dry run"][0] == "SKIP"
    last = printed.strip().splitlines()[-1]
    assert last.startswith("preflight: FAILED: ") and "cache: Llama-3.2-11B-Vision-Instruct" in last
    # no false hint: the pre-flight switches the hub off itself, so HF_HUB_OFFLINE=0 would change nothing
    assert "HF_HUB_OFFLINE=0" not in printed and "Traceback" not in printed


def test_what_is_in_the_cache_passes_and_a_partial_download_says_so(empty_cache, capsys):
    present, partial = "BAAI/bge-large-en-v1.5", "crag-mm-2025/image-search-index-public-test"
    model = empty_cache / ("models--" + present.replace("/", "--"))
    (model / "snapshots" / COMMIT).mkdir(parents=True)
    (model / "snapshots" / COMMIT / "config.json").write_text("{}")
    (model / "refs").mkdir()
    (model / "refs" / "main").write_text(COMMIT)
    index = empty_cache / ("datasets--" + partial.replace("/", "--"))
    (index / "blobs").mkdir(parents=True)
    (index / "blobs" / "abc.incomplete").write_text("")
    assert preflight.main(["--profile", "l40s"]) == 1
    rows = table(capsys.readouterr().out)
    assert rows["cache: bge-large-en-v1.5"][0] == "PASS"
    verdict, detail = rows["cache: image-search-index-public-test"]
    assert verdict == "FAIL" and "is only partly downloaded" in detail and "python -m tools.fetch" in detail
    assert rows["batch size"][1] == f"not run: {len(L40S_ITEMS) - 1} cache items are missing"


def test_the_validation_indices_are_named_with_their_flag(empty_cache, capsys):
    preflight.main(["--profile", "l40s", "--indices", "validation"])
    rows = table(capsys.readouterr().out)
    assert rows["cache: web-search-index-validation"][1].endswith(
        "python -m tools.fetch --profile l40s --indices validation")


@pytest.mark.parametrize("gpu, ok, words", [
    (None, True, "no GPU here: checked on paper for one L40S"),
    (("NVIDIA H100 80GB HBM3", 79.2), True, "here: NVIDIA H100 80GB HBM3, 79.2 GiB"),
    (("NVIDIA GeForce RTX 4090", 23.6), False, "NVIDIA GeForce RTX 4090 (23.6 GiB) is too small for the l40s run"),
])
def test_the_memory_plan_is_the_runs_own_held_against_the_gpu_seen(gpu, ok, words):
    check = preflight.check_gpu_memory(resolve_settings(EvaluationSettings(profile="l40s")), gpu)
    assert check.ok is ok and words in check.detail
    assert "the l40s run's configuration" in check.detail
    # the cpu and served runs reserve no share of a GPU (transformers, model servers): the plan of
    # another profile's configuration says nothing of them, on any card
    for profile, engine in (("cpu", "transformers"), ("served", "openai")):
        other = preflight.check_gpu_memory(resolve_settings(EvaluationSettings(profile=profile)), gpu)
        assert other.ok is None and other.detail == (f"not planned: the {profile} run's engine ({engine}) reserves "
                                                     "no share of a GPU (--profile l40s: the submission's plan)")
    # nor an l40s run told to run its models in transformers: the run's configuration decides
    told = resolve_settings(EvaluationSettings(profile="l40s", set=("engine=transformers",)))
    assert preflight.check_gpu_memory(told, gpu).ok is None


def test_pins_are_the_installed_versions(tmp_path):
    installed = metadata.version("rich")
    good = tmp_path / "good.txt"
    good.write_text(f"# comment\nrich=={installed}  # why\npillow[extra]=={metadata.version('pillow')}\n")
    assert preflight.check_pins(good).ok
    bad = tmp_path / "bad.txt"
    bad.write_text(f"rich=={installed}\npandas==0.0.1\nno-such-distribution-here==1.0\n")
    check = preflight.check_pins(bad)
    assert not check.ok
    assert check.detail.startswith("2 of 3 pins of bad.txt differ: pandas ")
    assert "(pinned 0.0.1)" in check.detail and "no-such-distribution-here not installed" in check.detail
    torch_pin = tmp_path / "torch.txt"  # a local build label (+cpu, +cu126) is the same release
    torch_pin.write_text(f"torch=={metadata.version('torch').split('+')[0]}\n")
    assert preflight.check_pins(torch_pin).ok


def test_the_rule_of_auto_is_the_memory_plans_own_threshold():
    from agents.config.loading import load_config
    from agents.hardware import L40S_MIN_GPU_GIB
    from tools.memory_plan import GPU_GIB, minimum_gpu_gib, plan_l40s

    least = minimum_gpu_gib(load_config("l40s"))
    assert abs(least - L40S_MIN_GPU_GIB) <= 0.01
    assert plan_l40s(load_config("l40s"), L40S_MIN_GPU_GIB + 0.01).fits
    assert not plan_l40s(load_config("l40s"), L40S_MIN_GPU_GIB - 0.02).fits
    assert L40S_MIN_GPU_GIB <= GPU_GIB  # an L40S itself fits


@pytest.mark.parametrize("gpu, profile", [
    (None, "cpu"), (("NVIDIA GeForce RTX 4090", 24564 / 1024), "cpu"), (("NVIDIA A100-SXM4-40GB", 40.0), "cpu"),
    (("NVIDIA L40S", 46068 / 1024), "l40s"), (("NVIDIA RTX 6000 Ada Generation", 47.99), "l40s"),
    (("NVIDIA H100 80GB HBM3", 79.2), "l40s"),
])
def test_auto_picks_by_gpu_memory_and_says_why(gpu, profile):
    choice = profile_for_gpu(gpu)
    assert choice.profile == profile
    if gpu is None:
        assert choice.reason == "no CUDA GPU is visible to torch"
    elif profile == "l40s":
        assert choice.reason == (f"{gpu[0]} has {gpu[1]:.1f} GiB; the l40s profile's memory plan needs 44.8 GiB "
                                 "(python -m tools.memory_plan --cards)")
    else:
        assert choice.reason.startswith(f"{gpu[0]} has {gpu[1]:.1f} GiB, less than the 44.8 GiB the l40s profile's")
        assert "--profile served" in choice.reason


def test_the_memory_plan_command_prints_its_help_and_refuses_an_unknown_flag(capsys):
    from tools.memory_plan import main

    with pytest.raises(SystemExit) as stopped:
        main(["--help"])
    assert stopped.value.code == 0
    shown = capsys.readouterr().out
    assert shown.startswith("usage: python -m tools.memory_plan [-h] [--cards | --families]")
    assert "| engine |" not in shown  # the help, not the plan
    with pytest.raises(SystemExit) as stopped:
        main(["--gpu", "h100"])
    assert stopped.value.code == 2
    assert capsys.readouterr().err.endswith("error: unrecognized arguments: --gpu h100\n")
    assert main([]) == 0 and capsys.readouterr().out.startswith("| engine |")

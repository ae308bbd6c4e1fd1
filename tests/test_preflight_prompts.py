"""A prompt its system asks for and no folder holds fails the pre-flight, naming every folder.

A system in a package of its own, written to a temporary folder as tests/test_plugin_system.py
writes one (a stage that calls no model, then one that asks the VLM with the package's prompt),
resolved and built as the pre-flight resolves and builds a run (the real CruiseAgent over
stand-in engines, outside the unit), answers the pre-flight's dry run batch of the shipped mini
benchmark. Without its prompt every turn faults at its VLM stage: the pre-flight's line names
the prompt and the folders it was looked for in, the package's first, then the repository's.
"""
from __future__ import annotations

import importlib
import sys
from pathlib import Path

import pytest

from agents.cruise_agent import CruiseAgent
from agents.engines.base import Engines
from agents.profiles import REPO_ROOT
from evaluator.harness.resolved import resolve_settings
from evaluator.settings import EvaluationSettings
from testkit.fakes import FunctionReranker, ScriptedEngine
from tests.test_plugin_system import write_package
from tools import preflight

MINI = REPO_ROOT / "data" / "crag-mm-mini" / "single-turn"
MODULES = ("settings", "s1_tally", "s2_shout", "system")


class AnyStage(dict):
    def __missing__(self, stage):
        return lambda request: "A YELLOW SIGN"


class SeeingStandInAgent(CruiseAgent):
    """The real CruiseAgent over stand-in engines whose VLM sees (so no perception runs)."""

    def __init__(self, search_pipeline=None, config=None):
        engines = Engines(router=ScriptedEngine({}), vlm=ScriptedEngine(AnyStage()),
                          reranker=FunctionReranker(lambda q, c: 0.0))
        super().__init__(search_pipeline, config, engines=engines)


@pytest.fixture
def package_on_path(tmp_path, monkeypatch, registered_systems):
    """write(package, system) -> the package's folder, importable for this test only: its modules
    are forgotten afterwards (setitem restores their absence) and what it registers is gone."""

    def write(package: str, system: str) -> Path:
        folder = write_package(tmp_path, package, system)
        monkeypatch.syspath_prepend(str(tmp_path))
        for name in (package, *(f"{package}.{m}" for m in MODULES)):
            monkeypatch.setitem(sys.modules, name, None)
            del sys.modules[name]
        importlib.invalidate_caches()
        return folder

    return write


def dry_run(package: str, system: str) -> list[preflight.Check]:
    run = resolve_settings(EvaluationSettings(profile="cpu", agent=f"{__name__}:SeeingStandInAgent", search="none",
                                              set=(f"system={package}.system:{system}",)))
    agent = run.agent.build(None)
    return preflight.dry_run_checks(agent, preflight.sample_batch(str(MINI), 2), run)


def test_a_prompt_missing_from_the_package_fails_the_pre_flight_naming_the_packages_folder_first(package_on_path):
    folder = package_on_path("unprompted_pkg", "unprompted")
    (folder / "prompts" / "unprompted.txt").unlink()
    answered, faults = dry_run("unprompted_pkg", "unprompted")
    assert answered.ok  # two answers in time: "I don't know", each
    assert faults.name == "stage faults" and faults.ok is False
    assert faults.detail == (
        "2 of 2 turns of the dry run faulted: stage 'unprompted' (2 turns): PromptNotFound: prompt 'unprompted' not "
        f"found: looked for unprompted.txt in unprompted_pkg's prompts/ ({folder / 'prompts'}), then the "
        f"repository's prompts/ ({REPO_ROOT / 'prompts'})")


def test_a_package_without_a_prompts_folder_is_named_as_such(package_on_path):
    folder = package_on_path("folderless_pkg", "folderless")
    for prompt in (folder / "prompts").iterdir():
        prompt.unlink()
    (folder / "prompts").rmdir()
    _, faults = dry_run("folderless_pkg", "folderless")
    assert faults.ok is False
    assert f"in folderless_pkg's prompts/ ({folder / 'prompts'}, no such folder), then the repository's" in faults.detail


def test_the_packages_own_prompt_passes(package_on_path):
    package_on_path("prompted_ok_pkg", "prompted_ok")
    answered, faults = dry_run("prompted_ok_pkg", "prompted_ok")
    assert answered.ok and faults == preflight.Check("stage faults", True, "none in the dry run's 2 turns")


def test_an_agent_that_reports_no_traces_is_not_checked_for_stage_faults():
    assert preflight.check_stage_faults({"engine_calls": []}, 2).ok is None

"""The resume fingerprint at its edges (evaluator/harness/fingerprint.py): what a run records of its
search, and the lines `differences` names when a run resumed is not the run it continues, from
either side of a key recorded by one run only.

The search indices' snapshot revisions come from the Hugging Face cache, outside the unit: a
stand-in answers with the index and the provider it was asked about."""
from __future__ import annotations

from pathlib import Path

import pytest

from evaluator.harness.agent_setup import AgentSetup
from evaluator.harness.fingerprint import differences, system_fingerprint
from evaluator.harness.resolved import ResolvedRun, resolve_settings
from evaluator.settings import EvaluationSettings


@pytest.fixture
def revisions(monkeypatch):
    from evaluator.search import pipeline

    monkeypatch.setattr(pipeline, "index_revision", lambda repo, provider=None: f"{provider}-{repo}-rev")


def fingerprint(**told) -> dict:
    run = resolve_settings(EvaluationSettings(agent="testkit.scripted_agent:ScriptedAgent", profile="cpu", **told))
    return system_fingerprint(run, None)


def test_a_run_records_its_search_its_web_switch_and_the_models_of_the_search_it_builds(revisions):
    plain = fingerprint()
    assert (plain["search"], plain["web_search"]) == ("default", True)
    assert plain["search_models"] == {"image_model": "efficientnet-lite0", "text_model": "minilm", "web_contents": None}
    provider = resolve_settings(EvaluationSettings(profile="cpu")).search.provider
    assert provider and plain["indices"]["image"]["revision"] == f"{provider}-{plain['indices']['image']['id']}-rev"
    assert differences(fingerprint(search="none"), fingerprint(search="none", suppress_web_search_api=True)) == [
        "web_search: True -> False"]
    with_pages = fingerprint(web_contents="default")
    contents = with_pages["indices"]["contents"]["id"]
    assert differences(plain, with_pages)[0] == f"search_models.web_contents: (not set) -> {contents}"


def test_a_fingerprint_holds_what_json_holds_so_it_equals_itself_read_back():
    setup = AgentSetup(spec="tests.test_resume_fingerprint:Agent", cls=object,
                       description={"config": {"index_folder": Path("/data/index"), "sizes": (1, 2)}})
    recorded = system_fingerprint(ResolvedRun("cpu", setup, search_spec="none"), None)
    assert recorded["config"] == {"index_folder": "/data/index", "sizes": [1, 2]}


INDICES = {"image": {"id": "img", "revision": None}, "web": {"id": "web", "revision": None}, "contents": None}


@pytest.mark.parametrize("earlier, now, lines", [
    # indices recorded by one run only, or recorded as none at all
    ({}, {"indices": INDICES}, ["search indices: (not recorded) -> img, web"]),
    ({"indices": INDICES}, {}, ["search indices: img, web -> (not recorded)"]),
    ({"indices": {"image": None, "web": None, "contents": None}}, {"indices": INDICES},
     ["search indices: (none) -> img, web"]),
    # a run from before the indices record kept their ids in search_models: the same ones, no difference
    ({"search_models": {"image_model": "m", "image_index": "img", "web_index": "web"}},
     {"search_models": {"image_model": "m", "image_index": "img", "web_index": "web"}}, []),
    # --set: a field one run set and the other did not, either way; none on either side is the same
    ({"settings": {"tau": 1}}, {"settings": {}}, ["--set tau: 1 -> (not set)"]),
    ({"settings": None}, {"settings": {}}, []),
    # a dict one run recorded and the other did not
    ({}, {"config": {"a": 1, "b": 2}}, ["config: (not recorded) -> 2 fields"]),
    ({"calibration": {"file": "a.json", "sha256": "a" * 64}}, {"calibration": {"file": "b.json", "sha256": "b" * 64}},
     ["calibration: a.json (sha256 aaaaaaaaaaaa) -> b.json (sha256 bbbbbbbbbbbb)"]),
])
def test_differences_name_a_key_one_run_recorded_and_the_other_did_not(earlier, now, lines):
    assert differences(earlier, now) == lines

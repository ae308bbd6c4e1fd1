"""The two test tiers, and the fixtures shared by several test files.

Tiers come from the layout: tests/ is the default tier (units and in-process integration, a few
minutes on 2 cores), tests/full/ the full tier (subprocesses, real models, Ray, Chromium, big
data), which CI runs. `pytest` alone collects tests/ without tests/full/; `pytest --full`, or
naming tests/full (or a file in it) on the command line, collects the full tier too.
"""
from __future__ import annotations

import functools
import os
import sys
from pathlib import Path
from types import SimpleNamespace
from unittest import mock

import pytest
from PIL import Image

import local_evaluation
from testkit.browser import HeadlessChromium, find_chromium
from testkit.evaluation_world import CONVERSATIONS, UNDECIDED, generation_args, read_log, run_in_process, write_script
from testkit.loopback import Loopback
from testkit.report_world import build_report_runs
from testkit.scripted_agent import FakeOpenAIServer, build_dataset, png_bytes

FULL_TIER = Path(__file__).resolve().parent / "full"


@pytest.fixture
def fake_clock(monkeypatch):
    """testkit.fakes.FakeClock as the clock of the batch guards (agents/runtime/batch.py), their
    deadline, the agent and the scripted engines (whose sleep advances it) for one test."""
    import functools

    from agents import cruise_agent
    from agents.runtime import batch
    from agents.runtime.deadline import Deadline
    from testkit import fakes

    clock = fakes.FakeClock()
    monkeypatch.setattr(fakes, "time", clock)
    monkeypatch.setattr(batch, "time", clock)
    monkeypatch.setattr(cruise_agent, "time", clock)
    monkeypatch.setattr(batch, "Deadline", functools.partial(Deadline, clock=clock))
    return clock


# The registry of systems (agents/runtime/system.py) outside a test holds the built-in systems
# only: a test registers its own through `registered_systems`, and they are gone when it ends, so
# that no other test, in any order, sees them.
@pytest.fixture
def registered_systems(request):
    """`register` for one test, on its module's behalf: whatever the test registers, or a module it
    finds registers, is gone from the registry when it ends (`scoped_registry`)."""
    from agents.runtime.system import register, scoped_registry

    with scoped_registry():
        yield functools.partial(register, module=request.module.__name__)


@pytest.fixture(autouse=True)
def no_system_left_registered(request):
    """A test that leaves a system registered (a module that registers one at import, a test that
    registers outside `registered_systems`) fails, naming it: later tests would see it."""
    yield
    registry = sys.modules.get("agents.runtime.system")
    left = {name: module for name, module in (registry.registrants() if registry else {}).items()
            if module not in registry.BUILT_IN}
    if left:
        pytest.fail(f"systems left registered after {request.node.nodeid}: {left}; register them through the "
                    "registered_systems fixture (tests/conftest.py)", pytrace=False)


def pytest_addoption(parser):
    parser.addoption("--full", action="store_true",
                     help="also run the full tier, tests/full/ (subprocesses, real models, Ray, Chromium, big data: "
                          "what CI runs, scripts/test.sh)")


def pytest_configure(config):
    # No test reaches a model hub: a bare `pytest` gets what scripts/test.sh exports. Set before
    # any test module imports huggingface_hub, which reads these once, at import.
    for name in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_DATASETS_OFFLINE"):
        os.environ.setdefault(name, "1")


def named_on_the_command_line(config, folder: Path) -> bool:
    """Whether an argument names `folder`, a path inside it, or a test in a file inside it."""
    for arg in config.args:
        path = (config.invocation_params.dir / arg.split("::")[0]).resolve()
        if path == folder or folder in path.parents:
            return True
    return False


def pytest_ignore_collect(collection_path, config):
    if collection_path == FULL_TIER and not config.getoption("--full"):
        return not named_on_the_command_line(config, FULL_TIER)
    return None


@pytest.fixture(scope="module")
def browser():
    if not find_chromium():
        pytest.skip("chromium is not installed: scripts/test.sh installs it (apt-get install chromium); "
                    "the browser checks of report.html did not run")
    with HeadlessChromium() as chromium:
        yield chromium


# local_evaluation.py end to end over testkit/evaluation_world.py's dataset and scripted judge
# (test_local_evaluation.py, full/test_local_evaluation.py, full/test_workers.py): one world and
# one full run, in this process, per test module.
@pytest.fixture(scope="module")
def world(tmp_path_factory):
    root = tmp_path_factory.mktemp("evalworld")
    images = {"s2.png": png_bytes((200, 10, 10)), "s6.png": png_bytes((10, 200, 10))}
    with FakeOpenAIServer(images=images, lifetime_s=600) as server:
        convs = []
        for session, source, quality, turns in CONVERSATIONS:
            embedded = Image.new("RGB", (64, 48), (30, 60, 90)) if "embedded" in source else None
            url = None
            if source == "url":
                url = f"{server.base}/img/{session.split('-')[0]}.png"
            elif source == "embedded+url":
                url = "http://127.0.0.1:9/never-fetched.png"  # image present: must not be fetched
            convs.append(dict(session_id=session, image=embedded, image_url=url, image_quality=quality,
                              turns=[(t[0], t[1], t[2], t[3], t[4], "static") for t in turns]))
        dataset = build_dataset(root / "dataset", convs, form="dict")
        answers = {t[1]: t[5] for _, _, _, turns in CONVERSATIONS for t in turns}
        yield dict(root=root, server=server, dataset=dataset, answers=answers, convs=convs)


@pytest.fixture(scope="module")
def full_run(world):
    out = world["root"] / "full"
    script = write_script(world, "full")
    proc = run_in_process(local_evaluation.main, world, generation_args(world, out), script,
                          expect_rc=UNDECIDED)  # s3-1's judge fails
    return dict(out=out, proc=proc, log=read_log(world["root"] / "full.log.jsonl"))


# report.html's runs (testkit/report_world.py), for test_report.py and full/test_report.py
@pytest.fixture(scope="module")
def report_runs(tmp_path_factory):
    return build_report_runs(tmp_path_factory.mktemp("reportworld"), local_evaluation.main)


# SmolLM2 (the cpu profile's model, real weights) through transformers, loaded once per session
# for the full tier's engine, stop-string and served-engine tests; the tests that change its
# state (prefill estimate, warnings) put it back
@pytest.fixture(scope="session")
def smol():
    from agents.engines.transformers_engine import TransformersEngine

    return TransformersEngine("smollm2")


# loopback HTTP servers answering in the served engines' shapes (testkit/loopback.py)
@pytest.fixture
def loopback():
    servers = []

    def start(answer):
        servers.append(Loopback(answer))
        return servers[-1]

    yield start
    for server in servers:
        server.close()


# The mini benchmark's search models and indices, built from scratch once per session into a cache
# of their own (EfficientNet-Lite0, MiniLM), for the full tier's search tests. CRUISE_CACHE points
# there only inside the tests that ask for `search_cache`: a session-wide setting would send every
# later test's models (SmolLM2's conversion) into this folder too.
@pytest.fixture(scope="session")
def mini_search_cache(tmp_path_factory):
    from evaluator.search.pipeline import search_config
    from minibench.build_indices import prepare_indices

    folder = tmp_path_factory.mktemp("cruise-cache")
    with mock.patch.dict(os.environ, {"CRUISE_CACHE": str(folder)}):
        config = search_config("cpu")
        return SimpleNamespace(folder=folder, config=config, info=prepare_indices(config))


@pytest.fixture
def search_cache(mini_search_cache, monkeypatch):
    """(search config, what prepare_indices built), with CRUISE_CACHE on that cache for this test."""
    monkeypatch.setenv("CRUISE_CACHE", str(mini_search_cache.folder))
    return mini_search_cache.config, mini_search_cache.info


# the real OCR and classifier runs of the perception stage, counted (testkit/perception_scenes.py)
@pytest.fixture
def model_runs(monkeypatch):
    """Counts the images each model is run on, around the real functions (outside the stage)."""
    from agents.engines import image_classifier, ocr

    runs = {"ocr": 0, "classifier": 0}
    real_read, real_labels = ocr.read_text, image_classifier.top_labels

    def read_text(image, *args, **kwargs):
        runs["ocr"] += 1
        return real_read(image, *args, **kwargs)

    def top_labels(images, *args, **kwargs):
        runs["classifier"] += 1 if isinstance(images, Image.Image) else len(images)
        return real_labels(images, *args, **kwargs)

    monkeypatch.setattr(ocr, "read_text", read_text)
    monkeypatch.setattr(image_classifier, "top_labels", top_labels)
    return runs

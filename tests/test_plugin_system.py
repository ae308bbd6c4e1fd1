"""A system from outside agents/, in a package of its own, touching no file of this repository.

A system defined here lists only its own stage and opens its batch with the runtime's
`open_batch`: its turns reach its stage carrying the picture as text when the VLM cannot see
(the perception every system's list opens with), and each trace records what the harness handed
over with the turn (`harness_domain`, `harness_passages`) and what perception read. The
perception models are stand-ins that read one sign in every photo (they lie outside the unit:
tests/full/test_perception.py runs the real ones).

A package written to a temporary folder as docs/layout.md "Add a system" lays it out (its
pyproject.toml, its module, its prompts/, a stage that calls no model and one that asks the VLM,
its own settings and its own turn page) keeps its prompt and its page there: its stages read its
prompt by name, the run's prompt hashes cover it, and the report shows its turns by its page.
Without its prompt, the pre-flight's dry run fails, naming the prompt and every folder it was
looked for in, the package's first.
"""
from __future__ import annotations

import hashlib
import importlib
import json
import sys
from pathlib import Path

import pytest
from PIL import Image

from agents.base_agent import IDK_ANSWER
from agents.config.loading import load_config
from agents.cruise_agent import CruiseAgent
from agents.engines.base import Engines
from agents.profiles import REPO_ROOT
from agents.runtime.cost_priors import stage_priors
from agents.runtime.system import Decision, Stage, System, View
from evaluator.harness.resolved import resolve_settings
from evaluator.settings import EvaluationSettings
from testkit.fakes import FunctionReranker, ScriptedEngine
from testkit.perception_scenes import BlindEngine
from tools import preflight

# every system these tests register, or a package they import registers, is gone after each test,
# and so is every module imported from a test's temporary folder
pytestmark = pytest.mark.usefixtures("registered_systems", "modules_of_its_folder_forgotten")

SIGN = "CLOSED ON MONDAYS"


@pytest.fixture
def modules_of_its_folder_forgotten(tmp_path):
    """Every module a test imports from its temporary folder (a package it wrote there) is gone
    from sys.modules after it, so that a later run of these tests in the same process (mutmut runs
    them twice in one) imports each package afresh from that run's folder."""
    yield
    for name, module in list(sys.modules.items()):
        origin = getattr(getattr(module, "__spec__", None), "origin", None)
        if origin and Path(origin).is_relative_to(tmp_path):
            del sys.modules[name]


@pytest.fixture
def perception_reads_a_sign(monkeypatch):
    """The classifier and the OCR as stand-ins: every photo shows a street sign that reads SIGN."""
    from agents.engines import image_classifier, ocr
    from agents.stages import s0a_perceive

    def top_labels(images, k=5):
        return [[("street sign", 0.9)]] * (1 if isinstance(images, Image.Image) else len(images))

    monkeypatch.setattr(image_classifier, "top_labels", top_labels)
    monkeypatch.setattr(ocr, "read_text", lambda image, max_side=960: [([[0, 0], [90, 0], [90, 9], [0, 9]], SIGN, 0.97)])
    monkeypatch.setattr(s0a_perceive, "SHARED_CACHE", s0a_perceive.PerceptionCache())


def look(batch):
    """What each turn carries as its picture; no stage of its own for perception."""
    return [{"looked_at": t.picture, "rag_answer": "a sign" if SIGN in t.picture else IDK_ANSWER} for t in batch.turns]


LOOK = Stage("look", batch_fn=look, writes=("looked_at", "rag_answer"))


def run_look(batch):
    batch.call(LOOK)
    return batch.finish()


LOOKER = System(name="looker", stages=(LOOK,), run=run_look,
                decide=lambda trace, cfg: Decision(trace["rag_answer"], "looked"),
                view=View(funnel=lambda trace, cfg: {}))


@pytest.fixture
def looker(registered_systems):
    """LOOKER registered from this module for one test."""
    return registered_systems(LOOKER)


def looker_agent(vlm) -> CruiseAgent:
    engines = Engines(router=ScriptedEngine({}), vlm=vlm, reranker=FunctionReranker(lambda q, c: 0.0))
    return CruiseAgent(None, config=load_config("cpu", "full", system="looker", warmup_at_load=False), engines=engines)


def test_a_system_that_lists_no_perception_reads_the_photo_as_text_and_traces_the_harness_fields(
        perception_reads_a_sign, looker):
    agent = looker_agent(BlindEngine({}))
    photo = Image.new("RGB", (96, 64), "yellow")
    answers = agent.batch_generate_response(["What does it say?", "And now?"], [photo, photo.copy()], [[], []],
                                            rag_context_list=[["a passage", "   ", "another"], ""],
                                            domains=["Plants", None])
    assert answers == ["a sign", "a sign"]
    traces = agent.last_batch_report["traces"]
    assert all(SIGN in t["looked_at"] and SIGN in t["perception"]["block"] for t in traces)
    assert [t["harness_domain"] for t in traces] == ["Plants", None]
    assert [t["harness_passages"] for t in traces] == [2, 0]  # blank passages dropped; "" searched, found none
    assert list(traces[0]["stage_ms"]) == ["perceive", "look"]
    # perception is one of its stages: no prior, and the ledger saw it send no request, so it is
    # learned per turn, never priced like a model request
    assert LOOKER.stage_names() == ("perceive", "look") and stage_priors(LOOKER, agent.config) == {}
    assert "perceive" in agent.costs.samples and "perceive" not in agent.costs.model_stages


def test_a_vlm_that_sees_gets_no_picture_block_and_a_harness_that_hands_nothing_over_is_traced_so(
        perception_reads_a_sign, looker):
    agent = looker_agent(ScriptedEngine({}))
    answers = agent.batch_generate_response(["What does it say?"], [Image.new("RGB", (96, 64))], [[]])
    trace = agent.last_batch_report["traces"][0]
    assert answers == [IDK_ANSWER] and trace["looked_at"] == "" and trace["perception"] is None
    assert (trace["harness_domain"], trace["harness_passages"]) == (None, None)
    assert list(trace["stage_ms"]) == ["look"]


def test_a_system_record_is_named_for_a_run_by_the_module_that_registered_it(looker):
    from agents.runtime.system import system_named
    from evaluator.settings import set_strings

    assert str(LOOKER) == "tests.test_plugin_system:looker"
    assert set_strings({"system": LOOKER}) == ("system=tests.test_plugin_system:looker",)
    assert system_named(str(LOOKER)) is LOOKER
    # a record nothing registered has only its name
    assert str(System(name="unregistered", stages=(), run=run_look, decide=LOOKER.decide, view=LOOKER.view)) == \
        "unregistered"


# --------------------------------------------------------------------------- a package of its own
PYPROJECT = """[project]
name = "@PACKAGE@"
version = "0.1"

[project.entry-points."cruise_agent.systems"]
@SYSTEM@ = "@PACKAGE@.system"

[build-system]
requires = ["setuptools>=61"]
build-backend = "setuptools.build_meta"

[tool.setuptools.package-data]
"@PACKAGE@" = ["prompts/*.txt", "*.j2"]
"""
SETTINGS = """from dataclasses import dataclass

from agents.settings import COUNT, ranged


@dataclass
class ShoutSettings:
    @SYSTEM@_words: int = ranged(3, COUNT)  # the most words an answer may take
"""
TALLY = """from agents.plugin import Stage


def tally(batch):
    return [{"@SYSTEM@_question_words": len(turn.query.split())} for turn in batch.turns]


STAGE = Stage("@SYSTEM@_tally", batch_fn=tally, writes=("@SYSTEM@_question_words",))
"""
SHOUT = """from agents.plugin import Stage


def shout(batch):
    values = [{"query": turn.query, "words": str(batch.settings.@SYSTEM@_words),
               "count": str(reads["@SYSTEM@_question_words"])} for turn, reads in zip(batch.turns, batch.reads)]
    return [{"@SYSTEM@_reply": reply} for reply in batch.ask("@SYSTEM@", values, max_tokens=16)]


STAGE = Stage("@SYSTEM@", batch_fn=shout, reads=("@SYSTEM@_question_words",), writes=("@SYSTEM@_reply",),
              prompts=("@SYSTEM@",))
"""
SYSTEM = """from agents.plugin import Decision, System, View, register
from @PACKAGE@ import s1_tally, s2_shout
from @PACKAGE@.settings import ShoutSettings


def run(batch):
    batch.call(s1_tally.STAGE)
    batch.call(s2_shout.STAGE)
    return batch.finish()


def decide(trace, cfg):
    return Decision(trace["@SYSTEM@_reply"], "shouted")


SYSTEM = register(System(
    name="@SYSTEM@", stages=(s1_tally.STAGE, s2_shout.STAGE), run=run, decide=decide,
    abstain_on="@SYSTEM@_reply",  # its "I don't know" is decided before its rule
    view=View(funnel=lambda trace, cfg: {"replied": bool(trace.get("@SYSTEM@_reply"))}, branches=("shouted",),
              turn_template="report_turn.html.j2"),
    settings=ShoutSettings,
))
"""
PROMPT = """[system]
You answer in capitals, in at most $words words.
[user]
$query
(The question has $count words.)
"""
PAGE = """{% from "runtime/turn_rows.html.j2" import timing %}
{% macro trace_details(t) %}
{% set tr = t.trace or {} %}
        <tr><th>shouted</th><td>{{ tr.get("@SYSTEM@_reply") }}</td></tr>
        {{ timing(tr) }}
{% endmacro %}
"""


def write_package(root: Path, package: str, system: str) -> Path:
    """The package `package` offering system `system` under `root` (its source folder and, as pip
    writes for an installed package, its .dist-info with the entry point); returns the package's
    folder."""
    files = {"pyproject.toml": PYPROJECT, f"{package}/__init__.py": "", f"{package}/settings.py": SETTINGS,
             f"{package}/s1_tally.py": TALLY, f"{package}/s2_shout.py": SHOUT, f"{package}/system.py": SYSTEM,
             f"{package}/prompts/{system}.txt": PROMPT, f"{package}/report_turn.html.j2": PAGE,
             f"{package}-0.1.dist-info/METADATA": f"Metadata-Version: 2.1\nName: {package}\nVersion: 0.1\n",
             f"{package}-0.1.dist-info/entry_points.txt": f"[cruise_agent.systems]\n{system} = {package}.system\n"}
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text.replace("@PACKAGE@", package).replace("@SYSTEM@", system), encoding="utf-8")
    return root / package


def test_a_stage_reads_its_prompt_from_its_systems_package_first_and_the_run_hashes_it(tmp_path, monkeypatch):
    from agents.runtime.package_files import own_files
    from agents.runtime.system import system_named
    from agents.stages.prompts import load_prompt, load_prompt_lines, prompt_hashes

    folder = write_package(tmp_path, "prompted_pkg", "prompted")
    (folder / "prompts" / "perception.txt").write_text("In the photo:\n$content\n")  # one of the repository's, its own way
    monkeypatch.syspath_prepend(str(tmp_path))
    system = system_named("prompted_pkg.system:prompted")
    with pytest.raises(FileNotFoundError):
        load_prompt("prompted")  # not the repository's: no system of that package is answering
    repository_answer = load_prompt("answer_with_context")
    with own_files(system):
        assert load_prompt("prompted").system.template == "You answer in capitals, in at most $words words."
        assert load_prompt_lines("perception") == "In the photo:\n$content"
        assert load_prompt("answer_with_context") == repository_answer  # a name it lacks: the repository's
    assert load_prompt_lines("perception") != "In the photo:\n$content"
    hashes = prompt_hashes(system=system)
    digest = hashlib.sha256((folder / "prompts" / "prompted.txt").read_bytes()).hexdigest()
    assert hashes["prompted_pkg:prompted.txt"] == digest and "prompted_pkg:perception.txt" in hashes
    assert prompt_hashes().items() < hashes.items()  # the repository's, and its own besides


def test_its_turn_page_in_its_package_shows_its_turns_in_a_report_written_by_a_process_that_never_imported_it(
        tmp_path, monkeypatch):
    from evaluator.harness.run_record import RunRecord
    from evaluator.report.html import turn_renderer

    write_package(tmp_path, "paged_pkg", "paged")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert "paged_pkg" not in sys.modules
    # a saved trace of a run that found the system by MODULE:NAME names it so
    turn = dict(trace={"system": "paged_pkg.system:paged", "paged_reply": "A BUS", "paged_question_words": 4,
                       "stage_ms": {"paged": 12.0}, "chunks": []}, branch="shouted")
    turn_renderer(RunRecord(trace_view="agents.runtime.trace_view"))(turn)
    assert "<th>shouted</th><td>A BUS</td>" in turn["trace_html"] and "<th>stage ms</th>" in turn["trace_html"]
    # what its page lays out is not listed again; what it does not read is
    assert "paged_reply" not in turn["extra"] and turn["extra"]["paged_question_words"] == 4


def test_a_page_is_named_beside_the_module_that_registered_its_system_unless_its_view_names_the_package(looker):
    import dataclasses

    from agents.runtime.package_files import page_name

    def with_page(page):
        return dataclasses.replace(LOOKER, view=View(funnel=LOOKER.view.funnel, turn_template=page))

    assert page_name(LOOKER) is None  # no page: its trace is listed key by key
    assert page_name(with_page("report_turn.html.j2")) == "tests:report_turn.html.j2"
    # a record built from another system's keeps that system's page
    assert page_name(with_page("agents.cruise:report_turn.html.j2")) == "agents.cruise:report_turn.html.j2"


def test_a_page_of_a_system_no_package_holds_has_no_name(registered_systems, monkeypatch):
    """A system registered by a top-level module, or by none, has no folder to keep a page in."""
    import dataclasses
    import types

    from agents.runtime.package_files import page_name

    monkeypatch.setitem(sys.modules, "lone_module", types.ModuleType("lone_module"))
    paged = dataclasses.replace(LOOKER, name="lone", view=View(funnel=LOOKER.view.funnel,
                                                               turn_template="report_turn.html.j2"))
    assert page_name(paged) is None  # registered by nothing
    registered_systems(paged, module="lone_module")
    assert page_name(paged) is None


def test_a_module_belongs_to_the_package_just_above_it_and_a_package_to_itself(monkeypatch):
    import types

    from agents.runtime.package_files import package_of

    monkeypatch.setitem(sys.modules, "lone_module", types.ModuleType("lone_module"))
    assert package_of("agents.runtime.package_files") == "agents.runtime"
    assert package_of("agents.runtime") == "agents.runtime"
    assert package_of("lone_module") is None  # top-level: no package
    assert package_of("a_module_never_imported") is None


def test_a_package_file_is_read_from_the_package_before_the_first_colon_by_its_slash_separated_path(
        tmp_path, monkeypatch):
    from agents.runtime.package_files import package_file

    (tmp_path / "filed_pkg" / "pages of turns").mkdir(parents=True)
    (tmp_path / "filed_pkg" / "__init__.py").write_text("")
    (tmp_path / "filed_pkg" / "pages of turns" / "turn:v2.j2").write_text("its page\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert package_file("filed_pkg:pages of turns/turn:v2.j2").read_text() == "its page\n"
    rows = Path(__file__).resolve().parents[1] / "agents" / "runtime" / "turn_rows.html.j2"
    assert package_file("agents:runtime/turn_rows.html.j2").read_text() == rows.read_text()
    assert package_file("no_such_package_here:page.j2") is None


# --------------------------------------------------------------------------- run through evaluate()
MINI = Path(__file__).resolve().parents[1] / "data" / "crag-mm-mini" / "single-turn"
BUILT: list[CruiseAgent] = []  # the agents evaluate() built, to read their engines and priors


class AnyStage(dict):
    """Every stage's reply, whichever it is: capitals."""

    def __missing__(self, stage):
        return lambda request: "A YELLOW SIGN"


class BlindStandInAgent(CruiseAgent):
    """The real CruiseAgent over stand-in engines whose VLM cannot see, as the cpu profile's
    text-only model cannot."""

    def __init__(self, search_pipeline=None, config=None):
        engines = Engines(router=ScriptedEngine({}), vlm=BlindEngine(AnyStage()),
                          reranker=FunctionReranker(lambda q, c: 0.0))
        super().__init__(search_pipeline, config, engines=engines)
        BUILT.append(self)


@pytest.mark.parametrize("found_by", ["entry point", "MODULE:NAME"])
def test_a_system_in_a_package_of_its_own_runs_through_evaluate_with_its_prompt_settings_page_and_the_photo(
        tmp_path, monkeypatch, perception_reads_a_sign, found_by):
    from agents.runtime.system import system_named
    from evaluator import evaluate
    from testkit.in_process import fresh_environment

    package, name = ("entry_shout_pkg", "entry_shout") if found_by == "entry point" else ("module_shout_pkg", "module_shout")
    folder = write_package(tmp_path / "site", package, name)
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    system = name if found_by == "entry point" else f"{package}.system:{name}"
    out = tmp_path / "run"
    BUILT.clear()
    env = dict(HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1", TRANSFORMERS_OFFLINE="1",
               HF_DATASETS_CACHE=str(tmp_path / "hf-datasets"))
    with fresh_environment(env):
        result = evaluate(agent=BlindStandInAgent, dataset=str(MINI), dataset_type="single-turn", num_conversations=3,
                          exact_conversations=True, profile="cpu", search="none", eval_model="None", no_progress=True,
                          display_conversations=0, output_dir=out,
                          set={"system": system, f"{name}_words": 2, "warmup_at_load": False})
    assert result.exit_status == 0 and result.scores["all"]["total"] == 3
    [agent] = BUILT
    asked = [request for stage, request in agent.engines.vlm.requests if stage == name]
    assert len(asked) == 3
    for request in asked:
        # its own prompt, at its own setting (2 words), the photo read as text for a VLM that cannot see
        assert request.messages[0]["content"] == "You answer in capitals, in at most 2 words."
        assert SIGN in request.messages[-1]["content"] and request.image is None
    traces = [json.loads(line) for line in (out / "traces.jsonl").read_text().splitlines()]
    assert {t["system"] for t in traces} == {system} and all(t["final_answer"] == "A YELLOW SIGN" for t in traces)
    assert all(t["harness_domain"] is None and t["harness_passages"] is None for t in traces)  # the local harness hands none over
    assert all(SIGN in t["perception"]["block"] for t in traces)
    # no stage has a prior on cpu; the ledger showed the deadline which stage calls a model
    assert agent.costs.priors == {} == stage_priors(system_named(system), agent.config)
    assert agent.costs.model_stages == {name} and {"perceive", f"{name}_tally"} <= set(agent.costs.samples)
    # the run recorded its prompt's hash and its settings
    described = json.loads((out / "run_config.json").read_text())["agent_description"]
    digest = hashlib.sha256((folder / "prompts" / f"{name}.txt").read_bytes()).hexdigest()
    assert described["prompts"][f"{package}:{name}.txt"] == digest
    assert (described["config"]["system"], described["config"][f"{name}_words"]) == (system, 2)
    # the report shows its turns by its own page
    pages = "".join(page.read_text() for page in (out / "report_turns").glob("*.html"))
    assert pages.count("<th>shouted</th><td>A YELLOW SIGN</td>") == 3


def test_a_system_reads_its_own_packages_prompt_before_that_of_a_package_one_of_its_stages_comes_from(
        tmp_path, monkeypatch, registered_systems):
    """Both packages hold prompts/greeting.txt: the system's own wins; a name only the stage's
    package holds is read from there."""
    import importlib

    from agents.runtime.package_files import own_files, running_prompt_folders
    from agents.stages.prompts import load_prompt_lines

    for package, words in (("home_of_greeter", "from the system's package"),
                           ("stage_of_greeter", "from the stage's package")):
        (tmp_path / package / "prompts").mkdir(parents=True)
        (tmp_path / package / "__init__.py").write_text("")
        (tmp_path / package / "steps.py").write_text("def step(batch):\n    return []\n")
        (tmp_path / package / "prompts" / "greeting.txt").write_text(words + "\n")
    (tmp_path / "stage_of_greeter" / "prompts" / "farewell.txt").write_text("the stage's own farewell\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    for name in ("home_of_greeter", "home_of_greeter.steps", "stage_of_greeter", "stage_of_greeter.steps"):
        # imported afresh from this test's folder, and forgotten after it (setitem restores the absence)
        monkeypatch.setitem(sys.modules, name, None)
        del sys.modules[name]
    importlib.import_module("home_of_greeter.steps")
    stage_steps = importlib.import_module("stage_of_greeter.steps")
    greeter = registered_systems(LOOKER.__class__(
        name="greeter", stages=(Stage("greet", batch_fn=stage_steps.step),), run=run_look, decide=LOOKER.decide,
        view=LOOKER.view), module="home_of_greeter.steps")
    with own_files(greeter):
        assert [package for package, _ in running_prompt_folders()] == ["home_of_greeter", "stage_of_greeter"]
        assert load_prompt_lines("greeting") == "from the system's package"
        assert load_prompt_lines("farewell") == "the stage's own farewell"
    assert running_prompt_folders() == ()


# --------------------------------------------------------------------------- a missing prompt, before the run
# The package above, resolved and built as the pre-flight resolves and builds a run (the real
# CruiseAgent over stand-in engines whose VLM sees), answers the pre-flight's dry run batch of the
# mini benchmark. Without its prompt every turn faults at its VLM stage, and the pre-flight's line
# names the prompt and the folders it was looked for in, the package's first, then the repository's.
PACKAGE_MODULES = ("settings", "s1_tally", "s2_shout", "system")


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
        for name in (package, *(f"{package}.{m}" for m in PACKAGE_MODULES)):
            monkeypatch.setitem(sys.modules, name, None)
            del sys.modules[name]
        importlib.invalidate_caches()
        return folder

    return write


def pre_flight(package: str, system: str) -> list[preflight.Check]:
    """Pre-flight's agent load, then its dry run where the agent loaded."""
    run = resolve_settings(EvaluationSettings(profile="cpu", agent=f"{__name__}:SeeingStandInAgent", search="none",
                                              set=(f"system={package}.system:{system}",)))
    agent, loaded = preflight.check_agent_load(run, None)
    if agent is None:
        return [loaded]
    return [loaded, *preflight.dry_run_checks(agent, preflight.sample_batch(str(MINI), 2), run)]


def missing(folder: Path, name: str, there: bool = True) -> str:
    return (f"prompt {name!r} not found: looked for {name}.txt in {folder.name}'s prompts/ ({folder / 'prompts'}"
            f"{'' if there else ', no such folder'}), then the repository's prompts/ ({REPO_ROOT / 'prompts'})")


def test_a_prompt_missing_from_the_package_fails_the_pre_flight_naming_the_packages_folder_first(package_on_path):
    folder = package_on_path("unprompted_pkg", "unprompted")
    (folder / "prompts" / "unprompted.txt").unlink()
    assert pre_flight("unprompted_pkg", "unprompted") == [preflight.Check(
        "agent load", False, "the agent did not load: PromptNotFound: system 'unprompted' declares prompts that are "
                             f"not there: {missing(folder, 'unprompted')}")]


def test_a_prompt_behind_a_gate_no_dry_run_turn_passes_fails_the_pre_flight(package_on_path):
    """The stage asks for its prompt only for questions of more than 40 words, which no dry-run
    turn has; the prompt it declares is looked for all the same, when the agent loads."""
    folder = package_on_path("gated_pkg", "gated")
    shout = folder / "s2_shout.py"
    shout.write_text(shout.read_text().replace(
        'batch.ask("gated", values, max_tokens=16)',
        'batch.ask("gated", values, max_tokens=16, wanted=[len(t.query.split()) > 40 for t in batch.turns])'))
    (folder / "prompts" / "gated.txt").unlink()
    [loaded] = pre_flight("gated_pkg", "gated")
    assert loaded.ok is False and loaded.detail.endswith(missing(folder, "gated"))


def test_a_package_without_a_prompts_folder_fails_the_pre_flight_naming_the_folder_it_lacks(package_on_path):
    folder = package_on_path("folderless_pkg", "folderless")
    for prompt in (folder / "prompts").iterdir():
        prompt.unlink()
    (folder / "prompts").rmdir()
    [loaded] = pre_flight("folderless_pkg", "folderless")
    assert loaded.ok is False and loaded.detail.endswith(missing(folder, "folderless", there=False))


def test_a_package_with_its_prompt_passes_the_pre_flights_stage_faults_check(package_on_path):
    package_on_path("prompted_ok_pkg", "prompted_ok")
    loaded, answered, faults = pre_flight("prompted_ok_pkg", "prompted_ok")
    assert loaded.ok and answered.ok and faults == preflight.Check("stage faults", True, "none in the dry run's 2 turns")


def test_an_agent_that_reports_no_traces_is_not_checked_for_stage_faults():
    assert preflight.check_stage_faults({"engine_calls": []}, 2).ok is None


def test_a_prompt_missing_from_the_package_stops_the_run_before_any_turn_naming_it(package_on_path, tmp_path):
    """The same package run through local_evaluation.py: the agent does not load, in one line
    naming the prompt and the folders it was looked for in, and no turn is asked."""
    import local_evaluation
    from testkit.in_process import offline_env, run_main

    folder = package_on_path("unprompted_run_pkg", "unprompted_run")
    (folder / "prompts" / "unprompted_run.txt").unlink()
    out = tmp_path / "run"
    argv = ["--dataset", str(MINI), "--dataset-type", "single-turn", "--num-conversations", "3",
            "--exact-conversations", "--profile", "cpu", "--agent", f"{__name__}:SeeingStandInAgent",
            "--search", "none", "--eval-model", "None", "--no_progress", "--display-conversations", "0",
            "--output-dir", str(out), "--set", "system=unprompted_run_pkg.system:unprompted_run"]
    proc = run_main(local_evaluation.main, argv, env=offline_env(tmp_path), columns=1000)
    assert proc.returncode == 1, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert (f"PromptNotFound: system 'unprompted_run' declares prompts that are not there: "
            f"{missing(folder, 'unprompted_run')}") in proc.stderr
    assert "Traceback" not in proc.stderr and not (out / "traces.jsonl").exists()

"""One registry (agents/registry.py `Registry`) holds systems, engines, profiles, stacks and search
providers; one function (`load_object`) reads `MODULE:NAME`. Names a user types get the closest
names when wrong, the installed plugins included; the configuration's valid names do not change
as systems load."""
from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path

import pytest

from agents.config.fields import field_names
from agents.config.loading import load_config, load_config_from_settings
from agents.config.set_strings import parse_settings
from agents.engines.registry import CHAT_ENGINES, RERANKERS, chat_engine_kind
from agents.profiles import PROFILES, get_profile
from agents.registry import Registry, load_object
from agents.runtime.system import SYSTEMS
from agents.settings import SettingError
from agents.stacks import STACKS, get_stack
from evaluator.search.providers import SEARCH_PROVIDERS, load_provider

REPO_ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Thing:
    name: str


def test_every_registry_of_the_package_is_one_registry_class():
    for registry in (SYSTEMS, CHAT_ENGINES, RERANKERS, PROFILES, STACKS, SEARCH_PROVIDERS):
        assert isinstance(registry, Registry), registry


def test_a_taken_name_is_refused_naming_both_modules_and_a_scope_forgets_its_records():
    things: Registry[Thing] = Registry("thing")
    things.register(Thing("a"), module="pkg.one")
    with pytest.raises(ValueError, match=r"^a thing named 'a' is registered already, by pkg\.one; pkg\.two cannot"):
        things.register(Thing("a"), module="pkg.two")
    again = things.register(Thing("a"), module="pkg.one")  # its own module may register it again
    assert things["a"] is again and things.registered_by("a") == "pkg.one"
    with things.scoped():
        things.register(Thing("b"), module="pkg.two")
        assert sorted(things) == ["a", "b"]
    assert sorted(things) == ["a"] and "b" not in things


def test_an_unknown_name_gets_the_closest_names_in_one_line():
    things: Registry[Thing] = Registry("thing")
    for name in ("keyword_gate", "cruise", "sam_rag"):
        things.register(Thing(name), module="pkg")
    message = things.unknown("keyword_gat")
    assert message.endswith("did you mean 'keyword_gate'?") and "\n" not in message
    assert "did you mean" not in things.unknown("zzzz")
    # each registry a user names through the command line says so too
    with pytest.raises(ValueError, match=r"did you mean 'l40s'\?$"):
        get_profile("l40")
    with pytest.raises(ValueError, match=r"did you mean 'llama-3.2-vision'"):
        get_stack("llama-3.2-visio")
    with pytest.raises(ValueError, match=r"did you mean 'transformers'\?$"):
        chat_engine_kind("transformer")
    with pytest.raises(ValueError, match=r"did you mean 'qa_dragon'"):
        load_config("cpu", system="qa_dragn")
    with pytest.raises(ValueError, match=r"did you mean 'no_cov' or 'no_cov_no_sc'\?$"):
        load_config("cpu", "no_covv")


def installed_plugin(tmp_path: Path, monkeypatch, group: str, line: str) -> None:
    """A package installed the way pip writes one (a dist-info with its entry points)."""
    info = tmp_path / "my_plugin-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: my-plugin\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(f"[{group}]\n{line}\n")
    monkeypatch.syspath_prepend(str(tmp_path))


def test_the_unknown_system_message_names_the_installed_plugins(tmp_path, monkeypatch):
    installed_plugin(tmp_path, monkeypatch, "cruise_agent.systems", "keyword_gate = my_keyword_gate_not_imported")
    with pytest.raises(ValueError) as refused:
        load_config("cpu", system="keyword_gat")
    message = str(refused.value)
    # the environment may hold other plugins; this one is among those named
    installed = re.search(r", one installed (\[[^]]*\])", message)
    assert installed and "'keyword_gate'" in installed[1] and message.endswith("did you mean 'keyword_gate'?")


def test_a_search_provider_is_found_by_module_by_module_and_name_and_by_entry_point(tmp_path, monkeypatch):
    (tmp_path / "my_provider_module.py").write_text("class Mine:\n    build_command = 'x'\nPROVIDER = Mine()\n"
                                                    "OTHER = Mine()\n")
    installed_plugin(tmp_path, monkeypatch, "cruise_agent.search_providers", "mine = my_provider_module:OTHER")
    import my_provider_module

    with SEARCH_PROVIDERS.scoped():
        assert load_provider("my_provider_module") is my_provider_module.PROVIDER
        assert load_provider("my_provider_module:OTHER") is my_provider_module.OTHER
        assert load_provider("mine") is my_provider_module.OTHER
        with pytest.raises(ValueError, match="^search provider 'my_provider_module:NONE': module 'my_provider_module' "
                                             "has no 'NONE'$"):
            load_provider("my_provider_module:NONE")


def test_load_object_reads_module_and_name_and_refuses_a_bad_one_in_one_line():
    assert load_object("agents.registry:Registry") is Registry
    assert load_object("agents.registry:Registry.register") is Registry.register
    for bad, said in [("agents.registry", "expected MODULE:NAME"), (":Registry", "expected MODULE:NAME"),
                      ("no_such_module_here:X", "no module 'no_such_module_here'"),
                      ("agents.registry:Nothing", "module 'agents.registry' has no 'Nothing'")]:
        with pytest.raises(ValueError, match=said):
            load_object(bad)


def test_a_module_that_needs_a_package_not_installed_is_refused_in_one_line(tmp_path, monkeypatch):
    (tmp_path / "needs_a_missing_package.py").write_text("import no_such_dependency_here\nX = 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ValueError, match="^--agent 'needs_a_missing_package:X': module 'needs_a_missing_package' "
                                         "needs 'no_such_dependency_here', which is not installed$"):
        load_object("needs_a_missing_package:X", what="--agent")
    with pytest.raises(ValueError, match="^system 'needs_a_missing_package:mine': module 'needs_a_missing_package' needs"):
        load_config("cpu", system="needs_a_missing_package:mine")


def test_the_package_reads_module_and_name_in_one_function_only():
    """No module but agents/registry.py splits a `MODULE:NAME` string and imports what it names:
    a file that calls importlib.import_module on the part before a colon is a second reader."""
    readers = []
    for package in ("agents", "evaluator", "tools", "minibench", "integrations"):
        for path in sorted((REPO_ROOT / package).rglob("*.py")):
            if path == REPO_ROOT / "agents" / "registry.py":
                continue
            tree = ast.parse(path.read_text(encoding="utf-8"))
            for node in ast.walk(tree):
                if isinstance(node, ast.FunctionDef):
                    source = ast.get_source_segment(path.read_text(encoding="utf-8"), node) or ""
                    if 'partition(":")' in source and "import_module" in source and "getattr(" in source:
                        readers.append(f"{path.relative_to(REPO_ROOT)}:{node.name}")
    assert readers == []


@dataclass
class GateSettings:
    min_overlap: int = 2


def test_the_valid_setting_names_do_not_change_as_systems_load(registered_systems):
    from agents.runtime.system import Stage, System, View

    before = set(field_names())
    registered_systems(System(name="keyword_gate", stages=(Stage("kwgate_look"),), run=lambda *a: ([], []),
                              decide=lambda trace, cfg: None, view=View(funnel=lambda t, c: {}),
                              settings=GateSettings))
    assert set(field_names()) == before and "min_overlap" not in field_names()
    # a misspelled setting of the running system gets its own field's name
    with pytest.raises(SettingError) as misspelled:
        parse_settings(["system=keyword_gate", "min_overlapp=3"])
    assert str(misspelled.value).endswith("did you mean 'min_overlap'?") and "\n" not in str(misspelled.value)
    assert parse_settings(["system=keyword_gate", "min_overlap=3"]) == {"system": "keyword_gate", "min_overlap": 3}
    # its setting given without system= (so under CRUISE) says which system it belongs to
    with pytest.raises(SettingError, match="^min_overlap is a setting of system keyword_gate, not of system cruise$"):
        load_config_from_settings("cpu", None, ["min_overlap=3"])
    with pytest.raises(SettingError, match="^min_overlap is a setting of system keyword_gate, not of system sam_rag$"):
        load_config_from_settings("cpu", "sam_rag", ["min_overlap=3"])
    with pytest.raises(SettingError, match="^min_overlap is a setting of system keyword_gate, not of system cruise$"):
        load_config("cpu", min_overlap=3)

"""The configuration is handed its system's settings class and looks no system up
(agents/config/cruise_config.py): building, changing and reading a CruiseConfig asks nothing of
the registry, which imports the systems by name, and the container's modules import neither the
registry nor a system package, not even inside a function. The builder that finds the class
(agents/config/loading.py) is the one place that asks.
"""
from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

import pytest

from agents.config.cruise_config import CruiseConfig
from agents.settings import SettingError

REPO_ROOT = Path(__file__).resolve().parent.parent
CONTAINER = "agents.config.cruise_config"
# the registry (which imports the systems by name) and the systems' own packages
LOOKS_A_SYSTEM_UP = ("agents.runtime.system", "agents.cruise", "agents.peers")


@dataclass
class MineSettings:
    mine_rounds: int = 2


def test_a_configuration_is_built_changed_and_read_without_asking_the_registry(monkeypatch):
    from agents.runtime import system as registry

    def looked_up(*args, **kwargs):
        raise AssertionError("the configuration looked a system up in the registry")

    # a look-up of the whole registry goes through registered()
    monkeypatch.setattr(registry, "registered", looked_up)
    bare = CruiseConfig()
    assert bare.own is None and not bare.has("mine_rounds") and bare.has("tau_low")
    mine = bare.for_system("mine", MineSettings).replace(mine_rounds=3, tau_low=0.5)
    assert (mine.system, mine.own, mine.value("mine_rounds"), mine.answer.tau_low) == ("mine", MineSettings(3), 3, 0.5)
    assert mine.for_system("mine", MineSettings).own == MineSettings(3)  # its own settings, kept
    assert mine.for_system("other", None).own is None and mine.flat()["mine_rounds"] == 3
    with pytest.raises(SettingError, match="^tau_ret is not a setting of system mine$"):
        mine.replace(tau_ret=0.1)


def module_file(module: str) -> Path | None:
    base = REPO_ROOT.joinpath(*module.split("."))
    for path in (base.with_suffix(".py"), base / "__init__.py"):
        if path.exists():
            return path
    return None


def imports_of(module: str) -> set[str]:
    """The project's modules `module` imports, those inside functions too."""
    path = module_file(module)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        names = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(package.split(".")[: len(package.split(".")) - node.level + 1] + [base]).strip(".")
            names = [f"{base}.{alias.name}" for alias in node.names]
        for name in names:
            while name and module_file(name) is None:
                name = name.rpartition(".")[0]
            if name:
                found.add(name)
    return found


def reached_from(start: str) -> set[str]:
    seen, todo = set(), [start]
    while todo:
        module = todo.pop()
        if module not in seen:
            seen.add(module)
            todo += sorted(imports_of(module) - seen)
    return seen


def test_the_containers_modules_import_no_system_nor_the_registry():
    reached = reached_from(CONTAINER)
    assert {"agents.config.groups", "agents.config.choices", "agents.settings"} <= reached
    assert sorted(m for m in reached if any(m == p or m.startswith(p + ".") for p in LOOKS_A_SYSTEM_UP)) == []


def test_the_field_names_module_imports_no_system_nor_the_registry():
    """agents/config/fields.py knows the configuration's own fields only: the names a --set may take
    do not change as systems load (a system's own are read off its class when it is resolved)."""
    reached = reached_from("agents.config.fields")
    assert sorted(m for m in reached if any(m == p or m.startswith(p + ".") for p in LOOKS_A_SYSTEM_UP)) == []

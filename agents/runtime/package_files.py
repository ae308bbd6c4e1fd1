"""Where a system's own files are found: in the package of the module that registered it, and in
the packages its stages' functions come from, so that a system in a package of its own (installed,
or a folder on the path) keeps its prompts and its turn page there and touches no file of this
repository.

- Prompts: a stage asks for its prompt by name (`ask_vlm(engine, "name", ...)`,
  agents/stages/prompts.py); while a system answers a batch (`own_files`, entered by the agent
  around each batch and by the warm-up), `prompts/<name>.txt` is looked for in the `prompts/`
  folder of each of its packages first (`prompt_folders`), then in the repository's. The run's
  recorded prompt hashes cover those folders too.
- The turn page: `View.turn_template` is named from the folder of the module that registered the
  system; `page_name` names it for the report as `PACKAGE:PATH`, which the report's template
  loader reads from that package (evaluator/report/html.py), as the runtime's view reads its
  keys (agents/runtime/trace_view.py).

Packages are read through importlib.resources, so a wheel, an editable install and a folder on
sys.path serve alike. A system registered by a top-level module (no package) has no folder of its
own: its prompts are the repository's and its trace is listed key by key.
"""
from __future__ import annotations

import contextlib
import functools
import importlib
import sys
from contextvars import ContextVar
from importlib.resources import files
from importlib.resources.abc import Traversable

from agents.runtime.system import registered_by

_RUNNING: ContextVar[tuple[tuple[str, Traversable], ...]] = ContextVar("prompt_folders", default=())


def package_of(module: str | None) -> str | None:
    """The package a module belongs to (itself for a package's __init__); None for a top-level
    module, one not imported, or none."""
    found = sys.modules.get(module)
    if found is None:
        return None
    if hasattr(found, "__path__"):  # a package
        return module
    return module.rpartition(".")[0] or None


def home_package(system) -> str | None:
    """The package of the module that registered `system`."""
    return package_of(registered_by(system.name))


@functools.lru_cache(maxsize=64)
def prompt_search(system) -> tuple[tuple[str, Traversable], ...]:
    """(package, its prompts/ folder) for each package whose prompts `system`'s stages read before
    the repository's, in that order: the package that registered it, whether or not it has such a
    folder yet (a prompt found nowhere is refused naming it: agents/stages/prompts.py), then those
    of its stages' functions (a stage from another package) that have one."""
    home = home_package(system)
    stages = [package_of(s.batch_fn.__module__) for s in system.stages if s.batch_fn is not None]
    found = []
    for package in dict.fromkeys(p for p in (home, *stages) if p):
        folder = files(package) / "prompts"
        if package == home or folder.is_dir():
            found.append((package, folder))
    return tuple(found)


def prompt_folders(system) -> tuple[tuple[str, Traversable], ...]:
    """`prompt_search` less the packages that have no prompts/ folder."""
    return tuple((package, folder) for package, folder in prompt_search(system) if folder.is_dir())


@contextlib.contextmanager
def own_files(system):
    """While `system` answers: its stages' prompts are looked for in its packages first."""
    token = _RUNNING.set(prompt_search(system))
    try:
        yield
    finally:
        _RUNNING.reset(token)


def running_prompt_search() -> tuple[tuple[str, Traversable], ...]:
    """The prompts/ folders of the system answering now, in the order they are read, those its
    packages lack included (none outside a batch)."""
    return _RUNNING.get()


def running_prompt_folders() -> tuple[tuple[str, Traversable], ...]:
    """The prompt folders of the system answering now, in the order they are read (none outside
    a batch)."""
    return tuple((package, folder) for package, folder in _RUNNING.get() if folder.is_dir())


def page_name(system) -> str | None:
    """`PACKAGE:PATH` of `system`'s turn page: as its view names it where that is already
    `PACKAGE:PATH` (a record built from another system's keeps that system's page), else beside
    the module that registered it (None: it has no page, or no package to hold one)."""
    page = system.view.turn_template
    if page is None or ":" in page:
        return page
    package = home_package(system)
    return f"{package}:{page}" if package else None


def package_file(name: str) -> Traversable | None:
    """The file `PACKAGE:PATH` names, read from that package (None: no such package)."""
    package, _, path = name.partition(":")
    try:
        importlib.import_module(package)
    except ImportError:
        return None
    return files(package).joinpath(*path.split("/"))

"""One registry of named records, and one reader of `MODULE:NAME`.

`Registry[T]` holds the records of one kind by name: the systems (agents/runtime/system.py), the
chat engines and reranker backends (agents/engines/registry.py), the machines
(agents/profiles.py), the model stacks (agents/stacks.py) and the search providers
(evaluator/search/providers.py). Each is read as a mapping (`REGISTRY[name]`, `in`, `.values()`);
`named(name)` is the look-up a user's word goes through: it finds a record registered here, one a
module registers when `MODULE:NAME` names it, or one an installed package offers as an entry
point of the registry's group, and refuses any other name in one line with the closest names
(difflib) among those registered and those installed.

`load_object("MODULE:NAME")` is the one function that turns such a string into the object it
names (an agent class, an engine's build hook, a trace view, a search provider).
"""
from __future__ import annotations

import difflib
import importlib
import sys
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from types import ModuleType
from typing import Generic, TypeVar

T = TypeVar("T")


def split_spec(spec: str) -> tuple[str, str]:
    """"MODULE:NAME" -> (MODULE, NAME); ("", spec) where there is no colon."""
    module, colon, name = str(spec).partition(":")
    return (module, name) if colon else ("", str(spec))


def import_named(module: str, said: str):
    """Import `module` for what the user `said`; a module that is not there, or one that needs a
    package that is not installed, is refused in one line that names the missing one."""
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as exc:
        missing = exc.name or str(exc)
        if module == missing or module.startswith(missing + "."):
            raise ValueError(f"{said}: no module {missing!r} to import it from") from None
        raise ValueError(f"{said}: module {module!r} needs {missing!r}, which is not installed") from None


def load_object(spec: str, *, default_name: str | None = None, what: str = "object"):
    """The object `MODULE:NAME` names (NAME may be dotted: `module:Class.attr`), importing MODULE.
    `default_name`: the name read where `spec` is a bare MODULE. ValueError in one line where the
    string is no MODULE:NAME, its module (or a package it needs) is not there, or the module has
    no such name."""
    module_name, name = split_spec(spec)
    if not module_name and default_name:
        module_name, name = name, default_name
    if not module_name or not name:
        raise ValueError(f"{what} {spec!r}: expected MODULE:NAME")
    found = import_named(module_name, f"{what} {spec!r}")
    for part in name.split("."):
        if not hasattr(found, part):
            raise ValueError(f"{what} {spec!r}: module {module_name!r} has no {name!r}")
        found = getattr(found, part)
    return found


def closest(name: str, choices) -> list[str]:
    """The choices nearest `name` in spelling, best first: difflib's three at most, of a ratio of
    0.6 or more (its defaults)."""
    return difflib.get_close_matches(str(name), sorted(set(choices)))


def suggestion(name: str, choices) -> str:
    """"; did you mean 'a' or 'b'?" where a choice is near `name` (the end of a one-line
    refusal), else ""."""
    near = closest(name, choices)
    return f"; did you mean {' or '.join(repr(n) for n in near)}?" if near else ""


class RegistrationRefused(ValueError):
    """A record its registry cannot take (a fault in it, or a name already taken)."""


class Registry(Mapping, Generic[T]):
    """Records of one `kind` by name (the module's docstring).

    kind          the word messages use ("system", "engine", "profile", ...)
    group         the entry point group installed packages offer records in (None: none)
    built_in      modules imported on the first look-up, which register the built-in records
    check         record -> a fault in one line or None; a faulty record is refused
    refused       the exception a refused record raises (a subclass of RegistrationRefused's base)
    name_of       record -> its name (default: its `name`)
    """

    def __init__(self, kind: str, *, group: str | None = None, built_in: tuple[str, ...] = (),
                 check: Callable[[T], str | None] | None = None, refused: type[Exception] = RegistrationRefused,
                 name_of: Callable[[T], str] = lambda record: record.name):
        self.kind, self.group, self.built_in = kind, group, built_in
        self._check, self._refused, self._name_of = check, refused, name_of
        self._records: dict[str, T] = {}
        self._owners: dict[str, str] = {}
        self._loading = False  # pragma: no mutate: read as a truth value only (None reads the same)
        self._loaded = not built_in

    # ------------------------------------------------------------------ registering
    # not mutated: it names its caller's module from the frame above it, where a mutation tool's
    # trampoline would stand (what it does besides is `_add`'s)
    def register(self, record: T, *, module: str | None = None, name: str | None = None, _depth: int = 1) -> T:  # pragma: no mutate block
        """Add `record`; returns it (`NAME = REGISTRY.register(Record(...))`). A record `check`
        finds wrong is refused, naming it. A name registered already by another module is
        refused, naming both modules; the module that registered it may register it again (a
        reload, a module imported twice), and that record replaces its own. `module`: the module
        to name as the registrar where the caller is not it (a test fixture); `name`: the name
        to register it under where the record carries none (a search provider)."""
        return self._add(record, module or sys._getframe(_depth).f_globals.get("__name__", "an unknown module"), name)

    def _add(self, record: T, module: str, name: str | None) -> T:
        """`register` of `record` by `module`."""
        self._load_built_in()
        fault = self._check(record) if self._check else None
        name = name or (getattr(record, "name", record) if fault else self._name_of(record))
        if fault:
            raise self._refused(f"{self.kind} {name!r} from {module} refused: {fault}")
        taken = self._owners.get(name)
        if taken is not None and taken != module:
            raise self._refused(f"a {self.kind} named {name!r} is registered already, by {taken}; {module} cannot "
                                "register another of that name: give it a name of its own")
        self._records[name] = record
        self._owners[name] = module
        return record

    def _load_built_in(self) -> None:
        if self._loaded or self._loading:
            return
        self._loading = True
        try:
            for module in self.built_in:
                importlib.import_module(module)
            self._loaded = True
        finally:
            self._loading = False

    # ------------------------------------------------------------------ reading (a Mapping)
    def __getitem__(self, name: str) -> T:
        self._load_built_in()
        return self._records[name]

    def __iter__(self) -> Iterator[str]:
        self._load_built_in()
        return iter(dict(self._records))

    def __len__(self) -> int:
        self._load_built_in()
        return len(self._records)

    def __contains__(self, name) -> bool:
        self._load_built_in()
        return name in self._records

    # tests replace a record for their own run with monkeypatch.setitem; code registers
    def __setitem__(self, name: str, record: T) -> None:
        self._records[name] = record
        self._owners[name] = "a test"

    def __delitem__(self, name: str) -> None:
        del self._records[name]
        del self._owners[name]

    def records(self) -> dict[str, T]:
        """A copy of every record registered so far (the built-in ones first)."""
        self._load_built_in()
        return dict(self._records)

    def registrants(self) -> dict[str, str]:
        """Each name registered so far -> the module that registered it."""
        return dict(self._owners)

    def registered_by(self, name: str) -> str | None:
        self._load_built_in()
        return self._owners.get(name)

    def installed(self) -> list[str]:
        """The names installed packages offer as entry points of the registry's group."""
        if not self.group:
            return []
        from importlib.metadata import entry_points

        return sorted({entry.name for entry in entry_points(group=self.group)})

    # ------------------------------------------------------------------ finding by a user's word
    def find(self, name: str) -> T | None:
        """The record registered as `name`, else found where `name` says: "MODULE:NAME" imports
        MODULE (whose import registers NAME), the name of an entry point of the group loads what
        it names. None where none is found; ValueError in one line where the module named (or
        one it needs) is not there, or an entry point names what its module lacks."""
        self._load_built_in()
        if name in self._records:
            return self._records[name]
        module, own_name = split_spec(name)
        if module:
            import_named(module, f"{self.kind} {name!r}")
            return self._records.get(own_name)
        entry = self._entry_point(name)
        if entry is not None:
            loaded = self._load_entry(entry)
            # an entry point names a module that registers its record (a system), or the record
            # itself (a search provider's object), registered here under its name
            if name not in self._records and not isinstance(loaded, ModuleType):
                self.register(loaded, module=entry.value, name=name)
            return self._records.get(name)
        return None

    def _entry_point(self, name: str):
        """The installed entry point of the group called `name`, or None."""
        if not self.group:
            return None
        from importlib.metadata import entry_points

        return next((entry for entry in entry_points(group=self.group) if entry.name == name), None)

    def _entry_said(self, entry) -> str:
        """How a message names an entry point: its line and the distribution that offers it."""
        # entry_points() gives each entry point with the distribution that declares it
        return (f"{self.kind} {entry.name!r}: entry point '{entry.name} = {entry.value}' of distribution "
                f"{entry.dist.name} {entry.dist.version} ({self.group})")

    def _load_entry(self, entry):
        """What an entry point names, imported as `load_object` imports MODULE:NAME: a module not
        there, or a name the module lacks, is refused in one line naming the distribution."""
        said = self._entry_said(entry)
        found = import_named(entry.module, said)
        for part in entry.attr.split(".") if entry.attr else ():
            if not hasattr(found, part):
                raise ValueError(f"{said}: module {entry.module!r} has no {entry.attr!r}")
            found = getattr(found, part)
        return found

    def named(self, name: str, *, hint: str = "") -> T:
        """`find(name)`, or ValueError in one line: where `name` says a module that imported
        but did not register it, that; else the closest names, every one registered and
        installed, and `hint` (how else to name one)."""
        found = self.find(name)
        if found is None:
            raise ValueError(self.registered_nothing(name) or self.unknown(name, hint=hint))
        return found

    def registered_nothing(self, name: str) -> str | None:
        """Where `name` is MODULE:NAME or an installed entry point whose module imported but
        registered no record of that name: why, in one line (what the module registered
        instead, if anything). None for any other name."""
        module, own_name = split_spec(name)
        said = f"{self.kind} {name!r}: module {module!r}"
        if not module:
            entry = self._entry_point(name)
            if entry is None:
                return None
            module, own_name = entry.module, name
            said = f"{self._entry_said(entry)}: module {module!r}"
        # a package's records may come from its modules (its __init__ imports them)
        by_it = sorted(n for n, owner in self._owners.items() if owner == module or owner.startswith(module + "."))
        if by_it:
            return f"{said} registered no {self.kind} named {own_name!r}, only {by_it}{suggestion(own_name, by_it)}"
        return f"{said} registered no {self.kind}; it must register one named {own_name!r} when it is imported"

    def unknown(self, name: str, *, hint: str = "") -> str:
        registered = sorted(self._records)
        installed = [n for n in self.installed() if n not in self._records]
        choices = f"choose one of {registered}" + (f", one installed {installed}" if installed else "")
        return f"unknown {self.kind} {name!r}; {choices}{hint}{suggestion(name, registered + installed)}"

    # ------------------------------------------------------------------ scopes
    @contextmanager
    def scoped(self) -> Iterator[None]:
        """A scope whose registrations end with it: on leaving, the registry is as it was on
        entering (the built-in records are loaded first and stay), and a module first imported
        inside it that registered a record is forgotten (sys.modules), so that the next look-up
        imports it and registers it again. For tests and for trying a record in a session."""
        self._load_built_in()
        records, owners, modules = dict(self._records), dict(self._owners), set(sys.modules)
        try:
            yield
        finally:
            for module in set(self._owners.values()) - modules:
                sys.modules.pop(module, None)
            self._records.clear()
            self._records.update(records)
            self._owners.clear()
            self._owners.update(owners)

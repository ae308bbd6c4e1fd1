"""Every flat field name and where it lives, the registered systems' own included, read off the
registry of systems (agents/runtime/system.py) each time it is asked: a user's system registers
after this module loads, and a test's is gone when its scope closes.

    GROUPS         every settings group by name: the shared ones, then each system's own (by the
                   system's name)
    FIELD_GROUPS   flat field name -> the name of the group that holds it
    field_names()  every flat name; field_type(name) its annotation and metadata;
                   field_default(name) its declared default
"""
from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from functools import cache

from agents.config.cruise_config import SHARED_FIELD_GROUPS, SHARED_GROUPS, TOP_FIELDS, CruiseConfig, own_field_names
from agents.runtime.system import registered, registry_version
from agents.settings import field_types

# Fields that say which record was applied, not a setting of their own: set through
# load_config's arguments, never through --set.
RECORD_FIELDS = ("profile", "stack", "preset", "mode_fallbacks")


@cache
def _system_groups(version: int) -> dict[str, type]:
    groups = {name: system.settings for name, system in registered().items() if system.settings is not None}
    names = [*TOP_FIELDS, *SHARED_GROUPS, "own", *SHARED_FIELD_GROUPS,
             *(name for cls in groups.values() for name in own_field_names(cls))]
    if len(set(names)) < len(names):  # a flat name must say one field: --set, presets and records use it
        raise TypeError(f"CruiseConfig: field names used twice: {sorted({n for n in names if names.count(n) > 1})}")
    return groups


def system_groups() -> dict[str, type]:
    """Each registered system's name -> the dataclass of its own settings (those that have one)."""
    return _system_groups(registry_version())


def system_field_owners() -> dict[str, str]:
    """A system's own flat field name -> the system that holds it."""
    return {name: system for system, cls in system_groups().items() for name in own_field_names(cls)}


class _Live(Mapping):
    """A read-only mapping recomputed from the registry on each read."""

    def __init__(self, read):
        self._read = read

    def __getitem__(self, key):
        return self._read()[key]

    def __iter__(self):
        return iter(self._read())

    def __len__(self):
        return len(self._read())


GROUPS: Mapping[str, type] = _Live(lambda: {**SHARED_GROUPS, **system_groups()})
FIELD_GROUPS: Mapping[str, str] = _Live(lambda: {**SHARED_FIELD_GROUPS, **system_field_owners()})


def field_names() -> set[str]:
    """Every flat field name, the records' and every system's included."""
    return set(TOP_FIELDS) | set(FIELD_GROUPS)


def _declared(name: str) -> tuple[type, dataclasses.Field]:
    """The dataclass that declares flat field `name`, and its field."""
    owner = GROUPS[FIELD_GROUPS[name]] if name in FIELD_GROUPS else CruiseConfig
    return owner, next(f for f in dataclasses.fields(owner) if f.name == name)


@cache
def _field_type(name: str, version: int):
    owner, declared = _declared(name)
    return field_types(owner)[name], declared.metadata


def field_type(name: str):
    """A flat field's annotation and metadata (as the registry holds it now: two systems
    registered one after the other may declare a field of the same name apart)."""
    return _field_type(name, registry_version())


def field_default(name: str):
    """A flat field's declared default (the paper's value where the paper gives one)."""
    _, declared = _declared(name)
    return declared.default_factory() if declared.default is dataclasses.MISSING else declared.default


def not_held(cfg: CruiseConfig, name: str) -> str:
    """Why `cfg` cannot take flat field `name`, in one line: no field has that name, or another
    system holds it."""
    owner = system_field_owners().get(name)
    if owner is None:
        return f"unknown config field {name!r}"
    return f"{name} is a setting of system {owner}, not of system {cfg.system}"

"""Every flat field name the configuration itself declares, and where it lives: fixed, read off
CruiseConfig and its shared groups, so that the set of valid names does not change as systems
load. A system's own settings are read off its settings dataclass when the system is resolved
(agents/config/loading.py hands the class in as `own`); nothing here imports the registry.

    GROUPS         the shared settings groups by name
    FIELD_GROUPS   a shared group's flat field name -> the name of its group
    field_names()  the records' and the shared groups' flat names
    field_type(name, own)     its annotation and metadata (`own`: the running system's settings
                              class or instance, for a field of its own)
    field_default(name, own)  its declared default
"""
from __future__ import annotations

import dataclasses

from agents.config.cruise_config import SHARED_FIELD_GROUPS, SHARED_GROUPS, TOP_FIELDS, CruiseConfig, own_field_names
from agents.settings import field_types

# Fields that say which record was applied, not a setting of their own: set through
# load_config's arguments, never through --set.
RECORD_FIELDS = ("profile", "stack", "preset", "mode_fallbacks")

GROUPS: dict[str, type] = dict(SHARED_GROUPS)
FIELD_GROUPS: dict[str, str] = dict(SHARED_FIELD_GROUPS)
_FIELD_NAMES = frozenset(TOP_FIELDS) | frozenset(FIELD_GROUPS)


def field_names() -> frozenset[str]:
    """The flat names the configuration declares (a system's own: `own_field_names`)."""
    return _FIELD_NAMES


def own_class(own) -> type | None:
    return own if own is None or isinstance(own, type) else type(own)


def shared_name_clashes(own) -> list[str]:
    """A system's own field names that are a shared field's too (a flat name must say one field:
    --set, presets and records use it)."""
    return sorted(own_field_names(own) & _FIELD_NAMES)


def _declared(name: str, own=None) -> tuple[type, dataclasses.Field]:
    """The dataclass that declares flat field `name` (the records', a shared group, or `own`), and
    its field; KeyError for a name none declares."""
    if name in FIELD_GROUPS:
        owner = GROUPS[FIELD_GROUPS[name]]
    elif name in TOP_FIELDS:
        owner = CruiseConfig
    elif name in own_field_names(own):
        owner = own_class(own)
    else:
        raise KeyError(name)
    return owner, next(f for f in dataclasses.fields(owner) if f.name == name)


def field_type(name: str, own=None):
    """A flat field's annotation and metadata."""
    owner, declared = _declared(name, own)
    return field_types(owner)[name], declared.metadata


def field_default(name: str, own=None):
    """A flat field's declared default (the paper's value where the paper gives one)."""
    _, declared = _declared(name, own)
    return declared.default_factory() if declared.default is dataclasses.MISSING else declared.default

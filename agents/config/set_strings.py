"""`--set FIELD=VALUE` strings (the evaluator's and the tools' flags, CRUISE_<FIELD> at the AIcrowd
boundary) as typed keyword settings, each typed by its field's annotation, and the one-line
refusal of a name the running system does not hold.

The names a `--set` may take are fixed: the configuration's own (agents/config/fields.py) and
the running system's settings, read off its settings dataclass once the system is resolved
(`system=` in the same list, else the one the caller says, else the default); no other system
that happens to be loaded changes them.
"""
from __future__ import annotations

from agents.config.cruise_config import CruiseConfig, own_field_names
from agents.config.fields import RECORD_FIELDS, field_names, field_type
from agents.registry import suggestion
from agents.runtime.system import registered, system_named
from agents.settings import SettingError, parse_setting


def owners_of(name: str) -> list[str]:
    """The systems registered now whose own settings declare `name` (for the refusal only)."""
    return sorted(system for system, record in registered().items() if name in own_field_names(record.settings))


def held_elsewhere(running: str, name: str) -> str | None:
    """"NAME is a setting of system OTHER, not of system RUNNING" (docs/profiles.md) where a
    registered system other than the running one holds `name`, else None."""
    owners = sorted(set(owners_of(name)) - {running})
    return f"{name} is a setting of system {' and '.join(owners)}, not of system {running}" if owners else None


def not_held(system: str, own, name: str) -> str:
    """Why system `system` (its settings: `own`, a class or an instance) cannot take flat field
    `name`, in one line: another system holds it, or no field has that name (then the closest
    names the system takes)."""
    if name in RECORD_FIELDS:
        return f"{name} is set by its own argument (--{name}), not as a field"
    elsewhere = held_elsewhere(system, name)
    if elsewhere:
        return elsewhere
    names = (field_names() - set(RECORD_FIELDS)) | own_field_names(own)
    return (f"unknown config field {name!r} (system {system}; `python -m agents.config_cli show PROFILE` lists "
            f"them){suggestion(name, names)}")


def parse_settings(settings: list[str] | tuple[str, ...], system: str | None = None) -> dict:
    """["FIELD=VALUE", ...] -> typed keyword overrides for load_config. The running system is the
    `system=` among them, else `system` (a preset's), else CruiseConfig's default: its own fields
    are typed by its settings class; a name that is neither the configuration's nor its own is
    refused in one line (a misspelling with the closest names, another system's naming it)."""
    pairs = []
    for setting in settings or ():
        key, sep, value = str(setting).partition("=")
        key = key.strip().lower()
        if not sep or not key:
            raise SettingError(f"--set {setting!r}: expected FIELD=VALUE")
        pairs.append((setting, key, value))
    named = [value.strip() for _, key, value in pairs if key == "system"]
    running = (named[-1] if named else None) or system or CruiseConfig.system
    own = system_named(running).settings
    fields = field_names() - set(RECORD_FIELDS)
    out = {}
    for setting, key, value in pairs:
        if key not in fields and key not in own_field_names(own):
            # another system's setting is said as docs/profiles.md says it; any other with what was typed
            raise SettingError(held_elsewhere(running, key) or f"--set {setting!r}: {not_held(running, own, key)}")
        out[key] = parse_setting(key, value, field_type(key, own)[0])
    return out

"""`--set FIELD=VALUE` strings (the evaluator's and the tools' flags, CRUISE_<FIELD> at the AIcrowd
boundary) as typed keyword settings, each typed by its field's annotation."""
from __future__ import annotations

from agents.config.fields import RECORD_FIELDS, field_names, field_type
from agents.runtime.system import find_system
from agents.settings import SettingError, parse_setting


def parse_settings(settings: list[str] | tuple[str, ...]) -> dict:
    """["FIELD=VALUE", ...] -> typed keyword overrides for load_config. A `system=` among them is
    found first (where its name says: MODULE:NAME, an entry point), so that its own fields in the
    same list are known."""
    for setting in settings or ():
        key, _, value = str(setting).partition("=")
        if key.strip().lower() == "system":
            find_system(value.strip())
    fields = field_names() - set(RECORD_FIELDS)
    out = {}
    for setting in settings or ():
        key, sep, value = str(setting).partition("=")
        key = key.strip().lower()
        if not sep or key not in fields:
            raise SettingError(f"--set {setting!r}: expected FIELD=VALUE with FIELD one of {sorted(fields)}")
        out[key] = parse_setting(key, value, field_type(key)[0])
    return out

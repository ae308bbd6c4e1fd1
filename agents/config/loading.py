"""Building a run's configuration, the one place that looks a system up for it.

`load_config(profile, preset, calibration, **overrides)` builds what a run uses, each step over
the last:

    the declared defaults (the paper's values) -> the profile's machine settings (agents/profiles.py)
        -> its model stack (agents/stacks.py) -> an ablation preset (agents/config/presets.py)
        -> a calibration file's thresholds -> keyword overrides (`--set FIELD=VALUE`)

Each step applies `system` first: its record is found in the registry (agents/runtime/system.py)
and its settings class handed to the configuration (`with_system`), which itself looks no system
up. A profile's, stack's, preset's or calibration file's setting of a group the running system
lacks (a stack's CRUISE router mode under QA-Dragon) is left out (`apply_held`); an override of
one is refused in one line (`set_fields`).

Settings are passed explicitly. The environment is read in one place only,
`config_from_environment()`, for the AIcrowd boundary, where the evaluator builds `UserAgent()`
with a search pipeline and nothing else.
"""
from __future__ import annotations

import os
import typing
from pathlib import Path

from agents.calibration import load_calibration
from agents.config.cruise_config import CruiseConfig, own_field_names
from agents.config.fields import RECORD_FIELDS, field_names, field_type, shared_name_clashes
from agents.config.presets import preset_settings
from agents.config.set_strings import not_held, parse_settings
from agents.config.validation import validate_config
from agents.engine_capabilities import logprob_fallbacks
from agents.engines.cpu_path import resolve_cpu_weights
from agents.profiles import get_profile, resolve_profile
from agents.runtime.system import find_system, registered, system_named
from agents.settings import SettingError
from agents.stacks import get_stack, stack_for_model


def with_system(cfg: CruiseConfig, name: str) -> CruiseConfig:
    """`cfg` run by the system registered as `name` (or found where the name says: MODULE:NAME,
    an entry point), holding its own settings; an unknown system is refused in one line, with the
    closest names. Its own settings are checked here, when it is resolved: a flat name must say
    one field, so one that is a shared field's too is refused."""
    settings = system_named(name).settings
    clashes = shared_name_clashes(settings)
    if clashes:
        raise TypeError(f"system {name}: its settings {settings.__name__} declare fields the shared groups "
                        f"declare too: {clashes} (a flat name must say one field)")
    return cfg.for_system(name, settings)


def set_fields(cfg: CruiseConfig, settings: dict) -> CruiseConfig:
    """`settings` (flat field names) applied: `system` first, so that its own fields may follow;
    a field the configuration does not hold (no field's name, or another system's) is refused
    in one line."""
    settings = dict(settings)
    if "system" in settings:
        cfg = with_system(cfg, settings.pop("system"))
    for name in settings:
        if not cfg.has(name):
            raise SettingError(not_held(cfg.system, cfg.own, name))
    return cfg.replace(**settings)


def apply_held(cfg: CruiseConfig, settings: dict) -> CruiseConfig:
    """`settings` (flat names) applied where the configuration holds them: `system` first, then
    the fields of its groups; a field of another system's group is left out (a stack's CRUISE
    router mode under QA-Dragon, a calibration file's tau_ret under SAM-RAG)."""
    if "system" in settings:
        cfg = with_system(cfg, settings["system"])
    return cfg.replace(**{k: v for k, v in settings.items() if k != "system" and cfg.has(k)})


def default_config(**flat) -> CruiseConfig:
    """The declared defaults (the paper's values) under CRUISE, or the system `flat` names, with
    `flat` settings: a configuration without a profile (tests, tables of the defaults)."""
    bare = CruiseConfig()
    return set_fields(with_system(bare, bare.system), flat)


def load_config(profile: str | None = "auto", preset: str | None = None, calibration: str | Path | None = None,
                *, stack: str | None = None, model_name: str | None = None, **overrides) -> CruiseConfig:
    """The configuration of a run (see the module's docstring); validated, and a bad name,
    file or value raises ValueError with one line. `model_name` (`--model-name`) picks the stack
    of its family and becomes the VLM, and the router unless `router_model` is overridden."""
    machine = get_profile(resolve_profile(profile))
    if model_name:
        stack = stack or stack_for_model(model_name).name
        overrides = {"vlm_model": model_name, "router_model": model_name, **overrides}
    stack = get_stack(stack or machine.stack)
    preset = preset or "full"
    switches = preset_settings(preset, settings_of=lambda system: system_named(system).settings)
    cfg = default_config(profile=machine.name, stack=stack.name)
    for settings in (machine.agent, stack.settings, {"preset": preset, **switches}):
        cfg = apply_held(cfg, settings)
    if calibration and cfg.answer.use_finalizer:  # its thresholds are the finalizer's; a preset without one has none
        cfg = apply_held(cfg, load_calibration(calibration))
    cfg = set_fields(cfg, overrides)
    if cfg.models.cpu_weights == "auto":
        # The path this CPU takes, resolved here so that run_config.json and the fingerprint say it.
        cfg = cfg.replace(cpu_weights=resolve_cpu_weights("auto"))
    return validate_config(logprob_fallbacks(cfg))


def load_config_from_settings(profile: str | None, preset: str | None, settings: list[str] | tuple[str, ...] = (),
                              calibration: str | Path | None = None, stack: str | None = None,
                              model_name: str | None = None) -> CruiseConfig:
    """load_config with --set strings, each typed by its field's annotation."""
    system = preset_settings(preset or "full").get("system")
    return load_config(profile, preset, calibration, stack=stack, model_name=model_name,
                       **parse_settings(settings, system))


def config_from_record(record: dict) -> CruiseConfig:
    """A CruiseConfig from its JSON record (what run_config.json keeps of a run's agent: its
    describe()'s "config" and "where", flat field names, as before the groups); a field the record
    lacks keeps its default, and a field the config no longer has, or its system does not hold
    (a CRUISE switch recorded off for a peer system), is dropped. A system found where its name
    says brings its own fields; one not found here holds the shared groups only."""
    cfg = CruiseConfig()
    system = record.get("system") if isinstance(record.get("system"), str) else cfg.system
    found = find_system(system)
    cfg = cfg.for_system(system, found.settings if found is not None else None)
    values = {}
    for name, value in record.items():
        if (name in field_names() or name in own_field_names(cfg.own)) and name != "system":
            kind = typing.get_origin(field_type(name, cfg.own)[0])
            values[name] = tuple(value) if kind is tuple and isinstance(value, list) else value
    return apply_held(cfg, values)


# The AIcrowd boundary: what the environment may say when the evaluator builds UserAgent() with
# nothing but a search pipeline. Nothing else in the project reads these variables.
ENV_PREFIX = "CRUISE_"


def config_from_environment(environ=None) -> CruiseConfig:
    """CRUISE_PROFILE (default auto), CRUISE_STACK, CRUISE_PRESET, CRUISE_CALIBRATION and one
    CRUISE_<FIELD> per setting."""
    environ = os.environ if environ is None else environ
    # the configuration's fields and every registered system's own (one of another system than
    # the running one is refused, naming its system)
    names = field_names() - set(RECORD_FIELDS) | {name for record in registered().values()
                                                  for name in own_field_names(record.settings)}
    settings = [f"{name}={environ[ENV_PREFIX + name.upper()]}" for name in sorted(names)
                if ENV_PREFIX + name.upper() in environ]
    return load_config_from_settings(environ.get(ENV_PREFIX + "PROFILE") or "auto",
                                     environ.get(ENV_PREFIX + "PRESET") or None, settings,
                                     environ.get(ENV_PREFIX + "CALIBRATION") or None,
                                     environ.get(ENV_PREFIX + "STACK") or None)

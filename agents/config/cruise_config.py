"""`CruiseConfig`: a run's configuration, the records it applied and its settings by group.

It holds the shared groups (agents/config/groups.py) and one slot, `own`, for the running
system's own settings: an instance of the class the system's record names, handed in by whoever
builds the configuration (`for_system`; agents/config/loading.py looks the record up). This module
looks no system up and imports none, so that a system's settings may import the configuration's
types without a loop. Each field keeps its flat name (`--set tau_low=0.8`, presets, calibration
files, run_config.json, CRUISE_<FIELD>): `cfg.replace(tau_low=0.8)` and `cfg.value("tau_low")`
find its group.
"""
from __future__ import annotations

import dataclasses
import typing
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from agents.config.groups import (
    AnswerSettings,
    InputSettings,
    ModelSettings,
    PeerStageSettings,
    RetrievalSettings,
    RunSettings,
)
from agents.settings import SettingError


@dataclass
class CruiseConfig:
    """A run's configuration: the records it applied, then its settings by group (the module's
    docstring). Built bare it holds the shared groups only; `for_system` gives it a system's own."""
    profile: str = ""  # set by load_config: the machine (agents/profiles.py)
    stack: str = "llama-3.2-vision"  # the model stack (agents/stacks.py STACKS)
    preset: str = "full"
    # Which registered System answers a batch (agents/runtime/system.py): "cruise", "qa_dragon",
    # "sam_rag", one a user registered, or one found where its name says (MODULE:NAME, an entry
    # point). Its own settings are held in `own`; no other system's are.
    system: str = "cruise"
    models: ModelSettings = field(default_factory=ModelSettings)
    inputs: InputSettings = field(default_factory=InputSettings)
    retrieval: RetrievalSettings = field(default_factory=RetrievalSettings)
    peer_stages: PeerStageSettings = field(default_factory=PeerStageSettings)
    answer: AnswerSettings = field(default_factory=AnswerSettings)
    run: RunSettings = field(default_factory=RunSettings)
    # The running system's own settings: an instance of its System record's `settings` class
    # (CRUISE's router, CoV and Algorithm 1; QA-Dragon's or SAM-RAG's own), None for a system
    # without one. Only the running system's are held, so a switch of a stage it lacks is not
    # there to be on.
    own: Any = None
    # Set by load_config, never by hand: the stages that read token probabilities and were switched
    # to their text modes because the engine returns none (a hosted provider), one line each
    # (`logprob_fallbacks`); run_config.json and every trace record them.
    mode_fallbacks: tuple[str, ...] = ()

    def for_system(self, system: str, settings: type | None) -> "CruiseConfig":
        """This configuration run by `system`, whose record names `settings` as the class of its
        own (None: it has none). The own settings held are kept where they are of that class
        (the same system again), else the class's defaults are."""
        own = None if settings is None else self.own if isinstance(self.own, settings) else settings()
        return dataclasses.replace(self, system=system, own=own)

    def has(self, name: str) -> bool:
        """Whether this configuration holds flat field `name` (a system's own field: only under
        that system)."""
        return name in TOP_FIELDS or name in SHARED_FIELD_GROUPS or name in own_field_names(self.own)

    def value(self, name: str):
        """Flat field `name`'s value, wherever its group keeps it."""
        if name in TOP_FIELDS:
            return getattr(self, name)
        return getattr(self._group_of(name), name)

    def _group_name(self, name: str) -> str:
        """The attribute that holds flat field `name`: a shared group's, or "own"."""
        if name in SHARED_FIELD_GROUPS:
            return SHARED_FIELD_GROUPS[name]
        if name in own_field_names(self.own):
            return "own"
        raise SettingError(f"{name} is not a setting of system {self.system}")

    def _group_of(self, name: str):
        return getattr(self, self._group_name(name))

    def replace(self, **changes) -> "CruiseConfig":
        """A copy with `changes` by flat field name (a group's name takes a whole group). The
        system is changed with `for_system`, which is handed its settings class."""
        if "system" in changes:
            raise SettingError(f"system={changes['system']}: a configuration changes its system with "
                               "for_system(name, its settings class) (agents/config/loading.py with_system)")
        top = {name: changes.pop(name) for name in list(changes)
               if name in TOP_FIELDS or name in SHARED_GROUPS or name == "own"}
        cfg = dataclasses.replace(self, **top) if top else self
        grouped: dict[str, dict] = {}
        for name, value in changes.items():
            grouped.setdefault(cfg._group_name(name), {})[name] = value
        if not grouped:
            return cfg
        return dataclasses.replace(cfg, **{group: dataclasses.replace(getattr(cfg, group), **values)
                                           for group, values in grouped.items()})

    def flat(self) -> dict:
        """Every field this configuration holds by its flat name, records first (what
        run_config.json, `show` and a trace record)."""
        out = {name: getattr(self, name) for name in TOP_FIELDS}
        for group in self.groups():
            out.update(dataclasses.asdict(group))
        return out

    def groups(self) -> list:
        """The settings groups this configuration holds: the shared ones, then the system's own."""
        return [getattr(self, name) for name in SHARED_GROUPS] + ([self.own] if self.own is not None else [])


# The shared groups (group name -> its dataclass), flat field name -> its group, and the fields
# that are no group's (the records applied, the system), all read off CruiseConfig.
SHARED_GROUPS: dict[str, type] = {name: hint for name, hint in typing.get_type_hints(CruiseConfig).items()
                                  if dataclasses.is_dataclass(hint)}
SHARED_FIELD_GROUPS: dict[str, str] = {f.name: group for group, cls in SHARED_GROUPS.items()
                                       for f in dataclasses.fields(cls)}
TOP_FIELDS = tuple(f.name for f in dataclasses.fields(CruiseConfig) if f.name not in SHARED_GROUPS and f.name != "own")


def own_field_names(own) -> frozenset[str]:
    """The flat names of a system's own settings (an instance or its class; None: none)."""
    return _field_names(own if own is None or isinstance(own, type) else type(own))


@cache
def _field_names(cls) -> frozenset[str]:
    return frozenset(f.name for f in dataclasses.fields(cls)) if cls is not None else frozenset()

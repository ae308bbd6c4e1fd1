"""A stage and a system, each one record, and the registry of systems.

A `Stage` says once what the rest of the package reads about a stage: its name (the batch guard
times it under it: the trace's `stage_ms`, the deadline's and the priors' key), its function over
a batch, the fields it reads and writes, the prompts it may ask for, and for our own stages the
config switch that turns it on, the name its parser's outcome is counted under and its cost prior
(agents/runtime/cost_priors.py). Each stage file holds its own `STAGE` next to its function.

A `System` is one chain that answers a batch: its name (`CruiseConfig.system`), its stages in
order, its decision rule (what the chain decides with and what tools/calibrate.py replays), its
settings, its view for the report and, for a chain with control flow of its own, its run function
(without one, agents/run_stages.py runs its stages in order). Everything that differs between
systems is a field here, or follows from one: nothing outside this module asks which system is
running.

CRUISE, QA-Dragon and SAM-RAG register themselves from their own packages; a researcher's system
registers the same way (`register(System(...))` in a test module, or in the package `--agent`
names) and then runs, is traced, decided and shown in the report with no edit elsewhere. A run
also finds a system that nothing has imported yet: `system=MODULE:NAME` imports the module that
registers it, and `system=NAME` loads an installed package's entry point of that name in the group
`cruise_agent.systems` (as lm-evaluation-harness and lmms-eval find a package's tasks and models).
A name is taken once: a second system of it, from another module, is refused. A record is
checked when it registers (`record_fault`): a bad one is refused in one line that names it.

A test registers its systems inside `scoped_registry()` (tests/conftest.py `registered_systems`):
when the scope closes the registry is as it was, so that no other test sees them.
"""
from __future__ import annotations

import dataclasses
import importlib
import inspect
import sys
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from agents.registry import Registry, split_spec
from agents.runtime.cost_priors import MEASURED_STAGES


@dataclass
class Decision:
    """A turn's final answer and the rule of its system's decision that gave it (the trace's
    "branch" or "decision")."""

    answer: str
    branch: str


def one(cfg) -> int:
    return 1


@dataclass(frozen=True)
class Prior:
    """How a stage is priced before the deadline has timed it (agents/runtime/cost_priors.py): like
    the measured stage `like` (MEASURED_STAGES), at its own `max_tokens(cfg)` (None: the measured
    stage's) and `requests_per_turn(cfg)`."""

    like: str
    max_tokens: Callable[[Any], int] | None = None
    requests_per_turn: Callable[[Any], int] = one


# Python shows a DeprecationWarning only where __main__ triggers it; a plugin's module is not
# __main__, so ours are shown wherever they are triggered, once per place.
DEPRECATED = r".* is deprecated: .*\(docs/changes\.md\)"
warnings.filterwarnings("default", message=DEPRECATED, category=DeprecationWarning)


def deprecated(old: str, new: str) -> None:
    """Warn that last release's keyword or name `old` is now `new` (accepted for one release:
    docs/changes.md)."""
    warnings.warn(f"{old} is deprecated: use {new} (docs/changes.md)", DeprecationWarning, stacklevel=4)


@dataclass(frozen=True)
class Stage:
    """One stage: its name, its function over a batch, the fields it reads and writes, the prompts
    it may ask for.

    `batch_fn(batch) -> one dict per turn` of the fields it writes (agents/run_stages.py `Batch`),
    run through the one guarded call (`BatchState.call`: the deadline, the fault search, the
    timing), whether the default runner calls it or a system's own run does. `reads`: the fields
    of earlier stages it reads; `writes`: those it returns (a stage that returns "turn" hands the
    later stages a new Turn record: perception, the standalone question). `prompts`: every prompt
    it may ask for, whatever its gates let through, loaded by pre-flight.

    What our own stages set besides: `switch`, the config field that turns it on (None: it runs
    whenever its system runs it); `parsed`, the name the trace counts its parser's outcome under;
    `prior`, how it is priced before it is timed. Whether it calls a model is not said here: the
    engines' ledger shows it (agents/runtime/deadline.py)."""

    name: str
    batch_fn: Callable[[Any], list[dict]] | None = None
    reads: tuple[str, ...] = ()
    writes: tuple[str, ...] = ()
    prompts: tuple[str, ...] = ()
    switch: str | None = None
    parsed: str | None = None
    prior: Prior | None = None
    # last release's keywords, accepted for one release (docs/changes.md)
    trace_fields: dataclasses.InitVar[tuple[str, ...] | None] = None
    calls_no_model: dataclasses.InitVar[Callable | None] = None

    def __post_init__(self, trace_fields, calls_no_model):
        if trace_fields is not None:
            deprecated("Stage(trace_fields=...)", "Stage(writes=...)")
            object.__setattr__(self, "writes", tuple(trace_fields))
        if calls_no_model is not None:
            deprecated("Stage(calls_no_model=...)", "nothing: whether a stage calls a model comes from the engines' ledger")
        for name in ("reads", "writes", "prompts"):
            value = getattr(self, name)
            if isinstance(value, str):  # ("chunks") without its comma: one name, not its letters
                object.__setattr__(self, name, (value,))


# The field a stage writes to hand the later stages a new Turn record (not a field of the turn's)
TURN = "turn"

# The shared steps that open every system's batches, named by module: the runtime sits below the
# shared stages and imports them by name, as the registry imports the built-in systems.
# Perception: for a VLM that cannot see, each turn's picture as text in every later prompt.
OPENING = ("agents.stages.s0a_perceive",)


def opening_stages() -> tuple[Stage, ...]:
    return tuple(importlib.import_module(module).STAGE for module in OPENING)


def no_funnel(trace, cfg) -> dict[str, bool]:
    return {}


@dataclass(frozen=True)
class View:
    """How the report shows a system's run. `funnel(trace, cfg)`: where a turn's answer can be
    lost, in order ({step: passed}); `summarize(traces)`: run_summary.json's figures;
    `report_sections(summary)`: those figures as tables; `branches`: the names its decisions
    take; `turn_template`: its turn page, a Jinja file with a macro `trace_details(t)`, named
    from the folder of the module that registered the system (so a system's own package holds
    it), or as `PACKAGE:PATH` (agents/runtime/package_files.py; None: the report lists the
    trace's keys; the rows every page may use are named from agents/: runtime/turn_rows.html.j2);
    `shown_keys`: keys the report shows that the page does not read by name
    (agents/runtime/trace_view.py reads the page for the others: a key no page reads, a new
    stage's field among them, is listed as it is)."""

    funnel: Callable[[dict, Any], dict[str, bool]]
    summarize: Callable[[list[dict]], dict] | None = None
    report_sections: Callable[[dict], list[dict]] | None = None
    branches: tuple[str, ...] = ()
    turn_template: str | None = None
    shown_keys: frozenset[str] = frozenset()


@dataclass(frozen=True)
class System:
    """One registered chain: its name, its stages in order, its rule, its settings.

    `decide(signals, cfg)`: its rule over a turn's traced signals, returning the answer alone or a
    `Decision(answer, branch)`; it decides every turn that did not fault. `settings`: the
    dataclass of its own settings (None: it has none), the CruiseConfig group named as the system,
    held only while it runs. `run(batch) -> (answers, traces)`: a run of its own over the opened
    batch (agents/run_stages.py BatchState), for control flow of its own (CRUISE's dual path, the
    peers' rounds), returning `batch.finish()`; None: the runtime runs its stages in order
    (agents/run_stages.py `run_stages`). Either way each stage is run through `batch.call` and
    every turn decided and traced by `batch.finish`. `view`: how the report shows it. `abstain_on`: a field whose "I don't
    know" (or absence) decides the turn "abstained" before the rule, for a system that asks for
    it (None: the rule decides every turn). `warm_up(system, engines, pipeline, cfg, turns) ->
    seconds per stage`: its warm-up at load over the dummy batch (None: its run answers that
    batch, agents/warmup.py)."""

    name: str
    stages: tuple[Stage, ...]
    decide: Callable
    settings: type | None = None
    run: Callable | None = None
    view: View = View(funnel=no_funnel)
    abstain_on: str | None = None
    warm_up: Callable | None = None
    # last release's keywords, accepted for one release (docs/changes.md)
    answer_signal: dataclasses.InitVar[str | None] = None
    abstains_first: dataclasses.InitVar[bool | None] = None

    def __post_init__(self, answer_signal, abstains_first):
        if answer_signal is not None or abstains_first is not None:
            deprecated("System(answer_signal=..., abstains_first=...)", "System(abstain_on=FIELD)")
            # last release abstained first unless told not to, on `rag_answer` unless told another
            if abstains_first is not False and self.abstain_on is None:
                object.__setattr__(self, "abstain_on", answer_signal or "rag_answer")
        # Its list opens with the shared steps (OPENING), listed or not: their place first, their
        # priors, the deadline's learning and their trace fields then follow for every system, as
        # for any stage of its list.
        opening = opening_stages()
        shared = {stage.name for stage in opening}
        listed = tuple(s for s in self.stages if getattr(s, "name", None) not in shared)  # a bad entry: record_fault's
        object.__setattr__(self, "stages", (*opening, *listed))

    def __str__(self) -> str:
        """How a run names it (`--set system=`; `evaluate(set={"system": record})` writes it so):
        MODULE:NAME of the module that registered it, found again in any process; its name alone
        where nothing registered it."""
        module = registered_by(self.name)
        return f"{module}:{self.name}" if module else self.name

    def stage_names(self) -> tuple[str, ...]:
        return tuple(s.name for s in self.stages)

    def stage(self, name: str) -> Stage:
        """Its stage record named `name` (KeyError naming its stages where there is none)."""
        for stage in self.stages:
            if stage.name == name:
                return stage
        raise KeyError(f"system {self.name!r} has no stage {name!r}; its stages: {list(self.stage_names())}")

    def parsed_stages(self) -> tuple[str, ...]:
        """The names its traces count parser outcomes under, in chain order."""
        return tuple(dict.fromkeys(s.parsed for s in self.stages if s.parsed))

    def prompts(self) -> tuple[str, ...]:
        """Every prompt its stages declare they may ask for, in chain order."""
        return tuple(dict.fromkeys(p for s in self.stages for p in s.prompts))


# The built-in systems' modules; each registers its System when imported. They are imported by
# name on the first look-up, as a user's package is by `--agent`: the registry sits below every
# system, and the configuration checks a system's name without importing any chain.
BUILT_IN = ("agents.cruise.system", "agents.peers.qa_dragon.system", "agents.peers.sam_rag.system",
            "agents.agentic.system")
# The entry point group through which an installed package offers its systems, each entry point
# naming its module (`[project.entry-points."cruise_agent.systems"] mine = "mypkg.system"`), as
# lm-evaluation-harness and lmms-eval find a package's tasks and models.
ENTRY_POINT_GROUP = "cruise_agent.systems"


class SystemRefused(ValueError):
    """A System record the registry does not take, in one line that names it and what is wrong."""


def required_arguments(function) -> list[str]:
    """The names of the arguments `function` cannot be called without ([] where it cannot be read)."""
    try:
        parameters = inspect.signature(function).parameters.values()
    except (TypeError, ValueError):
        return []
    return [p.name for p in parameters if p.default is p.empty
            and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]


def record_fault(system: System) -> str | None:
    """What makes `system` a record the rest of the package cannot read, or None: what each part
    of the package reads off it must be there (a name a run can be given, stages that are named
    Stage records each once, a rule and a run function to call, a view whose funnel can be called
    and whose branches are names, a settings dataclass)."""
    if not isinstance(system, System):
        return f"a {type(system).__name__} is not a System record"
    if not isinstance(system.name, str) or not system.name or ":" in system.name:
        return "its name must be a non-empty string without ':' (system=MODULE:NAME reads the part after it)"
    for position, stage in enumerate(system.stages[len(OPENING):]):  # counted in its own list, after the opening
        if not isinstance(stage, Stage):
            return f"stage {position} is a {type(stage).__name__}, not a Stage record"
        if not isinstance(stage.name, str) or not stage.name:
            return f"stage {position} has no name (its batch guard, trace and prior are keyed by it)"
        if stage.prior is not None and stage.prior.like not in MEASURED_STAGES:
            return f"stage {stage.name!r} is priced like {stage.prior.like!r}, no measured stage {MEASURED_STAGES}"
        if stage.batch_fn is not None and not callable(stage.batch_fn):
            return f"stage {stage.name!r}: its batch_fn is not callable"
        for kind in ("reads", "writes", "prompts"):
            names = getattr(stage, kind)
            if not all(isinstance(name, str) and name for name in names):
                return f"stage {stage.name!r}: its {kind} must be names (strings), got {names!r}"
    names = [stage.name for stage in system.stages]
    twice = sorted({name for name in names if names.count(name) > 1})
    if twice:
        return f"stages named twice: {twice} (the trace's stage_ms and the priors are keyed by the name)"
    if not callable(system.decide):
        return "its decide is not callable"
    if system.run is not None and not callable(system.run):
        return "its run is not callable (None: the runtime runs its stages in order)"
    if system.run is not None and len(required_arguments(system.run)) > 1:
        return (f"its run takes {', '.join(required_arguments(system.run))}, as release 0.1's did: a run now takes "
                f"the opened batch, run(batch) -> batch.finish() (docs/changes.md)")
    if system.abstain_on is not None and (not isinstance(system.abstain_on, str) or not system.abstain_on):
        return f"its abstain_on must name a field (or be None), got {system.abstain_on!r}"
    # A system without a run of its own runs its list in order: each read must be written before
    # it, and the field its abstain_on names by one of its stages. A run of its own orders its
    # calls itself: its reads are checked as each stage runs (agents/run_stages.py `Reads`).
    if system.run is None:
        for stage in system.stages:
            if stage.batch_fn is None:
                return (f"stage {stage.name!r} has no batch_fn: a system without a run of its own calls each "
                        f"stage's batch_fn in order")
        written = {f for stage in system.stages[:len(OPENING)] for f in stage.writes if f != TURN}
        for stage in system.stages[len(OPENING):]:
            unwritten = [name for name in stage.reads if name not in written]
            if unwritten:
                return (f"stage {stage.name!r} reads {unwritten[0]!r}, which no stage before it writes; "
                        f"written before it: {sorted(written)}")
            written.update(f for f in stage.writes if f != TURN)
        if system.abstain_on is not None and system.abstain_on not in written:
            return (f"its abstain_on {system.abstain_on!r} is a field none of its stages writes; "
                    f"written: {sorted(written)}")
    if not isinstance(system.view, View) or not callable(system.view.funnel):
        return "its view must be a View whose funnel(trace, cfg) can be called"
    branches = system.view.branches
    if not all(isinstance(b, str) and b for b in branches) or len(set(branches)) < len(branches):
        return f"its view's branches must be distinct names, got {branches!r}"
    settings = system.settings
    if settings is not None and not (isinstance(settings, type) and dataclasses.is_dataclass(settings)):
        return f"its settings must be a dataclass (the class, not an instance), got {settings!r}"
    return None


# The systems: one Registry (agents/registry.py) like the engines', profiles', stacks' and search
# providers', checked by `record_fault` as each registers.
SYSTEMS: Registry[System] = Registry("system", group=ENTRY_POINT_GROUP, built_in=BUILT_IN, check=record_fault,
                                     refused=SystemRefused)
# how else a system is named, for the message that refuses an unknown one
NAMING_HINT = (f", name a module that registers one (MODULE:NAME), or install a package that offers one as an "
               f"entry point of {ENTRY_POINT_GROUP!r} (agents/runtime/system.py)")


# not mutated: it names its caller's module from the frame above it, where a mutation tool's
# trampoline would stand
def register(system: System, *, module: str | None = None) -> System:  # pragma: no mutate block
    """Add `system` to the registry; returns it, so that a module can write `NAME =
    register(System(...))`. The built-in systems come first. A record `record_fault` finds wrong
    is refused (SystemRefused), naming it. A second system of a name already taken is refused,
    naming both modules; the module that registered it may register it again (a reload, a test
    module imported twice), and that record replaces its own. `module`: the module to name as its
    registrar where the caller is not it (a test fixture registering on a test module's behalf)."""
    module = module or sys._getframe(1).f_globals.get("__name__", "an unknown module")
    return SYSTEMS.register(system, module=module)


def registered() -> dict[str, System]:
    return SYSTEMS.records()


def registrants() -> dict[str, str]:
    """Each system registered so far -> the module that registered it (the built-in systems only
    once something has looked one up)."""
    return SYSTEMS.registrants()


def scoped_registry():
    """A scope whose registrations end with it (Registry.scoped): for tests (tests/conftest.py
    `registered_systems`) and for trying a system in a session that goes on."""
    return SYSTEMS.scoped()


def find_system(name: str) -> System | None:
    """The system registered under `name`, else found where `name` says: "module.path:NAME" imports
    that module (which registers NAME), and the name of an entry point of ENTRY_POINT_GROUP loads
    what it names. None where none is found."""
    return SYSTEMS.find(name)


def registered_by(name: str) -> str | None:
    """The module that registered the system named `name` (None: none has)."""
    return SYSTEMS.registered_by(name)


def system_named(name: str) -> System:
    """The system `name` names; ValueError in one line naming the closest systems, registered and
    installed."""
    return SYSTEMS.named(name, hint=NAMING_HINT)


def system_for(cfg) -> System:
    return system_named(cfg.system)


def recorded_name(system: System, cfg) -> str:
    """How a run's traces name `system`: as the run found it where that names the module it comes
    from (`MODULE:NAME`), so that the report, written later in another process, finds the system
    and its page again; else by its name."""
    module, name = split_spec(cfg.system)
    return cfg.system if module and name == system.name else system.name

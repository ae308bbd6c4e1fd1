"""A stage and a system, each one record, and the registry of systems.

A `Stage` says once what the rest of the package reads about a stage: the name its batch guard
times it under (agents/runtime/batch.py; the trace's `stage_ms`, the deadline's and the priors'
key), the config switch that turns it on, the key of its cost prior (agents/runtime/cost_priors.py),
the name its parser's outcome is counted under, and the trace fields it writes. Each stage file
holds its own `STAGE` next to its function.

A `System` is one chain that answers a batch: its name (`CruiseConfig.system`), its settings, its
stages in order, its decision rule (what the chain decides with and what tools/calibrate.py
replays), its view for the report and, for a chain with control flow of its own, its run
function (without one, agents/run_stages.py runs its stages in order). Everything that differs between systems
is a field here: nothing outside this module asks which system is running.

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
import sys
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


def never(cfg) -> bool:
    return False


def always(cfg) -> bool:
    return True


def one(cfg) -> int:
    return 1


@dataclass(frozen=True)
class Stage:
    """One stage of a chain. `switch`: the CruiseConfig field that turns it on (None: it runs
    whenever its system runs it). `cost_prior`: the measured stage of the profile's prior model
    it is priced like (agents/runtime/cost_priors.py MEASURED_STAGES; None: no prior of its own),
    at its own `max_tokens(cfg)` (None: the measured stage's) and `requests_per_turn(cfg)`.
    `parsed`: the name the trace counts its parser's outcome under (None: no model output to
    read). `calls_no_model`: whether, under a config, it sends no engine request. The default is
    that it calls a model: the deadline then learns its cost per engine request, and a stage that
    never sends one is never learned and is charged the dearest request measured lately, so a
    stage without a model says `calls_no_model=always`. Under a config where it calls none, its
    cost is learned per turn and it is priced 0 until timed (agents/runtime/cost_priors.py
    `stage_priors`), not like a model request."""

    name: str
    switch: str | None = None
    cost_prior: str | None = None
    max_tokens: Callable[[Any], int] | None = None
    requests_per_turn: Callable[[Any], int] = one
    parsed: str | None = None
    # The trace fields it writes, and those of earlier stages it reads: a read that no stage
    # before it writes is refused when its system registers (record_fault).
    writes: tuple[str, ...] = ()
    reads: tuple[str, ...] = ()
    calls_no_model: Callable[[Any], bool] = never
    # Its function over a batch, `batch_fn(batch) -> one dict per turn` of the fields it writes
    # (agents/run_stages.py Batch): what a system without a run of its own calls, in the
    # order of its list.
    batch_fn: Callable[[Any], list[dict]] | None = None
    # How the chain runs this stage over the batch in flight (agents/runtime/batch.py BatchState),
    # for a stage no chain wires itself: perception, a stage added to a system's list. The shared
    # opening (OPENING) runs first for every system (batch.py `open_batch`); then CRUISE's chain
    # runs its list in order, and the peers run these steps right after the opening (run_steps).
    step: Callable[[Any], None] | None = None


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
    """One registered chain. `decide(trace, cfg) -> Decision` (or the answer alone): its rule over a
    turn's traced signals. `run(system, turns, engines, pipeline, cfg, costs, started=None) ->
    (answers, traces)`, given its own record (for its stages, rule and view); None: its stages'
    batch_fn in order (agents/run_stages.py).

    `settings`: the dataclass of the system's own settings (agents/cruise/settings.py,
    agents/peers/*/settings.py; None: it has none): the CruiseConfig group named as the system,
    held only while it runs, so a switch of a stage it lacks cannot be on."""

    name: str
    stages: tuple[Stage, ...]
    decide: Callable
    # None: the runtime runs its stages in order (agents/run_stages.py); a run of its own
    # only for control flow of its own (CRUISE's dual path, the peers' rounds)
    run: Callable | None = None
    view: View = View(funnel=no_funnel)
    settings: type | None = None
    # Its decision says "abstained" for an answer that is already "I don't know", before its rule
    # (CRUISE's Algorithm 1 names the rule that would have rejected it instead).
    abstains_first: bool = True
    # The trace field that holds its answer before the rule, read for abstains_first: a field its
    # stages declare (writes), checked when it registers, so the decision reads no hidden key.
    answer_signal: str = "rag_answer"
    # What a stage the profile's prior model does not price is expected to cost before it is
    # timed: None charges it the dearest request measured lately (agents/runtime/deadline.py); 0
    # times it on its first run, for a chain whose long first step would price every cheaper step
    # after it out of every batch.
    untimed_prior: float | None = 0.0
    # Whether its context is chosen by the MAD filter (so that calibration's other lambda can
    # change it).
    mad_context: bool = False
    # Its warm-up at load over the dummy batch the agent made ready, `warm_up(system, engines,
    # pipeline, cfg, turns) -> seconds per stage`: None answers that batch with its own chain
    # (agents/warmup.py).
    warm_up: Callable | None = None

    def __post_init__(self):
        # Its list opens with the shared steps (OPENING), listed or not: their place first, their
        # priors, the deadline's per-turn learning of a stage without a model and their trace
        # fields then follow for every system, as for any stage of its list.
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

    def parsed_stages(self) -> tuple[str, ...]:
        """The names its traces count parser outcomes under, in chain order."""
        return tuple(dict.fromkeys(s.parsed for s in self.stages if s.parsed))

    def engine_free(self, cfg) -> tuple[str, ...]:
        return tuple(s.name for s in self.stages if s.calls_no_model(cfg))



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
        if stage.cost_prior is not None and stage.cost_prior not in MEASURED_STAGES:
            return f"stage {stage.name!r} is priced like {stage.cost_prior!r}, no measured stage {MEASURED_STAGES}"
    names = [stage.name for stage in system.stages]
    twice = sorted({name for name in names if names.count(name) > 1})
    if twice:
        return f"stages named twice: {twice} (the trace's stage_ms and the priors are keyed by the name)"
    if not isinstance(system.answer_signal, str) or not system.answer_signal:
        return f"its answer_signal must name a trace field, got {system.answer_signal!r}"
    # A system whose own stages declare their fields must declare the one its decision reads; one
    # whose stages declare none writes its whole trace in its own run, which only a run can show.
    declared = {f for stage in system.stages[len(OPENING):] for f in stage.writes}
    if system.abstains_first and declared:
        if system.answer_signal not in declared:
            return (f"its answer_signal {system.answer_signal!r} (read for abstains_first) is a trace field none of "
                    f"its stages declares; declared: {sorted(declared)}")
    if not callable(system.decide):
        return "its decide is not callable"
    if system.run is not None and not callable(system.run):
        return "its run is not callable (None: the runtime runs its stages in order)"
    own = system.stages[len(OPENING):]
    if system.run is None:
        for stage in own:
            if stage.batch_fn is None and stage.step is None:
                return (f"stage {stage.name!r} has no batch_fn: a system without a run of its own calls each "
                        f"stage's batch_fn in order")
    written = {f for stage in system.stages[:len(OPENING)] for f in stage.writes}
    for stage in own:
        unwritten = [name for name in stage.reads if name not in written]
        if unwritten:
            return (f"stage {stage.name!r} reads {unwritten[0]!r}, which no stage before it writes; "
                    f"written before it: {sorted(written)}")
        written.update(stage.writes)
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

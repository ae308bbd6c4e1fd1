"""The batch runtime every system runs on.

`BatchRun.stage` wraps every stage with the same three guards: the deadline (a stage that would
overrun is not started, and nothing after it; an engine call still running at the deadline is
stopped by the engine, and nothing after it starts), faults (a stage that raises is retried once
on each half of its turns; turns that still fail answer "I don't know"), and timing (per-stage
wall ms for the trace). A request a hosted provider refused (content policy, an image it will not
take) fails its own turn only, with no retry: the turn answers "I don't know" under the branch
"refused", counted apart from the faults.

`Room` is the skip-for-time rule for a chain whose optional steps come before the step that writes
the answer: the deadline admits a step when its own expected cost fits what is left of the batch,
so such a chain could spend the whole budget on its optional steps, and every turn would then end
"I don't know" for want of time, not of evidence. An optional step is started only when it leaves
room for the steps after it that the answer needs, at their expected costs; a step skipped so is
named in every trace of the batch (`skipped_for_time`).

`decide_turn` is the opening of every system's decision: a refused or failed turn is "I don't
know" whatever its signals, then the system's own rule (System.decide).
"""
from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from agents.base_agent import IDK_ANSWER
from agents.engines.base import Ledger, time_limit
from agents.runtime.deadline import Deadline, StageCosts
from agents.runtime.system import Decision, opening_stages, system_for
from agents.runtime.trace import record


@dataclass
class BatchRun:
    size: int
    deadline: Deadline
    costs: StageCosts
    ledger: Ledger | None = None  # the engines' call records: how many requests a stage sent
    errors: list[list[str]] = field(default_factory=list)
    failed: set[int] = field(default_factory=set)
    refused: set[int] = field(default_factory=set)  # turns a provider refused a request of (also failed)
    stage_ms: dict[str, float] = field(default_factory=dict)
    cut_before: str | None = None  # the stage the deadline did not let start
    cut_during: str | None = None  # the stage whose engine call the deadline stopped part-way
    # Seconds of the deadline an engine call leaves for what follows it (the stage's parsing,
    # the finalizer, the traces): the engines stop at the deadline less this.
    engine_margin_s: float = 0.0
    engine_free: tuple[str, ...] = ()  # the stages that call no model (System.engine_free)
    # The names on the system's record (System.stage_names; empty: a bare run, not checked): a
    # stage run under another name would be timed, priced and traced under a key nothing reads.
    stage_names: tuple[str, ...] = ()

    def __post_init__(self):
        self.errors = [[] for _ in range(self.size)]

    def fail(self, i: int, message: str) -> None:
        self.failed.add(i)
        self.errors[i].append(message)

    def refuse(self, i: int, message: str) -> None:
        self.refused.add(i)
        self.fail(i, message)

    def _refusals(self, name: str, group: list[int], calls_before: int) -> None:
        """Fail the turns of `group` whose requests the provider refused in the calls made since
        `calls_before` (each request names its turn's position in the group: ChatRequest.turn)."""
        if self.ledger is None:
            return
        for call in self.ledger.records[calls_before:]:
            for position, reason in call.refusals or []:
                if isinstance(position, int) and 0 <= position < len(group) and group[position] not in self.refused:
                    self.refuse(group[position], f"{name}: the provider refused the request: {reason}")

    def stage(self, name: str, fn: Callable, lists: list[list], fixed: tuple, fallback: Callable[[], object],
              asked: list[bool] | None = None) -> list:
        """fn(*lists restricted to the live turns, *fixed) -> one result per live turn. `asked`: which
        turns `fn` will send requests for (default all); the stage is expected, and its cost per
        turn learned, over those only."""
        if self.stage_names and name not in self.stage_names:
            raise ValueError(f"stage {name!r} is not on the system's record; its stages: {list(self.stage_names)}")
        out = [fallback() for _ in range(self.size)]
        alive = [i for i in range(self.size) if i not in self.failed]
        if self.cut_before or self.cut_during or not alive:
            return out
        served = len(alive) if asked is None else sum(1 for i in alive if asked[i])
        if not self.deadline.allows(self.costs.expect(name, served)):
            self.cut_before = name
            return out
        start = time.perf_counter()
        calls_before = len(self.ledger.records) if self.ledger is not None else 0
        with time_limit(lambda: self.deadline.remaining() - self.engine_margin_s):  # every engine stops by it
            for group, results in self._attempt(name, fn, lists, fixed, alive):
                for i, result in zip(group, results):
                    out[i] = result
        seconds = time.perf_counter() - start
        # a stage run more than once in a batch (a peer system's rounds) adds up
        self.stage_ms[name] = round(self.stage_ms.get(name, 0.0) + seconds * 1000.0, 1)
        calls = self.ledger.records[calls_before:] if self.ledger is not None else []
        if any(c.cut_by_deadline for c in calls):
            # Cut requests came back empty, which the stage read as unreadable: its turns keep the
            # safe defaults, and nothing after it starts.
            self.cut_during = name
        # The deadline learns seconds per engine request; a stage that calls no engine (search)
        # counts one per turn (requests=None), and a model stage that sent none (every turn
        # skipped it) teaches nothing about a request's cost.
        requests = None
        if self.ledger is not None and name not in self.engine_free:
            requests = sum(c.requests for c in calls)
        self.costs.observe(name, served, seconds, requests)
        return out

    def _attempt(self, name, fn, lists, fixed, alive):
        groups = [alive]
        for attempt in range(2):
            failed_groups = []
            for group in groups:
                calls_before = len(self.ledger.records) if self.ledger is not None else 0
                try:
                    results = fn(*[[values[i] for i in group] for values in lists], *fixed)
                except Exception as exc:  # noqa: BLE001 - a stage fault costs only its own turns
                    failed_groups.append((group, f"{name}: {type(exc).__name__}: {exc}"))
                    continue
                self._refusals(name, group, calls_before)
                yield group, results
            if not failed_groups:
                return
            if attempt == 0:  # retry once, each failed group split in half
                groups = [half for group, _ in failed_groups for half in (group[: len(group) // 2], group[len(group) // 2 :]) if half]
            else:
                for group, message in failed_groups:
                    for i in group:
                        self.fail(i, message)


def start_batch(turns: list, cfg, costs: StageCosts, system, ledger: Ledger | None = None,
                started: float | None = None) -> BatchRun:
    """The batch's deadline and guards for `system` (a runtime.system.System); `ledger` (the
    engines') lets the deadline count each stage's requests; `started` (time.monotonic) is when
    the budget began, default now."""
    n = len(turns)
    # turn_budget_s 0: no per-turn budget (the relaunched benchmark has none)
    budget = math.inf if cfg.run.turn_budget_s <= 0 else cfg.run.turn_budget_s * max(n, 1) - cfg.run.safety_margin_s
    costs.new_batch()
    run = BatchRun(n, Deadline(budget, start=started), costs, ledger=ledger, engine_margin_s=cfg.run.engine_margin_s,
                   engine_free=system.engine_free(cfg), stage_names=system.stage_names())
    for i, turn in enumerate(turns):
        if not turn.query:
            run.fail(i, "empty question")
    return run


@dataclass
class Room:
    """The skip-for-time rule over one batch (see the module's docstring): `room(step, then)` says
    whether `step` and the steps `then` all fit what is left, and names a step it refuses in
    `skipped`."""

    run: BatchRun
    skipped: list[str] = field(default_factory=list)

    def __call__(self, step: str, then: tuple[str, ...]) -> bool:
        alive = self.run.size - len(self.run.failed)
        if self.run.deadline.allows(sum(self.run.costs.expect(name, alive) for name in (step, *then))):
            return True
        self.skipped.append(step)
        return False


@dataclass
class BatchState:
    """One batch in flight, as every system has it: its guards, engines, search and settings, the
    turns as the later steps see them, what perception read (None per turn where it did not run),
    the trace fields per turn of the stages that state their own step (`added`, by stage), the
    system it runs and the shared steps that opened it (`opened`: each runs once a batch). A
    system's chain may extend it with its own records (CRUISE's ChainState)."""

    run: BatchRun
    engines: object
    pipeline: object
    cfg: object
    turns: list
    system: object = None
    perceptions: list = field(default_factory=list)
    added: dict[str, list[dict]] = field(default_factory=dict)
    opened: tuple[str, ...] = ()

    def __post_init__(self):
        self.perceptions = [None] * len(self.turns)

    def trace(self, i: int, own: dict, parsed: dict[str, bool], errors: list[str] = (),
              skipped_for_time: list[str] | None = None) -> dict:
        """Turn i's trace: `own` (the system's signals; `parsed`: its parse outcomes) and what the
        runtime records for every system (agents/runtime/trace.py `record`): what the harness
        handed over with the turn, what perception read, the stages' own fields (`added`)."""
        return record(own, system=self.system, cfg=self.cfg, run=self.run, i=i, turn=self.turns[i], parsed=parsed,
                      perception=self.perceptions[i], errors=errors, skipped_for_time=skipped_for_time,
                      added=self.added)


def open_batch(system, turns: list, engines, pipeline, cfg, costs: StageCosts, started: float | None = None,
               state: type[BatchState] = BatchState) -> BatchState:
    """A batch of `system` opened: its guards (`start_batch`), its state (`state`: BatchState, or a
    system's own extension of it) and the shared steps every system's list opens with run over it
    (perception, for a VLM that cannot see: agents/runtime/system.py OPENING), so that a system's
    chain reads turns that carry their pictures as text; `state.trace(i, ...)` records each turn."""
    run = start_batch(turns, cfg, costs, system, ledger=engines.vlm.ledger, started=started)
    opening = opening_stages()
    opened = run_steps(state(run, engines, pipeline, cfg, turns, system), opening)
    opened.opened = tuple(stage.name for stage in opening)
    return opened


def run_steps(state: BatchState, stages) -> BatchState:
    """Run, in order, each of `stages` that states its own step (Stage.step) over `state`, but the
    shared ones that opened the batch: the steps of a system's list it runs right after the
    opening (the standalone question), and a stage added to its list."""
    for stage in stages:
        if stage.step is not None and stage.name not in state.opened:
            stage.step(state)
    return state


def keep(old: list, new: list) -> list:
    """A step's results, each turn it did not reach (deadline, fault) keeping what it had."""
    return [b if b is not None else a for a, b in zip(old, new)]


def decide_turn(system, signals: dict, cfg, run: BatchRun | None = None, i: int | None = None):
    """The Decision of one turn: "refused" or "error" for a turn the run failed (or a trace that
    says so), "abstained" for an answer (its signal `system.answer_signal`) already "I don't know"
    where the system says so first,
    else the system's rule over its signals (a trace, or the dict it will be traced as): a
    Decision, or the answer alone (branch "answered", or "abstained" for "I don't know")."""
    if run is not None and i in run.refused or signals.get("branch") == "refused":
        return Decision(IDK_ANSWER, "refused")
    if run is not None and i in run.failed or signals.get("branch") == "error":
        return Decision(IDK_ANSWER, "error")
    if system.abstains_first and (signals.get(system.answer_signal) or IDK_ANSWER) == IDK_ANSWER:
        return Decision(IDK_ANSWER, "abstained")
    decision = system.decide(signals, cfg)
    if isinstance(decision, str):  # a rule that gives the answer alone
        return Decision(decision, "abstained" if decision == IDK_ANSWER else "answered")
    return decision


def decide_from_trace(trace: dict, cfg):
    """A traced turn's Decision under cfg's thresholds, by cfg's system's rule (what
    tools/calibrate.py replays)."""
    return decide_turn(system_for(cfg), trace, cfg)

"""The batch guards every stage of every system runs under.

`BatchRun.guarded` wraps each stage's call with the same three guards (agents/run_stages.py
`BatchState.call` is the one door to it):
- the deadline: a stage that would overrun is not started, and nothing after it; an engine call
  still running at the deadline is stopped by the engine, and nothing after it starts;
- faults: a call that raises is retried on each half of its turns, and each half that raises
  again is split again, until the turn that raises is found (a search bounded by the deadline:
  a group the deadline leaves no room to split faults whole). Only the turns that raise answer "I
  don't know", under the branch "error", with the exception and where it was raised in the
  system's own code (`fault_site`) in their trace's `faults`;
- timing: per-stage wall ms for the trace, and the deadline's learning of the stage's cost.
A request a hosted provider refused (content policy, an image it will not take) fails its own
turn only, with no retry: the turn answers "I don't know" under the branch "refused", counted
apart from the faults.

`Room` is the skip-for-time rule for a chain whose optional steps come before the step that writes
the answer: the deadline admits a step when its own expected cost fits what is left of the batch,
so such a chain could spend the whole budget on its optional steps, and every turn would then end
"I don't know" for want of time, not of evidence. An optional step is started only when it leaves
room for the steps after it that the answer needs, at their expected costs; a step skipped so is
named in every trace of the batch (`skipped_for_time`).

`decide_turn` is every system's decision: a refused or failed turn is "I don't know" whatever its
signals, an "I don't know" is "abstained" first where the system asks for it (`abstain_on`), then
the system's own rule (System.decide), whose return must be an answer or a Decision.
"""
from __future__ import annotations

import math
import os
import sys
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field

from agents.base_agent import IDK_ANSWER
from agents.engines.base import Ledger, time_limit
from agents.runtime.deadline import Deadline, StageCosts
from agents.runtime.system import Decision, system_for


def code_home(code) -> str | None:
    """The folder of the top-level package (or the file of the module) `code` was defined in:
    where a fault is looked for in the system's own code."""
    module = sys.modules.get(getattr(code, "__module__", None) or "")
    path = getattr(module, "__file__", None)
    if not path:
        return None
    top = sys.modules.get(module.__name__.partition(".")[0])
    top_path = getattr(top, "__file__", None) or path
    return os.path.dirname(top_path) if os.path.basename(top_path) == "__init__.py" else top_path


def shown_path(path: str, home: str | None = None) -> str:
    """`path` relative to the working folder where it lies under it, else relative to the folder
    that holds the package `home` (a plugin installed elsewhere: `mypkg/stages.py`), else as it is."""
    for base in (os.getcwd(), os.path.dirname(home.rstrip(os.sep)) if home else None):
        if base is None:
            continue
        try:
            relative = os.path.relpath(path, base)
        except ValueError:  # another drive
            continue
        if not relative.startswith(".."):
            return relative
    return path


def fault_site(exc: BaseException, code) -> str | None:
    """Where `exc` was raised, as "file:line": the deepest frame of its traceback in the package
    `code` (a stage's batch_fn, a system's rule) belongs to, else the deepest frame of all; for a
    fault the runtime raised about the code (a contract broken), where `code` is defined."""
    frames = traceback.extract_tb(exc.__traceback__)
    home = code_home(code)
    if home is not None:
        own = [f for f in frames if f.filename == home or f.filename.startswith(home.rstrip(os.sep) + os.sep)]
        if own:
            return f"{shown_path(own[-1].filename, home)}:{own[-1].lineno}"
    function = getattr(code, "__code__", None)
    if function is not None and not any(f.filename == function.co_filename for f in frames):
        return f"{shown_path(function.co_filename, home)}:{function.co_firstlineno}"
    return f"{shown_path(frames[-1].filename, home)}:{frames[-1].lineno}" if frames else None


def fault_record(stage: str | None, exc: BaseException | str, where: str | None) -> dict:
    """One entry of a trace's `faults`: the stage (or "rule"), the exception in one line, where."""
    exception = exc if isinstance(exc, str) else f"{type(exc).__name__}: {exc}"
    return {"stage": stage, "exception": exception, "where": where}


@dataclass
class BatchRun:
    size: int
    deadline: Deadline
    costs: StageCosts
    ledger: Ledger | None = None  # the engines' call records: how many requests a stage sent
    errors: list[list[str]] = field(default_factory=list)
    faults: list[list[dict]] = field(default_factory=list)  # per turn, fault_record entries
    served: list[list[str]] = field(default_factory=list)  # per turn, the stages that were run over it, in order
    failed: set[int] = field(default_factory=set)
    refused: set[int] = field(default_factory=set)  # turns a provider refused a request of (also failed)
    stage_ms: dict[str, float] = field(default_factory=dict)
    cut_before: str | None = None  # the stage the deadline did not let start
    cut_during: str | None = None  # the stage whose engine call the deadline stopped part-way
    # Seconds of the deadline an engine call leaves for what follows it (the stage's parsing,
    # the finalizer, the traces): the engines stop at the deadline less this.
    engine_margin_s: float = 0.0
    # The names on the system's record (System.stage_names; empty: a bare run, not checked): a
    # stage run under another name would be timed, priced and traced under a key nothing reads.
    stage_names: tuple[str, ...] = ()

    def __post_init__(self):
        self.errors = [[] for _ in range(self.size)]
        self.faults = [[] for _ in range(self.size)]
        self.served = [[] for _ in range(self.size)]

    def fail(self, i: int, message: str, fault: dict | None = None) -> None:
        self.failed.add(i)
        self.errors[i].append(message)
        if fault is not None:
            self.faults[i].append(fault)

    def refuse(self, i: int, message: str) -> None:
        self.refused.add(i)
        self.fail(i, message)

    def alive(self) -> list[int]:
        return [i for i in range(self.size) if i not in self.failed]

    def _refusals(self, name: str, group: list[int], calls_before: int) -> None:
        """Fail the turns of `group` whose requests the provider refused in the calls made since
        `calls_before` (each request names its turn's position in the group: ChatRequest.turn)."""
        if self.ledger is None:
            return
        for call in self.ledger.records[calls_before:]:
            for position, reason in call.refusals or []:
                if isinstance(position, int) and 0 <= position < len(group) and group[position] not in self.refused:
                    self.refuse(group[position], f"{name}: the provider refused the request: {reason}")

    def guarded(self, name: str, fn: Callable[[list[int]], list], positions: list[int], code=None) -> dict[int, object]:
        """{turn: result} of `fn(group) -> one result per turn of group` over `positions` (turns
        still alive), under the three guards; a turn the stage did not reach (deadline, fault) is
        not in it. `code`: what the fault site is looked for in (the stage's batch_fn). An empty
        `positions` (every live turn left out) times the stage as run over none."""
        if self.stage_names and name not in self.stage_names:
            raise ValueError(f"stage {name!r} is not on the system's record; its stages: {list(self.stage_names)}")
        out: dict[int, object] = {}
        if self.cut_before or self.cut_during or not self.alive():
            return out
        if not self.deadline.allows(self.costs.expect(name, len(positions))):
            self.cut_before = name
            return out
        for i in positions:
            if name not in self.served[i]:
                self.served[i].append(name)
        start = time.perf_counter()
        calls_before = len(self.ledger.records) if self.ledger is not None else 0
        with time_limit(lambda: self.deadline.remaining() - self.engine_margin_s):  # every engine stops by it
            if positions:
                self._search(name, fn, positions, code, out)
        seconds = time.perf_counter() - start
        # a stage run more than once in a batch (a peer system's rounds) adds up
        self.stage_ms[name] = round(self.stage_ms.get(name, 0.0) + seconds * 1000.0, 1)
        calls = self.ledger.records[calls_before:] if self.ledger is not None else []
        if any(c.cut_by_deadline for c in calls):
            # Cut requests came back empty, which the stage read as unreadable: its turns keep the
            # safe defaults, and nothing after it starts.
            self.cut_during = name
        # The deadline learns seconds per engine request, as the ledger counted them; a stage that
        # sent none is learned per turn unless the ledger has shown it to call a model (then the
        # run taught nothing about a request's cost: deadline.py `observe`).
        requests = sum(c.requests for c in calls) if self.ledger is not None else None
        self.costs.observe(name, len(positions), seconds, requests)
        return out

    def _search(self, name: str, fn, group: list[int], code, out: dict[int, object]) -> None:
        """Run `fn` over `group`; where it raises, over each half, and so on down to the one turn
        that raises, while the deadline leaves room for the smaller calls."""
        calls_before = len(self.ledger.records) if self.ledger is not None else 0
        try:
            results = fn(group)
        except Exception as exc:  # noqa: BLE001 - a stage fault costs only its own turns
            halves = [group[: len(group) // 2], group[len(group) // 2:]]
            if len(group) > 1 and self.deadline.allows(self.costs.expect(name, len(halves[0]))):
                for half in halves:
                    self._search(name, fn, half, code, out)
                return
            fault = fault_record(name, exc, fault_site(exc, code))
            for i in group:
                self.fail(i, f"{name}: {fault['exception']}", dict(fault))
            return
        self._refusals(name, group, calls_before)
        for i, result in zip(group, results):
            out[i] = result


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
                   stage_names=system.stage_names())
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
        alive = len(self.run.alive())
        if self.run.deadline.allows(sum(self.run.costs.expect(name, alive) for name in (step, *then))):
            return True
        self.skipped.append(step)
        return False


class RuleFault(TypeError):
    """A system's rule returned what is neither an answer nor a Decision."""


def rule_name(system) -> str:
    decide = system.decide
    return f"{getattr(decide, '__module__', '?')}.{getattr(decide, '__qualname__', repr(decide))}"


def decide_turn(system, signals: dict, cfg, run: BatchRun | None = None, i: int | None = None) -> Decision:
    """The Decision of one turn: "refused" or "error" for a turn the run failed (or a trace that
    says so); "abstained" where the system asks to abstain first (`abstain_on`) and that field is
    "I don't know" or missing; else the system's rule over its signals (a trace, or the dict it
    will be traced as): a Decision, or the answer alone (branch "answered", or "abstained" for
    "I don't know"). A rule that returns anything else raises RuleFault naming the rule."""
    if run is not None and i in run.refused or signals.get("branch") == "refused":
        return Decision(IDK_ANSWER, "refused")
    if run is not None and i in run.failed or signals.get("branch") == "error":
        return Decision(IDK_ANSWER, "error")
    if system.abstain_on is not None and (signals.get(system.abstain_on) or IDK_ANSWER) == IDK_ANSWER:
        return Decision(IDK_ANSWER, "abstained")
    decision = system.decide(signals, cfg)
    if isinstance(decision, str):  # a rule that gives the answer alone
        return Decision(decision, "abstained" if decision == IDK_ANSWER else "answered")
    if not isinstance(decision, Decision) or not isinstance(decision.answer, str):
        raise RuleFault(f"the rule of system {system.name!r} ({rule_name(system)}) returned {decision!r:.80}: "
                        f"neither an answer (a str) nor a Decision(answer, branch)")
    return decision


def decide_from_trace(trace: dict, cfg):
    """A traced turn's Decision under cfg's thresholds, by cfg's system's rule (what
    tools/calibrate.py replays)."""
    return decide_turn(system_for(cfg), trace, cfg)

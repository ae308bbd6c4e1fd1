"""How every stage of every system runs: one guarded call over a batch, and one decision and trace
per turn.

A stage is a function over a batch (`Stage.batch_fn`). It is handed a `Batch`: the turns it
serves, what each turn's earlier stages wrote that this stage reads, the run's settings, the
engines and the search pipeline. It returns one dict per turn of the fields it writes.
`BatchState.call(stage, only=...)` is the one door to it, whether the default runner calls it (a
system without a run of its own: `run_stages`, its stages in order) or a system's own control
flow does (CRUISE's dual path, QA-Dragon's and SAM-RAG's rounds): the runtime guards the call
(agents/runtime/batch.py: the deadline, the search for the turn that faults, the timing in
`stage_ms`) and keeps what each turn's stages wrote (`fields`). `BatchState.finish` then decides
every turn by the system's rule and traces it, for every system, whatever the rule does: a rule
that raises or returns neither an answer nor a Decision faults its own turn, and every turn keeps
its trace.

A stage reads only what it declares (`Stage.reads`) and writes only what it declares
(`Stage.writes`): an undeclared read or write fails that stage's turns in one line naming both,
and, for a system whose trace is its fields, a trace field the report reads written with the wrong
type fails where it is written. A stage that writes "turn" hands the later stages a new Turn
record (perception's picture, the standalone question).
"""
from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from agents.base_agent import IDK_ANSWER
from agents.engines.base import Sampling
from agents.runtime.batch import BatchRun, decide_turn, fault_record, fault_site, start_batch
from agents.runtime.system import TURN, Decision, Stage, opening_stages
from agents.runtime.trace import field_type_fault, record
from agents.stages.prompts import ask_vlm


class StageContractError(TypeError):
    """A stage read or wrote a field its record does not declare, or wrote one of the wrong type."""


class Reads(Mapping):
    """One turn's fields as one stage sees them: those it declares in `reads`, each as the stage
    before it wrote it (None where no stage wrote it for the turn: switched off, cut, not asked)."""

    def __init__(self, fields: dict, stage: Stage):
        self._fields = fields
        self._stage = stage

    def __getitem__(self, name: str):
        if name not in self._stage.reads:
            raise StageContractError(f"stage {self._stage.name!r} reads {name!r}, which it does not declare; "
                                     f"its reads: {list(self._stage.reads)}")
        return self._fields.get(name)

    def __iter__(self):
        return iter(self._stage.reads)

    def __len__(self) -> int:
        return len(self._stage.reads)


@dataclass
class Batch:
    """What a stage's `batch_fn` is handed: `turns` (agents/stages/types.py Turn: the question,
    the image, the conversation so far, the picture as text for a VLM that cannot see), `reads`
    (per turn, the earlier fields it declared), `cfg` (the run's settings; `settings` is the
    system's own group), `engines` (`engines.vlm`, `engines.reranker`) and `pipeline` (the
    search pipeline)."""

    turns: list
    reads: list[Reads]
    cfg: object
    engines: object
    pipeline: object
    stage: Stage
    errors: list[list[str]] = field(default_factory=list)

    def __post_init__(self):
        self.errors = [[] for _ in self.turns]

    def __len__(self) -> int:
        return len(self.turns)

    @property
    def settings(self):
        return self.cfg.own

    def ask(self, prompt: str, values: list[dict], *, max_tokens: int = 32, wanted: list[bool] | None = None) -> list[str]:
        """The VLM's reply per turn to prompts/<prompt>.txt filled with that turn's `values`
        ($names), its image (or its picture as text) and its conversation so far; "" for a turn
        not `wanted`. The prompt is found in the system's own package first; it should be among
        the stage's `prompts`, which pre-flight loads whatever the gates let through."""
        asked = [i for i in range(len(self.turns)) if wanted is None or wanted[i]]
        replies = ask_vlm(self.engines.vlm, self.stage.name, self.turns, asked, lambda i: values[i],
                          Sampling(max_tokens=max_tokens), prompt_name=prompt)
        out = [""] * len(self.turns)
        for i, reply in zip(asked, replies):
            out[i] = reply
        return out

    def error(self, i: int, message: str) -> None:
        """Note a fault of turn i that cost it only part of its evidence (its trace's `errors`)."""
        self.errors[i].append(f"{self.stage.name}: {message}")


def written(stage: Stage, results, size: int, check_types: bool = True) -> list[dict]:
    """`results` checked against `stage`'s record: one dict per turn, of declared fields only, each
    of the type the report reads (`check_types`: where the fields are traced as they are);
    StageContractError in one line otherwise."""
    if not isinstance(results, list) or len(results) != size:
        got = f"a list of {len(results)}" if isinstance(results, list) else f"a {type(results).__name__}"
        raise StageContractError(f"stage {stage.name!r} must return one dict per turn ({size}), got {got}")
    for fields in results:
        if not isinstance(fields, dict):
            raise StageContractError(f"stage {stage.name!r} must return a dict per turn, got a {type(fields).__name__}")
        undeclared = sorted(set(fields) - set(stage.writes))
        if undeclared:
            raise StageContractError(f"stage {stage.name!r} writes {undeclared[0]!r}, which it does not declare; "
                                     f"its writes: {list(stage.writes)}")
        fault = field_type_fault(fields) if check_types else None
        if fault:
            raise StageContractError(f"stage {stage.name!r}: {fault}")
    return results


def switched_on(stage: Stage, state) -> bool:
    """Whether `stage` runs in this batch: no switch, its config field on, or its function of the
    batch in flight true (perception: whether the VLM sees)."""
    if stage.switch is None:
        return True
    if callable(stage.switch):
        return bool(stage.switch(state))
    return bool(state.cfg.value(stage.switch))


def json_ready(value):
    """`value` as the trace can hold it: what JSON takes as it is, anything else as its repr."""
    try:
        json.dumps(value)
        return value
    except (TypeError, ValueError):
        if isinstance(value, dict):
            return {str(k): json_ready(v) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return [json_ready(v) for v in value]
        return repr(value)


@dataclass
class BatchState:
    """One batch of one system in flight: its guards (`run`), engines, search and settings, the
    turns as the later stages see them, and each turn's fields as its stages wrote them."""

    run: BatchRun
    engines: object
    pipeline: object
    cfg: object
    turns: list
    system: object
    fields: list[dict] = field(default_factory=list)
    opened: tuple[str, ...] = ()  # the shared stages that opened the batch (each runs once)

    def __post_init__(self):
        self.fields = [{} for _ in self.turns]

    @property
    def settings(self):
        """The running system's own settings (the rule reads them as `cfg.own`)."""
        return self.cfg.own

    def call(self, stage: Stage, only: list[bool] | None = None, cfg=None) -> list[dict | None]:
        """Run `stage` over the live turns (`only`: those of them marked), under the batch guards;
        each turn's result (a dict of the fields it wrote) goes into its `fields`, and is returned
        per turn (None for a turn the stage did not serve: left out, failed, cut). `cfg`: the
        settings the stage reads where they differ from the run's (a system's own search settings)."""
        if stage.batch_fn is None:
            raise ValueError(f"stage {stage.name!r} has no batch_fn to call")
        cfg = self.cfg if cfg is None else cfg
        positions = [i for i in self.run.alive() if only is None or only[i]]
        traced_as_written = self.system is None or self.system.run is None

        def over(group: list[int]) -> list[dict]:
            batch = Batch([self.turns[i] for i in group], [Reads(self.fields[i], stage) for i in group], cfg,
                          self.engines, self.pipeline, stage)
            results = written(stage, stage.batch_fn(batch), len(group), check_types=traced_as_written)
            for i, notes in zip(group, batch.errors):
                self.run.errors[i].extend(notes)
            return results

        served = self.run.guarded(stage.name, over, positions, code=stage.batch_fn)
        out: list[dict | None] = [None] * len(self.turns)
        for i, result in served.items():
            result = dict(result)
            if TURN in result:
                self.turns[i] = result.pop(TURN)
            self.fields[i].update(result)
            out[i] = result
        return out

    def finish(self, signals: Callable[[int], dict] | None = None,
               trace: Callable[[int, Decision], tuple[dict, dict]] | None = None,
               skipped_for_time: list[str] | None = None) -> tuple[list[str], list[dict]]:
        """(answers, traces) of the batch: each turn decided by the system's rule over its
        `signals(i)` (default: its fields) and traced as `trace(i, decision) -> (its own fields,
        its parse outcomes)` (default: its fields, branch and final answer) plus what the runtime
        records for every system. A rule that raises, or returns neither an answer nor a Decision,
        faults its own turn ("rule", with where); a trace that cannot be written keeps the turn's
        fields as they are, with that fault."""
        signals = signals or (lambda i: self.fields[i])
        trace = trace or (lambda i, decision: ({**self.fields[i], "branch": decision.branch,
                                                "final_answer": decision.answer}, {}))
        answers, traces = [], []
        for i in range(len(self.turns)):
            try:
                decision = decide_turn(self.system, signals(i), self.cfg, self.run, i)
            except Exception as exc:  # noqa: BLE001 - a rule's fault costs its own turn
                fault = fault_record("rule", exc, fault_site(exc, self.system.decide))
                self.run.fail(i, f"rule: {fault['exception']}", fault)
                decision = Decision(IDK_ANSWER, "error")
            traced = self._traced(i, decision, trace, skipped_for_time)
            answers.append(traced["final_answer"])
            traces.append(traced)
        return answers, traces

    def _traced(self, i: int, decision: Decision, trace, skipped_for_time) -> dict:
        try:
            own, parsed = trace(i, decision)
            return record(own, system=self.system, cfg=self.cfg, run=self.run, i=i, turn=self.turns[i], parsed=parsed,
                          skipped_for_time=skipped_for_time)
        except Exception as exc:  # noqa: BLE001 - nothing computed is lost for a trace that cannot be written
            # a turn whose trace cannot be written is a fault, answered "I don't know" like any
            fault = fault_record("trace", exc, fault_site(exc, trace))
            self.run.fail(i, f"trace: {fault['exception']}", fault)
            own = {**json_ready(self.fields[i]), "branch": "error", "final_answer": IDK_ANSWER,
                   "rule_answer": decision.answer}
            return record(own, system=self.system, cfg=self.cfg, run=self.run, i=i, turn=self.turns[i], parsed={},
                          skipped_for_time=skipped_for_time, checked=False)


def open_batch(system, turns: list, engines, pipeline, cfg, costs, started: float | None = None) -> BatchState:
    """A batch of `system` opened: its guards (agents/runtime/batch.py `start_batch`) and the
    shared stages every system's list opens with run over it (perception, for a VLM that cannot
    see: agents/runtime/system.py OPENING), so that a system's stages read turns that carry their
    pictures as text."""
    run = start_batch(turns, cfg, costs, system, ledger=engines.vlm.ledger, started=started)
    opened = BatchState(run, engines, pipeline, cfg, list(turns), system)
    opening = opening_stages()
    for stage in opening:
        if switched_on(stage, opened):
            opened.call(stage)
    opened.opened = tuple(stage.name for stage in opening)
    return opened


def run_stages(batch: BatchState):
    """(answers, traces) of an opened batch of a system without a run of its own: its stages in
    the order of its list (the shared opening already run), then its rule over each turn's fields."""
    for stage in batch.system.stages:
        if stage.name not in batch.opened and switched_on(stage, batch):
            batch.call(stage)
    return batch.finish()


def answer_batch(system, turns: list, engines, pipeline, cfg, costs, started: float | None = None):
    """(answers, traces) for one batch of `system`, opened here (`open_batch`; the budget runs
    from `started`, time.monotonic, default now): its own run over the opened batch, else its
    stages in order."""
    batch = open_batch(system, turns, engines, pipeline, cfg, costs, started)
    run = system.run or run_stages
    try:
        return run(batch)
    except Exception as exc:  # noqa: BLE001 - a fault of the system's run costs its batch, never what it computed
        fault = fault_record("run", exc, fault_site(exc, run))
        for i in batch.run.alive():
            batch.run.fail(i, f"run: {fault['exception']}", dict(fault))
        return batch.finish(trace=lambda i, decision: ({**json_ready(batch.fields[i]), "branch": decision.branch,
                                                        "final_answer": decision.answer}, {}))

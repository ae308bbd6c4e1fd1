"""A system's stages run in order: the run of every system that has no run of its own.

Each stage is a function over a batch (`Stage.batch_fn`). It is handed a `Batch`: the turns still
alive, what each turn's earlier stages wrote that this stage reads, the run's settings, the
engines and the search pipeline. It returns one dict per turn of the fields it writes. The
runtime guards each call as it guards every stage (agents/runtime/batch.py `BatchRun.stage`:
the deadline, a retry on each half of a faulting batch, the timing in `stage_ms`), keeps what
each turn's stages wrote, decides every turn by the system's rule and traces it.

A stage reads only what it declares (`Stage.reads`) and writes only what it declares
(`Stage.writes`): an undeclared read or write fails that stage's turns in one line naming both,
and a trace field the report reads, written with the wrong type, fails where it is written.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from agents.engines.base import Sampling
from agents.runtime.batch import BatchState, decide_turn, open_batch
from agents.runtime.system import Stage
from agents.runtime.trace import field_type_fault, perception_trace
from agents.stages.prompts import ask_vlm


class StageContractError(TypeError):
    """A stage read or wrote a field its record does not declare, or wrote one of the wrong type."""


class Reads(Mapping):
    """One turn's fields as one stage sees them: those it declares in `reads`, each as the stage
    before it wrote it (None where that stage did not run for the turn: switched off, or cut)."""

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
        not `wanted`. The prompt is found in the system's own package first."""
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


def written(stage: Stage, results, size: int) -> list[dict]:
    """`results` checked against `stage`'s record: one dict per turn, of declared fields only, each
    of the type the report reads; StageContractError in one line otherwise."""
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
        fault = field_type_fault(fields)
        if fault:
            raise StageContractError(f"stage {stage.name!r}: {fault}")
    return results


def switched_on(stage: Stage, cfg) -> bool:
    return stage.switch is None or bool(cfg.value(stage.switch))


def readable(state: BatchState, fields: list[dict], i: int) -> dict:
    """Turn i's fields as a later stage reads them: what perception read, the fields of the listed
    stages that run as steps (`state.added`), then those the batch_fn stages wrote."""
    earlier = {"perception": perception_trace(state.perceptions[i])}
    for added in state.added.values():
        earlier.update(added[i])
    return {**earlier, **fields[i]}


def run_stages(system, turns: list, engines, pipeline, cfg, costs, started: float | None = None):
    """(answers, traces) for one batch of `system`: its stages in the order of its list (the
    shared opening first), then its rule over each turn's fields."""
    state: BatchState = open_batch(system, turns, engines, pipeline, cfg, costs, started)
    fields: list[dict] = [{} for _ in turns]
    for stage in system.stages:
        if stage.name in state.opened or not switched_on(stage, cfg):
            continue
        if stage.step is not None:
            stage.step(state)
            continue

        def call(positions, stage=stage):
            batch = Batch([state.turns[i] for i in positions], [Reads(readable(state, fields, i), stage) for i in positions],
                          cfg, engines, state.pipeline, stage)
            results = written(stage, stage.batch_fn(batch), len(positions))
            for i, notes in zip(positions, batch.errors):
                state.run.errors[i].extend(notes)
            return results

        for i, result in enumerate(state.run.stage(stage.name, call, [list(range(len(turns)))], (), lambda: None)):
            if result is not None:
                fields[i].update(result)
    answers, traces = [], []
    for i in range(len(turns)):
        decision = decide_turn(system, fields[i], cfg, state.run, i)
        answers.append(decision.answer)
        traces.append(state.trace(i, {**fields[i], "branch": decision.branch, "final_answer": decision.answer},
                                  parsed={}))
    return answers, traces


def answer_batch(system, turns: list, engines, pipeline, cfg, costs, started: float | None = None):
    """(answers, traces) for one batch of `system`: its own run, else its stages in order."""
    return (system.run or run_stages)(system, turns, engines, pipeline, cfg, costs, started)

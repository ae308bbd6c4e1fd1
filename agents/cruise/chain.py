"""The CRUISE chain over one batch, top to bottom:

    turn -> route -> summarize -> retrieve + chunk -> rerank -> answer twice -> consistency
         -> verify (CoV) -> finalize (Algorithm 1)

Each model stage is one batched engine call for all the turns that need it. `BatchRun.stage`
wraps every stage with the same three guards: the deadline (a stage that would overrun is not
started, and nothing after it), faults (a stage that raises is retried once on each half of its
turns; turns that still fail answer "I don't know"), and timing (per-stage wall ms for the trace).
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable

from agents.base_agent import IDK_ANSWER
from agents.config import CruiseConfig
from agents.cruise.deadline import Deadline, StageCosts
from agents.cruise.stages.s1_route import route_batch
from agents.cruise.stages.s2_summarize import summarize_batch
from agents.cruise.stages.s3_retrieve import retrieve_batch
from agents.cruise.stages.s5_rerank import rerank_batch
from agents.cruise.stages.s6_answer import answer_batch
from agents.cruise.stages.s7_consistency import consistency_batch
from agents.cruise.stages.s8_verify import verify_batch
from agents.cruise.stages.s9_finalize import decide_from_trace, decision_inputs
from agents.cruise.trace import turn_trace
from agents.cruise.types import Answers, Decision, Evidence, Retrieval, Route, Summary, Turn, Verification
from agents.engines.base import Engines, Ledger, time_limit

STAGES_WITHOUT_ENGINE = ("retrieve",)


@dataclass
class BatchRun:
    size: int
    deadline: Deadline
    costs: StageCosts
    ledger: Ledger | None = None  # the engines' call records: how many requests a stage sent
    errors: list[list[str]] = field(default_factory=list)
    failed: set[int] = field(default_factory=set)
    stage_ms: dict[str, float] = field(default_factory=dict)
    cut_before: str | None = None

    def __post_init__(self):
        self.errors = [[] for _ in range(self.size)]

    def fail(self, i: int, message: str) -> None:
        self.failed.add(i)
        self.errors[i].append(message)

    def stage(self, name: str, fn: Callable, lists: list[list], fixed: tuple, fallback: Callable[[], object]) -> list:
        """fn(*lists restricted to the live turns, *fixed) -> one result per live turn."""
        out = [fallback() for _ in range(self.size)]
        alive = [i for i in range(self.size) if i not in self.failed]
        if self.cut_before or not alive:
            return out
        if not self.deadline.allows(self.costs.expect(name, len(alive))):
            self.cut_before = name
            return out
        start = time.perf_counter()
        calls_before = len(self.ledger.records) if self.ledger is not None else 0
        with time_limit(self.deadline.remaining):  # served engines bound their requests by it
            for group, results in self._attempt(name, fn, lists, fixed, alive):
                for i, result in zip(group, results):
                    out[i] = result
        seconds = time.perf_counter() - start
        self.stage_ms[name] = round(seconds * 1000.0, 1)
        # The deadline learns seconds per engine request; a stage that calls no engine (search)
        # counts one per turn (requests=None), and a model stage that sent none (every turn
        # skipped it) teaches nothing about a request's cost.
        requests = None
        if self.ledger is not None and name not in STAGES_WITHOUT_ENGINE:
            requests = sum(c.requests for c in self.ledger.records[calls_before:])
        self.costs.observe(name, len(alive), seconds, requests)
        return out

    def _attempt(self, name, fn, lists, fixed, alive):
        groups = [alive]
        for attempt in range(2):
            failed_groups = []
            for group in groups:
                try:
                    yield group, fn(*[[values[i] for i in group] for values in lists], *fixed)
                except Exception as exc:  # noqa: BLE001 - a stage fault costs only its own turns
                    failed_groups.append((group, f"{name}: {type(exc).__name__}: {exc}"))
            if not failed_groups:
                return
            if attempt == 0:  # retry once, each failed group split in half
                groups = [half for group, _ in failed_groups for half in (group[: len(group) // 2], group[len(group) // 2 :]) if half]
            else:
                for group, message in failed_groups:
                    for i in group:
                        self.fail(i, message)


def run_chain(turns: list[Turn], engines: Engines, pipeline, cfg: CruiseConfig, costs: StageCosts) -> tuple[list[str], list[dict]]:
    """Answers and traces for one batch of turns."""
    n = len(turns)
    budget = cfg.turn_budget_s * max(n, 1) - cfg.safety_margin_s
    costs.new_batch()
    run = BatchRun(n, Deadline(budget), costs, ledger=engines.vlm.ledger)
    for i, turn in enumerate(turns):
        if not turn.query:
            run.fail(i, "empty question")

    routes = run.stage("route", route_batch, [turns], (engines.router, cfg),
                       lambda: Route(needs_external=True, is_real_time=False, parsed=None))
    summaries = run.stage("summarize", summarize_batch, [turns, routes], (engines.vlm, cfg), Summary)
    retrievals = run.stage("retrieve", retrieve_batch, [turns, routes, [s.text for s in summaries]], (pipeline, cfg),
                           Retrieval)
    evidence = run.stage("rerank", rerank_batch, [retrievals], (engines.reranker, cfg), Evidence)
    answers = run.stage("answer", answer_batch, [turns, evidence], (engines.vlm, cfg), lambda: Answers(rag=IDK_ANSWER))
    checks = run.stage("consistency", consistency_batch, [turns, evidence, answers], (engines.vlm, cfg), Verification)
    verified = run.stage("verify", verify_batch, [turns, evidence, answers, checks], (engines.vlm, cfg), lambda: None)
    # A turn the verify stage did not reach keeps its consistency result.
    checks = [v if v is not None else c for v, c in zip(verified, checks)]

    final, traces = [], []
    for i in range(n):
        check = checks[i]
        if i in run.failed:
            decision = Decision(IDK_ANSWER, "error")
        else:
            decision = decide_from_trace(decision_inputs(routes[i], evidence[i], answers[i], check), cfg)
        final.append(decision.answer)
        traces.append(
            turn_trace(
                preset=cfg.preset, turn=turns[i], route=routes[i], summary=summaries[i], retrieval=retrievals[i],
                evidence=evidence[i], answers=answers[i], check=check, decision=decision,
                stage_ms=dict(run.stage_ms), deadline_cut=run.cut_before, errors=run.errors[i],
            )
        )
    return final, traces

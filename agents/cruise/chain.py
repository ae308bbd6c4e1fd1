"""The CRUISE chain over one batch, top to bottom:

    turn -> [perceive] -> route -> summarize -> retrieve + chunk -> rerank -> answer twice -> consistency
         -> verify (CoV) -> finalize (Algorithm 1)

The peers' optional stages (docs/chain.md "Stages from the peer systems", all off in the paper's
presets) slot in as `sNx` files that run right after stage N: decompose (s2a) and crop (s2b)
before retrieval, the entity check (s3a) before reranking, the relevance filter (s5a) after it;
tool and domain routing (s1a, s1b) are read from the router's reply. Perception (s0a) runs first
when the VLM cannot see: the turns then carry their picture as text into every prompt. A stage that is off makes
no engine call and passes its input on unchanged.

Each model stage is one batched engine call for all the turns that need it. `BatchRun.stage`
wraps every stage with the same three guards: the deadline (a stage that would overrun is not
started, and nothing after it; an engine call still running at the deadline is stopped by the
engine, and nothing after it starts), faults (a stage that raises is retried once on each half of its
turns; turns that still fail answer "I don't know"), and timing (per-stage wall ms for the trace).
A request a hosted provider refused (content policy, an image it will not take) fails its own turn
only, with no retry: the turn answers "I don't know" under the branch "refused", counted apart
from the faults.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Callable

from agents.base_agent import IDK_ANSWER
from agents.config import CruiseConfig
from agents.cruise.cost_priors import l40s_stage_cost_priors
from agents.cruise.deadline import Deadline, StageCosts
from agents.cruise.stages.s0a_perceive import perceive_batch, perception_wanted, with_pictures
from agents.cruise.stages.s1_route import route_batch
from agents.cruise.stages.s1b_domain_route import domain_notes
from agents.cruise.stages.s2_summarize import summarize_batch
from agents.cruise.stages.s2a_decompose import decompose_batch
from agents.cruise.stages.s2b_crop import crop_batch
from agents.cruise.stages.s3_retrieve import retrieve_batch, web_search_enabled
from agents.cruise.stages.s3a_entity_check import entity_check_batch
from agents.cruise.stages.s5_rerank import rerank_batch
from agents.cruise.stages.s5a_relevance import relevance_batch
from agents.cruise.stages.s6_answer import answer_batch
from agents.cruise.stages.s7_consistency import consistency_batch
from agents.cruise.stages.s8_verify import verify_batch
from agents.cruise.stages.s9_finalize import decide_from_trace, decision_inputs
from agents.cruise.trace import funnel_flags, turn_trace
from agents.cruise.types import (
    Answers,
    CropPlan,
    Decision,
    Evidence,
    Perception,
    Retrieval,
    Route,
    SubQueries,
    Summary,
    Turn,
    Verification,
)
from agents.engines.base import Engines, Ledger, time_limit

STAGES_WITHOUT_ENGINE = ("perceive", "retrieve")


def stage_priors(cfg: CruiseConfig) -> dict[str, float]:
    """Seconds per turn each stage is expected to take before it is timed: the config's prior
    model at the config's own generation lengths, the stages it sets outright, and nothing for
    the grounding check (milliseconds, no model), which the deadline would otherwise charge the
    dearest request's cost until it had run once."""
    priors = l40s_stage_cost_priors(cfg) if cfg.run.cost_priors == "l40s" else {}
    priors.update(cfg.run.stage_cost_priors_s)
    if cfg.answer.cov_mode == "grounding":
        priors["verify"] = 0.0
    return priors


def engine_free_stages(cfg: CruiseConfig) -> tuple[str, ...]:
    """The stages that call no model under cfg: their cost is learned per turn, not per request
    (the grounding check verifies without one)."""
    return STAGES_WITHOUT_ENGINE + (("verify",) if cfg.answer.cov_mode == "grounding" else ())


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
    engine_free: tuple[str, ...] = STAGES_WITHOUT_ENGINE

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
        for record in self.ledger.records[calls_before:]:
            for position, reason in record.refusals or []:
                if isinstance(position, int) and 0 <= position < len(group) and group[position] not in self.refused:
                    self.refuse(group[position], f"{name}: the provider refused the request: {reason}")

    def stage(self, name: str, fn: Callable, lists: list[list], fixed: tuple, fallback: Callable[[], object]) -> list:
        """fn(*lists restricted to the live turns, *fixed) -> one result per live turn."""
        out = [fallback() for _ in range(self.size)]
        alive = [i for i in range(self.size) if i not in self.failed]
        if self.cut_before or self.cut_during or not alive:
            return out
        if not self.deadline.allows(self.costs.expect(name, len(alive))):
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
        self.costs.observe(name, len(alive), seconds, requests)
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


@dataclass
class Gathered:
    """Stages 1-5 of one batch (with the peer stages that are on): one entry per turn each."""

    routes: list[Route]
    summaries: list[Summary]
    sub_queries: list[SubQueries]
    crops: list[CropPlan]
    retrievals: list[Retrieval]
    evidence: list[Evidence]
    notes: list[str]  # the domain's lines for the answer prompt ("" for none)
    turns: list[Turn]  # the turns as the later stages see them (with their picture blocks)
    perceptions: list[Perception | None]  # None where perception did not run (a VLM that sees)


def start_batch(turns: list[Turn], cfg: CruiseConfig, costs: StageCosts, ledger: Ledger | None = None,
                started: float | None = None) -> BatchRun:
    """The batch's deadline and guards; `ledger` (the engines') lets the deadline count each stage's
    requests; `started` (time.monotonic) is when the budget began, default now."""
    n = len(turns)
    # turn_budget_s 0: no per-turn budget (the relaunched benchmark has none)
    budget = math.inf if cfg.run.turn_budget_s <= 0 else cfg.run.turn_budget_s * max(n, 1) - cfg.run.safety_margin_s
    costs.new_batch()
    run = BatchRun(n, Deadline(budget, start=started), costs, ledger=ledger, engine_margin_s=cfg.run.engine_margin_s,
                   engine_free=engine_free_stages(cfg))
    for i, turn in enumerate(turns):
        if not turn.query:
            run.fail(i, "empty question")
    return run


def gather_evidence(turns: list[Turn], engines: Engines, pipeline, cfg: CruiseConfig, run: BatchRun) -> Gathered:
    """Route, summarize, retrieve and rerank (and the peer stages that are on) under `run`'s guards:
    the context each turn's answer will see. benchmarks.peer_stages measures this part alone."""
    perceptions: list[Perception | None] = [None] * len(turns)  # None: perception did not run
    if perception_wanted(cfg, engines.vlm):
        perceptions = run.stage("perceive", perceive_batch, [turns], (cfg,), Perception)
        turns = with_pictures(turns, perceptions, cfg)
    routes = run.stage("route", route_batch, [turns], (engines.router, cfg),
                       lambda: Route(needs_external=True, is_real_time=False, parsed=None))
    summaries = run.stage("summarize", _summarize, [turns, routes, perceptions], (engines.vlm, cfg), Summary)
    sub_queries = [SubQueries() for _ in turns]
    if cfg.peer_stages.use_decompose:
        web = pipeline is not None and web_search_enabled(pipeline)
        sub_queries = run.stage("decompose", decompose_batch, [turns, routes, summaries], (engines.vlm, cfg, web),
                                SubQueries)
    crops = [CropPlan() for _ in turns]
    if cfg.peer_stages.use_crop_search:
        crops = run.stage("crop", crop_batch, [turns, routes], (engines.vlm, cfg), CropPlan)
    retrievals = run.stage("retrieve", _retrieve, [turns, routes, [s.text for s in summaries], crops, sub_queries],
                           (pipeline, cfg), Retrieval)
    if cfg.peer_stages.use_entity_check:
        checked = run.stage("entity_check", entity_check_batch, [turns, retrievals], (engines.vlm, cfg), lambda: None)
        # A turn the check did not reach (deadline, fault) keeps its unchecked retrieval.
        retrievals = [c if c is not None else r for c, r in zip(checked, retrievals)]
    evidence = run.stage("rerank", rerank_batch, [retrievals], (engines.reranker, cfg), Evidence)
    if cfg.peer_stages.use_relevance_filter:
        filtered = run.stage("relevance", relevance_batch, [turns, evidence], (engines.vlm, cfg), lambda: None)
        evidence = [f if f is not None else e for f, e in zip(filtered, evidence)]
    notes = [domain_notes(r, cfg) for r in routes]
    return Gathered(routes, summaries, sub_queries, crops, retrievals, evidence, notes, turns, perceptions)


def run_chain(turns: list[Turn], engines: Engines, pipeline, cfg: CruiseConfig, costs: StageCosts,
              started: float | None = None) -> tuple[list[str], list[dict]]:
    """Answers and traces for one batch of turns; the batch's budget runs from `started`
    (time.monotonic; default now)."""
    n = len(turns)
    run = start_batch(turns, cfg, costs, ledger=engines.vlm.ledger, started=started)
    got = gather_evidence(turns, engines, pipeline, cfg, run)
    turns = got.turns
    routes, summaries, retrievals, evidence, notes = got.routes, got.summaries, got.retrievals, got.evidence, got.notes
    answers = run.stage("answer", _answer, [turns, evidence, notes], (engines.vlm, cfg), lambda: Answers(rag=IDK_ANSWER))
    checks = run.stage("consistency", consistency_batch, [turns, evidence, answers], (engines.vlm, cfg), Verification)
    verified = run.stage("verify", verify_batch, [turns, evidence, answers, checks], (engines.vlm, cfg), lambda: None)
    # A turn the verify stage did not reach keeps its consistency result.
    checks = [v if v is not None else c for v, c in zip(verified, checks)]

    final, traces = [], []
    for i in range(n):
        check = checks[i]
        if i in run.refused:
            decision = Decision(IDK_ANSWER, "refused")
        elif i in run.failed:
            decision = Decision(IDK_ANSWER, "error")
        else:
            decision = decide_from_trace(decision_inputs(routes[i], evidence[i], answers[i], check), cfg)
        final.append(decision.answer)
        trace = turn_trace(
            preset=cfg.preset, turn=turns[i], route=routes[i], summary=summaries[i], retrieval=retrievals[i],
            evidence=evidence[i], answers=answers[i], check=check, decision=decision,
            sub_queries=got.sub_queries[i], crops=got.crops[i], domain_notes=bool(notes[i]),
            perception=got.perceptions[i],
            stage_ms=dict(run.stage_ms), deadline_cut=run.cut_before, deadline_cut_during=run.cut_during,
            errors=run.errors[i],
        )
        trace["funnel"] = funnel_flags(trace, cfg)
        # what the run's settings did besides the stages: the per-turn budget in force (0: none),
        # and the stages switched to text modes for an engine without token probabilities
        trace["turn_budget_s"] = cfg.run.turn_budget_s
        trace["mode_fallbacks"] = list(cfg.mode_fallbacks)
        traces.append(trace)
    return final, traces


def _summarize(turns, routes, perceptions, engine, cfg):
    return summarize_batch(turns, routes, engine, cfg, perceptions)


def _retrieve(turns, routes, summaries, crops, sub_queries, pipeline, cfg):
    return retrieve_batch(turns, routes, summaries, pipeline, cfg, crops, sub_queries)


def _answer(turns, evidence, notes, engine, cfg):
    return answer_batch(turns, evidence, engine, cfg, notes)

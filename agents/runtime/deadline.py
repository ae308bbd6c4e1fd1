"""The per-call time budget: 10 s x batch size on the competition machine, less a safety margin.

Before each stage the agent asks whether the stage's expected cost still fits in what is left.
The expected cost is learned from earlier batches, the way a scheduler learns task times: per
stage, a decaying high quantile (`quantile`, 0.9 by default) of the seconds per request it took,
times the requests per turn it sends (the most seen: 1 for most stages, 2 for the answer stage,
the passages per turn for the reranker), times the turns it is asked to serve. Requests are the
engine requests (reranker pairs) the ledger recorded during the stage; a stage the ledger never saw
send one (retrieve, perception) counts one per turn.

Why a decaying quantile and not the slowest time ever seen: with the slowest time, one slow
batch (the first after load, a busy machine) would set the estimate for good, and every later
batch would cut the stages it had measured slow. Here a sample weighs `decay` ** (its age in batches):
a slower machine shows at once (a new sample that is the largest is the estimate), a slow batch
followed by normal ones stops counting after four of them (at decay 0.7, q 0.9), and a sample older
than 7 batches is forgotten, so a stage the estimate keeps cutting (and hence never measures
again) falls back to its prior and is tried again. Per request rather than per turn, so a batch
where a stage sends few requests (identical answers skip the consistency check) does not make the
next one look cheap.

Before a stage has been timed, its prior (cost_priors.stage_priors: the config's `cost_priors`
model, for the l40s profile agents/runtime/cost_priors.py, and its `stage_cost_priors_s`) stands
in, so that a cold first batch does not start a stage it cannot finish. A stage no prior prices is
priced 0 until a run times it, and again once its measurements are forgotten: charged another
stage's cost, a cheap step after a long one would be skipped in every batch and never timed.
Estimates only decide whether a stage starts: the engines themselves stop at the deadline
whatever was expected (agents/engines/base.py, `time_limit`).
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field


@dataclass
class StageCosts:
    """Expected seconds of each stage: learned (decaying high quantile), else the prior."""

    priors: dict[str, float] = field(default_factory=dict)  # seconds per turn
    quantile: float = 0.9
    decay: float = 0.7  # weight kept per batch of age
    min_weight: float = 0.1  # older samples are forgotten (0.7 ** 7 < 0.1: after 7 batches)
    batch: int = 0  # batches begun (`new_batch`)
    # stage -> [(seconds per request, batch it was measured in)], oldest first
    samples: dict[str, list[tuple[float, int]]] = field(default_factory=dict)
    requests_per_turn: dict[str, float] = field(default_factory=dict)
    model_stages: set[str] = field(default_factory=set)  # stages the ledger has shown to send requests

    def new_batch(self) -> None:
        """Age every sample by one batch; forget those whose weight fell below `min_weight`."""
        self.batch += 1
        for stage, samples in self.samples.items():
            self.samples[stage] = [(v, b) for v, b in samples if self.decay ** (self.batch - b) >= self.min_weight]

    def per_request_s(self, stage: str) -> float | None:
        """The weighted `quantile` of the stage's seconds per request (None: nothing measured
        lately)."""
        weighted = sorted((v, self.decay ** (self.batch - b)) for v, b in self.samples.get(stage, []))
        if not weighted:
            return None
        reach, cum = self.quantile * sum(w for _, w in weighted), 0.0
        for value, weight in weighted[:-1]:
            cum += weight
            if cum >= reach - 1e-12:
                return value
        return weighted[-1][0]  # the largest: where the earlier weights do not reach the quantile

    def expect(self, stage: str, turns: int) -> float:
        """Seconds `stage` is expected to take over `turns` turns: as measured lately, else its
        prior, else 0: a stage not timed lately is started and timed (charged another stage's
        cost, a cheap step after a long one would be skipped in every batch and never timed)."""
        per_request = self.per_request_s(stage)
        if per_request is None:
            return self.priors.get(stage, 0.0) * turns
        return per_request * self.requests_per_turn.get(stage, 1.0) * turns

    def observe(self, stage: str, turns: int, seconds: float, requests: int | None = None) -> None:
        """One run of a stage: `turns` served in `seconds` with `requests` engine requests, as the
        engines' ledger counted them (None: no ledger). Whether a stage calls a model is read off
        the ledger, not declared: a stage seen to send a request is a model stage, learned per
        request, and a run of it that sent none (every turn skipped it) tells nothing about a
        request's cost and is not kept; a stage never seen to send one (search, perception, a rule
        of the system's own) is learned per turn."""
        if requests:
            self.model_stages.add(stage)
        elif stage in self.model_stages:
            return
        else:
            requests = turns
        if turns <= 0 or requests <= 0:
            return
        # A measurement replaces the prior: the machine's real speed beats our estimate.
        self.samples.setdefault(stage, []).append((seconds / requests, self.batch))
        self.requests_per_turn[stage] = max(self.requests_per_turn.get(stage, 0.0), requests / turns)


class Deadline:
    def __init__(self, budget_s: float, clock=time.monotonic, start: float | None = None):
        """`start`: when the budget began on `clock` (default: now); the agent passes the moment
        the evaluator called it, so the work before the chain (reading the images) is counted."""
        self.clock = clock
        self.end = (clock() if start is None else start) + budget_s

    def remaining(self) -> float:
        return self.end - self.clock()

    def allows(self, expected_s: float) -> bool:
        return self.remaining() > expected_s

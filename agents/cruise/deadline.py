"""The per-call time budget: 10 s x batch size on the competition machine, less a safety margin.

Before each stage the agent asks whether the stage's expected cost still fits in what is left.
The expected cost is learned from earlier batches (the slowest per-turn time seen, times the
number of turns). Before a stage has been timed, its prior (the config's `stage_cost_priors_s`;
for the l40s profile worked out on paper, agents/config.py) stands in, so that a cold first batch
does not start a stage it cannot finish; without a prior, the first batch runs every stage.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field


@dataclass
class StageCosts:
    """Seconds per turn for each stage: the worst seen, else the prior."""

    priors: dict[str, float] = field(default_factory=dict)
    per_turn_s: dict[str, float] = field(default_factory=dict)

    def expect(self, stage: str, turns: int) -> float:
        return self.per_turn_s.get(stage, self.priors.get(stage, 0.0)) * turns

    def observe(self, stage: str, turns: int, seconds: float) -> None:
        # A measurement replaces the prior: the machine's real speed beats our paper estimate.
        if turns > 0:
            self.per_turn_s[stage] = max(self.per_turn_s.get(stage, 0.0), seconds / turns)


class Deadline:
    def __init__(self, budget_s: float, clock=time.monotonic):
        self.clock = clock
        self.end = clock() + budget_s

    def remaining(self) -> float:
        return self.end - self.clock()

    def allows(self, expected_s: float) -> bool:
        return self.remaining() > expected_s

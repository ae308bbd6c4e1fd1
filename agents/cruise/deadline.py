"""The per-call time budget: 10 s x batch size on the competition machine, less a safety margin.

Before each stage the agent asks whether the stage's expected cost still fits in what is left.
The expected cost is learned from earlier batches (the slowest per-request time seen, times the
batch size), so the first batch runs every stage and later ones stop before an overrun.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field


@dataclass
class StageCosts:
    """Worst seen seconds per turn for each stage."""

    per_turn_s: dict[str, float] = field(default_factory=dict)

    def expect(self, stage: str, turns: int) -> float:
        return self.per_turn_s.get(stage, 0.0) * turns

    def observe(self, stage: str, turns: int, seconds: float) -> None:
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

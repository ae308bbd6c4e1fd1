"""The records SAM-RAG's steps pass on, one per turn (besides CRUISE's Turn, Summary, Retrieval
and Answers, which it reuses)."""
from __future__ import annotations

import functools
from dataclasses import dataclass, field

from agents.stages.types import DEFAULTS as SHARED_DEFAULTS
from agents.stages.types import column as shared_column
from agents.stages.verdicts import Check


@dataclass
class RelevanceSearch:
    """isRel over the retrieved documents, best first, a round of `sam_rag_batch_docs` at a time,
    until a round finds a relevant one (the paper's flag F) or `sam_rag_rounds` rounds have run."""

    scores: list[float] = field(default_factory=list)  # the reranker's score per chunk (Retrieval.chunks)
    order: list[int] = field(default_factory=list)  # chunk indices best first, as many as the rounds can judge
    checks: dict[int, Check] = field(default_factory=dict)  # chunk index -> isRel verdict
    rounds: int = 0

    @property
    def kept(self) -> list[int]:
        """The relevant chunks (the paper's C), in rank order."""
        return [i for i in self.order if i in self.checks and self.checks[i].passed is True]

    @property
    def found(self) -> bool:
        return bool(self.kept)

    def next_round(self, size: int) -> list[int]:
        return [i for i in self.order if i not in self.checks][:size]


@dataclass
class UseCheck:
    """isUse on the first answer, and on the regenerated one when the first failed."""

    first: Check | None = None  # None: not asked (an "I don't know" answer, or cut)
    regenerated: str | None = None  # the second answer (None: no regeneration)
    regenerated_raw: str = ""
    regenerated_min_token_prob: float | None = None
    second: Check | None = None

    @property
    def passed(self) -> bool | None:
        """The final isUse verdict: None when never asked."""
        last = self.second if self.regenerated is not None else self.first
        return None if last is None else last.passed is True


@dataclass
class SupportCheck:
    confidence: float | None = None  # None: not checked
    raw: str = ""
    parsed: bool | None = None


# What SAM-RAG's records of a turn read as where no step wrote them (a fault, a step the turn did
# not reach): the safe default each step passes on.
DEFAULTS = {"relevance": RelevanceSearch, "use": UseCheck, "support": SupportCheck, "checked": str, **SHARED_DEFAULTS}
column = functools.partial(shared_column, defaults=DEFAULTS)

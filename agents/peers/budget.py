"""Room for the steps that give the answer. The deadline admits a step when its own expected
cost fits what is left of the batch (agents/cruise/deadline.py); a chain whose optional steps come
before the one that writes the answer could spend the whole budget on them, and every turn would
then end "I don't know" for want of time, not of evidence. So the peer chains start an optional
step (QA-Dragon's tool router, rephrasing, crop, entity check and fine reranker; SAM-RAG's isRel
rounds and its regeneration) only when it leaves room for the steps after it that the answer
needs, at their expected costs; a step skipped so is named in every trace of the batch
(`skipped_for_time`). A step not yet timed is expected at its prior (0 for the peers' steps:
the first batch skips nothing)."""
from __future__ import annotations

from agents.cruise.chain import BatchRun


def leaves_room(run: BatchRun, step: str, then: tuple[str, ...]) -> bool:
    """Whether `step` and the steps `then` are all expected to fit what is left of the batch."""
    alive = run.size - len(run.failed)
    return run.deadline.allows(sum(run.costs.expect(name, alive) for name in (step, *then)))

"""The order in which turns reach the agent: the official evaluator's turn-batch iterator.

Conversations wait in a queue in dataset order. Each batch pops up to `batch_size`
conversations from the front and takes ONE turn from each; a conversation with turns left is
pushed back on the FRONT of the queue, one at a time, as the official code does with
`deque.appendleft`. So the next batch holds the unfinished conversations first (in reverse
order of the batch just served), then fresh ones; turn N+1 of a conversation always comes in a
strictly later batch than turn N. Nothing is ever shuffled.
"""
from __future__ import annotations

from collections import deque
from collections.abc import Iterator, Sequence

from agents.base_agent import MAX_BATCH_SIZE, MIN_BATCH_SIZE
from evaluator.harness.dataset import Conversation

# Two sessions of the public validation split that the official iterator skips (it logs a
# warning and drops them; they still take a slot in the batch where they are popped).
SKIPPED_SESSIONS = frozenset({
    "04d98259-27af-41b1-a7be-5798fd1b8e95",
    "695b4b5c-7c65-4f7b-8968-50fe10482a16",
})


def clip_batch_size(requested) -> int:
    try:
        value = int(requested)
    except (TypeError, ValueError):
        value = MIN_BATCH_SIZE
    return max(MIN_BATCH_SIZE, min(MAX_BATCH_SIZE, value))


def turn_batches(conversations: Sequence[Conversation], batch_size: int) -> Iterator[list[tuple[int, int]]]:
    """Batches of (position in `conversations`, turn index)."""
    if batch_size < 1:
        raise ValueError("batch_size must be at least 1")
    next_turn = [0] * len(conversations)
    queue = deque(range(len(conversations)))
    while queue:
        popped = [queue.popleft() for _ in range(min(batch_size, len(queue)))]
        batch = []
        for pos in popped:
            conv = conversations[pos]
            if conv.session_id in SKIPPED_SESSIONS:
                continue
            batch.append((pos, next_turn[pos]))
            next_turn[pos] += 1
            if next_turn[pos] < len(conv.turns):
                queue.appendleft(pos)
        if batch:
            yield batch



def planned_batches(conversations: Sequence[Conversation], batch_size: int,
                    stop_after: int | None = None) -> list[list[tuple[int, int]]]:
    """The batches a run serves. `stop_after=N` is the official `--num-conversations N` loop:
    after each batch it stops once MORE than N distinct conversations have been served, so it
    overshoots by up to a batch, and a multi-turn conversation may end part-way (only its first
    turns are answered). None (or a negative N): every batch."""
    batches = []
    seen: set[int] = set()
    for batch in turn_batches(conversations, batch_size):
        batches.append(batch)
        seen.update(pos for pos, _ in batch)
        if stop_after is not None and 0 <= stop_after < len(seen):
            break
    return batches


def conversation_selection(num_conversations: int | None, exact: bool, served: int, turns: int,
                           shards: list[str] | None = None) -> str:
    """run_summary.json's "conversation_selection": the rule that picked the turns, and how many
    conversations and turns it served; `shards`: the shards a merged run gathers (each picked
    its conversations by that rule on its own), with served and turns summed over them."""
    n = num_conversations
    counts = f"{served} served, {turns} turns" + (" in all" if shards else "")
    if n is None or n < 0:
        text = f"all conversations ({counts})"
    elif exact:
        text = f"exactly the first {n} conversations (--exact-conversations; {counts})"
    else:
        text = (f"official --num-conversations {n}: whole batches until more than {n} conversations were "
                f"served ({counts})")
    if shards:
        text += f"; merged from {len(shards)} folders ({', '.join(str(s) for s in shards)}), each selected on its own"
    return text

"""Reading a call's prompts by rows, for a causal LM on a CPU (ModelSettings.prefill "rows"): each
prompt is read alone, with no padding token computed, and a run of tokens several prompts begin
with (a stage's system message) is read once for them; the caches are then joined left-padded so
that `generate` decodes the rows together. On one CPU core the cpu profile's answer prompts cost
0.6x their tokens read so against 1.7x as one padded batch, with the same answers and
log-probabilities (docs/benchmarks.md "CPU inference backends")."""
from __future__ import annotations

import time

import torch


def left_padded(rows: list[list[int]], pad_id: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(input_ids, attention_mask) of token rows padded on the left to the longest."""
    longest = max(len(r) for r in rows)
    ids = torch.tensor([[pad_id] * (longest - len(r)) + r for r in rows])
    mask = torch.tensor([[0] * (longest - len(r)) + [1] * len(r) for r in rows])
    return ids, mask


# A run of tokens that several prompts of one call begin with is read once for all of them when
# it is at least this long; a shorter one is read with each prompt (a forward pass of its own
# costs about one read of the weights, ~10 prompt tokens' worth on one core).
SHARED_PREFIX_MIN = 16


class DeadlinePassed(Exception):
    """The call's deadline came while its prompts were being read."""


def _common_length(rows: list[list[int]]) -> int:
    first = rows[0]
    for k in range(min(len(r) for r in rows)):
        if any(r[k] != first[k] for r in rows):
            return k
    return min(len(r) for r in rows)


def _extend(net, cache, tokens: list[int]):
    """`cache` (a DynamicCache, or None for an empty one) after reading `tokens` too."""
    from transformers import DynamicCache

    out = DynamicCache()
    if cache is not None:
        for index, layer in enumerate(cache.layers):
            out.update(layer.keys, layer.values, index)  # update() concatenates: the parent is left as it is
    if tokens:
        net(input_ids=torch.tensor([tokens]), past_key_values=out, use_cache=True, logits_to_keep=1)
    return out


def prefix_tree(heads: list[list[int]], min_shared: int = SHARED_PREFIX_MIN) -> tuple[list, list]:
    """How to read token rows so that a run of at least `min_shared` tokens several rows begin
    with is read once: (steps, row_step). Each step is (parent step or None, tokens read on top of
    the parent's cache); row i's cache is that of step row_step[i]. Steps come parents first."""
    steps: list[tuple[int | None, list[int]]] = []
    row_step: list[int | None] = [None] * len(heads)

    def read(parent, tokens) -> int | None:
        if not tokens:
            return parent
        steps.append((parent, tokens))
        return len(steps) - 1

    def fill(members: list[int], depth: int, parent) -> None:  # every member begins with the parent's tokens
        if len(members) == 1:
            row_step[members[0]] = read(parent, heads[members[0]][depth:])
            return
        shared = _common_length([heads[m] for m in members])
        if shared - depth >= min_shared:
            parent, depth = read(parent, heads[members[0]][depth:shared]), shared
        parts: dict = {}
        for m in members:
            parts.setdefault(heads[m][shared] if len(heads[m]) > shared else None, []).append(m)
        for key, part in parts.items():
            if key is None:  # these rows end where the shared run does
                for m in part:
                    row_step[m] = read(parent, heads[m][depth:])
            else:
                fill(part, depth, parent)

    fill(list(range(len(heads))), 0, None)
    return steps, row_step


def prefill_rows(net, rows: list[list[int]], end: float | None = None, min_shared: int = SHARED_PREFIX_MIN,
                 clock=time.monotonic):
    """The KV cache of every row but its last token, with no padding token computed, joined
    left-padded for `generate` to go on from with the left-padded batch (`left_padded`): it then
    reads only each row's last token and decodes the rows together.

    Each row is read alone, except that a run of at least `min_shared` tokens several rows begin
    with (a stage's system message) is read once for them (`prefix_tree`). `end`: a
    `clock()` instant (the engine's clock); DeadlinePassed when it comes between two forward
    passes. A row needs at least 2 tokens."""
    from transformers import DynamicCache

    heads = [r[:-1] for r in rows]
    steps, row_step = prefix_tree(heads, min_shared)
    caches = []
    for parent, tokens in steps:
        if end is not None and clock() >= end:
            raise DeadlinePassed
        caches.append(_extend(net, None if parent is None else caches[parent], tokens))
    longest = max(len(h) for h in heads)
    pads = [longest - len(h) for h in heads]
    joined = DynamicCache()
    for index in range(len(caches[0].layers)):
        layers = [caches[step].layers[index] for step in row_step]
        keys = [torch.nn.functional.pad(layer.keys, (0, 0, pad, 0)) for layer, pad in zip(layers, pads)]
        values = [torch.nn.functional.pad(layer.values, (0, 0, pad, 0)) for layer, pad in zip(layers, pads)]
        joined.update(torch.cat(keys), torch.cat(values), index)
    return joined

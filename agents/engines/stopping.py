"""generate()'s stopping criteria in the transformers engine (agents/engines/transformers_engine.py):
a row stops at a stop string it has written (`StopOnText`), and every row stops before a decode
step would end past the batch's deadline (`StopAtClock`)."""
from __future__ import annotations

import time

import torch


class StopOnText:
    """generate()'s stopping criterion for stop strings: a row is done once the text it has
    generated contains one of them.

    Why not transformers' own `stop_strings=`: its StopStringCriteria precomputes, for every
    token of the vocabulary, where it could end each stop string, and caches that on the
    vocabulary's order, which changes between calls, so it was rebuilt on every call: 5-8 s of
    CPU per verify call with the 128k Llama vocabulary on the H100. Here each step
    decodes only the last few generated tokens of each row (a window wide enough to hold the
    longest stop string, so a stop string is seen on the step that completes it) and searches
    them. The text we return is cut at the earliest stop string afterwards (`cut_at_stop`) either
    way, so where a row stops changes only how long the batch runs, never its text.
    """

    def __init__(self, tokenizer, stops, prompt_len: int):
        self.tokenizer = tokenizer
        self.stops = [s for s in stops if s]
        self.prompt_len = prompt_len
        # A token decodes to at least one character (a byte-level piece of a multi-byte
        # character decodes to one replacement character), so L characters span <= L tokens;
        # the margin covers a partial character at the window's start.
        self.window = max((len(s) for s in self.stops), default=0) + 4
        self.done: list[bool] | None = None

    def __call__(self, input_ids: torch.LongTensor, scores=None, **kwargs) -> torch.BoolTensor:
        if self.done is None:
            self.done = [False] * input_ids.shape[0]
        start = max(self.prompt_len, input_ids.shape[1] - self.window)
        tails = input_ids[:, start:].tolist()
        for row, tail in enumerate(tails):
            if not self.done[row]:
                text = self.tokenizer.decode(tail, skip_special_tokens=True)
                self.done[row] = any(s in text for s in self.stops)
        return torch.tensor(self.done, dtype=torch.bool, device=input_ids.device)


# How much slower than the last measurement a decode step or a prefill is allowed to come out:
# on a shared machine the speed moves from one call to the next as other jobs start and stop,
# and the deadline must hold anyway; stopping a little early costs only the tokens not written.
STEP_SLACK = 2.0

class StopAtClock:
    """generate()'s stopping criterion for the batch's deadline: every row stops once the next
    decode step would end after `end` (a `time.monotonic()` instant).

    The next step is assumed to take up to `STEP_SLACK` times as long as the last one did, so
    the call returns by `end` rather than one step after it; the prefill (the first forward pass) cannot
    be interrupted, which is why the engine does not start a call with nothing left and the chain
    keeps a margin. transformers' own `max_time` criterion stops only after the time has passed,
    and does not say whether it fired.
    """

    def __init__(self, end: float, clock=time.monotonic):
        self.end = end
        self.clock = clock
        self.started = clock()
        self.last: float | None = None  # when the previous step ended (None: before the first)
        self.first_step_s: float | None = None  # the prefill and the first token
        self.fired = False

    def __call__(self, input_ids: torch.LongTensor, scores=None, **kwargs) -> torch.BoolTensor:
        now = self.clock()
        # The first call comes after the prefill, which says nothing of a decode step's length.
        if self.last is None:
            self.first_step_s = now - self.started
        step = 0.0 if self.last is None else now - self.last
        self.last = now
        self.fired = self.fired or now + STEP_SLACK * step >= self.end
        return torch.full((input_ids.shape[0],), self.fired, dtype=torch.bool, device=input_ids.device)

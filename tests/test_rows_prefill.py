"""The transformers engine's rows prefill (ModelSettings.prefill "rows", the default on a CPU): each
prompt read alone, a run several prompts begin with read once, then all decoded together. It must
give what the left-padded batch gives (text, token log-probabilities, one-word choices, stop
strings, token counts) and stop at the deadline, between prompts as well as between tokens.
A tiny random Llama (testkit/tiny_models.py); SmolLM2's figures: benchmarks/cpu_engines.py."""
from __future__ import annotations

import functools

import pytest

from agents.engines import base as engine_base
from agents.engines import transformers_engine
from agents.engines.base import ChatRequest, Sampling, time_limit
from agents.engines.rows_prefill import prefix_tree
from agents.engines.transformers_engine import TransformersEngine
from testkit.fakes import FakeClock
from testkit.tiny_models import build_tiny_llama

SYSTEM = "you answer the question about the picture with one short answer, or say that you do not know"
QUESTIONS = ["what color is the bus", "which year was this bridge built and who made the first design of it",
             "name", "where does this river go after the city and how long is it"]


def chats(questions=QUESTIONS) -> list[ChatRequest]:
    # three prompts share the system message; the last has another one (no shared run with them)
    return [ChatRequest([{"role": "system", "content": SYSTEM if k < 3 else "be brief"},
                         {"role": "user", "content": q}]) for k, q in enumerate(questions)]


@pytest.fixture(scope="module")
def engines():
    path = build_tiny_llama()
    return TransformersEngine(path, prefill="batch"), TransformersEngine(path, prefill="rows")


def largest_difference(a, b) -> float:
    return max(abs(x - y) for ra, rb in zip(a, b) for x, y in zip(ra.token_logprobs, rb.token_logprobs))


def test_rows_prefill_writes_what_the_padded_batch_writes(engines):
    padded, rows = engines
    sampled = Sampling(max_tokens=12, temperature=0.9, seed=5)  # the answer stage's sampled direct answer
    requests = chats() + [ChatRequest(chats()[0].messages, sampling=sampled)]
    greedy = Sampling(max_tokens=12, logprobs=True)
    a, b = padded.generate(requests, greedy, stage="answer"), rows.generate(requests, greedy, stage="answer")
    assert [r.text for r in b] == [r.text for r in a] and all(r.text for r in a)
    assert [r.output_tokens for r in b] == [r.output_tokens for r in a]
    assert largest_difference(a[:4], b[:4]) < 1e-4
    # each prompt's own tokens are counted, not the tokens the prefill read, nor the padding
    tokenizer, bos = rows.tokenizer, rows.tokenizer.bos_token
    texts = [rows.prompt_text(r, with_image=False) for r in requests]
    own = [len(tokenizer(t, add_special_tokens=not t.startswith(bos))["input_ids"]) for t in texts]
    assert [r.prompt_tokens for r in b] == [r.prompt_tokens for r in a] == own
    assert padded.ledger.records[-1].prompt_tokens == rows.ledger.records[-1].prompt_tokens == sum(own)


def test_rows_prefill_joins_each_rows_cache_whatever_the_order_of_the_rows(engines):
    """The rows that share the system message are neither first nor together here (shared, other,
    shared, shared): their caches are read in another order than the rows', and each row must
    still get its own back."""
    padded, rows = engines
    first, second, third, other = chats()
    requests = [first, other, second, third]
    texts = [rows.prompt_text(r, with_image=False) for r in requests]
    heads = [ids[:-1] for ids in rows.tokenizer(texts, add_special_tokens=False)["input_ids"]]
    _, row_step = prefix_tree(heads)
    assert row_step != sorted(row_step)  # the order this test is for
    greedy = Sampling(max_tokens=12, logprobs=True)
    a, b = padded.generate(requests, greedy), rows.generate(requests, greedy)
    assert [r.text for r in b] == [r.text for r in a] and largest_difference(a, b) < 1e-4


def test_rows_prefill_keeps_one_word_choice_probabilities(engines):
    padded, rows = engines
    yes_no = Sampling(choices=("yes", "no"))
    a, b = padded.generate(chats(), yes_no, stage="route"), rows.generate(chats(), yes_no, stage="route")
    assert [r.text for r in b] == [r.text for r in a]
    assert max(abs(x.choice_logprobs[w] - y.choice_logprobs[w]) for x, y in zip(a, b) for w in ("yes", "no")) < 1e-4


def test_rows_prefill_stops_at_stop_strings(engines, monkeypatch):
    padded, rows = engines
    free = padded.generate(chats()[:1], Sampling(max_tokens=24))[0]
    stop = free.text[len(free.text) // 3:][:3]  # a piece of what the model writes unhindered
    with_stop = Sampling(max_tokens=24, stop=(stop,), logprobs=True)
    a = padded.generate(chats(), with_stop)
    passes, _ = slowed(monkeypatch, rows, 0.0)
    b = rows.generate(chats()[:1], with_stop)[0]
    assert stop not in b.text and free.text.startswith(b.text) and b.output_tokens < free.output_tokens
    assert (b.text, b.output_tokens) == (a[0].text, a[0].output_tokens)
    # generation ends on the step that writes the stop string: one pass reads the prompt, one per token
    assert len(passes) == 1 + b.output_tokens
    assert [(r.text, r.output_tokens) for r in rows.generate(chats(), with_stop)] == \
        [(r.text, r.output_tokens) for r in a]


def test_prefix_tree_reads_a_shared_run_once_and_every_row_whole():
    shared = list(range(100, 120))  # 20 tokens three rows begin with
    heads = [shared + [1, 2, 3], shared + [4, 5], [100, 101, 102, 7, 8], shared + [1, 2, 9], [100, 101]]
    steps, row_step = prefix_tree(heads, min_shared=16)

    def read(step):  # the tokens a step's cache holds: its parents' and its own
        parent, tokens = steps[step]
        return (read(parent) if parent is not None else []) + tokens

    assert [read(s) for s in row_step] == heads
    # the 20 shared tokens once; the 3-token run [100, 101, 102] (under 16) with each row
    assert sum(len(tokens) for _, tokens in steps) == 20 + 3 + 2 + 5 + 3 + 2


def slowed(monkeypatch, engine, seconds: float) -> tuple[list[int], FakeClock]:
    """The model takes `seconds` a forward pass, on a fake clock that only its passes move (the
    engine's and its deadline's clock for the test); returns the tokens each pass read, and the clock."""
    passes, clock = [], FakeClock()
    forward = engine.net.forward

    @functools.wraps(forward)  # generate() reads the signature (position_ids from the mask)
    def slow_forward(*args, **kwargs):
        passes.append(kwargs["input_ids"].shape[1])
        clock.sleep(seconds)
        return forward(*args, **kwargs)

    monkeypatch.setattr(engine.net, "forward", slow_forward)
    monkeypatch.setattr(engine, "prefill_s_per_token", None)  # no rate yet: the call is never refused up front
    monkeypatch.setattr(transformers_engine, "time", clock)
    monkeypatch.setattr(engine_base, "time", clock)  # call_end: the deadline's end on the same clock
    return passes, clock


def test_rows_prefill_stops_between_prompts_at_the_deadline(engines, monkeypatch):
    _, rows = engines
    passes, clock = slowed(monkeypatch, rows, 0.2)
    with time_limit(lambda: 0.3):
        out = rows.generate(chats(), Sampling(max_tokens=8))
    assert all(r.cut_by_deadline and r.text == "" for r in out)
    # the prompts take several passes (the shared run, then each row's rest): the second starts at
    # 0.2 s, before the deadline, and ends at 0.4 s; no other starts, nothing is decoded
    assert len(passes) == 2 and clock() == pytest.approx(0.4)


def test_rows_prefill_stops_decoding_at_the_deadline(engines, monkeypatch):
    _, rows = engines
    step = 1 / 16  # s a forward pass (a binary fraction: the clock's sums are exact)
    passes, clock = slowed(monkeypatch, rows, step)
    with time_limit(lambda: 1.0):
        out = rows.generate(chats(), Sampling(max_tokens=200))
    assert any(r.cut_by_deadline for r in out)
    # 5 prefill passes (the shared run, 3 rests, the fourth prompt) end at 5/16 s, the first token's
    # pass at 6/16; then a step is taken while it would end by the deadline with 2x slack
    # (STEP_SLACK): the last at 14/16 s, since 14/16 + 2/16 reaches 1 s. 200 steps would take 12.5 s.
    assert len(passes) == 14 and clock() == 14 * step <= 1.0


def test_a_prefill_is_forecast_from_a_call_of_its_own_kind(engines, monkeypatch):
    # read by rows, the router's short yes/no prompts cost more per token than the answers' long
    # ones: a slow choice rate must not refuse an answer call, nor a slow answer rate a choice call
    _, rows = engines
    monkeypatch.setattr(rows, "choice_s_per_token", 10.0)
    monkeypatch.setattr(rows, "prefill_s_per_token", None)
    with time_limit(lambda: 30.0):
        answered = rows.generate(chats(), Sampling(max_tokens=4))
    assert not any(r.cut_by_deadline for r in answered)
    monkeypatch.setattr(rows, "choice_s_per_token", None)
    monkeypatch.setattr(rows, "prefill_s_per_token", 10.0)
    with time_limit(lambda: 30.0):
        chosen = rows.generate(chats(), Sampling(choices=("yes", "no")))
        refused = rows.generate(chats(), Sampling(max_tokens=4))
    assert not any(r.cut_by_deadline for r in chosen) and all(r.cut_by_deadline for r in refused)


@pytest.mark.parametrize("setting, rows", [("rows", True), ("batch", False), ("auto", True)])  # auto: rows on a CPU
def test_the_runs_prefill_setting_is_the_one_the_engine_its_factory_builds_reads_with(setting, rows):
    """Through the run's own path: its settings (load_config_from_settings), then the engines
    agents/factory.py builds from them (the engine registry's `build`), as CruiseAgent does."""
    from agents.config.loading import load_config_from_settings
    from agents.engines.base import Ledger
    from agents.factory import build_chat_engine

    path = build_tiny_llama()
    config = load_config_from_settings("cpu", None, [f"vlm_model={path}", f"router_model={path}", f"prefill={setting}"])
    assert config.models.prefill == setting
    assert build_chat_engine(config, "vlm", Ledger()).rows_prefill is rows

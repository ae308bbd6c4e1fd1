"""The engine layer on CPU with real weights. SmolLM2 (the fixture `smol`, loaded once per session:
tests/conftest.py): batches, log-probabilities, stop strings, sampling, the deadline inside a
generation, yes/no from next-token odds, its generations a few tokens long; the factory building
the cpu profile's engines; MiniLM's reranker. The tiny models and the vLLM stand-ins:
tests/test_engines.py.
"""
from __future__ import annotations

import functools
import logging
import math

import pytest
from PIL import Image

from agents.engines.base import ChatRequest, Ledger, Sampling
from testkit.tiny_models import build_tiny_mllama, build_tiny_xlmr_reranker

QUESTIONS = ["What is the capital of France?", "Name one primary color.", "What is 2 + 2?",
             "Which planet do we live on?"]
def chat(text: str, image=None) -> ChatRequest:
    return ChatRequest(messages=[{"role": "user", "content": text}], image=image)


def red_image(w=90, h=60):
    return Image.new("RGB", (w, h), (200, 20, 20))


@pytest.fixture(scope="session")
def smol_answers(smol):
    """Greedy answers to QUESTIONS, with log-probabilities (one batch of 4)."""
    return smol.generate([chat(q) for q in QUESTIONS], Sampling(max_tokens=12, logprobs=True))


# --- SmolLM2 through transformers -----------------------------------------------------------
def test_smollm2_answers_a_batch_of_four_in_english(smol_answers):
    assert len(smol_answers) == 4
    assert "paris" in smol_answers[0].text.lower()
    for res in smol_answers:
        assert res.text and res.prompt_tokens > 0 and 0 < res.output_tokens <= 12


def test_smollm2_logprobs_one_per_output_token(smol_answers):
    for res in smol_answers:
        assert len(res.token_logprobs) == res.output_tokens == len(res.tokens)
        assert all(lp <= 0.0 for lp in res.token_logprobs)
        assert "".join(res.tokens).strip().startswith(res.text[:10])
    # "Paris" after "The capital of France is" should be a confident token.
    paris = [lp for tok, lp in zip(smol_answers[0].tokens, smol_answers[0].token_logprobs) if "Paris" in tok]
    assert paris and paris[0] > -1.0


def test_smollm2_greedy_is_deterministic_across_batch_sizes(smol, smol_answers):
    again = smol.generate([chat(QUESTIONS[0])], Sampling(max_tokens=12, logprobs=True))
    assert again[0].text == smol_answers[0].text
    assert again[0].token_logprobs == pytest.approx(smol_answers[0].token_logprobs, abs=1e-3)


def test_smollm2_honours_max_tokens(smol):
    results = smol.generate([chat(q) for q in QUESTIONS[:2]], Sampling(max_tokens=3))
    assert all(0 < r.output_tokens <= 3 for r in results)
    assert any(r.output_tokens == 3 for r in results)


def test_smollm2_cuts_at_the_first_stop_string(smol, smol_answers):
    full = smol_answers[0].text
    words = full.split()
    assert len(words) >= 3
    stop = " " + words[2]
    results = smol.generate([chat(QUESTIONS[0])], Sampling(max_tokens=12, stop=(stop, "\n\n")))
    assert results[0].text == full[: full.find(stop)].strip()
    assert results[0].output_tokens < smol_answers[0].output_tokens


def test_sampling_is_seeded_and_follows_the_temperature(smol):
    """A seeded call repeats itself, and its temperature is used: eight rows of one prompt sampled
    at 1.0 are not all greedy's answer, and the tokens drawn at 0.3 are likelier under the model
    (mean log-probability over ~96 tokens) than those drawn at 1.0 with the same seed. Seeds are
    fixed, so the test gives the same result on every run."""
    ask = [chat("Tell me a word.")] * 8
    sampling = Sampling(max_tokens=12, temperature=1.0, seed=7, logprobs=True)
    hot = smol.generate(ask, sampling)
    assert [r.text for r in smol.generate(ask, sampling)] == [r.text for r in hot]
    greedy = smol.generate(ask[:1], Sampling(max_tokens=12))[0].text
    assert len({r.text for r in hot}) > 1 and any(r.text != greedy for r in hot)
    warm = smol.generate(ask, Sampling(max_tokens=12, temperature=0.3, seed=7, logprobs=True))

    def mean_logprob(results):
        drawn = [lp for r in results for lp in r.token_logprobs]
        return sum(drawn) / len(drawn)

    assert mean_logprob(warm) > mean_logprob(hot)


def test_text_only_engine_warns_once_and_still_answers(smol, caplog):
    smol._warned_image = False
    with caplog.at_level(logging.WARNING, logger="agents.engines.transformers_engine"):
        with_image = smol.generate([chat(QUESTIONS[0], red_image()), chat(QUESTIONS[2])], Sampling(max_tokens=8))
        smol.generate([chat(QUESTIONS[0], red_image())], Sampling(max_tokens=2))
    warnings = [r for r in caplog.records if "image" in r.getMessage()]
    assert len(warnings) == 1
    without = smol.generate([chat(QUESTIONS[0])], Sampling(max_tokens=8))
    assert with_image[0].text == without[0].text and "paris" in with_image[0].text.lower()


# --- factory ---------------------------------------------------------------------------------
def test_cpu_profile_builds_one_chat_engine_for_both_roles():
    from agents.config.loading import load_config
    from agents.engines.reranker import MiniLMReranker
    from agents.engines.transformers_engine import TransformersEngine
    from agents.factory import build_engines

    ledger = Ledger()
    engines = build_engines(load_config("cpu"), ledger)
    assert engines.router is engines.vlm and isinstance(engines.vlm, TransformersEngine)
    assert isinstance(engines.reranker, MiniLMReranker)
    assert engines.vlm.ledger is ledger and engines.reranker.ledger is ledger


def test_factory_builds_two_engines_and_a_flag_reranker_when_asked():
    from agents.config.loading import load_config
    from agents.engines.reranker import CrossEncoderReranker
    from agents.factory import build_engines

    config = load_config("cpu", router_model="smollm2", vlm_model=build_tiny_mllama(),
                         reranker_backend="flag", reranker_model=build_tiny_xlmr_reranker())
    engines = build_engines(config, Ledger())
    assert engines.router is not engines.vlm
    assert engines.vlm.supports_images and not engines.router.supports_images
    assert isinstance(engines.reranker, CrossEncoderReranker)


# --- per-request sampling: one engine call, each request with its own sampling ---------------------
def test_smollm2_honours_per_request_sampling_in_one_call(smol, smol_answers):
    sampled = Sampling(max_tokens=6, temperature=1.0, seed=7)
    mixed = [chat(QUESTIONS[0]), ChatRequest(chat("Tell me a word.").messages, sampling=sampled)]
    smol.ledger.drain()
    results = smol.generate(mixed, Sampling(max_tokens=12, logprobs=True))
    assert len(smol.ledger.drain()) == 1  # still one call
    # The greedy request is unchanged by its sampled neighbour, and only it has log-probabilities.
    assert results[0].text == smol_answers[0].text and results[0].token_logprobs is not None
    assert results[1].token_logprobs is None and results[1].output_tokens <= 6
    alone = smol.generate([chat("Tell me a word.")], sampled)
    assert results[1].text == alone[0].text  # seeded: the same sample as in a call of its own


# --- the batch's deadline inside the engine ------------------------------------------------
LONG_ASK = "Write a long story about a lighthouse keeper, at least five hundred words."


def test_smollm2_stops_at_the_deadline_and_says_so(smol):
    import time

    from agents.engines.base import time_limit

    # The short request (its own sampling: a sub-batch of its own, run first) ends by max_tokens.
    requests = [ChatRequest(chat(QUESTIONS[0]).messages, sampling=Sampling(max_tokens=3)), chat(LONG_ASK)]
    left = 3.0
    end = time.monotonic() + left
    start = time.monotonic()
    with time_limit(lambda: end - time.monotonic()):
        results = smol.generate(requests, Sampling(max_tokens=1000), stage="answer")
    elapsed = time.monotonic() - start
    # 1000 tokens take over 20 s here: the clock stopped it. It returns within about one decode
    # step of the end; 1 s of slack for a loaded machine (tests/test_rows_prefill.py counts the
    # steps on a fake clock).
    assert elapsed <= left + 1.0
    short, story = results
    assert story.cut_by_deadline and story.text == ""
    # A request that ended on its own keeps its text.
    assert not short.cut_by_deadline and short.output_tokens == 3 and short.text
    assert smol.ledger.records[-1].cut_by_deadline >= 1


# --- yes/no from next-token probabilities (Sampling.choices) --------------------------------
def test_smollm2_choices_read_the_next_token_probabilities(smol):
    asks = [chat("Is Paris the capital of France, the country in western Europe? Answer with one word, yes or no."),
            chat("Is the sun cold? Answer yes or no.")]
    results = smol.generate(asks, Sampling(choices=("yes", "no")), stage="route")
    for r in results:
        assert r.text in ("yes", "no") and set(r.choice_logprobs) == {"yes", "no"}
        assert r.choice_logprobs[r.text] == max(r.choice_logprobs.values()) and r.output_tokens == 1
        assert sum(math.exp(lp) for lp in r.choice_logprobs.values()) <= 1.0 + 1e-6
    # Read at each row's own last token whatever the padding: alone, the same probabilities.
    # (SmolLM2-135M's answers themselves are poor: it leans to "no".)
    alone = smol.generate([asks[1]], Sampling(choices=("yes", "no")), stage="route")[0]
    assert alone.choice_logprobs == pytest.approx(results[1].choice_logprobs, abs=1e-3)


def test_smollm2_does_not_start_a_prefill_that_would_outlive_the_deadline(smol, monkeypatch):
    from agents.engines.base import time_limit

    smol.generate([chat(QUESTIONS[0])], Sampling(max_tokens=2))  # times a prefill on this machine
    measured = smol.prefill_s_per_token
    assert measured is not None and measured > 0
    # A prompt whose prefill is forecast to take longer than the 2 s left is not read at all: no
    # forward pass runs (counted, not timed).
    prompt = chat(" ".join([LONG_ASK] * 40))
    tokens = len(smol.tokenizer(smol.prompt_text(prompt, with_image=False)).input_ids)
    monkeypatch.setattr(smol, "prefill_s_per_token", 3.0 / tokens)
    passes = []
    forward = smol.net.forward

    @functools.wraps(forward)  # generate() reads the signature
    def counted_forward(*args, **kwargs):
        passes.append(kwargs.get("input_ids"))
        return forward(*args, **kwargs)

    monkeypatch.setattr(smol.net, "forward", counted_forward)
    with time_limit(lambda: 2.0):
        result = smol.generate([prompt], Sampling(max_tokens=8), stage="verify")[0]
    assert result.cut_by_deadline and passes == []


# --- MiniLM, the cpu profile's reranker ---------------------------------------------------------
PAIRS = [("What is the capital of France?", "Paris is the capital and largest city of France."),
         ("What is the capital of France?", "Golden retrievers are friendly dogs that love to swim."),
         ("What is the capital of France?", "")]


@pytest.fixture(scope="module")
def minilm_reranker():
    from agents.engines.reranker import MiniLMReranker

    return MiniLMReranker("minilm")


def test_minilm_reranker_ranks_on_topic_first(minilm_reranker):
    scores = minilm_reranker.score(PAIRS)
    assert len(scores) == len(PAIRS) and all(0.0 <= s <= 1.0 for s in scores)
    assert scores[0] > scores[1] + 0.1


@pytest.mark.parametrize("batch", [1, 5])
def test_the_minilm_ledger_records_one_call_per_score(minilm_reranker, batch):
    minilm_reranker.ledger = Ledger()
    pairs = [(f"query {i}", f"passage number {i}") for i in range(batch)]
    assert len(minilm_reranker.score(pairs, stage="rerank")) == batch
    records = minilm_reranker.ledger.drain()
    assert len(records) == 1 and records[0].kind == "rerank" and records[0].requests == batch

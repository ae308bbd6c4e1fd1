"""The engine layer on CPU with tiny random models: Mllama (the Llama-3.2-Vision architecture), the
cross-encoder reranker, the factory's refusals, vLLM's request building and results (vLLM itself replaced by
a recording stand-in), the clock criteria. SmolLM2's and MiniLM's real weights: tests/full/test_engines.py.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import pytest
from PIL import Image

from agents.engines.base import ChatRequest, Ledger, Sampling
from agents.engines.local_models import resolve_model
from testkit.tiny_models import build_tiny_mllama, build_tiny_xlmr_reranker
from testkit.vllm_outputs import CompletionOutput, Logprob, RequestOutput, vllm_output


def chat(text: str, image=None) -> ChatRequest:
    return ChatRequest(messages=[{"role": "user", "content": text}], image=image)


@pytest.fixture(scope="session")
def mllama():
    from agents.engines.transformers_engine import TransformersEngine

    return TransformersEngine(build_tiny_mllama())


def red_image(w=90, h=60):
    return Image.new("RGB", (w, h), (200, 20, 20))


def noise_image(seed: int, w=70, h=50):
    import numpy as np

    pixels = np.random.default_rng(seed).integers(0, 256, size=(h, w, 3), dtype=np.uint8)
    return Image.fromarray(pixels)


# --- tiny Mllama (Llama-3.2-Vision architecture) --------------------------------------------
def test_mllama_runs_images_and_text_in_one_batch(mllama):
    history = [{"role": "user", "content": "what is this"}, {"role": "assistant", "content": "a sign"},
               {"role": "user", "content": "which city is it in"}]
    requests = [chat("what is the brand", red_image()), chat("no picture here"),
                ChatRequest(messages=history, image=noise_image(1, 40, 120))]
    results = mllama.generate(requests, Sampling(max_tokens=5, logprobs=True))
    assert len(results) == 3
    for res in results:
        assert 0 < res.output_tokens <= 5 and len(res.token_logprobs) == res.output_tokens
    # The image prompt is the text prompt plus exactly one user turn holding only the image token.
    alone = mllama.generate([chat("what is the brand")], Sampling(max_tokens=5))
    image_turn = mllama.tokenizer("<|start_header_id|>user<|end_header_id|>\n\n<|image|><|eot_id|>",
                                  add_special_tokens=False).input_ids
    assert image_turn.count(mllama.net.config.image_token_index) == 1
    # ... and the image's encoder tokens, counted as vLLM counts them (its mllama.py: the tiles
    # of get_optimal_tiled_canvas, each (image_size // 14) ** 2 + 1 tokens)
    from transformers.models.mllama.image_processing_mllama import get_optimal_tiled_canvas

    vision = mllama.net.config.vision_config
    image = red_image()
    height, width = get_optimal_tiled_canvas(image.height, image.width, vision.max_num_tiles, vision.image_size)
    encoder = (height // vision.image_size) * (width // vision.image_size) * ((vision.image_size // 14) ** 2 + 1)
    assert encoder > 0 and results[0].prompt_tokens == alone[0].prompt_tokens + len(image_turn) + encoder


def test_mllama_output_depends_on_the_image_and_not_on_batch_neighbours(mllama):
    sampling = Sampling(max_tokens=4, logprobs=True)
    a = mllama.generate([chat("what is the brand", noise_image(1))], sampling)[0]
    b = mllama.generate([chat("what is the brand", noise_image(2))], sampling)[0]
    assert a.token_logprobs != pytest.approx(b.token_logprobs, abs=1e-6)
    batched = mllama.generate([chat("a much longer question about the label on the bottle", noise_image(3)),
                               chat("what is the brand", noise_image(1)), chat("text only")], sampling)
    assert batched[1].token_logprobs == pytest.approx(a.token_logprobs, abs=1e-3)


def test_mllama_prompt_uses_the_llama32_vision_layout(mllama):
    prompt = mllama.prompt_text(ChatRequest([{"role": "system", "content": "Be brief."},
                                             {"role": "user", "content": "What is it?"}]), with_image=True)
    assert prompt.startswith("<|begin_of_text|><|start_header_id|>system<|end_header_id|>")
    assert "Be brief.<|eot_id|><|start_header_id|>user<|end_header_id|>\n\n<|image|><|eot_id|>" \
           "<|start_header_id|>user<|end_header_id|>\n\nWhat is it?<|eot_id|>" in prompt
    assert prompt.endswith("<|start_header_id|>assistant<|end_header_id|>\n\n")


# --- ledger ------------------------------------------------------------------------------------
@pytest.mark.parametrize("batch", [1, 5])
def test_ledger_records_one_call_per_generate(mllama, batch):
    mllama.ledger = Ledger()
    requests = [chat(f"question {i}", red_image() if i % 2 else None) for i in range(batch)]
    results = mllama.generate(requests, Sampling(max_tokens=3), stage="summary")
    records = mllama.ledger.drain()
    assert len(records) == 1
    assert records[0].stage == "summary" and records[0].requests == batch
    assert records[0].output_tokens == sum(r.output_tokens for r in results)


# --- rerankers -------------------------------------------------------------------------------
PAIRS = [("What is the capital of France?", "Paris is the capital and largest city of France."),
         ("What is the capital of France?", "Golden retrievers are friendly dogs that love to swim."),
         ("What is the capital of France?", "")]


@pytest.fixture(scope="session")
def flag_reranker():
    from agents.engines.reranker import CrossEncoderReranker

    return CrossEncoderReranker(build_tiny_xlmr_reranker())


def test_flag_reranker_scores_are_probabilities(flag_reranker):
    scores = flag_reranker.score(PAIRS)
    assert len(scores) == len(PAIRS) and all(0.0 <= s <= 1.0 for s in scores)
    assert flag_reranker.score(PAIRS[:1]) == pytest.approx(scores[:1], abs=1e-4)


@pytest.mark.parametrize("batch", [1, 5])
def test_ledger_records_one_call_per_score(flag_reranker, batch):
    flag_reranker.ledger = Ledger()
    pairs = [(f"query {i}", f"passage number {i}") for i in range(batch)]
    assert len(flag_reranker.score(pairs, stage="rerank")) == batch
    records = flag_reranker.ledger.drain()
    assert len(records) == 1 and records[0].kind == "rerank" and records[0].requests == batch


def test_factory_rejects_an_unknown_engine():
    from agents.config.loading import load_config
    from agents.factory import build_engines

    with pytest.raises(ValueError, match=r"^engine='onnx': choose one of \('vllm', 'transformers', 'openai', 'hosted'\)$"):
        load_config("cpu", engine="onnx")
    with pytest.raises(ValueError, match="unknown engine"):  # a config built without load_config's check
        build_engines(load_config("cpu").replace(engine="onnx"), Ledger())


# --- vLLM request building (vLLM itself replaced by a recording stand-in) -----------------------
@dataclass
class RecordingLLM:
    """Stands in for vllm.LLM: records every generate call and answers from the prompt's length."""

    tokenizer: object
    calls: list = field(default_factory=list)

    def get_tokenizer(self):
        return self.tokenizer

    def generate(self, inputs, params, use_tqdm=True):
        self.calls.append((inputs, params))
        outs = []
        for item in inputs:
            ids = self.tokenizer(item["prompt"]).input_ids
            chosen = [5, 6]
            # A top-1 entry that is not the chosen token, as vLLM returns when sampling.
            steps = [{5: Logprob(-0.5, "a"), 9: Logprob(-0.1, "z")}, {6: Logprob(-1.5, "b")}]
            outs.append(RequestOutput(ids, [CompletionOutput(f" answer {len(ids)} ", chosen, steps)]))
        return outs


@dataclass(frozen=True)
class RecordingParams:
    max_tokens: int
    temperature: float
    top_p: float
    stop: list
    seed: int | None
    logprobs: int | None = None


@pytest.mark.parametrize("alias", ["tiny-mllama", "smollm2"])
def test_vllm_inputs_hold_each_chat_once_with_a_single_bos(alias):
    from transformers import AutoTokenizer

    from agents.engines.base import template_messages
    from agents.engines.vllm_engine import build_vllm_inputs

    vision = alias == "tiny-mllama"
    tokenizer = AutoTokenizer.from_pretrained(build_tiny_mllama() if vision else resolve_model(alias))
    requests = [chat("what is on the label", red_image()), chat("plain question"),
                ChatRequest([{"role": "user", "content": "q1"}, {"role": "assistant", "content": "a1"},
                             {"role": "user", "content": "q2"}], image=red_image())]
    inputs = build_vllm_inputs(requests, tokenizer, supports_images=vision)
    assert len(inputs) == 3
    for req, item in zip(requests, inputs):
        # What vLLM tokenizes (special tokens on) equals the template's tokens exactly once.
        rendered = tokenizer.apply_chat_template(template_messages(req.messages, vision and req.image is not None),
                                                 tokenize=False, add_generation_prompt=True)
        assert tokenizer(item["prompt"]).input_ids == tokenizer(rendered, add_special_tokens=False).input_ids
        has_image = vision and req.image is not None
        assert ("multi_modal_data" in item) == has_image
        if vision:
            assert item["prompt"].count("<|image|>") == (1 if has_image else 0)
    if vision:
        # In a conversation the image has a user turn of its own, before the history and the question.
        prompt = inputs[2]["prompt"]
        assert prompt.index("<|image|><|eot_id|>") < prompt.index("q1") < prompt.index("a1") < prompt.index("q2")


def test_vllm_engine_maps_one_batch_to_one_llm_generate_call():
    from transformers import AutoTokenizer

    from agents.engines.vllm_engine import VLLMEngine

    llm = RecordingLLM(AutoTokenizer.from_pretrained(build_tiny_mllama()))
    engine = VLLMEngine.from_llm(llm, RecordingParams, model="tiny-mllama", supports_images=True)
    requests = [chat("short", red_image()), chat("a somewhat longer question")]
    sampling = Sampling(max_tokens=7, temperature=0.0, stop=("\n",), seed=3, logprobs=True)
    results = engine.generate(requests, sampling, stage="answer")
    assert len(llm.calls) == 1
    inputs, params = llm.calls[0]
    assert params == RecordingParams(max_tokens=7, temperature=0.0, top_p=1.0, stop=["\n"], seed=3, logprobs=1)
    assert inputs[0]["multi_modal_data"]["image"].size == (90, 60)
    for item, res in zip(inputs, results):
        n = len(llm.tokenizer(item["prompt"]).input_ids)
        assert res.text == f"answer {n}" and res.prompt_tokens == n and res.output_tokens == 2
        assert res.token_logprobs == [-0.5, -1.5] and res.tokens == ["a", "b"]
    records = engine.ledger.drain()
    assert len(records) == 1 and records[0].requests == 2 and records[0].output_tokens == 4
    no_logprobs = engine.generate(requests[:1], Sampling(max_tokens=2))
    assert llm.calls[1][1].logprobs is None and no_logprobs[0].token_logprobs is None


def test_vllm_engine_sends_a_list_of_sampling_params_when_requests_differ():
    from transformers import AutoTokenizer

    from agents.engines.vllm_engine import VLLMEngine

    llm = RecordingLLM(AutoTokenizer.from_pretrained(build_tiny_mllama()))
    engine = VLLMEngine.from_llm(llm, RecordingParams, model="tiny-mllama", supports_images=True)
    sampled = Sampling(max_tokens=7, temperature=0.7, seed=3)
    requests = [chat("greedy one"), ChatRequest(chat("sampled one").messages, sampling=sampled)]
    results = engine.generate(requests, Sampling(max_tokens=7, logprobs=True), stage="answer")
    assert len(llm.calls) == 1
    _, params = llm.calls[0]
    # vLLM 0.10.1.1's LLM.generate pairs a list of SamplingParams with the prompts one by one.
    assert params == [RecordingParams(max_tokens=7, temperature=0.0, top_p=1.0, stop=[], seed=0, logprobs=1),
                      RecordingParams(max_tokens=7, temperature=0.7, top_p=1.0, stop=[], seed=3)]
    assert results[0].token_logprobs == [-0.5, -1.5] and results[1].token_logprobs is None


# --- how every engine counts an answer's tokens ------------------------------------------------------
EOT = 128009  # Llama 3's <|eot_id|>


@pytest.mark.parametrize("finish_reason, stop_reason, counted", [
    ("stop", None, 2),         # the tokenizer's EOS ended it: not counted
    ("stop", EOT, 2),          # another of the model's stop token ids: not counted
    ("stop", " nice", 3),      # a stop string ended it: the token that completed it stays
    ("length", None, 3),       # max_tokens: no end token
])
def test_vllm_results_leave_out_the_end_token(finish_reason, stop_reason, counted):
    from agents.engines.vllm_engine import to_chat_result

    output = vllm_output([11, 12, EOT], [-0.1, -0.2, -0.05], ["Paris", ".", ""], finish_reason, stop_reason)
    result = to_chat_result(output, want_logprobs=True)
    assert result.output_tokens == counted and result.token_logprobs == [-0.1, -0.2, -0.05][:counted]
    assert to_chat_result(output, want_logprobs=False).output_tokens == counted


def test_vllm_counts_an_images_encoder_tokens_in_the_prompt_as_its_server_does():
    from agents.engines.vllm_engine import to_chat_result

    output = vllm_output([11], [-0.1], ["a"], "length", None, encoder=[128256] * 68)
    assert to_chat_result(output, want_logprobs=False).prompt_tokens == 3 + 68


@pytest.mark.parametrize("batch_images, calls", [(True, [3]), (False, [1, 1, 1])])
def test_vllm_engine_runs_each_image_alone_when_images_must_not_share_a_batch(batch_images, calls):
    from transformers import AutoTokenizer

    from agents.engines.vllm_engine import VLLMEngine

    llm = RecordingLLM(AutoTokenizer.from_pretrained(build_tiny_mllama()))
    engine = VLLMEngine.from_llm(llm, RecordingParams, model="tiny-mllama", supports_images=True,
                                 batch_images=batch_images)
    requests = [chat("first", red_image()), chat("plain question"), chat("second", noise_image(1))]
    results = engine.generate(requests, Sampling(max_tokens=2), stage="answer")
    assert [len(inputs) for inputs, _ in llm.calls] == calls
    assert all(sum("multi_modal_data" in item for item in inputs) <= (3 if batch_images else 1)
               for inputs, _ in llm.calls)
    # every result answers its own request, in order, and the ledger still sees one call
    expected = [f"answer {len(llm.tokenizer(item['prompt']).input_ids)}"
                for item in build_inputs(requests, llm.tokenizer)]
    assert [r.text for r in results] == expected and len(engine.ledger.drain()) == 1


def build_inputs(requests, tokenizer):
    from agents.engines.vllm_engine import build_vllm_inputs

    return build_vllm_inputs(requests, tokenizer, supports_images=True)


def test_an_engine_call_with_no_time_left_reads_no_prompt():
    from agents.engines.base import ChatEngine, time_limit

    class Counting(ChatEngine):
        calls = 0

        def _generate(self, requests, sampling):
            Counting.calls += 1
            raise AssertionError("the model was asked with no time left")

    engine = Counting("counting")
    with time_limit(lambda: -0.1):
        results = engine.generate([chat("hello"), chat("again")], Sampling(max_tokens=8), stage="verify")
    assert Counting.calls == 0
    assert [r.cut_by_deadline for r in results] == [True, True] and all(r.text == "" for r in results)
    assert engine.ledger.records[-1].cut_by_deadline == 2


@dataclass
class _StepOutput:
    request_id: str
    finished: bool
    prompt_token_ids: list
    outputs: list


class SteppingLLMEngine:
    """Stands in for vLLM 0.10.1.1's LLMEngine as LLM._run_engine drives it (add_request, step,
    has_unfinished_requests, abort_request): each step writes one token of every running
    request, takes `step_s` on the fake clock, and returns every request's cumulative output
    (RequestOutputKind.CUMULATIVE, SamplingParams' default)."""

    def __init__(self, clock, step_s: float, tokens_wanted: dict[str, int]):
        self.clock, self.step_s, self.tokens_wanted = clock, step_s, tokens_wanted
        self.running: dict[str, tuple[str, int]] = {}  # id -> (prompt, tokens written)
        self.aborted: list[str] = []
        self.steps = 0

    def add_request(self, request_id, prompt, params):
        self.running[request_id] = (prompt["prompt"], 0)

    def has_unfinished_requests(self):
        return bool(self.running)

    def step(self):
        self.clock.now += self.step_s
        self.steps += 1
        outs = []
        for request_id, (prompt, n) in list(self.running.items()):
            n += 1
            wanted = next(v for k, v in self.tokens_wanted.items() if k in prompt)
            done = n >= wanted
            outs.append(_StepOutput(request_id, done, [1, 2, 3],
                                    [CompletionOutput(f"words {n}", list(range(n)), None)]))
            if done:
                del self.running[request_id]
            else:
                self.running[request_id] = (prompt, n)
        return outs

    def abort_request(self, request_ids):
        self.aborted += list(request_ids)
        for request_id in request_ids:
            self.running.pop(request_id, None)


class _FakeClock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


def test_vllm_step_loop_stops_at_the_deadline_and_aborts_what_still_runs():
    from agents.engines.vllm_engine import generate_until

    clock = _FakeClock()
    llm_engine = SteppingLLMEngine(clock, step_s=0.1, tokens_wanted={"short": 3, "long": 50})
    inputs = [{"prompt": "short one"}, {"prompt": "long one"}, {"prompt": "short two"}]
    outputs = generate_until(llm_engine, inputs, [None] * 3, end=1.05, clock=clock)
    assert clock.now <= 1.05  # no step was started that would end after the deadline
    assert outputs[1] is None and [o.outputs[0].text for o in (outputs[0], outputs[2])] == ["words 3", "words 3"]
    assert len(llm_engine.aborted) == 1 and not llm_engine.running  # the long one was aborted


def test_vllm_engine_inside_a_time_limit_steps_the_engine_and_marks_cut_requests(monkeypatch):
    from transformers import AutoTokenizer

    from agents.engines import vllm_engine
    from agents.engines.base import time_limit

    clock = _FakeClock()
    monkeypatch.setattr(vllm_engine, "time", type("T", (), {"monotonic": staticmethod(clock)}))
    monkeypatch.setattr(vllm_engine, "call_end", lambda: clock() + 0.55)
    llm = RecordingLLM(AutoTokenizer.from_pretrained(build_tiny_mllama()))
    llm.llm_engine = SteppingLLMEngine(clock, step_s=0.1, tokens_wanted={"quick": 2, "slow": 40})
    engine = vllm_engine.VLLMEngine.from_llm(llm, RecordingParams, model="tiny-mllama", supports_images=True)
    with time_limit(lambda: 0.55):
        results = engine.generate([chat("quick"), chat("slow")], Sampling(max_tokens=64), stage="verify")
    assert llm.calls == []  # not LLM.generate, which would run the slow request to its end
    assert results[0].text == "words 2" and not results[0].cut_by_deadline
    assert results[1].cut_by_deadline and results[1].text == ""
    assert engine.ledger.records[-1].cut_by_deadline == 1


def test_vllm_choices_are_read_among_the_top_logprobs():
    from agents.engines.vllm_engine import to_chat_result, to_sampling_kwargs

    kwargs = to_sampling_kwargs(Sampling(max_tokens=64, choices=("yes", "no")))
    assert kwargs["max_tokens"] == 1 and kwargs["logprobs"] >= 2 and kwargs["temperature"] == 0.0
    top = {11: Logprob(-0.4, " Yes"), 12: Logprob(-2.0, "yes"), 13: Logprob(-1.0, " No"), 14: Logprob(-3.0, " Maybe")}
    result = to_chat_result(RequestOutput([1, 2], [CompletionOutput(" Yes", [11], [top])]), False, ("yes", "no"))
    assert result.text == "yes" and result.prompt_tokens == 2
    assert math.isclose(math.exp(result.choice_logprobs["yes"]), math.exp(-0.4) + math.exp(-2.0))
    neither = to_chat_result(RequestOutput([1], [CompletionOutput(" Maybe", [14], [{14: top[14]}])]), False, ("yes", "no"))
    assert neither.text == ""  # unreadable: the stage's safe default


def test_the_clock_criterion_forecasts_decode_steps_not_the_prefill():
    import torch

    from agents.engines.stopping import StopAtClock

    clock = _FakeClock()
    stop = StopAtClock(end=10.0, clock=clock)
    ids = torch.zeros((2, 5), dtype=torch.long)
    clock.now = 6.0  # a 6 s prefill: the first step is no forecast of the next ones
    assert not stop(ids).any()
    clock.now = 6.5
    assert not stop(ids).any()  # next step forecast to end at 7.0
    clock.now = 9.6
    assert stop(ids).all() and stop.fired  # a 3.1 s step: the next would end after 10




def test_one_word_choices_run_in_passes_that_each_check_the_deadline(mllama, monkeypatch):
    # A choice is one forward pass with no step to stop at: many of them run in passes of
    # CHOICE_ROWS, and a pass that would start after the deadline is cut instead. The engine's
    # clock is a fake one that only the passes move, so the cut is exact on a busy machine.
    from agents.engines import base, transformers_engine
    from agents.engines.base import time_limit
    from agents.engines.transformers_engine import CHOICE_ROWS
    from testkit.fakes import FakeClock

    clock = FakeClock()
    monkeypatch.setattr(base, "time", clock)
    monkeypatch.setattr(transformers_engine, "time", clock)
    rows_per_pass = []
    forward = mllama.net.forward

    def slow_forward(*args, **kwargs):  # the model is outside the unit: it takes 0.3 s a pass
        rows_per_pass.append(kwargs["input_ids"].shape[0])
        clock.sleep(0.3)
        return forward(*args, **kwargs)

    monkeypatch.setattr(mllama.net, "forward", slow_forward)
    monkeypatch.setattr(mllama, "choice_s_per_token", None)  # no rate yet: the first pass is never refused
    requests = [chat(f"is {n} a prime number?") for n in range(2 * CHOICE_ROWS + 3)]
    answered = mllama.generate(requests, Sampling(max_tokens=1, choices=("yes", "no")))
    assert rows_per_pass == [CHOICE_ROWS, CHOICE_ROWS, 3] and all(r.text in ("yes", "no") for r in answered)
    rows_per_pass.clear()
    monkeypatch.setattr(mllama, "choice_s_per_token", None)
    with time_limit(lambda: 0.1):  # the deadline passes during the first pass
        cut = mllama.generate(requests, Sampling(max_tokens=1, choices=("yes", "no")))
    assert rows_per_pass == [CHOICE_ROWS]
    assert [r.cut_by_deadline for r in cut] == [False] * CHOICE_ROWS + [True] * (CHOICE_ROWS + 3)

"""CrossEncoderReranker scores as FlagEmbedding's FlagReranker.compute_score(normalize=True) does,
on the tiny random XLM-R cross-encoder (bge-reranker-v2-m3's architecture and tokenizer family)."""
from __future__ import annotations

import math

import pytest

from agents.engines.reranker import CrossEncoderReranker
from testkit.tiny_models import build_tiny_xlmr_reranker

QUERIES = [
    "What is the name of the brand shown on the label of this product?",
    "Which year was the bridge in this picture built?",
    "Mount Fuji " * 40,  # longer than 3/4 of a short max_length: the query is cut too
]
PASSAGES = [
    "The Eiffel Tower is a wrought-iron lattice tower in Paris, France.",
    "A golden retriever is a friendly dog breed that likes to swim.",
    "This bottle of olive oil was made in Italy and costs nine euros. " * 12,  # cut to fit
    "The museum opens at nine in the morning and closes at five.",
    "",
    "Mount Fuji is the highest mountain in Japan and an active volcano.",
]


def logits(scores) -> list[float]:
    return [math.log(s / (1.0 - s)) for s in scores]


def pairs() -> list[tuple[str, str]]:
    return [(q, p) for q in QUERIES for p in PASSAGES]


@pytest.fixture(scope="module")
def model_dir():
    return build_tiny_xlmr_reranker()


@pytest.mark.parametrize("max_length, batch_size", [(512, 32), (48, 4), (20, 5)])
def test_scores_equal_flag_reranker_normalized(model_dir, max_length, batch_size):
    from FlagEmbedding import FlagReranker

    flag = FlagReranker(model_dir, use_fp16=False, devices=["cpu"], batch_size=batch_size, max_length=max_length)
    expected = flag.compute_score([list(p) for p in pairs()], normalize=True)
    ours = CrossEncoderReranker(model_dir, batch_size=batch_size, max_length=max_length)
    got = ours.score(pairs())
    # The random tiny model's logits are all near 0 (scores ~0.5003, spread over ~6e-5 of logit):
    # compare the logits, with a tolerance well below that spread (float32 rounding of a score
    # near 0.5 is ~6e-8).
    assert logits(got) == pytest.approx(logits(expected), abs=2e-6)
    spread = max(logits(got)) - min(logits(got))
    assert spread > 20 * 2e-6 and len(set(got)) >= 2 * len(QUERIES)  # varied scores, not a constant


def test_pairs_are_cut_to_max_length(model_dir):
    ours = CrossEncoderReranker(model_dir, max_length=40)
    ids = ours.pair_ids(pairs())
    assert max(len(i) for i in ids) == 40 and min(len(i) for i in ids) < 40
    assert all(i[0] == ours.tokenizer.cls_token_id and i[-1] == ours.tokenizer.sep_token_id for i in ids)
    assert ours.score([]) == []


def test_the_test_models_have_heads_vllm_can_serve(model_dir):
    """`vllm serve` (the served profile's reranker, benchmarks/vllm_cpu_check.sh --serve) refuses an
    attention head size its PagedAttention lacks; both tiny models must load there as they do
    in-process."""
    from transformers import AutoConfig

    from testkit.tiny_models import VLLM_HEAD_SIZES, build_tiny_mllama

    reranker = AutoConfig.from_pretrained(model_dir)
    mllama = AutoConfig.from_pretrained(build_tiny_mllama(llama_vocab=True)).text_config
    for config in (reranker, mllama):
        assert config.hidden_size // config.num_attention_heads in VLLM_HEAD_SIZES


@pytest.mark.parametrize("bias", [6.0, -6.0])
def test_int8_scores_are_the_sigmoid_of_a_quantized_models_logit(model_dir, tmp_path, bias):
    """reranker_int8: every Linear layer quantized, and the scores still sigmoid(logit) in [0, 1],
    close to float32's. The tiny model's logits are all near 0, where a raw logit also lies in
    [0, 1]: its head's bias moves them to +-6 first (sigmoid 0.9975 / 0.0025)."""
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    net = AutoModelForSequenceClassification.from_pretrained(model_dir)
    with torch.no_grad():
        net.classifier.out_proj.bias.fill_(bias)
    net.save_pretrained(tmp_path)
    AutoTokenizer.from_pretrained(model_dir).save_pretrained(tmp_path)
    int8 = CrossEncoderReranker(str(tmp_path), int8=True)
    assert not [name for name, m in int8.net.named_modules() if type(m) is torch.nn.Linear]
    assert any(isinstance(m, torch.ao.nn.quantized.dynamic.Linear) for m in int8.net.modules())
    got = int8.score(pairs())
    assert all(0.0 < s < 1.0 for s in got)
    assert logits(got) == pytest.approx(logits(CrossEncoderReranker(str(tmp_path)).score(pairs())), abs=0.05)

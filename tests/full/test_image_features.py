"""The cpu profile's image search model, EfficientNet-Lite0's pooled features, as the package uses it.

The package (cragmm-search-pipeline 0.5.1) embeds with `extract_features(model, processor,
images)`: `processor(images=..., return_tensors="pt")`, then `model.get_image_features(**inputs)`,
then divides by the norm. These tests call that function of the installed package, not a copy.
"""
from __future__ import annotations

import io

import pytest

from minibench.search_models import EFFICIENTNET_SEARCH, image_model_classes, load_image_model, resolve_search_model


@pytest.fixture
def model_dir(search_cache):
    """EfficientNet-Lite0 as the session's search cache holds it (tests/conftest.py)."""
    return resolve_search_model(EFFICIENTNET_SEARCH)


def _photo(key: str, transform=None):
    from PIL import Image

    from minibench.images import image_bytes

    image = Image.open(io.BytesIO(image_bytes(key)))
    return transform(image) if transform else image


def test_the_package_embeds_unit_1280_vectors_in_which_a_crop_stays_near_its_photo(model_dir):
    import numpy as np
    import torch
    from cragmm_search.image_search_mock_api.image_search import extract_features

    from benchmarks.answer_recall import off_centre_crop, tilted

    model, processor = load_image_model(model_dir)
    photos = [_photo("chelsea"), _photo("coffee"), _photo("rocket")]
    index = extract_features(model, processor, photos, device=torch.device("cpu"))
    assert index.shape == (3, 1280)
    assert np.allclose(np.linalg.norm(index, axis=1), 1.0, atol=1e-5)
    one = extract_features(model, processor, photos[0].convert("L"), device=torch.device("cpu"))  # one image, greyscale
    assert one.shape == (1, 1280)
    for transform in (off_centre_crop, tilted):
        query = extract_features(model, processor, transform(photos[0]), device=torch.device("cpu"))[0]
        scores = index @ query
        assert scores.argmax() == 0 and scores[0] > 0.7 and max(scores[1:]) < 0.5


def test_the_package_loaders_are_swapped_only_for_our_model_and_only_inside_the_block(model_dir):
    import cragmm_search.search as package
    from transformers import CLIPModel, CLIPProcessor

    with image_model_classes("openai/clip-vit-large-patch14-336"):
        assert package.CLIPModel is CLIPModel and package.CLIPProcessor is CLIPProcessor
    with image_model_classes(model_dir):
        model = package.CLIPModel.from_pretrained(model_dir).to("cpu")
        assert package.CLIPProcessor.from_pretrained(model_dir)(images=_photo("coins"))["pixel_values"].shape == (1, 3, 224, 224)
        assert str(model.device) == "cpu"
    assert package.CLIPModel is CLIPModel and package.CLIPProcessor is CLIPProcessor


def test_the_index_check_reads_the_width_from_our_config(model_dir):
    from evaluator.search.index_check import model_width

    assert model_width(model_dir, "image") == 1280

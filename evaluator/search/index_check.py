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

The full-content web database (`--web-contents`, kind "contents") is no chromadb index but the
package's sharded LMDB files, `shard_0.mdb` .. `shard_<n-1>.mdb`. The package takes n from the
highest shard number it finds, so a download that stopped early is not refused by it: it looks
keys up in the wrong shards and every web search fails. Here a shard file missing between
others, an unreadable shard, or a shard whose first key does not hash to it (the last shards
are missing: n is wrong) each stop the run with a message saying so.
"""
from __future__ import annotations

import itertools
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
    kind: str  # "image", "web" or "contents" (the full-content web database: no model)
    repo_id: str
    model: str | None  # the model (hub id or local directory) whose embeddings the index must hold
    # the command that makes a missing index (a search provider's build command for its local
    # indices); None: the tools.fetch command for the hub id
    remedy: str | None = None

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
        raise SearchIndexError(f"{label} is not available: {unavailable_reason(exc)}\n"
                               f"  cache: {constants.HF_HUB_CACHE}; fetch it with: {fetch_hint(spec)}") from None
    blobs = Path(constants.HF_HUB_CACHE) / ("datasets--" + spec.repo_id.replace("/", "--")) / "blobs"
    if blobs.is_dir() and any(blobs.glob("*.incomplete")):
        raise SearchIndexError(f"{label} is only partly downloaded (.incomplete files in {blobs}); "
                               f"run {fetch_hint(spec)} again to finish it")
    if spec.kind == "contents":
        return path
    if not (path / "chroma.sqlite3").is_file():
        raise SearchIndexError(f"{label} at {path} has no chroma.sqlite3: missing or partly downloaded")
    if not os.access(path, os.W_OK) or not os.access(path / "chroma.sqlite3", os.W_OK):
        raise SearchIndexError(f"{label} at {path} is read-only; the search package updates the "
                               f"collection's settings when it opens it, so it must be writable")
    return path


def unavailable_reason(exc: Exception) -> str:
    """Why huggingface_hub could not hand over a snapshot, without its own advice: offline it
    suggests HF_HUB_OFFLINE=0, which does nothing where the caller (the pre-flight, an offline
    run) switched the hub off on purpose."""
    if type(exc).__name__ == "LocalEntryNotFoundError":
        return "it is not in the Hugging Face cache, and this process does not download"
    first = str(exc).splitlines()[0] if str(exc) else ""
    return f"{type(exc).__name__}: {first.split(' To enable repo look-ups')[0]}"


def fetch_hint(spec: IndexSpec) -> str:
    """The command that fetches (or builds) the index: its provider's, else tools.fetch with the
    flags for it."""
    if spec.remedy:
        return spec.remedy
    from evaluator.search.fetch_route import fetch_command

    return fetch_command(None, spec.repo_id, spec.kind) or "python -m tools.fetch"


CONTENTS_KEYS = ("page_name", "page_url", "page_snippet", "page_result")
KEYS_PER_SHARD = 8  # keys checked per shard for belonging there


def contents_shards(path: Path) -> dict[int, Path]:
    """shard number -> file, as the package finds them (`shard_<i>.mdb` in the snapshot's top level)."""
    shards = {}
    for item in path.iterdir():
        stem = item.name[:-len(".mdb")] if item.name.endswith(".mdb") else ""
        if stem.startswith("shard_") and stem[len("shard_"):].isdigit():
            shards[int(stem[len("shard_"):])] = item
    return shards


def missing_shards(shards: dict[int, Path]) -> list[int]:
    """Shard numbers below the highest one found that have no file (a download that stopped)."""
    return sorted(set(range(max(shards) + 1)) - set(shards)) if shards else []


def check_contents(spec: IndexSpec, path: Path) -> Path:
    """The full-content database's snapshot, or SearchIndexError (see the module docstring)."""
    import lmdb
    from cragmm_search.utils import shard_id

    label = f"web contents database {spec.repo_id!r}"
    shards = contents_shards(path)
    if not shards:
        raise SearchIndexError(f"{label} at {path} has no shard_<i>.mdb files: missing, partly downloaded "
                               f"or not a contents database")
    count = max(shards) + 1
    gaps = missing_shards(shards)
    if gaps:
        raise SearchIndexError(f"{label} at {path} is partly downloaded: {len(gaps)} of {count} shard files "
                               f"are missing ({', '.join(f'shard_{i}.mdb' for i in gaps[:5])}"
                               f"{', ...' if len(gaps) > 5 else ''}); run {fetch_hint(spec)} again")
    for number, shard in sorted(shards.items()):
        try:
            env = lmdb.open(str(shard), readonly=True, lock=False, subdir=False)
            with env.begin() as txn:
                # a few keys: one may land in its shard under a wrong count by chance, eight hardly
                first = list(itertools.islice(txn.cursor(), KEYS_PER_SHARD))
            env.close()
        except lmdb.Error as exc:
            raise SearchIndexError(f"{label}: {shard.name} cannot be read ({type(exc).__name__}: {exc}); "
                                   f"it is partly downloaded or not an LMDB file") from None
        if not first:
            continue  # a shard may be empty in a small database
        try:
            owners = {shard_id(key.decode("utf-8"), count) for key, _ in first}
            record = json.loads(first[0][1])
        except (UnicodeDecodeError, ValueError):
            raise SearchIndexError(f"{label}: {shard.name} holds a record of another schema (keys must be "
                                   f"sha256 hex of the page URL, values JSON)") from None
        if owners != {number}:
            raise SearchIndexError(f"{label} at {path}: the keys of {shard.name} belong to a database of "
                                   f"another shard count than the {count} files found: its last shard files "
                                   f"are missing (partly downloaded); run {fetch_hint(spec)} again")
        missing = [k for k in CONTENTS_KEYS if k not in record]
        if missing:
            raise SearchIndexError(f"{label}: a record of {shard.name} has no {missing} (it has {sorted(record)})")
    return path


def check_index(spec: IndexSpec) -> Path:
    """The snapshot directory of a usable index, or SearchIndexError."""
    import chromadb

    if spec.kind == "contents":
        return check_contents(spec, snapshot_path(spec))

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

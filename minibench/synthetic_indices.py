"""Search indices of any size in the official layout, written into a Hugging Face cache.

For testing and measuring the search pipeline at the real sizes without the real data:
- `image_index(...)`: collection `image_embeddings` (cosine), ids "0".."n-1", metadata
  `image_url`, `entities` (JSON list), `info` (JSON entity -> attributes);
- `web_index(...)`: collection `web_search_embeddings` (cosine), ids `<url>_chunk_<i>`
  (`CHUNKS_PER_PAGE` chunks a page), metadata `page_name`, `page_snippet`, `page_url`.

Filler records get random unit vectors; `planted` records (real embeddings of real content)
take given positions, so a search by that content must find exactly them. Entities recur
across filler records with attributes that differ per record, as the package's entity map
(last record wins) then matters. `publish_model(...)` puts a model directory under a hub id,
e.g. a small stand-in under "openai/clip-vit-large-patch14-336".
"""
from __future__ import annotations

import gc
import hashlib
import json
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

IMAGE_COLLECTION = "image_embeddings"
WEB_COLLECTION = "web_search_embeddings"
CHUNKS_PER_PAGE = 4
ENTITY_POOL = 5000  # distinct filler entity names
WRITE_BATCH = 5000
QUICK_BATCH = 100_000


@dataclass
class Planted:
    position: int  # record position (image) or page number (web; its chunk 0 is planted)
    embedding: list[float]
    metadata: dict


def _snapshot(cache: Path, kind: str, repo_id: str, commit: str) -> Path:
    folder = Path(cache) / f"{kind}s--{repo_id.replace('/', '--')}"
    snapshot = folder / "snapshots" / commit
    (folder / "refs").mkdir(parents=True, exist_ok=True)
    (folder / "refs" / "main").write_text(commit)  # no newline: huggingface_hub reads it verbatim
    return snapshot


def publish_model(cache: Path, repo_id: str, model_dir: str | Path) -> Path:
    """Copy a local model directory into `cache` as the snapshot of model `repo_id`."""
    snapshot = _snapshot(cache, "model", repo_id, hashlib.sha1(repo_id.encode()).hexdigest())
    if snapshot.exists():
        shutil.rmtree(snapshot)
    shutil.copytree(model_dir, snapshot)
    return snapshot


def _unit_rows(rng, n: int, dim: int):
    import numpy as np

    rows = rng.standard_normal((n, dim)).astype(np.float32)
    rows /= np.linalg.norm(rows, axis=1, keepdims=True)
    return rows


def _write(path: Path, name: str, batches, quick: bool) -> None:
    """batches: iterable of (ids, embeddings array, metadatas).

    `quick` (for tests) keeps the whole HNSW graph in one batch instead of syncing it to disk
    every 1,000 records (chromadb's default): three to five times faster to write; the index
    then rebuilds the graph from its log when opened.
    """
    import chromadb
    from chromadb.api.client import SharedSystemClient

    if path.exists():
        shutil.rmtree(path)
    path.mkdir(parents=True)
    client = chromadb.PersistentClient(path=str(path))
    settings = {"hnsw:space": "cosine"}
    if quick:
        settings.update({"hnsw:batch_size": QUICK_BATCH, "hnsw:sync_threshold": QUICK_BATCH})
    collection = client.create_collection(name=name, metadata=settings)
    for ids, embeddings, metadatas in batches:
        collection.add(ids=ids, embeddings=embeddings, metadatas=metadatas)
    del collection, client
    SharedSystemClient.clear_system_cache()  # release the handles before anyone else opens it
    gc.collect()


def image_metadata(position: int, rng) -> dict:
    entity = f"Entity {int(rng.integers(ENTITY_POOL))}"
    info = {entity: {"record": str(position), "kind": "filler", "height": f"{int(rng.integers(1, 900))} m"}}
    return dict(image_url=f"https://images.synthetic.example/{position}.jpg",
                entities=json.dumps([entity]), info=json.dumps(info))


def _start_index(cache: Path, repo_id: str, count: int, dim: int, planted, seed: int, collection: str):
    """The random generator, the planted records by position, and the snapshot folder (named by a
    hash of everything that decides the index's content)."""
    import numpy as np

    commit = hashlib.sha1(json.dumps([repo_id, count, dim, seed, collection,
                                      [(p.position, p.metadata) for p in planted]]).encode()).hexdigest()
    return (np.random.default_rng(seed), {p.position: p for p in planted},
            _snapshot(cache, "dataset", repo_id, commit))


def image_index(cache: Path, repo_id: str, count: int, dim: int, planted: list[Planted] = (),
                seed: int = 0, collection: str = IMAGE_COLLECTION, quick: bool = False) -> Path:
    import numpy as np

    rng, at, snapshot = _start_index(cache, repo_id, count, dim, planted, seed, collection)

    def batches():
        for start in range(0, count, WRITE_BATCH):
            stop = min(start + WRITE_BATCH, count)
            rows = _unit_rows(rng, stop - start, dim)
            metadatas = [image_metadata(i, rng) for i in range(start, stop)]
            for i in range(start, stop):
                if i in at:
                    rows[i - start] = np.asarray(at[i].embedding, dtype=np.float32)
                    metadatas[i - start] = at[i].metadata
            yield [str(i) for i in range(start, stop)], rows, metadatas

    _write(snapshot, collection, batches(), quick)
    return snapshot


def page_metadata(page: int) -> dict:
    return dict(page_name=f"Synthetic page {page}",
                page_snippet=f"Snippet of synthetic page {page}: " + "filler words " * 20,
                page_url=f"https://web.synthetic.example/pages/{page}")


def web_index(cache: Path, repo_id: str, count: int, dim: int, planted: list[Planted] = (),
              seed: int = 1, collection: str = WEB_COLLECTION, quick: bool = False) -> Path:
    """`count` chunks, CHUNKS_PER_PAGE a page."""
    import numpy as np

    rng, at, snapshot = _start_index(cache, repo_id, count, dim, planted, seed, collection)

    def batches():
        for start in range(0, count, WRITE_BATCH):
            stop = min(start + WRITE_BATCH, count)
            rows = _unit_rows(rng, stop - start, dim)
            ids, metadatas = [], []
            for i in range(start, stop):
                page, chunk = divmod(i, CHUNKS_PER_PAGE)
                metadata = at[page].metadata if page in at else page_metadata(page)
                if page in at and chunk == 0:
                    rows[i - start] = np.asarray(at[page].embedding, dtype=np.float32)
                ids.append(f"{metadata['page_url']}_chunk_{chunk}")
                metadatas.append(metadata)
            yield ids, rows, metadatas

    _write(snapshot, collection, batches(), quick)
    return snapshot


def stand_in_text_model(path: Path, hidden: int = 32) -> Path:
    """A random-weight BERT (`hidden` wide) with MiniLM's tokenizer: plumbing, not semantics."""
    import torch
    from transformers import AutoTokenizer, BertConfig, BertModel

    from agents.engines.local_models import minilm_dir

    torch.manual_seed(0)
    tokenizer = AutoTokenizer.from_pretrained(minilm_dir())
    config = BertConfig(vocab_size=tokenizer.vocab_size, hidden_size=hidden, num_hidden_layers=1,
                        num_attention_heads=2, intermediate_size=hidden * 2, max_position_embeddings=512)
    path = Path(path)
    BertModel(config).eval().save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path


def clear_process_caches() -> None:
    """chromadb keeps one system per path for the process; drop them (after deleting indices)."""
    from chromadb.api.client import SharedSystemClient

    SharedSystemClient.clear_system_cache()
    gc.collect()


if __name__ == "__main__":  # a quick size/time probe: python -m minibench.synthetic_indices N DIM DIR
    import sys
    import time

    n, d, out = int(sys.argv[1]), int(sys.argv[2]), Path(sys.argv[3])
    t = time.perf_counter()
    image_index(out, "probe/image", n, d, quick="--quick" in sys.argv)
    print(f"{n} x {d}: {time.perf_counter() - t:.1f} s, {sum(f.stat().st_size for f in out.rglob('*') if f.is_file()) / 1e6:.0f} MB, pid {os.getpid()}")

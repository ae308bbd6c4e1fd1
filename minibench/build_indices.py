"""Build the mini benchmark's image and web search indices, offline, in the Hugging Face cache layout.

    python -m minibench.build_indices

`cragmm_search.UnifiedSearchPipeline` fetches its indices with
`huggingface_hub.snapshot_download(repo_id, repo_type="dataset")`. Offline, that call resolves
`<hf cache>/datasets--ORG--NAME/refs/main` (a commit hash, no newline) to
`snapshots/<commit>/`, which must be a writable chromadb persistent directory. We write
exactly that under `cache_dir()/"hf"`, with the official collection names, ids and metadata:

- `image_embeddings` (cosine): ids "0".."n-1" (the package reads metadatas by position),
  metadata `image_url`, `entities` (JSON list of names), `info` (JSON name -> attributes).
- `web_search_embeddings` (cosine): ids `<url>_chunk_<i>`, chunk 0 = "page_name page_snippet",
  then 64-word chunks of the page text; metadata `page_name`, `page_snippet`, `page_url`.

- a web index named `web_index_with_distractors(N)` holds the same pages plus N distractor pages
  about other entities of the same kinds (minibench/distractor_pages.py), built when a search
  names it (benchmarks/recall_at_size.py: answer recall at a realistic index size).

- the full-content web database (`--web-contents`, optional: built only when a search asks for
  it): the package's sharded LMDB layout, `shard_<i>.mdb` files keyed by
  `cragmm_search.utils.hash_key(page_url)` in shard `shard_id(key, CONTENTS_SHARDS)`, one JSON
  record per page: the index's page_name / page_snippet / page_url, `page_result` (the page as
  HTML, its paragraphs in <p> elements between a navigation bar and a footer, as a real page
  has), `page_last_modified` and `search_result_type`.

Embeddings come from the package's own feature extractors with the models the pipeline will
load (MINI_IMAGE_MODEL / MINI_TEXT_MODEL, resolved to local directories), so a
query embedded at search time lands exactly where the index expects it. The commit hash is a
fingerprint of the content and the models: an unchanged index is never rebuilt.
"""
from __future__ import annotations

import argparse
import gc
import hashlib
import json
import os
import re
import shutil
import time
from pathlib import Path

from agents.profiles import cache_dir
from minibench import content
from minibench.images import image_bytes
from minibench.search_models import resolve_search_model

LOCAL_PREFIX = "crag-mm-mini/"  # index ids we build; any other id is a real hub dataset
# The mini benchmark's indices and the models they are built with (the cpu search profile).
MINI_IMAGE_INDEX = LOCAL_PREFIX + "image-search-index"  # official: crag-mm-2025/image-search-index-public-test
MINI_WEB_INDEX = LOCAL_PREFIX + "web-search-index"  # official: crag-mm-2025/web-search-index-public-test
MINI_WEB_CONTENTS = LOCAL_PREFIX + "web-search-contents-db"  # official: crag-mm-2025/web-search-contents-db-private-v0.1.2
MINI_IMAGE_MODEL = "efficientnet-lite0"  # official: openai/clip-vit-large-patch14-336
MINI_TEXT_MODEL = "minilm"  # official: BAAI/bge-large-en-v1.5
IMAGE_COLLECTION = "image_embeddings"
WEB_COLLECTION = "web_search_embeddings"
WORDS_PER_CHUNK = 64  # small enough that most pages have several chunks, as official pages do
MAX_CHUNKS = 50
KG_URL = "https://kg.crag-mm-mini.example/images/"
CONTENTS_SHARDS = 4  # more than one, so that a lookup has to pick its shard as the package does


def hf_cache() -> Path:
    return cache_dir() / "hf"


def is_local_index(repo_id: str) -> bool:
    return repo_id.startswith(LOCAL_PREFIX)


def repo_folder(repo_id: str) -> Path:
    return hf_cache() / ("datasets--" + repo_id.replace("/", "--"))


# --- what goes in -------------------------------------------------------------------------

def kg_records() -> list[tuple[bytes, dict]]:
    """(JPEG bytes, metadata) per image-index entry, in id order."""
    records = []
    for picture, entities in content.KG_ENTRIES:
        if isinstance(picture, tuple):  # a look-alike copy: hard negative
            source, transform = picture
            name = f"{source}-{transform.replace(' ', '-')}"
        else:
            spec = content.PICTURES.get(picture, dict(source=picture))
            source, transform, name = spec["source"], spec.get("transform"), picture
        # `info` keeps each infobox's field order, as the official KG does
        meta = dict(image_url=KG_URL + name + ".jpg", entities=json.dumps(sorted(entities)),
                    info=json.dumps(entities, ensure_ascii=False))
        records.append((image_bytes(source, transform), meta))
    return records


def web_index_with_distractors(pages: int) -> str:
    """The id of the mini web index with `pages` distractor pages (minibench/distractor_pages.py)
    beside the benchmark's own: answer recall at a realistic index size."""
    return f"{MINI_WEB_INDEX}-with-{pages}-distractor-pages"


def distractors_in(repo_id: str) -> int:
    """How many distractor pages the web index `repo_id` holds (0 for the mini web index)."""
    found = re.fullmatch(re.escape(MINI_WEB_INDEX) + r"-with-(\d+)-distractor-pages", repo_id)
    return int(found.group(1)) if found else 0


def web_records(distractors: int = 0) -> list[tuple[str, str, dict]]:
    """(chunk id, chunk text, metadata) per web-index entry: the benchmark's pages, then
    `distractors` pages about other entities of the same kinds."""
    from minibench.distractor_pages import distractor_pages

    records = []
    for page in content.WEB_PAGES + distractor_pages(distractors):
        words = page["text"].split()
        chunks = [f"{page['page_name']} {page['page_snippet']}"]
        chunks += [" ".join(words[i:i + WORDS_PER_CHUNK]) for i in range(0, len(words), WORDS_PER_CHUNK)]
        meta = {k: page[k] for k in ("page_name", "page_snippet", "page_url")}
        for i, chunk in enumerate(chunks[:MAX_CHUNKS]):
            records.append((f"{page['page_url']}_chunk_{i}", chunk, meta))
    return records


def page_html(page: dict) -> str:
    """A mini page's body as HTML: the page's own paragraphs, with the chrome a real page has."""
    from html import escape

    title = escape(page["page_name"])
    site = escape(page["page_name"].rpartition(" - ")[2])
    body = "\n".join(f"<p>{escape(p)}</p>" for p in page["text"].split("\n\n"))
    return (f"<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>{title}</title>"
            f"<style>body {{ font-family: serif; }}</style><script>window.dataLayer = [];</script></head>\n"
            f"<body><nav><a href=\"/\">{site}</a> | <a href=\"/about\">About</a></nav>\n"
            f"<article><h1>{escape(page['page_name'].rpartition(' - ')[0])}</h1>\n{body}\n</article>\n"
            f"<footer>&copy; {site}</footer></body></html>")


def contents_records() -> list[dict]:
    """One full-content record per mini web page (the package's lookup returns it as the hit)."""
    return [{"page_name": page["page_name"], "page_url": page["page_url"], "page_snippet": page["page_snippet"],
             "page_result": page_html(page),
             # the mini pages are written, not crawled: no date is known, as for many real pages
             "page_last_modified": "",
             # the official vocabulary of this field is not documented; the chain does not read it
             "search_result_type": "web"}
            for page in content.WEB_PAGES]


def write_contents_db(path: Path, records: list[dict], shards: int) -> None:
    """`records` as the package reads them: shard_<i>.mdb LMDB files (no subdirectory), key
    hash_key(page_url), value the record as JSON. The package's own hash_key / shard_id place them."""
    import lmdb
    from cragmm_search.utils import hash_key, shard_id

    by_shard: dict[int, list[tuple[bytes, bytes]]] = {i: [] for i in range(shards)}
    for record in records:
        key = hash_key(record["page_url"])
        by_shard[shard_id(key, shards)].append((key.encode("utf-8"), json.dumps(record).encode("utf-8")))
    for number, items in by_shard.items():
        size = 1 << 20
        size += sum(len(k) + len(v) for k, v in items) * 2
        env = lmdb.open(str(path / f"shard_{number}.mdb"), map_size=size, subdir=False, lock=False)
        with env.begin(write=True) as txn:
            for key, value in items:
                txn.put(key, value)
        env.close()
        lock = path / f"shard_{number}.mdb-lock"
        lock.unlink(missing_ok=True)


def build_web_contents(repo_id: str) -> Path:
    records = contents_records()
    commit = _fingerprint("contents", [CONTENTS_SHARDS, records])
    return _publish_snapshot(repo_id, commit, lambda path: write_contents_db(path, records, CONTENTS_SHARDS),
                             marker="shard_0.mdb")


def _model_identity(model_dir: str) -> str:
    """A local model directory is identified by its config; a hub id by its name."""
    config = Path(model_dir) / "config.json"
    return config.read_text() if config.exists() else model_dir


def _fingerprint(kind: str, payload) -> str:
    from importlib.metadata import version  # the package's version decides how queries are embedded

    blob = json.dumps([kind, version("cragmm-search-pipeline"), payload], sort_keys=True, default=str)
    return hashlib.sha1(blob.encode()).hexdigest()  # 40 hex digits, like a git commit


# --- embedding (the package's own extractors) ---------------------------------------------

def embed_images(model_dir: str, jpegs: list[bytes]):
    import io

    import torch
    from cragmm_search.image_search_mock_api.image_search import extract_features
    from PIL import Image

    from minibench.search_models import load_image_model

    model, processor = load_image_model(model_dir)  # as the pipeline will load it
    images = [Image.open(io.BytesIO(b)) for b in jpegs]
    return extract_features(model, processor, images, device=torch.device("cpu"))


def embed_texts(model_dir: str, texts: list[str], batch: int = 16):
    import numpy as np
    import torch
    from cragmm_search.web_search_mock_api.api.web_search import extract_features
    from transformers import AutoModel, AutoTokenizer

    model = AutoModel.from_pretrained(model_dir).eval()
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    parts = [extract_features(model, tokenizer, texts[i:i + batch], device=torch.device("cpu"))
             for i in range(0, len(texts), batch)]
    return np.concatenate(parts)


# --- writing the HF-cache layout ----------------------------------------------------------

def _publish_snapshot(repo_id: str, commit: str, fill, marker: str = "chroma.sqlite3") -> Path:
    """Build snapshots/<commit>/ with `fill(dir)` unless it is there (its `marker` file exists),
    then point refs/main at it."""
    folder = repo_folder(repo_id)
    snapshot = folder / "snapshots" / commit
    if not (snapshot / marker).exists():
        tmp = folder / "snapshots" / f".tmp-{commit}-{os.getpid()}"
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
        fill(tmp)
        try:
            os.replace(tmp, snapshot)
        except OSError:  # a concurrent builder published the same commit first
            if not (snapshot / marker).exists():
                raise
            shutil.rmtree(tmp, ignore_errors=True)
    ref = folder / "refs" / "main"
    if not ref.exists() or ref.read_text() != commit:
        ref.parent.mkdir(parents=True, exist_ok=True)
        tmp_ref = ref.with_name(f".main-{os.getpid()}")
        tmp_ref.write_text(commit)  # no trailing newline: huggingface_hub reads it verbatim
        os.replace(tmp_ref, ref)
    for old in (folder / "snapshots").iterdir():  # snapshots of earlier content are dead weight
        if old.name != commit and not old.name.startswith(".tmp-"):
            shutil.rmtree(old, ignore_errors=True)
    return snapshot


def _write_collection(path: Path, name: str, ids, embeddings, metadatas) -> None:
    import chromadb
    from chromadb.api.client import SharedSystemClient

    client = chromadb.PersistentClient(path=str(path))
    collection = client.create_collection(name=name, metadata={"hnsw:space": "cosine"})
    step = 1000
    for i in range(0, len(ids), step):
        collection.add(ids=ids[i:i + step], embeddings=[list(map(float, e)) for e in embeddings[i:i + step]],
                       metadatas=metadatas[i:i + step])
    # Release the sqlite/hnsw handles before the directory is renamed into place.
    del collection, client
    SharedSystemClient.clear_system_cache()
    gc.collect()


def build_image_index(repo_id: str, model: str) -> Path:
    model_dir = resolve_search_model(model)
    records = kg_records()
    commit = _fingerprint("image", [_model_identity(model_dir),
                                    [(hashlib.sha1(b).hexdigest(), m) for b, m in records]])

    def fill(path: Path) -> None:
        embeddings = embed_images(model_dir, [b for b, _ in records])
        _write_collection(path, IMAGE_COLLECTION, [str(i) for i in range(len(records))], embeddings,
                          [m for _, m in records])

    return _publish_snapshot(repo_id, commit, fill)


def build_web_index(repo_id: str, model: str) -> Path:
    model_dir = resolve_search_model(model)
    records = web_records(distractors_in(repo_id))
    commit = _fingerprint("web", [_model_identity(model_dir), WORDS_PER_CHUNK, records])

    def fill(path: Path) -> None:
        embeddings = embed_texts(model_dir, [text for _, text, _ in records])
        _write_collection(path, WEB_COLLECTION, [i for i, _, _ in records], embeddings,
                          [m for _, _, m in records])

    return _publish_snapshot(repo_id, commit, fill)


def prepare_indices(search) -> dict:
    """Make sure the local indices of `search` (an evaluator.search.pipeline.SearchConfig, or anything with
    image_index, web_index, image_model and text_model) exist in the HF cache; fast when built.

    Returns the cache root, each snapshot directory and the seconds spent. Raises ValueError
    for index ids that are not ours (the l40s profile's official indices are downloaded by
    huggingface_hub, not built here).
    """
    start = time.perf_counter()
    for repo_id in (search.image_index, search.web_index):
        if not is_local_index(repo_id):
            raise ValueError(f"{repo_id!r} is not a local crag-mm-mini index; only ids starting with "
                             f"{LOCAL_PREFIX!r} are built offline")
    contents = getattr(search, "web_contents", None)
    if contents and not is_local_index(contents):
        raise ValueError(f"{contents!r} is not a local crag-mm-mini database")
    image_dir = build_image_index(search.image_index, search.image_model)
    web_dir = build_web_index(search.web_index, search.text_model)
    built = dict(hf_cache=str(hf_cache()), image_index=search.image_index, web_index=search.web_index,
                 image_snapshot=str(image_dir), web_snapshot=str(web_dir))
    if contents:  # optional: only a search that reads full pages needs it
        built.update(web_contents=contents, web_contents_snapshot=str(build_web_contents(contents)))
    return dict(built, seconds=round(time.perf_counter() - start, 2))


def main() -> None:
    from types import SimpleNamespace

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--web-contents", action="store_true",
                        help="also build the full-content web database (local_evaluation.py --web-contents)")
    args = parser.parse_args()
    info = prepare_indices(SimpleNamespace(image_index=MINI_IMAGE_INDEX, web_index=MINI_WEB_INDEX,
                                           image_model=MINI_IMAGE_MODEL, text_model=MINI_TEXT_MODEL,
                                           web_contents=MINI_WEB_CONTENTS if args.web_contents else None))
    print(json.dumps(info, indent=1))


if __name__ == "__main__":
    main()

"""Open the official search indices at any size: metadata read per hit, not all at start.

cragmm-search-pipeline 0.5.1 (`PACKAGE_VERSION`) reads every metadata record of an index when
it opens it: one unfiltered `collection.get()` in `CragImageKG.__init__` and two in
`CragMockWeb.__init__`. chromadb 1.5.x (1.5.0 to our pin, 1.5.9) turns such a call into one
SQL variable per record, and SQLite refuses more than 32,766 (`too many SQL variables`), so an
index larger than that never opens; 1.4.1 and earlier read it, but then every record sits in
Python dicts in every process.

`paged_metadata()` swaps the package's two index classes for the subclasses below while a
`UnifiedSearchPipeline` is built, so the pipeline is the package's own in everything else: its
model loading, query embedding, chromadb query, de-duplication and result shaping. The
subclasses keep the package's accessors (`get_image_url`, `get_page_name`, ...) and only
replace the dicts those accessors read with lazy views:

- image index: `id2_data[i]` reads the record whose id is `str(i)` (the package's own search
  returns `int(id)` and indexes `id2_data` with it, so id and position agree); `kg[entity]`
  gives the attributes of the last record that names the entity, as the package's dict
  (filled in record order, later records overwriting earlier ones) does. To know which record
  is last, the entity names are read once at open, in pages of `PAGE` records: the map kept is
  entity -> record position, not the attributes.
- web index: `index_to_metadata[chunk_id]` reads that chunk's record.

The hits' metadata arrive with the search itself (chromadb's `query` returns them; the
package drops them), and are kept in a bounded cache that the accessors read, so a search
costs no extra read.
"""
from __future__ import annotations

import contextlib
import json
import os
import threading
from collections import OrderedDict
from collections.abc import Iterator, Mapping, Sequence

PACKAGE_VERSION = "0.5.1"  # the cragmm-search-pipeline release whose index loading this replaces
PAGE = 5000  # records per read: far below SQLite's 32,766 bound variables
CACHE_RECORDS = 4096  # metadata records kept in memory per index


class _RecordCache:
    """Metadata by record id, read from the collection on a miss, the last CACHE_RECORDS kept."""

    def __init__(self, collection):
        self._collection = collection
        self._records: OrderedDict[str, dict] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, record_id: str) -> dict | None:
        with self._lock:
            if record_id in self._records:
                self._records.move_to_end(record_id)
                return self._records[record_id]
        found = self._collection.get(ids=[record_id], include=["metadatas"])
        metadata = found["metadatas"][0] if found["ids"] else None
        if metadata is not None:
            self.put(record_id, metadata)
        return metadata

    def put(self, record_id: str, metadata: dict) -> None:
        with self._lock:
            self._records[record_id] = metadata
            self._records.move_to_end(record_id)
            while len(self._records) > CACHE_RECORDS:
                self._records.popitem(last=False)


class PrefetchingCollection:
    """The chromadb collection, except that `query` keeps the metadata it returns anyway.

    chromadb's `query` includes the hits' metadatas by default; the package's search functions
    drop them and read them again per hit through the accessors. Keeping them here makes those
    reads cache hits. Everything else, and what `query` returns, is the collection's own.
    """

    def __init__(self, collection, cache: _RecordCache):
        self._collection = collection
        self._cache = cache

    def query(self, *args, **kwargs):
        result = self._collection.query(*args, **kwargs)
        for ids, metadatas in zip(result.get("ids") or [], result.get("metadatas") or []):
            for record_id, metadata in zip(ids, metadatas or []):
                if metadata is not None:
                    self._cache.put(record_id, metadata)
        return result

    def __getattr__(self, name):
        return getattr(self._collection, name)


class ImageRecords(Sequence):
    """The image index's metadata by position (= id), read on demand."""

    def __init__(self, collection):
        self._collection = collection
        self._count = collection.count()
        self._cache = _RecordCache(collection)
        self.searchable = PrefetchingCollection(collection, self._cache)

    def __len__(self) -> int:
        return self._count

    def __getitem__(self, position):
        if isinstance(position, slice):
            return [self[i] for i in range(*position.indices(self._count))]
        if position < 0:
            position += self._count
        metadata = self._cache.get(str(position))
        if metadata is None:
            raise IndexError(f"image index has no record with id {position!r}")
        return metadata

    def pages(self) -> Iterator[list[dict]]:
        """Every record in id order, PAGE at a time (ids are positions, so no offset scans)."""
        for start in range(0, self._count, PAGE):
            ids = [str(i) for i in range(start, min(start + PAGE, self._count))]
            found = self._collection.get(ids=ids, include=["metadatas"])
            by_id = dict(zip(found["ids"], found["metadatas"]))
            missing = [i for i in ids if i not in by_id]
            if missing:
                raise ValueError(f"image index ids are not 0..{self._count - 1}: {missing[0]!r} is missing")
            yield [by_id[i] for i in ids]


class EntityAttributes(Mapping):
    """entity name -> attributes of the last record naming it; attributes read on demand."""

    def __init__(self, records: ImageRecords):
        self._records = records
        self._last: dict[str, int] = {}
        position = 0
        for page in records.pages():
            for metadata in page:
                for entity in json.loads(metadata["info"]):
                    self._last[entity] = position
                position += 1

    def __getitem__(self, entity: str):
        return json.loads(self._records[self._last[entity]]["info"])[entity]

    def __iter__(self):
        return iter(self._last)

    def __len__(self) -> int:
        return len(self._last)


class ChunkRecords(Mapping):
    """The web index's metadata by chunk id, read on demand."""

    def __init__(self, collection):
        self._collection = collection
        self._cache = _RecordCache(collection)
        self.searchable = PrefetchingCollection(collection, self._cache)

    def __getitem__(self, chunk_id: str) -> dict:
        metadata = self._cache.get(chunk_id)
        if metadata is None:
            raise KeyError(chunk_id)
        return metadata

    def __iter__(self):
        raise TypeError("the web index's chunk ids are not listed: read them per hit")

    def __len__(self) -> int:
        return self._collection.count()


def open_index(kind: str, repo_id: str, revision: str | None, collection_name: str):
    """The chromadb collection of a search index in the Hugging Face cache (snapshot_download
    finds it there, or downloads it when the hub is on), with the package's thread setting, and
    one line that says where it was read from: the package's own line says "from Hugging Face"
    even when nothing can be downloaded."""
    import chromadb
    from huggingface_hub import constants, snapshot_download

    path = snapshot_download(repo_id=repo_id, repo_type="dataset", revision=revision)
    where = "the local cache, offline" if constants.HF_HUB_OFFLINE else "Hugging Face or its local cache"
    collection = chromadb.PersistentClient(path=path).get_collection(name=collection_name)
    # as the package does: the HNSW index is rebuilt with this many threads on first query
    collection.modify(metadata={"hnsw:num_threads": os.cpu_count() or 1})
    print(f"{kind} search index {repo_id}: {collection.count()} records, from {where} ({path})")
    return collection


def _image_kg_class():
    from cragmm_search.image_search_mock_api.image_kg import CragImageKG

    class PagedImageKG(CragImageKG):
        def __init__(self, emb_model, processor, hf_dataset_id, image_hf_dataset_tag=None):
            collection = open_index("image", hf_dataset_id, image_hf_dataset_tag, "image_embeddings")
            self.id2_data = ImageRecords(collection)
            self.kg = EntityAttributes(self.id2_data)
            self.vector_db = self.id2_data.searchable
            self.emb_model = emb_model
            self.processor = processor

    return PagedImageKG


def _mock_web_class():
    from cragmm_search.web_search_mock_api.api.web_index import CragMockWeb

    class PagedMockWeb(CragMockWeb):
        def __init__(self, emb_model, tokenizer, text_index_path, web_hf_dataset_tag=None):
            # the package's index_web_data, less its "Loading web search data from Hugging Face..."
            collection = open_index("web", text_index_path, web_hf_dataset_tag, "web_search_embeddings")
            self.index_to_metadata = ChunkRecords(collection)
            self.vector_db = self.index_to_metadata.searchable
            self.emb_model = emb_model
            self.tokenizer = tokenizer

    return PagedMockWeb


_swap_lock = threading.Lock()


def check_package_version() -> None:
    from importlib.metadata import version

    installed = version("cragmm-search-pipeline")
    if installed != PACKAGE_VERSION:
        raise RuntimeError(f"cragmm-search-pipeline {installed} is installed; the paged index loading in "
                           f"{__name__} replaces the index classes of {PACKAGE_VERSION}: re-read the "
                           f"package's CragImageKG and CragMockWeb and update it")


@contextlib.contextmanager
def paged_metadata():
    """Inside the block, `cragmm_search.search.UnifiedSearchPipeline` opens its indices lazily."""
    import cragmm_search.search as package

    check_package_version()
    with _swap_lock:
        saved = package.CragImageKG, package.CragMockWeb
        package.CragImageKG, package.CragMockWeb = _image_kg_class(), _mock_web_class()
        try:
            yield
        finally:
            package.CragImageKG, package.CragMockWeb = saved

"""The search pipeline the evaluator hands to the agent: a real `cragmm_search.UnifiedSearchPipeline`.

What it is built from is the evaluator's business, not the agent's: `search_config(profile)`
gives the image and text models and the two indices of a profile (`SEARCH_PROFILES`); a hub
profile's indices are the `INDEX_SETS` pair `--indices` / CRAG_MM_INDICES names (public-test
unless told otherwise), and `search_config(profile, web_contents=...)` adds the full-content web
database (`local_evaluation.py --web-contents [HF_ID]`; bare: the profile's `WEB_CONTENTS`).

The full-content database: with `web_hf_dataset_id_private=ID` the package (0.5.1) reads every
web hit from sharded LMDB files in that dataset (`shard_<i>.mdb`, keyed by
`cragmm_search.utils.hash_key(page_url)`), so a hit carries `page_result` (the page's HTML),
`page_last_modified` and `search_result_type` besides page_name, page_snippet and page_url.
A hit whose URL the database lacks makes the package raise (it unpacks None), which costs the
turn its web search (s3_retrieve catches it); index_check refuses a database with shards missing.

`build_search_pipeline(search, web=True)`:
- local indices (ids starting with "crag-mm-mini/", the cpu profile): builds them if needed
  (minibench.build_indices.prepare_indices), resolves model aliases to local directories and
  opens the indices from our Hugging Face cache, offline;
- any other ids (the l40s profile's official models and indices): passed through untouched,
  so huggingface_hub downloads or reads its usual cache.
- before any model loads, each index is checked (evaluator/harness/index_check.py): a
  missing, partly downloaded or foreign index stops with one SearchIndexError message;
- the package's indices open through evaluator/harness/paged_metadata.py, which reads
  metadata per hit, so indices of any size open;
- the cpu profile's image model, EfficientNet-Lite0's pooled features, is not a CLIP: the
  package's two image loaders hand it over (minibench.search_models.image_model_classes);
- `web=False` is Task 1: image search only; the package itself then raises ValueError for a
  text query.

The trap: huggingface_hub copies HF_HUB_CACHE and HF_HUB_OFFLINE from the environment into
`huggingface_hub.constants` once, at import, and importing transformers imports it. Setting
os.environ afterwards changes nothing, and in a real run something has always imported it
before we get here. `snapshot_download` however reads `constants.HF_HUB_CACHE` and
`constants.HF_HUB_OFFLINE` at call time, and the HTTP session is built from the latter. So we
patch those two constants (and reset the cached sessions) only while the pipeline opens its
indices, then restore them: no network attempt, our cache is found, and the rest of the
process keeps the user's own HF cache and online setting.
"""
from __future__ import annotations

import contextlib
import dataclasses
import importlib
import importlib.util
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from minibench.build_indices import (
    MINI_IMAGE_INDEX,
    MINI_IMAGE_MODEL,
    MINI_TEXT_MODEL,
    MINI_WEB_CONTENTS,
    MINI_WEB_INDEX,
    is_local_index,
    prepare_indices,
    repo_folder,
)
from minibench.search_models import image_model_classes, resolve_search_model


@dataclass(frozen=True)
class SearchConfig:
    profile: str
    image_model: str
    text_model: str
    image_index: str
    web_index: str
    # the full-content web database (web_hf_dataset_id_private); None: snippets only, as the
    # competition's public pipeline
    web_contents: str | None = None


# The published index pairs a hub profile can search, by the name `--indices` (or the
# CRAG_MM_INDICES environment variable, for entry points without that flag) selects.
# public-test: what facebookresearch/CRAG-MM's local_evaluation.py builds its pipeline over for
# every evaluation (the relaunched benchmark); validation: the 2025 starter kit's pair.
INDEX_SETS = {
    "public-test": ("crag-mm-2025/image-search-index-public-test", "crag-mm-2025/web-search-index-public-test"),
    "validation": ("crag-mm-2025/image-search-index-validation", "crag-mm-2025/web-search-index-validation"),
}
DEFAULT_INDICES = "public-test"
INDICES_ENV = "CRAG_MM_INDICES"

# What `--web-contents` given bare names, per profile: the private full-content database of the
# 2025 challenge for the competition's pipeline, the mini benchmark's own on cpu (a hub id
# cannot be mixed with the local indices).
WEB_CONTENTS = {"l40s": "crag-mm-2025/web-search-contents-db-private-v0.1.2", "cpu": MINI_WEB_CONTENTS}
WEB_CONTENTS["served"] = WEB_CONTENTS["l40s"]
PROFILE_WEB_CONTENTS = "default"  # the value of a bare --web-contents

SEARCH_PROFILES = {
    # The official pipeline's models; the indices come from INDEX_SETS (search_config).
    "l40s": SearchConfig("l40s", image_model="openai/clip-vit-large-patch14-336",
                         text_model="BAAI/bge-large-en-v1.5",
                         image_index=INDEX_SETS[DEFAULT_INDICES][0],
                         web_index=INDEX_SETS[DEFAULT_INDICES][1]),
    # The shipped mini benchmark's offline indices.
    "cpu": SearchConfig("cpu", image_model=MINI_IMAGE_MODEL, text_model=MINI_TEXT_MODEL,
                        image_index=MINI_IMAGE_INDEX, web_index=MINI_WEB_INDEX),
}
# The served profile's chain models live behind servers; search runs in the evaluating process
# as on the competition machine.
SEARCH_PROFILES["served"] = dataclasses.replace(SEARCH_PROFILES["l40s"], profile="served")


def selected_indices(indices: str | None = None) -> str:
    """The INDEX_SETS name in force: `indices` if given, else CRAG_MM_INDICES, else public-test."""
    name = indices or os.environ.get(INDICES_ENV) or DEFAULT_INDICES
    if name not in INDEX_SETS:
        raise ValueError(f"unknown indices {name!r}; choose one of {sorted(INDEX_SETS)}")
    return name


def search_config(profile: str, indices: str | None = None, web_contents: str | None = None) -> SearchConfig:
    """The search models and indices of `profile`; a hub profile searches the INDEX_SETS pair
    `selected_indices(indices)` names (the cpu profile always its own local indices), and
    `web_contents` adds a full-content database (PROFILE_WEB_CONTENTS: the profile's own,
    WEB_CONTENTS)."""
    if profile not in SEARCH_PROFILES:
        raise ValueError(f"unknown profile {profile!r}; choose one of {sorted(SEARCH_PROFILES)}")
    if web_contents == PROFILE_WEB_CONTENTS:
        web_contents = WEB_CONTENTS[profile]
    config = dataclasses.replace(SEARCH_PROFILES[profile], web_contents=web_contents or None)
    if config.image_index not in {ids[0] for ids in INDEX_SETS.values()}:
        return config  # the mini benchmark's local indices, or a profile's own
    image_index, web_index = INDEX_SETS[selected_indices(indices)]
    return dataclasses.replace(config, image_index=image_index, web_index=web_index)


def index_revision(repo_id: str) -> str | None:
    """The snapshot commit the Hugging Face cache resolves `repo_id` (a dataset) to, read from its
    refs/main without network; None when the index is not there yet. The cpu profile's local
    indices are looked up in the cache the mini benchmark builds them into."""
    from huggingface_hub import constants

    if is_local_index(repo_id):
        folder = repo_folder(repo_id)  # the cache the mini benchmark builds into
    else:
        folder = Path(constants.HF_HUB_CACHE) / ("datasets--" + repo_id.replace("/", "--"))
    ref = folder / "refs" / "main"
    try:
        return ref.read_text().strip() or None
    except OSError:
        return None


@contextlib.contextmanager
def offline_hub(cache: str | Path):
    """huggingface_hub resolves repos from `cache` only, without network, inside the block."""
    from huggingface_hub import constants
    from huggingface_hub.utils import reset_sessions

    saved = constants.HF_HUB_CACHE, constants.HF_HUB_OFFLINE
    constants.HF_HUB_CACHE, constants.HF_HUB_OFFLINE = str(cache), True
    reset_sessions()  # sessions made while online would still try the network
    try:
        yield
    finally:
        constants.HF_HUB_CACHE, constants.HF_HUB_OFFLINE = saved
        reset_sessions()


def harness_module(name: str):
    """A module beside this one (index_check, paged_metadata), also when this file was loaded
    outside its package: crag_mm_harness loads it by path under another project's `evaluation`
    package (facebookresearch/CRAG-MM has one), where `evaluator.harness.NAME` is not ours."""
    if __package__:
        return importlib.import_module(f"{__package__}.{name}")
    alias = f"{__name__}_{name}"
    if alias not in sys.modules:
        spec = importlib.util.spec_from_file_location(alias, Path(__file__).with_name(f"{name}.py"))
        module = importlib.util.module_from_spec(spec)
        sys.modules[alias] = module
        spec.loader.exec_module(module)
    return sys.modules[alias]


def _pipeline(image_model: str, image_index: str, text_model: str | None, web_index: str | None,
              web_contents: str | None = None):
    from cragmm_search.search import UnifiedSearchPipeline

    # the package's own loading stops at 32,766 records (see paged_metadata); image_model_classes
    # lets it load the cpu profile's EfficientNet features (minibench/search_models.py)
    with harness_module("paged_metadata").paged_metadata(), image_model_classes(image_model):
        return UnifiedSearchPipeline(image_model_name=image_model, image_hf_dataset_id=image_index,
                                     text_model_name=text_model, web_hf_dataset_id=web_index,
                                     web_hf_dataset_id_private=web_contents)


def build_search_pipeline(search: SearchConfig, web: bool = True):
    """A UnifiedSearchPipeline over the indices of `search`; `web=False` for Task 1 (the
    full-content database then goes unused: it only completes web hits)."""
    local = is_local_index(search.image_index)
    web_ids = [search.web_index] + ([search.web_contents] if search.web_contents else [])
    if any(is_local_index(i) != local for i in web_ids):
        raise ValueError(f"mixing a local and a hub index is not supported: {[search.image_index, *web_ids]!r}")
    web_index = search.web_index if web else None
    contents = search.web_contents if web else None
    if not local:
        check_indices(search.image_model, search.image_index, search.text_model if web else None, web_index, contents)
        return _pipeline(search.image_model, search.image_index, search.text_model if web else None, web_index,
                         contents)
    built = prepare_indices(search)
    image_model = resolve_search_model(search.image_model)
    text_model = resolve_search_model(search.text_model) if web else None
    with offline_hub(built["hf_cache"]):
        check_indices(image_model, search.image_index, text_model, web_index, contents)
        return _pipeline(image_model, search.image_index, text_model, web_index, contents)


def check_indices(image_model: str, image_index: str, text_model: str | None, web_index: str | None,
                  web_contents: str | None = None) -> None:
    """SearchIndexError (one message) for an unusable index, before any search model loads."""
    checks = harness_module("index_check")
    checks.check_index(checks.IndexSpec("image", image_index, image_model))
    if web_index is not None:
        checks.check_index(checks.IndexSpec("web", web_index, text_model))
    if web_contents is not None:
        checks.check_index(checks.IndexSpec("contents", web_contents, None))


def main() -> None:
    """Print how long index preparation and pipeline construction take (a benchmark, not a test)."""
    import argparse

    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("--profile", default="cpu")
    parser.add_argument("--no-web", action="store_true")
    parser.add_argument("--indices", default=None, choices=sorted(INDEX_SETS))
    parser.add_argument("--web-contents", nargs="?", const=PROFILE_WEB_CONTENTS, default=None, metavar="HF_ID")
    args = parser.parse_args()
    search = search_config(args.profile, args.indices, args.web_contents)
    start = time.perf_counter()
    info = prepare_indices(search) if is_local_index(search.image_index) else {}
    mid = time.perf_counter()
    pipeline = build_search_pipeline(search, web=not args.no_web)
    end = time.perf_counter()
    print(f"prepare_indices: {mid - start:.2f} s (inside: {info.get('seconds')})")
    print(f"build_search_pipeline (indices already prepared): {end - mid:.2f} s; web={pipeline.web_search}")


if __name__ == "__main__":
    main()

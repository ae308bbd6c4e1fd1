"""The search pipeline the evaluator hands to the agent: a real `cragmm_search.UnifiedSearchPipeline`.

What it is built from is the evaluator's business, not the agent's: `search_config` resolves a
profile's `SearchSpec` (agents/profiles.py) into the image and text models, the
two indices and the full-content web database. A hub profile searches the published pair that
`--indices` names (public-test unless told otherwise); `web_contents="default"` (a bare
`local_evaluation.py --web-contents`) means the profile's own database.

The full-content database: with `web_hf_dataset_id_private=ID` the package (0.5.1) reads every
web hit from sharded LMDB files in that dataset (`shard_<i>.mdb`, keyed by
`cragmm_search.utils.hash_key(page_url)`), so a hit carries `page_result` (the page's HTML),
`page_last_modified` and `search_result_type` besides page_name, page_snippet and page_url.
A hit whose URL the database lacks makes the package raise (it unpacks None), which costs the
turn its web search (s3_retrieve catches it); index_check refuses a database with shards missing.

`build_search_pipeline(search, web=True)`:
- a profile with a search provider (evaluator/search/providers.py; the cpu profile's mini
  benchmark): the provider builds its indices if needed and resolves its model names to local
  folders, and the indices open from its Hugging Face cache, offline;
- any other ids (the l40s profile's official models and indices): passed through untouched,
  so huggingface_hub downloads or reads its usual cache;
- before any model loads, each index is checked (evaluator/search/index_check.py): a
  missing, partly downloaded or foreign index stops with one SearchIndexError message;
- the package's indices open through evaluator/search/paged_metadata.py, which reads
  metadata per hit, so indices of any size open;
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
import time
from dataclasses import dataclass
from pathlib import Path

from agents.profiles import DEFAULT_INDICES, PUBLISHED_INDICES, get_profile
from evaluator.search import index_check
from evaluator.search.paged_metadata import paged_metadata
from evaluator.search.providers import load_provider

PROFILE_WEB_CONTENTS = "default"  # the value of a bare --web-contents: the profile's own database


@dataclass(frozen=True)
class SearchConfig:
    """A profile's search, resolved: the ids a pipeline is built from."""

    profile: str
    image_model: str
    text_model: str
    image_index: str
    web_index: str
    # the full-content web database (web_hf_dataset_id_private); None: snippets only, as the
    # competition's public pipeline
    web_contents: str | None = None
    provider: str | None = None  # the module that serves local indices (providers.py)


def selected_indices(indices: str | None = None) -> str:
    """The PUBLISHED_INDICES name in force: `indices` if given, else public-test."""
    name = indices or DEFAULT_INDICES
    if name not in PUBLISHED_INDICES:
        raise ValueError(f"unknown indices {name!r}; choose one of {sorted(PUBLISHED_INDICES)}")
    return name


def search_config(profile: str, indices: str | None = None, web_contents: str | None = None) -> SearchConfig:
    """The search models and indices of `profile`: its own indices where its SearchSpec names
    them, else the published pair `indices` selects; `web_contents` adds a full-content database
    (PROFILE_WEB_CONTENTS: the profile's own)."""
    spec = get_profile(profile).search
    if web_contents == PROFILE_WEB_CONTENTS:
        web_contents = spec.web_contents
    if spec.image_index:
        image_index, web_index = spec.image_index, spec.web_index
    else:
        image_index, web_index = PUBLISHED_INDICES[selected_indices(indices)]
    return SearchConfig(profile, spec.image_model, spec.text_model, image_index, web_index, web_contents or None,
                        spec.provider)


def index_revision(repo_id: str, provider: str | None = None) -> str | None:
    """The snapshot commit the Hugging Face cache resolves `repo_id` (a dataset) to, read from its
    refs/main without network; None when the index is not there yet. A provider's local indices
    are looked up in the cache it builds them into."""
    from huggingface_hub import constants

    local = load_provider(provider)
    if local is not None and local.owns(repo_id):
        folder = local.index_folder(repo_id)
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


def _pipeline(image_model: str, image_index: str, text_model: str | None, web_index: str | None,
              web_contents: str | None = None, model_classes=contextlib.nullcontext):
    from cragmm_search.search import UnifiedSearchPipeline

    # the package's own loading stops at 32,766 records (see paged_metadata); a provider's
    # model_classes lets it load a non-CLIP image model
    with paged_metadata(), model_classes():
        return UnifiedSearchPipeline(image_model_name=image_model, image_hf_dataset_id=image_index,
                                     text_model_name=text_model, web_hf_dataset_id=web_index,
                                     web_hf_dataset_id_private=web_contents)


def build_search_pipeline(search: SearchConfig, web: bool = True):
    """A UnifiedSearchPipeline over the indices of `search`; `web=False` for Task 1 (the
    full-content database then goes unused: it only completes web hits)."""
    provider = load_provider(search.provider)
    web_index = search.web_index if web else None
    contents = search.web_contents if web else None
    if provider is None:
        check_indices(search.image_model, search.image_index, search.text_model if web else None, web_index, contents)
        return _pipeline(search.image_model, search.image_index, search.text_model if web else None, web_index,
                         contents)
    foreign = [i for i in [search.image_index, search.web_index, search.web_contents] if i and not provider.owns(i)]
    if foreign:
        raise ValueError(f"the {search.profile} profile searches local indices; {foreign!r} is not one of them "
                         "(mixing a local and a hub index is not supported)")
    cache = provider.prepare(search)
    image_model = provider.resolve_model(search.image_model)
    text_model = provider.resolve_model(search.text_model) if web else None
    with offline_hub(cache):
        check_indices(image_model, search.image_index, text_model, web_index, contents, provider.build_command)
        return _pipeline(image_model, search.image_index, text_model, web_index, contents,
                         lambda: provider.model_classes(image_model))


class WithoutImageSearch:
    """A search pipeline with image search switched off (`local_evaluation.py
    --suppress-image-search-api`, the relaunched facebookresearch/CRAG-MM evaluator's flag): an
    image query raises ValueError, as the package itself does for a text query without a web
    index; `image_search` is False, the way UnifiedSearchPipeline's `web_search` says that, so an
    agent can skip the image search instead of failing it. Everything else is the pipeline's."""

    image_search = False

    def __init__(self, pipeline):
        self._pipeline = pipeline

    def __call__(self, inputs, *args, **kwargs):
        if not isinstance(inputs, str):
            raise ValueError("image search is switched off (--suppress-image-search-api)")
        return self._pipeline(inputs, *args, **kwargs)

    def __getattr__(self, name):
        return getattr(self._pipeline, name)


def check_indices(image_model: str, image_index: str, text_model: str | None, web_index: str | None,
                  web_contents: str | None = None, remedy: str | None = None) -> None:
    """SearchIndexError (one message) for an unusable index, before any search model loads;
    `remedy`: the command that builds a provider's indices (else the message names tools.fetch)."""
    index_check.check_index(index_check.IndexSpec("image", image_index, image_model, remedy))
    if web_index is not None:
        index_check.check_index(index_check.IndexSpec("web", web_index, text_model, remedy))
    if web_contents is not None:
        index_check.check_index(index_check.IndexSpec("contents", web_contents, None, remedy))


def main() -> None:
    """Print how long index preparation and pipeline construction take (a benchmark, not a test)."""
    import argparse

    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("--profile", default="cpu")
    parser.add_argument("--no-web", action="store_true")
    parser.add_argument("--indices", default=None, choices=sorted(PUBLISHED_INDICES))
    parser.add_argument("--web-contents", nargs="?", const=PROFILE_WEB_CONTENTS, default=None, metavar="HF_ID")
    args = parser.parse_args()
    search = search_config(args.profile, args.indices, args.web_contents)
    provider = load_provider(search.provider)
    start = time.perf_counter()
    if provider is not None:
        provider.prepare(search)
    mid = time.perf_counter()
    pipeline = build_search_pipeline(search, web=not args.no_web)
    end = time.perf_counter()
    print(f"prepare (local indices): {mid - start:.2f} s")
    print(f"build_search_pipeline (indices already prepared): {end - mid:.2f} s; web={pipeline.web_search}")


if __name__ == "__main__":
    main()

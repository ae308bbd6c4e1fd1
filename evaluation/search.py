"""The search pipeline the evaluator hands to the agent: a real `cragmm_search.UnifiedSearchPipeline`.

`build_search_pipeline(config, web=True)`:
- local indices (ids starting with "crag-mm-mini/", the cpu profile): builds them if needed
  (benchmark.build_indices.prepare_indices), resolves model aliases to local directories and
  opens the indices from our Hugging Face cache, offline;
- any other ids (the l40s profile's official models and indices): passed through untouched,
  so huggingface_hub downloads or reads its usual cache.
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
from pathlib import Path

from agents.config import CruiseConfig
from agents.engines.local_models import resolve_model
from benchmark.build_indices import is_local_index, prepare_indices


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


def _pipeline(image_model: str, image_index: str, text_model: str | None, web_index: str | None):
    from cragmm_search.search import UnifiedSearchPipeline

    return UnifiedSearchPipeline(image_model_name=image_model, image_hf_dataset_id=image_index,
                                 text_model_name=text_model, web_hf_dataset_id=web_index)


def build_search_pipeline(config: CruiseConfig, web: bool = True):
    """A UnifiedSearchPipeline over the config's indices; `web=False` for Task 1."""
    local = is_local_index(config.image_index)
    if local != is_local_index(config.web_index):
        raise ValueError(f"mixing a local and a hub index is not supported: {config.image_index!r}, {config.web_index!r}")
    if not local:
        return _pipeline(config.search_image_model, config.image_index,
                         config.search_text_model if web else None, config.web_index if web else None)
    built = prepare_indices(config)
    image_model = resolve_model(config.search_image_model)
    text_model = resolve_model(config.search_text_model) if web else None
    with offline_hub(built["hf_cache"]):
        return _pipeline(image_model, config.image_index, text_model, config.web_index if web else None)


def main() -> None:
    """Print how long index preparation and pipeline construction take (a benchmark, not a test)."""
    import argparse

    from agents.config import load_config

    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("--profile", default="cpu")
    parser.add_argument("--no-web", action="store_true")
    args = parser.parse_args()
    config = load_config(args.profile)
    start = time.perf_counter()
    info = prepare_indices(config) if is_local_index(config.image_index) else {}
    mid = time.perf_counter()
    pipeline = build_search_pipeline(config, web=not args.no_web)
    end = time.perf_counter()
    print(f"prepare_indices: {mid - start:.2f} s (inside: {info.get('seconds')})")
    print(f"build_search_pipeline (indices already prepared): {end - mid:.2f} s; web={pipeline.web_search}")


if __name__ == "__main__":
    main()

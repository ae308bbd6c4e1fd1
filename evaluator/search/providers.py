"""The door through which local search indices reach the evaluator.

A profile whose search runs over indices built on this machine (the cpu profile: the mini
benchmark's) names a provider module in its `SearchSpec.provider` (agents/profiles.py). The
module exports `PROVIDER`, an object with these methods; the search layer calls nothing else of
it, and imports it by that name only when the profile asks for it:

- `owns(index_id) -> bool`: the id is one of its local indices (or its full-page database);
- `prepare(search) -> Path`: builds whatever of `search`'s indices is missing (fast when built)
  and returns the Hugging Face cache folder that holds them;
- `index_folder(index_id) -> Path`: the index's repo folder in that cache (its refs/main names
  the snapshot a run searched);
- `resolve_model(name) -> str`: a local model name -> a folder the search package can load;
- `model_classes(image_model)`: a context manager inside which the package can load that image
  model (a non-CLIP one needs its own loader classes);
- `build_command`: the command a user runs to build its indices (messages name it).

A SearchSpec names its provider as a module that exports `PROVIDER`, `MODULE:NAME`, or the name
of an entry point of the group `cruise_agent.search_providers` that an installed package offers;
each is read once into SEARCH_PROVIDERS (agents/registry.py).
"""
from __future__ import annotations

from pathlib import Path
from typing import ContextManager, Protocol

from agents.registry import Registry, load_object


class SearchProvider(Protocol):
    build_command: str

    def owns(self, index_id: str) -> bool: ...

    def prepare(self, search) -> Path: ...

    def index_folder(self, index_id: str) -> Path: ...

    def resolve_model(self, name: str) -> str: ...

    def model_classes(self, image_model: str) -> ContextManager: ...


SEARCH_PROVIDERS: Registry[SearchProvider] = Registry("search provider", group="cruise_agent.search_providers",
                                                     name_of=lambda provider: type(provider).__name__)


def load_provider(name: str | None) -> SearchProvider | None:
    """The provider a SearchSpec names (None: every index and model is a hub id): a module that
    exports PROVIDER, MODULE:NAME, or an installed entry point's name; ValueError in one line for
    one not found."""
    if not name:
        return None
    found = SEARCH_PROVIDERS.find(name) if ":" not in name else SEARCH_PROVIDERS.get(name)
    if found is None:
        found = load_object(name, default_name="PROVIDER", what="search provider")
        SEARCH_PROVIDERS.register(found, module=name.partition(":")[0], name=name)
    return found

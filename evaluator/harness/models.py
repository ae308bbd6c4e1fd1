"""Every hub model a run loads, and a look before anything loads at whether it (and the data) is there.

`loaded_models(run)` is the one list of the hub models a run's process loads: the
search pipeline's image and text embedding models (evaluator/search/pipeline.py) and the
agent's own (asked of its class: `AgentSetup.hub_models`, agents/base_agent.py). `aicrowd.json`
generation, preflight's aicrowd check and the evaluator's pre-load check all read it, so none of
them can forget a model.

`preload_problem(...)` is that pre-load check: without loading anything and without waiting on
the network, it finds what would otherwise end deep inside a model load in a transformers
`OSError` traceback, or in a dataset download's retry loop, and says it in one message, with
what the agent itself reports (`AgentSetup.preload_problems`: model servers, engine versions).
"""
from __future__ import annotations

import os
from pathlib import Path

from evaluator.harness.resolved import ResolvedRun
from evaluator.search.fetch_route import fetch_command

GATED_PREFIXES = ("meta-llama/",)
HUB_PROBE_TIMEOUT_S = 5.0


def is_hub_id(name: str) -> bool:
    """"org/name" that is not a folder on this machine (local aliases such as smollm2 have no slash)."""
    return name.count("/") == 1 and not name.startswith((".", "/", "~")) and not Path(name).exists()


def loaded_models(run: ResolvedRun) -> list[str]:
    """Hub model ids the run's process loads (search pipeline first, as the evaluator builds it
    first), each once. Task 1 (web off) loads no text model. A search provider's models are local
    (providers.py); a MODULE:FUNC search factory loads its own."""
    ids = []
    if run.builds_default_search and run.search.provider is None:
        ids += [run.search.image_model] + ([run.search.text_model] if run.web else [])
    if run.agent is not None:
        ids += run.agent.hub_models()
    return [m for m in dict.fromkeys(ids) if is_hub_id(m)]


def model_is_cached(repo_id: str) -> bool:
    """The model's config.json is in the local Hugging Face cache (read from disk only)."""
    from huggingface_hub import try_to_load_from_cache

    return isinstance(try_to_load_from_cache(repo_id, "config.json"), str)


def missing_models_message(run: ResolvedRun) -> str | None:
    """One message naming every hub model the run loads that is missing from the cache, and the
    run's own command that fetches them (`ResolvedRun.fetch_command`: the files a run loads only,
    no original/ checkpoints)."""
    from huggingface_hub import constants

    ids = loaded_models(run)
    missing = [m for m in ids if not model_is_cached(m)]
    if not missing:
        return None
    lines = [f"cannot start: {len(missing)} of the {len(ids)} models that the {run.profile} profile loads "
             f"are not in the Hugging Face cache ({constants.HF_HUB_CACHE}):"]
    lines += [f"  {m}" + ("  (gated)" if m.startswith(GATED_PREFIXES) else "") for m in missing]
    lines.append("Fetch them into that cache (on a machine with network access), then run again:")
    lines.append(f"  {run.fetch_command()}")
    if any(m.startswith(GATED_PREFIXES) for m in missing):
        lines.append("The meta-llama models are gated: accept their licence on the model's Hugging Face "
                     "page and log in first (huggingface-cli login, or HF_TOKEN).")
    return "\n".join(lines)


def _hub_offline() -> bool:
    from huggingface_hub import constants

    return bool(constants.HF_HUB_OFFLINE) or os.environ.get("HF_DATASETS_OFFLINE", "").upper() in ("1", "ON", "YES", "TRUE")


def dataset_is_cached(repo_id: str) -> bool:
    """Some snapshot of the dataset repo (huggingface_hub's cache) or a prepared copy (the
    datasets library's cache) is on disk."""
    from huggingface_hub import constants

    snapshots = Path(constants.HF_HUB_CACHE) / ("datasets--" + repo_id.replace("/", "--")) / "snapshots"
    prepared = Path(os.environ.get("HF_DATASETS_CACHE", Path(constants.HF_HOME) / "datasets"))
    return (snapshots.is_dir() and any(snapshots.iterdir())) or (prepared / repo_id.replace("/", "___")).is_dir()


class HubUnreachable(Exception):
    pass


def dataset_problem(dataset: str, revision: str | None, *, hub_reachable: bool = True) -> str | None:
    """None when `dataset` is a local folder, cached, or known to the hub; otherwise one line
    saying why it cannot be loaded. Offline (HF_HUB_OFFLINE or HF_DATASETS_OFFLINE) the hub is
    not asked; online it gets one request with a short timeout and no retries.
    Raises HubUnreachable (with that line) when the hub cannot be reached at all."""
    if not is_hub_id(dataset) or dataset_is_cached(dataset):
        return None
    name = f"{dataset!r}" + (f" (revision {revision})" if revision else "")
    command = fetch_command(None, dataset)  # None: a dataset tools.fetch does not know
    fetch = f"; fetch it with: {command}" if command else ""
    if _hub_offline():
        return (f"cannot load the dataset {name}: it is not in the Hugging Face cache, and the hub is "
                f"switched off (HF_HUB_OFFLINE / HF_DATASETS_OFFLINE){fetch}")
    unreachable = f"cannot load the dataset {name}: it is not in the Hugging Face cache, and the hub cannot be reached"
    if not hub_reachable:
        return unreachable + fetch
    import requests
    from huggingface_hub import HfApi

    try:
        HfApi().dataset_info(dataset, revision=revision, timeout=HUB_PROBE_TIMEOUT_S)
    except (requests.ConnectionError, requests.Timeout):
        raise HubUnreachable(f"{unreachable} (one try, {HUB_PROBE_TIMEOUT_S:.0f} s timeout){fetch}") from None
    except Exception as exc:  # noqa: BLE001 - not found, gated, bad revision: the load would fail too
        return f"cannot load the dataset {name}: the hub refuses it ({type(exc).__name__})"
    return None


def preload_problem(run: ResolvedRun, dataset: str, revision: str | None) -> str | None:
    """Everything a run is about to load that is not there, in one message (None if all is there):
    the hub models of `loaded_models`, what the agent reports, the dataset, and the search
    indices of the default factory (a provider's local indices are built, not fetched)."""
    from evaluator.search.providers import load_provider

    problems = [*run.agent.preload_problems(), missing_models_message(run)]
    datasets = {dataset: revision}
    provider = None
    if run.builds_default_search:
        sc = run.search
        provider = load_provider(sc.provider)
        web_ids = [sc.web_index] + ([sc.web_contents] if sc.web_contents else [])
        datasets.update({index: None for index in [sc.image_index] + (web_ids if run.web else [])})
    reachable = True
    for name, rev in datasets.items():
        if provider is not None and provider.owns(name):
            continue
        try:
            problems.append(dataset_problem(name, rev, hub_reachable=reachable))
        except HubUnreachable as exc:  # said once; the other datasets are not asked for
            problems.append(str(exc))
            reachable = False
    return "\n".join(p for p in problems if p) or None

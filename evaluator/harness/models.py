"""Every hub model a run loads, and a look before anything loads at whether it (and the data) is there.

`loaded_models(profile)` is the one list of the hub models that a profile's process loads: the
agent's (VLM, router, reranker: agents/config.py) and the search factory's (image and text
embedding models: evaluator/harness/search.py). `aicrowd.json` generation, preflight's aicrowd check
and the evaluator's pre-load check all read it, so none of them can forget a model.

`served_problem(profile)` asks each model server a run will use (engine "openai", reranker
backend "server") whether it is up and serves the named model.

`preload_problem(...)` is that pre-load check (the served check included): without loading anything and without waiting on
the network, it finds what would otherwise end deep inside a model load in a transformers
`OSError` traceback, or in a dataset download's retry loop, and says it in one message.
"""
from __future__ import annotations

import os
from pathlib import Path

from evaluator.harness.fetch_route import fetch_command

GATED_PREFIXES = ("meta-llama/",)
HUB_PROBE_TIMEOUT_S = 5.0


def is_hub_id(name: str) -> bool:
    """"org/name" that is not a folder on this machine (our aliases such as smollm2 have no slash)."""
    return name.count("/") == 1 and not name.startswith((".", "/", "~")) and not Path(name).exists()


def loaded_models(profile: str, *, agent: bool = True, search: bool = True, web: bool = True) -> list[str]:
    """Hub model ids the process loads in `profile` (search pipeline first, as the evaluator
    builds it first), each once. `web=False` is Task 1: the pipeline loads no text model."""
    from agents.config import load_config
    from evaluator.harness.search import search_config

    ids = []
    if search:
        sc = search_config(profile)
        ids += [sc.image_model] + ([sc.text_model] if web else [])
    if agent:
        from agents.engines.factory import served_roles

        cfg = load_config(profile)
        served = served_roles(cfg)  # those models live behind servers: nothing loads them here
        ids += [getattr(cfg, f"{role}_model") for role in ("vlm", "router", "reranker") if role not in served]
    return [m for m in dict.fromkeys(ids) if is_hub_id(m)]


def vllm_problem(profile: str) -> str | None:
    """Where the profile loads Llama-3.2-Vision in vLLM: an installed vLLM that can no longer serve
    it stops the run here, before the search models and the router have loaded for minutes. Read
    from the package's metadata (vLLM is not imported); no vLLM installed is left to the engine."""
    from importlib import metadata

    from agents.config import load_config
    from agents.engines.vllm_engine import check_vllm_serves_mllama

    cfg = load_config(profile)
    if cfg.engine != "vllm" or "vision" not in cfg.vlm_model.lower():
        return None
    try:
        check_vllm_serves_mllama(metadata.version("vllm"))
    except metadata.PackageNotFoundError:
        return None
    except RuntimeError as exc:
        return f"cannot start: {exc}"
    return None


def served_problem(profile: str) -> str | None:
    """For the models a run reaches over HTTP (engine "openai", reranker_backend "server"): one
    `GET /models` per server, short timeout, no retries. None when each server answers and lists
    its model's served name; otherwise one line per problem, naming the URL and what it serves."""
    import httpx

    from agents.config import load_config
    from agents.engines.factory import served_endpoint, served_roles
    from agents.engines.served import PROBE_TIMEOUT_S, Endpoint
    from agents.transient_waits import HTTPStatusFailure

    cfg = load_config(profile)
    wanted: dict[str, list[tuple[str, str]]] = {}
    for role in served_roles(cfg):
        url, name = served_endpoint(cfg, role)
        wanted.setdefault(url, []).append((role, name))
    problems = []
    for url, roles in wanted.items():
        names = ", ".join(f"{role} {name}" for role, name in roles)
        endpoint = Endpoint(url, max_in_flight=1)
        try:
            served = endpoint.model_ids(PROBE_TIMEOUT_S)
        except HTTPStatusFailure as exc:
            # an answer, not silence: say what it said (a 401/403 names the key variable)
            problems.append(f"cannot start: the model server at {url} (for {names}) refused: {str(exc)[:300]}")
            continue
        except (httpx.HTTPError, ValueError, AttributeError) as exc:
            problems.append(f"cannot start: no model server answers at {url} (for {names}): "
                            f"{type(exc).__name__}: {str(exc)[:200]}")
            continue
        finally:
            endpoint.close()
        missing = [name for _, name in roles if name not in served]
        if missing and cfg.served_require_listed:
            problems.append(f"cannot start: the server at {url} does not serve {', '.join(missing)}; it serves: "
                            f"{', '.join(served) or 'no model'} (set the served name with --set "
                            f"<role>_served_name=NAME)")
    return "\n".join(problems) or None


def model_is_cached(repo_id: str) -> bool:
    """The model's config.json is in the local Hugging Face cache (read from disk only)."""
    from huggingface_hub import try_to_load_from_cache

    return isinstance(try_to_load_from_cache(repo_id, "config.json"), str)


def missing_models_message(ids: list[str], profile: str) -> str | None:
    """One message naming every model of `ids` missing from the cache, and how to fetch them."""
    from huggingface_hub import constants

    missing = [m for m in ids if not model_is_cached(m)]
    if not missing:
        return None
    lines = [f"cannot start: {len(missing)} of the {len(ids)} models that the {profile} profile loads "
             f"are not in the Hugging Face cache ({constants.HF_HUB_CACHE}):"]
    lines += [f"  {m}" + ("  (gated)" if m.startswith(GATED_PREFIXES) else "") for m in missing]
    lines.append("Fetch them into that cache (on a machine with network access), then run again:")
    lines.append(f"  {fetch_command(profile)}")  # the files a run loads only: no original/ checkpoints
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


def agent_loads_profile_models(agent_spec: str) -> bool:
    """Whether `--agent MODULE:CLASS` is CruiseAgent (or built on it), which loads the profile's
    models; another agent loads what it likes, so its models cannot be checked for it."""
    import importlib

    from agents.cruise_agent import CruiseAgent

    module_name, _, attr = agent_spec.partition(":")
    try:
        agent_cls = getattr(importlib.import_module(module_name), attr)
    except Exception:  # noqa: BLE001 - the evaluator reports a bad --agent itself, later
        return False
    return isinstance(agent_cls, type) and issubclass(agent_cls, CruiseAgent)


def preload_problem(profile: str, dataset: str, revision: str | None, *, agent_spec: str, search_spec: str,
                    web: bool, web_contents: str | None = None) -> str | None:
    """Everything a run is about to load that is not there, in one message (None if all is there):
    the hub models of `loaded_models`, the dataset, and the search indices of the default factory."""
    from evaluator.harness.search import search_config
    from minibench.build_indices import is_local_index

    default_search = search_spec == "default"
    agent = agent_loads_profile_models(agent_spec)
    models = loaded_models(profile, agent=agent, search=default_search, web=web)
    problems = [vllm_problem(profile) if agent else None, missing_models_message(models, profile),
                served_problem(profile) if agent else None]
    datasets = {dataset: revision}
    if default_search:
        sc = search_config(profile, web_contents=web_contents)
        web_ids = [sc.web_index] + ([sc.web_contents] if sc.web_contents else [])
        datasets.update({index: None for index in [sc.image_index] + (web_ids if web else [])})
    reachable = True
    for name, rev in datasets.items():
        if is_local_index(name):
            continue
        try:
            problems.append(dataset_problem(name, rev, hub_reachable=reachable))
        except HubUnreachable as exc:  # said once; the other datasets are not asked for
            problems.append(str(exc))
            reachable = False
    return "\n".join(p for p in problems if p) or None

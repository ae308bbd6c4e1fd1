"""What would stop CruiseAgent once it starts loading, found before anything loads.

`hub_models(cfg)`: the Hugging Face models the agent loads in this process (the models a role
reaches over HTTP load elsewhere). `preload_problems(cfg)`: an installed vLLM that can no longer
serve Llama-3.2-Vision, and model servers that do not answer or do not serve the named model,
one line each. The evaluator asks these through CruiseAgent's class (agents/base_agent.py).
"""
from __future__ import annotations

import re
from pathlib import Path

from agents.config.cruise_config import CruiseConfig

# What a Hugging Face repo id may be: "name" or "org/name", letters, digits, "-", "_", ".";
# huggingface_hub refuses anything else, and transformers then fails deep inside its loader.
REPO_ID = re.compile(r"^(?:[\w.-]+/)?[\w.-]{1,96}$")


def is_hub_id(name: str) -> bool:
    """"org/name" that is not a folder on this machine (our aliases such as smollm2 have no slash)."""
    return name.count("/") == 1 and not name.startswith((".", "/", "~")) and not Path(name).exists()


def in_process_models(cfg: CruiseConfig) -> dict[str, str]:
    """Role -> model name, for the VLM, router and reranker that load in this process."""
    from agents.factory import in_process_roles

    return {role: cfg.value(f"{role}_model") for role in in_process_roles(cfg)}


def hub_models(cfg: CruiseConfig) -> list[str]:
    """The hub ids of the VLM, router and reranker that load in this process, each once."""
    return [m for m in dict.fromkeys(in_process_models(cfg).values()) if is_hub_id(m)]


def preload_problems(cfg: CruiseConfig) -> list[str]:
    return [p for p in (model_name_problem(cfg), engine_problem(cfg), served_problem(cfg)) if p]


def model_name_problem(cfg: CruiseConfig) -> str | None:
    """A model setting that no loader could take (neither an alias, a folder here, nor a
    well-formed hub id): said before the search models load, not as a loader's traceback."""
    from agents.engines.local_models import ALIASES

    problems = [
        f"cannot start: {role}_model {name!r} is not a model: give a hub id (org/name), a folder on "
        f"this machine, or one of the aliases {', '.join(ALIASES)}"
        for role, name in in_process_models(cfg).items()
        if name not in ALIASES and not REPO_ID.match(name) and not Path(name).expanduser().exists()
    ]
    return "\n".join(problems) or None


def engine_problem(cfg: CruiseConfig) -> str | None:
    """What the run's engine says would stop it (agents/engines/registry.py `preload_problem`): a
    vLLM release that cannot load the VLM's family, a hosted provider's key unset or model unknown."""
    from agents.engines.registry import chat_engine_kind

    return chat_engine_kind(cfg.models.engine).problem_before_load(cfg.models, cfg.stack)


def served_problem(cfg: CruiseConfig) -> str | None:
    """For the models a run reaches over HTTP (engine "openai", reranker_backend "server"): one
    `GET /models` per server, short timeout, no retries. None when each server answers and lists
    its model's served name; otherwise one line per problem, naming the URL and what it serves."""
    import httpx

    from agents.engines.served import PROBE_TIMEOUT_S, Endpoint, served_endpoint
    from agents.factory import served_roles
    from agents.transient_waits import HTTPStatusFailure

    wanted: dict[str, list[tuple[str, str]]] = {}
    for role in served_roles(cfg):
        url, name = served_endpoint(cfg.models, role)
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
        if missing and cfg.models.served_require_listed:
            problems.append(f"cannot start: the server at {url} does not serve {', '.join(missing)}; it serves: "
                            f"{', '.join(served) or 'no model'} (set the served name with --set "
                            f"<role>_served_name=NAME)")
    return "\n".join(problems) or None

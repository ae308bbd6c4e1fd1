"""Build the router, the VLM and the reranker that a CruiseConfig asks for.

When the router and the VLM are the same model (the cpu profile: SmolLM2 plays both), one engine
serves both roles. With vLLM the two models are two `vllm.LLM` instances in one process, each
held to its own share of the GPU (`router_gpu_memory_utilization`, `vlm_gpu_memory_utilization`;
see tools/memory_plan.py).
"""
from __future__ import annotations

from agents.config import CruiseConfig
from agents.engines.base import ChatEngine, Engines, Ledger, Reranker
from agents.engines.local_models import resolve_model

SERVED_ROLES = ("vlm", "router", "reranker")


def served_endpoint(config: CruiseConfig, role: str) -> tuple[str, str]:
    """(base URL, served model name) of one role's server: the router defaults to the VLM's URL,
    every name to the role's model id. A router that is the VLM's model on the VLM's URL is the
    VLM's server, so it also takes the VLM's served name (one `vllm serve --served-model-name NAME`
    answers both roles)."""
    if role not in SERVED_ROLES:
        raise ValueError(f"unknown role {role!r}; choose one of {SERVED_ROLES}")
    model = getattr(config, f"{role}_model")
    url = getattr(config, f"{role}_base_url") or (config.vlm_base_url if role == "router" else "")
    name = getattr(config, f"{role}_served_name")
    if role == "router" and not name and model == config.vlm_model and url == config.vlm_base_url:
        name = config.vlm_served_name
    return url, name or model


def served_roles(config: CruiseConfig) -> list[str]:
    """The roles whose models a run reaches over HTTP (the pre-run check asks each one's server)."""
    roles = ["vlm", "router"] if config.engine == "openai" else []
    return roles + (["reranker"] if config.reranker_backend == "server" else [])


def engine_memory_share(config: CruiseConfig, role: str) -> float:
    """The share of the GPU a vLLM engine takes. One engine serves both roles when the router is
    the VLM's model (a family stack's `--model-name`), and then it takes both roles' shares."""
    if role == "vlm" and config.router_model == config.vlm_model:
        return config.vlm_gpu_memory_utilization + config.router_gpu_memory_utilization
    return config.vlm_gpu_memory_utilization if role == "vlm" else config.router_gpu_memory_utilization


def hosted_provider(config: CruiseConfig, role: str) -> str:
    """The provider of a role's hosted model: the config's, else the one the model's name says."""
    from agents.engines.hosted_providers import provider_for_model

    return config.hosted_provider or provider_for_model(getattr(config, f"{role}_model")) or "openai"


def build_chat_engine(config: CruiseConfig, role: str, ledger: Ledger) -> ChatEngine:
    """The engine of one role ("vlm" or "router") with the arguments the config gives it."""
    if config.engine == "hosted":
        from agents.engines.hosted_engine import HostedChatEngine

        url = getattr(config, f"{role}_base_url") or config.vlm_base_url
        return HostedChatEngine(
            getattr(config, f"{role}_model"), ledger, provider=hosted_provider(config, role), base_url=url,
            efforts=config.reasoning_effort, allowances=config.reasoning_allowance_tokens,
            max_in_flight=config.served_max_in_flight, timeout_s=config.served_timeout_s)
    if config.engine == "openai":  # nothing loads here: the model id only names it (and its config)
        from agents.engines.hosted_rules import is_openai_reasoning_model
        from agents.engines.openai_engine import OpenAIChatEngine
        from agents.engines.served import API_KEY_ENV

        url, name = served_endpoint(config, role)
        if is_openai_reasoning_model(name):
            # OpenAI's reasoning models refuse what a vLLM-style request carries (max_tokens,
            # temperature, stop, logprobs): such a served name gets OpenAI's own request rules,
            # with the served engine's URL and key variable
            from agents.engines.hosted_engine import HostedChatEngine

            return HostedChatEngine(
                name, ledger, provider="openai", base_url=url, efforts=config.reasoning_effort,
                allowances=config.reasoning_allowance_tokens, max_in_flight=config.served_max_in_flight,
                timeout_s=config.served_timeout_s, key_variable=API_KEY_ENV)
        return OpenAIChatEngine(
            config.vlm_model if role == "vlm" else config.router_model, ledger, base_url=url, served_name=name,
            max_in_flight=config.served_max_in_flight, timeout_s=config.served_timeout_s,
            stop_strings=config.served_stop_strings, image_placeholder=config.served_image_placeholder,
            image_layout=config.served_image_layout,
            batch_images=config.batch_images)
    model = resolve_model(config.vlm_model if role == "vlm" else config.router_model)
    if config.engine == "vllm":
        from agents.engines.vllm_engine import VLLMEngine

        return VLLMEngine(
            model, ledger, dtype=config.dtype, max_num_seqs=config.max_num_seqs, seed=config.seed,
            batch_images=config.batch_images,
            max_model_len=config.vlm_max_model_len if role == "vlm" else config.router_max_model_len,
            gpu_memory_utilization=engine_memory_share(config, role),
        )
    if config.engine == "transformers":
        from agents.engines.transformers_engine import TransformersEngine

        return TransformersEngine(model, ledger, dtype=config.dtype, cudnn_attention=config.cudnn_attention)
    raise ValueError(f"unknown engine {config.engine!r}; choose 'vllm', 'transformers', 'openai' or 'hosted'")


def build_reranker(config: CruiseConfig, ledger: Ledger) -> Reranker:
    from agents.engines.reranker import CrossEncoderReranker, MiniLMReranker, ServerReranker

    if config.reranker_backend == "server":
        url, name = served_endpoint(config, "reranker")
        return ServerReranker(config.reranker_model, ledger, base_url=url, served_name=name,
                              max_in_flight=config.served_max_in_flight, timeout_s=config.served_timeout_s)
    if config.reranker_backend == "flag":
        return CrossEncoderReranker(config.reranker_model, ledger)
    if config.reranker_backend == "minilm":
        return MiniLMReranker(config.reranker_model, ledger)
    raise ValueError(f"unknown reranker_backend {config.reranker_backend!r}; choose 'flag', 'minilm' or 'server'")


def build_engines(config: CruiseConfig, ledger: Ledger) -> Engines:
    # The VLM first: it is the larger model, and on a GPU it should claim its share first.
    vlm = build_chat_engine(config, "vlm", ledger)
    same = config.router_model == config.vlm_model
    if config.engine == "hosted":
        same = same and (config.router_base_url or config.vlm_base_url) == config.vlm_base_url
    if config.engine == "openai":
        same = same and served_endpoint(config, "router") == served_endpoint(config, "vlm")
    router = vlm if same else build_chat_engine(config, "router", ledger)
    return Engines(router=router, vlm=vlm, reranker=build_reranker(config, ledger))

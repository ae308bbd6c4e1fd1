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
    model = config.value(f"{role}_model")
    url = config.value(f"{role}_base_url") or (config.models.vlm_base_url if role == "router" else "")
    name = config.value(f"{role}_served_name")
    if role == "router" and not name and model == config.models.vlm_model and url == config.models.vlm_base_url:
        name = config.models.vlm_served_name
    return url, name or model


def served_roles(config: CruiseConfig) -> list[str]:
    """The roles whose models a run reaches over HTTP (the pre-run check asks each one's server)."""
    roles = ["vlm", "router"] if config.models.engine == "openai" else []
    return roles + (["reranker"] if config.models.reranker_backend == "server" else [])


def engine_memory_share(config: CruiseConfig, role: str) -> float:
    """The share of the GPU a vLLM engine takes. One engine serves both roles when the router is
    the VLM's model (a family stack's `--model-name`), and then it takes both roles' shares."""
    if role == "vlm" and config.models.router_model == config.models.vlm_model:
        return config.models.vlm_gpu_memory_utilization + config.models.router_gpu_memory_utilization
    return config.models.vlm_gpu_memory_utilization if role == "vlm" else config.models.router_gpu_memory_utilization


def hosted_provider(config: CruiseConfig, role: str) -> str:
    """The provider of a role's hosted model: the config's, else the one the model's name says."""
    from agents.engines.hosted_providers import provider_for_model

    return config.models.hosted_provider or provider_for_model(config.value(f"{role}_model")) or "openai"


def build_chat_engine(config: CruiseConfig, role: str, ledger: Ledger) -> ChatEngine:
    """The engine of one role ("vlm" or "router") with the arguments the config gives it."""
    if config.models.engine == "hosted":
        from agents.engines.hosted_engine import HostedChatEngine

        url = config.value(f"{role}_base_url") or config.models.vlm_base_url
        return HostedChatEngine(
            config.value(f"{role}_model"), ledger, provider=hosted_provider(config, role), base_url=url,
            efforts=config.models.reasoning_effort, allowances=config.models.reasoning_allowance_tokens,
            max_in_flight=config.models.served_max_in_flight, timeout_s=config.models.served_timeout_s)
    if config.models.engine == "openai":  # nothing loads here: the model id only names it (and its config)
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
                name, ledger, provider="openai", base_url=url, efforts=config.models.reasoning_effort,
                allowances=config.models.reasoning_allowance_tokens, max_in_flight=config.models.served_max_in_flight,
                timeout_s=config.models.served_timeout_s, key_variable=API_KEY_ENV)
        return OpenAIChatEngine(
            config.models.vlm_model if role == "vlm" else config.models.router_model, ledger, base_url=url, served_name=name,
            max_in_flight=config.models.served_max_in_flight, timeout_s=config.models.served_timeout_s,
            stop_strings=config.models.served_stop_strings, image_placeholder=config.models.served_image_placeholder,
            image_layout=config.models.served_image_layout,
            batch_images=config.models.batch_images)
    model = resolve_model(config.models.vlm_model if role == "vlm" else config.models.router_model)
    if config.models.engine == "vllm":
        from agents.engines.vllm_engine import VLLMEngine

        return VLLMEngine(
            model, ledger, dtype=config.models.dtype, max_num_seqs=config.models.max_num_seqs, seed=config.models.seed,
            batch_images=config.models.batch_images,
            max_model_len=config.models.vlm_max_model_len if role == "vlm" else config.models.router_max_model_len,
            gpu_memory_utilization=engine_memory_share(config, role),
        )
    if config.models.engine == "transformers":
        from agents.engines.transformers_engine import TransformersEngine

        return TransformersEngine(model, ledger, dtype=config.models.dtype,
                                  cudnn_attention=config.models.cudnn_attention)
    raise ValueError(f"unknown engine {config.models.engine!r}; choose 'vllm', 'transformers', 'openai' or 'hosted'")


def build_reranker(config: CruiseConfig, ledger: Ledger) -> Reranker:
    from agents.engines.reranker import CrossEncoderReranker, MiniLMReranker, ServerReranker

    if config.models.reranker_backend == "server":
        url, name = served_endpoint(config, "reranker")
        return ServerReranker(config.models.reranker_model, ledger, base_url=url, served_name=name,
                              max_in_flight=config.models.served_max_in_flight, timeout_s=config.models.served_timeout_s)
    if config.models.reranker_backend == "flag":
        return CrossEncoderReranker(config.models.reranker_model, ledger, int8=config.models.reranker_int8)
    if config.models.reranker_backend == "minilm":
        return MiniLMReranker(config.models.reranker_model, ledger)
    raise ValueError(f"unknown reranker_backend {config.models.reranker_backend!r}; choose 'flag', 'minilm' or 'server'")


def build_coarse_reranker(config: CruiseConfig, ledger: Ledger) -> Reranker | None:
    """The bi-encoder that shortlists each turn's chunks for the reranker (all-MiniLM-L6-v2, from
    its package), or None when `rerank_coarse_k` is 0."""
    from agents.engines.reranker import MiniLMReranker

    return MiniLMReranker("minilm", ledger) if config.retrieval.rerank_coarse_k else None


def build_engines(config: CruiseConfig, ledger: Ledger) -> Engines:
    # The VLM first: it is the larger model, and on a GPU it should claim its share first.
    vlm = build_chat_engine(config, "vlm", ledger)
    same = config.models.router_model == config.models.vlm_model
    if config.models.engine == "hosted":
        same = same and (config.models.router_base_url or config.models.vlm_base_url) == config.models.vlm_base_url
    if config.models.engine == "openai":
        same = same and served_endpoint(config, "router") == served_endpoint(config, "vlm")
    router = vlm if same else build_chat_engine(config, "router", ledger)
    return Engines(router=router, vlm=vlm, reranker=build_reranker(config, ledger),
                   coarse=build_coarse_reranker(config, ledger))

"""Build the router, the VLM and the reranker that a CruiseConfig asks for.

Each engine and reranker backend is a record of agents/engines/registry.py; this module only
assembles a run's: when the router and the VLM are the same model on the same engine (the cpu
profile: SmolLM2 plays both), one engine serves both roles. With vLLM the two models are two
`vllm.LLM` instances in one process, each held to its own share of the GPU
(`router_gpu_memory_utilization`, `vlm_gpu_memory_utilization`; see tools/memory_plan.py).
"""
from __future__ import annotations

from agents.config.cruise_config import CruiseConfig
from agents.engines.base import ChatEngine, Engines, Ledger, Reranker
from agents.engines.registry import chat_engine_kind, hook, reranker_kind


def served_roles(config: CruiseConfig) -> list[str]:
    """The roles whose models a run reaches over an OpenAI-compatible server (the pre-run check asks
    each one's server)."""
    roles = ["vlm", "router"] if chat_engine_kind(config.models.engine).served else []
    return roles + (["reranker"] if reranker_kind(config.models.reranker_backend).served else [])


def in_process_roles(config: CruiseConfig) -> list[str]:
    """The roles whose models load in this process (the others sit behind servers or at a provider)."""
    chat = ["vlm", "router"] if chat_engine_kind(config.models.engine).loads_here else []
    return chat + ([] if reranker_kind(config.models.reranker_backend).served else ["reranker"])


def build_chat_engine(config: CruiseConfig, role: str, ledger: Ledger) -> ChatEngine:
    """The engine of one role ("vlm" or "router") with the arguments the config gives it."""
    return hook(chat_engine_kind(config.models.engine).build)(config.models, role, ledger)


def build_reranker(config: CruiseConfig, ledger: Ledger) -> Reranker:
    return hook(reranker_kind(config.models.reranker_backend).build)(config.models, ledger)


def build_coarse_reranker(config: CruiseConfig, ledger: Ledger) -> Reranker | None:
    """The bi-encoder that shortlists each turn's chunks for the reranker (all-MiniLM-L6-v2, from
    its package), or None when `rerank_coarse_k` is 0."""
    from agents.engines.reranker import MiniLMReranker

    return MiniLMReranker("minilm", ledger) if config.retrieval.rerank_coarse_k else None


def build_engines(config: CruiseConfig, ledger: Ledger) -> Engines:
    # The VLM first: it is the larger model, and on a GPU it should claim its share first.
    vlm = build_chat_engine(config, "vlm", ledger)
    kind = chat_engine_kind(config.models.engine)
    same = kind.key(config.models, "router") == kind.key(config.models, "vlm")
    router = vlm if same else build_chat_engine(config, "router", ledger)
    return Engines(router=router, vlm=vlm, reranker=build_reranker(config, ledger),
                   coarse=build_coarse_reranker(config, ledger))

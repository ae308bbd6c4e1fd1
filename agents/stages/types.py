"""The plain records that flow one way through the chain, one per turn of the batch:

Turn -> Route -> Retrieval -> Evidence -> Answers -> Verification -> Decision

The optional peer stages (all off in the paper's presets) add their own records:
`SubQueries` (s2a_decompose) and `CropPlan` (s2b_crop) feed the retrieval; the entity check
(s3a) and the relevance filter (s5a) return a narrowed `Retrieval` / `Evidence` that says what
they removed.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from PIL import Image

from agents.base_agent import IDK_ANSWER
from agents.runtime.system import Decision  # noqa: F401 - every system's decisions, read through here too


@dataclass
class Turn:
    query: str
    image: Image.Image | None
    history: list[dict]  # earlier {"role", "content"} messages of this conversation
    domain: str | None = None  # the harness's domain label, when it passes one
    # Retrieval the harness handed over (facebookresearch/CRAG-MM's rag_context_list), as text
    # passages; None when it handed nothing over (the 2025 starter kit's call)
    passages: list[str] | None = None
    # What the picture shows, as text, for a VLM that cannot see (s0a_perceive): one delimited
    # block that the prompts carry in place of the image; "" when the VLM sees or nothing was read.
    picture: str = ""
    # The same readings as plain text (labels and OCR lines, no confidences or framing): the
    # evidence the grounding check (s8_verify, cov_mode "grounding") finds the picture's words in.
    picture_text: str = ""
    # What perception read (s0a_perceive.Perception: labels, OCR lines, the block), None where it
    # did not run; the trace's `perception` is made from it.
    perception: object | None = None
    # The follow-up written as a question that stands on its own (s1c_standalone): what every
    # stage that searches or checks evidence asks in place of `query`. "" on a turn without
    # history, and where the rewrite fell back to the plain question.
    standalone: str = ""
    # An oracle run's labels (agents/base_agent.py ORACLES): the target's box in this turn's image's
    # pixels, which image search crops to (s2b, s3); the target's name, which the search query and
    # every prompt's picture block carry. None / "" in an ordinary run.
    oracle_box: list[float] | None = None
    given_entity: str = ""


def searched_for_oracle(turn: Turn) -> bool:
    """Whether an oracle run's label is searched whatever the router decided: the run measures what
    search finds with the true region or the true entity (docs/diagnostics.md)."""
    return turn.oracle_box is not None or bool(turn.given_entity)


def search_question(turn: Turn) -> str:
    """The question as retrieval and the evidence checks read it: the standalone form when the
    turn has one, else the question itself."""
    return turn.standalone or turn.query


def question_beside_standalone(turn: Turn) -> str:
    """The question for a prompt that shows the conversation (consistency, CoV): the original,
    followed by its standalone form when the turn has one."""
    return f"{turn.query}\n(On its own: {turn.standalone})" if turn.standalone else turn.query


@dataclass
class Standalone:
    """s1c_standalone: one turn's follow-up written to stand on its own."""

    question: str = ""  # "" when the turn has no history or the rewrite fell back
    carried: list[str] = field(default_factory=list)  # terms carried over from earlier turns
    # of which the names of pages an earlier turn's search found, for a turn whose answer named nothing
    found: list[str] = field(default_factory=list)
    raw: str = ""  # the model's reply (model modes)
    fallback: str = ""  # why the plain question was kept ("" when it was not)


@dataclass
class Perception:
    """s0a_perceive: what the classifier and OCR read in a turn's image (before the thresholds)."""

    labels: list[tuple[str, float]] = field(default_factory=list)  # ImageNet class, probability; best first
    lines: list[tuple[str, float]] = field(default_factory=list)  # OCR text, confidence; reading order
    block: str = ""  # the prompt block made of them ("" when nothing passed the thresholds)
    cached: bool = False  # read from an earlier run on the same image (no model ran for this turn)
    ms: float = 0.0  # model time spent for this turn (0 when cached)
    error: str = ""  # why the image could not be read ("" when it could, or there was none)


@dataclass
class Route:
    needs_external: bool
    is_real_time: bool
    raw: str = ""
    parsed: bool | None = True  # False: the router's text could not be read (we then assume external
    # info); None: no router was asked
    # Tool routing (s1a): "image" | "web" | "both" | "none"; None: not asked or unreadable, and
    # retrieval then runs every search it can, as without the switch.
    search: str | None = None
    # Decomposition's label (s2a): "simple" | "multi-hop" | "comparison"; None: not asked or unreadable.
    question_type: str | None = None
    domain: str | None = None  # domain routing (s1b): one of DOMAINS, or the harness's label
    domain_source: str | None = None  # "harness" | "router" | None (no domain known)
    extras_parsed: bool | None = None  # the extended router labels: None not asked; False one unreadable


@dataclass
class Summary:
    text: str = ""  # one sentence; "" when none was asked for or none could be read
    raw: str = ""
    parsed: bool | None = None  # None: not asked; False: the reply held no sentence


@dataclass
class SubQueries:
    """Decomposition (s2a): up to `decompose_max_queries` web queries for a multi-hop question."""

    queries: list[str] = field(default_factory=list)
    raw: str = ""
    parsed: bool | None = None  # None: not asked; False: the reply held no usable query


@dataclass
class CropPlan:
    """Crop-then-search (s2b): the regions of the photo searched besides the whole image."""

    object_name: str = ""  # what the VLM says the question is about ("" when not asked or unread)
    crops: list[dict] = field(default_factory=list)  # {"view": "box"|"centre"|"tile_NW"..., "box": [x0, y0, x1, y1] px}
    raw: str = ""
    parsed: bool | None = None  # None: no model asked (off, no image, or fixed tiles); False: box unreadable


@dataclass
class Retrieval:
    summary: str = ""
    query: str = ""  # q' = question + summary (what the reranker scores chunks against)
    web_query: str = ""  # what web search was asked: q' + confident image entity names (fusion)
    items: list[dict] = field(default_factory=list)  # {"source", "id", "score", "name"} per search hit
    chunks: list[str] = field(default_factory=list)  # paragraph chunks to rerank
    chunk_sources: list[str] = field(default_factory=list)  # id of the hit each chunk came from
    # aligned with chunks: the page_last_modified of the web page a chunk came from ("" when its
    # hit has none: image hits, snippet-only web hits, undated pages), so that a real-time
    # question's answer sees how old its evidence is
    chunk_dates: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    # What the peer stages did; empty when they are off.
    chunk_entities: list[str] = field(default_factory=list)  # aligned with chunks: image entity name, "" for web
    searches: list[str] = field(default_factory=list)  # the searches that ran: "image", "web"
    crops_searched: list[str] = field(default_factory=list)  # views searched besides the whole image
    # those crops' {"view", "box"} in the pixels of the image searched, and that image's [width, height]
    # (the stage-wise diagnostics' grounding: evaluator/scoring/diagnostics.py)
    regions_searched: list[dict] = field(default_factory=list)
    image_size: list[int] | None = None
    sub_queries: list[str] = field(default_factory=list)  # decomposition's web queries that ran
    entity_verdicts: dict[str, bool | None] = field(default_factory=dict)  # name -> shown? (None: unreadable)
    entity_check_raw: list[str] = field(default_factory=list)
    entity_check_parsed: bool | None = None  # None: not asked; False: a verdict was unreadable (entity kept)
    chunks_dropped_entity: int = 0  # chunks removed because their entity was rejected
    # The whole photo's image hits were those an earlier turn of the conversation found (no search ran)
    image_hits_reused: bool = False


@dataclass
class Evidence:
    # aligned with Retrieval.chunks; None: the coarse step left the chunk out, the reranker never saw it
    chunk_scores: list[float | None] = field(default_factory=list)
    coarse_scores: list[float] = field(default_factory=list)  # the coarse step's, aligned; empty when it is off
    theta: float | None = None
    kept: list[str] = field(default_factory=list)
    kept_dates: list[str] = field(default_factory=list)  # aligned with kept: Retrieval.chunk_dates
    context: str = ""  # "[Info m] chunk" lines; empty means no context
    retrieval_score: float = 0.0  # S_ret: the highest reranker score, 0 when nothing was retrieved
    # Relevance filter (s5a, SAM-RAG's isRel) over the chunks the MAD filter kept.
    relevance: list[bool | None] = field(default_factory=list)  # per MAD-kept chunk; None: verdict unreadable (kept)
    dropped_irrelevant: list[str] = field(default_factory=list)
    relevance_raw: str = ""
    relevance_parsed: bool | None = None  # None: not asked


@dataclass
class Answers:
    rag: str
    direct: str | None = None  # the non-RAG answer (None when the dual path is off)
    rag_raw: str = ""
    direct_raw: str = ""
    rag_parsed: bool | None = None  # False: the RAG reply held no answer text; None: not generated
    direct_sampled: bool = False  # the non-RAG answer was sampled (no context: same prompt as a')
    # The RAG answer's token probabilities (white-box signal); None when the engine gave none
    rag_min_token_prob: float | None = None
    rag_mean_token_prob: float | None = None


@dataclass
class Verification:
    consistent: bool | None = None  # None: not checked
    consistency_raw: str = ""
    consistency_rule: str = "not_checked"  # "vlm" | "identical_answers" | "not_checked"
    consistency_parsed: bool | None = None  # None: the VLM was not asked
    cov_confidence: float | None = None  # None: not checked
    cov_raw: str = ""
    cov_parsed: bool | None = None  # None: the VLM was not asked




# What a turn's record reads as where no stage wrote it (switched off, cut by the deadline, a turn
# the stage was not asked for, a fault): the safe default each stage passes on.
DEFAULTS = {
    "route": lambda: Route(needs_external=True, is_real_time=False, parsed=None),
    "summary": Summary,
    "sub_queries": SubQueries,
    "crops": CropPlan,
    "retrieval": Retrieval,
    "evidence": Evidence,
    "notes": str,
    "answers": lambda: Answers(rag=IDK_ANSWER),
    "check": Verification,
}


def column(records, name: str, defaults: dict | None = None) -> list:
    """Each turn's `name` (a Reads per turn, or its fields), its default (`defaults`, else DEFAULTS)
    where none was written."""
    make = (defaults or DEFAULTS)[name]
    return [r.get(name) if r.get(name) is not None else make() for r in records]

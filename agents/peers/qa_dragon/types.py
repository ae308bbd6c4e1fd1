"""The records QA-Dragon's steps pass on, one per turn (besides CRUISE's Turn, Retrieval and
Evidence, which it reuses):

DomainRoute -> Draft -> SearchRoute -> ToolChoice -> (Retrieval) -> Reranked -> PostAnswer -> PostCheck
"""
from __future__ import annotations

import functools
from dataclasses import dataclass, field

from agents.base_agent import IDK_ANSWER
from agents.stages.types import DEFAULTS as SHARED_DEFAULTS
from agents.stages.types import Evidence, SubQueries
from agents.stages.types import column as shared_column

BRANCHES = ("direct_output", "search_verify", "rag")


@dataclass
class DomainRoute:
    domain: str | None = None  # one of the dataset's 14 (s1b_domain_route.DOMAINS); None: not known
    source: str | None = None  # "harness" | "router" | None
    raw: str = ""
    parsed: bool | None = None  # None: the router was not asked


@dataclass
class Draft:
    """The pre-answer's D-CoT: what the question is about, the reasoning steps, a draft answer."""

    answer: str = IDK_ANSWER
    object_name: str = ""  # the Object line ("" when missing)
    steps: list[str] = field(default_factory=list)
    raw: str = ""
    parsed: bool | None = None  # False: no draft answer line could be read; None: not asked

    @property
    def reasoning(self) -> str:
        lines = ([f"Object: {self.object_name}"] if self.object_name else []) + self.steps
        return "\n".join(lines)


@dataclass
class SearchRoute:
    branch: str  # one of BRANCHES
    reason: str  # which rule decided, in words
    features: dict = field(default_factory=dict)  # the router's inputs (search_router.route_features)


@dataclass
class ToolChoice:
    """Which searches run. The RAG branch asks the tool router; Search Verify runs the text
    toolchain; Direct Output runs none."""

    image: bool = False
    text: bool = False
    image_check: str = ""  # the tool router's raw verdicts ("" when not asked)
    text_check: str = ""
    parsed: bool | None = None  # None: not asked; False: a flag was unreadable (searched anyway)
    rule: str = ""  # a rule of the paper's decision logic that overrode the model, if any

    @property
    def search(self) -> str:
        return {(True, True): "both", (True, False): "image", (False, True): "web"}.get((self.image, self.text), "none")


@dataclass
class Reranked:
    """The coarse-to-fine reranker's result: the Evidence the post-answer reads (coarse scores in
    chunk_scores), and the fine stage's P(yes) per chunk (None where a chunk did not reach it)."""

    evidence: Evidence = field(default_factory=Evidence)
    fine: list[float | None] = field(default_factory=list)
    fine_ran: bool = False  # False: the fine stage did not run (no chunk passed, or cut): coarse order


@dataclass
class PostAnswer:
    answer: str = IDK_ANSWER
    reason: str = ""
    raw: str = ""
    parsed: bool | None = None  # None: not generated (Direct Output, or cut)
    # The white-box verifier's inputs: token probabilities of the answer line, and of the whole reply
    min_token_prob: float | None = None
    mean_token_prob: float | None = None
    reply_min_token_prob: float | None = None


@dataclass
class PostCheck:
    confidence: float | None = None  # None: not checked
    raw: str = ""
    parsed: bool | None = None


# What QA-Dragon's records of a turn read as where no stage wrote them (a fault, a step the turn
# did not reach): the safe default each step passes on.
DEFAULTS = {"domain": DomainRoute, "draft": Draft, "tool": ToolChoice, "reranked": Reranked, "post": PostAnswer,
            "post_check": PostCheck, "rephrased": SubQueries, "subject": str, **SHARED_DEFAULTS}
column = functools.partial(shared_column, defaults=DEFAULTS)

"""QA-Dragon's own settings (seed 001; docs/chain.md "QA-Dragon"). The stages it shares with
CRUISE (the crop search, the entity check, retrieval) keep theirs in agents/config/groups.py; a verdict is
read the way the model stack reads CRUISE's (`consistency_mode`, `cov_mode` against `tau_low`)."""
from __future__ import annotations

from dataclasses import dataclass

from agents.settings import AMOUNT, COUNT, COUNT_OR_OFF, SHARE, THRESHOLD, ranged


@dataclass
class QaDragonSettings:
    qa_dragon_domain_max_tokens: int = ranged(8, COUNT)  # the domain router names one of the 14 domains
    # The D-CoT's and the post-answer's budgets in answer lengths (x answer_max_tokens, which each
    # model stack sets for its own model): an object line, at most five steps and a draft answer
    # (64 -> 160 tokens on the paper's stack); a reason line and an answer line (64 -> 96).
    qa_dragon_draft_lengths: float = ranged(2.5, AMOUNT)
    qa_dragon_answer_lengths: float = ranged(1.5, AMOUNT)
    qa_dragon_tool_max_tokens: int = ranged(24, COUNT)  # the tool router's two flags
    qa_dragon_rephrase_queries: int = ranged(2, COUNT_OR_OFF)  # rephrased web queries per text search (0: none)
    qa_dragon_rephrase_max_tokens: int = ranged(48, COUNT)
    qa_dragon_coarse_k: int = ranged(5, COUNT)  # K1: chunks the coarse stage passes to the fine one
    qa_dragon_coarse_min: float = ranged(0.1, SHARE)  # tau_coarse: a chunk below this reranker score is dropped
    qa_dragon_fine_min: float = ranged(0.5, THRESHOLD)  # tau_fine: kept when fine x coarse >= tau_fine x tau_coarse
    qa_dragon_verify_max_tokens: int = ranged(24, COUNT)  # the verifier's verdict line (text mode)

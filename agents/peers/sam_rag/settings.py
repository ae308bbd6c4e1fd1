"""SAM-RAG's own settings (seed 002; docs/chain.md "SAM-RAG"). Its verdicts are read the way the
model stack reads CRUISE's (`cov_mode` against `tau_low`, agents/config/groups.py)."""
from __future__ import annotations

from dataclasses import dataclass

from agents.settings import COUNT, COUNT_OR_OFF, ranged


@dataclass
class SamRagSettings:
    sam_rag_batch_docs: int = ranged(3, COUNT)  # documents judged per isRel round
    sam_rag_rounds: int = ranged(3, COUNT_OR_OFF)  # isRel rounds at most ("retrieve until a relevant document is found")
    sam_rag_check_max_tokens: int = ranged(8, COUNT)  # isRel / isUse / isSup verdicts (text mode)

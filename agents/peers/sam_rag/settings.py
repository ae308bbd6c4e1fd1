"""SAM-RAG's own settings (seed 002; docs/chain.md "SAM-RAG"). Its verdicts are read the way the
model stack reads CRUISE's (`cov_mode` against `tau_low`, agents/config.py)."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass
class SamRagSettings:
    sam_rag_batch_docs: int = 3  # documents judged per isRel round
    sam_rag_rounds: int = 3  # isRel rounds at most ("retrieve until a relevant document is found")
    sam_rag_check_max_tokens: int = 8  # isRel / isUse / isSup verdicts (text mode)

"""Public name kept for outside checks: the MAD dynamic threshold lives in agents/cruise/stages/s5_rerank.py."""
from agents.cruise.stages.s5_rerank import mad_threshold, select_chunks  # noqa: F401

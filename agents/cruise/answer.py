"""Public name kept for outside checks: the answer normaliser lives in agents/cruise/stages/s6_answer.py."""
from agents.cruise.stages.s6_answer import normalize_answer  # noqa: F401

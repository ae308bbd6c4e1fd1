"""Public name kept for outside checks: Algorithm 1 lives in agents/cruise/stages/s9_finalize.py."""
from agents.cruise.stages.s9_finalize import decide  # noqa: F401

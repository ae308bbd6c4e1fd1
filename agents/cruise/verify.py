"""Public name kept for outside checks: the CoV confidence parser lives in agents/cruise/stages/s8_verify.py."""
from agents.cruise.stages.s8_verify import parse_confidence  # noqa: F401

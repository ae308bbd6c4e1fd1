"""CRUISE's own stages (route, CoV and the rest below), and its whole chain's stages in order: the
one list its order, priors, trace, warm-up and report follow (agents/cruise/system.py)."""
from __future__ import annotations

from agents.cruise.stages import s1_route, s7_consistency, s8_verify, s9_finalize
from agents.stages import (
    s0a_perceive,
    s1a_tool_route,
    s1b_domain_route,
    s1c_standalone,
    s2_summarize,
    s2a_decompose,
    s2b_crop,
    s3_retrieve,
    s3a_entity_check,
    s5_rerank,
    s5a_relevance,
    s6_answer,
)

STAGES = tuple(module.STAGE for module in (
    s0a_perceive, s1_route, s1a_tool_route, s1b_domain_route, s2_summarize, s1c_standalone, s2a_decompose, s2b_crop, s3_retrieve,
    s3a_entity_check, s5_rerank, s5a_relevance, s6_answer, s7_consistency, s8_verify, s9_finalize))

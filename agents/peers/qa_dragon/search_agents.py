"""The image and text search agents (seed 001, 3.4 and 3.5), from CRUISE's stages:

- object extraction and segmentation (3.4.1-3.4.2): s2b_crop, the VLM naming the asked-about
  object and boxing it (`crop_mode` box; tiles for a stack whose model cannot see), on the turns
  whose tool choice includes image search;
- the multi-image search engine (3.4.3): s3_retrieve, the whole photo and its crops searched and
  fused by best score per entity;
- entity selection (3.4.4): s3a_entity_check, "does the photo show <entity>?" per image entity;
- fusion search (3.5.2) and the text search engine (3.5.3): s3_retrieve's web query, q' plus the
  confident image entity names, and one more web search per rephrased query (rephrase.py).

q' is the question plus the object the D-CoT named. Each turn searches what its ToolChoice says
and nothing else (CRUISE's tool-route gate, s1a, with the choice as the route).
"""
from __future__ import annotations

from agents.config.cruise_config import CruiseConfig
from agents.peers.qa_dragon.types import Draft, ToolChoice
from agents.stages.types import Route

_UNNAMED = ("unknown", "unclear", "none", "n/a", "")


def search_agent_settings(cfg: CruiseConfig) -> CruiseConfig:
    """CRUISE's retrieval settings with the tool gate on: each turn's route says which searches run."""
    return cfg.replace(use_tool_route=True, use_retrieval=True)


def search_routes(tools: list[ToolChoice]) -> list[Route]:
    return [Route(needs_external=tool.image or tool.text, is_real_time=False, parsed=None, search=tool.search)
            for tool in tools]


def query_subject(draft: Draft) -> str:
    """What q' adds to the question: the object the D-CoT named (its kind when unnamed)."""
    name = " ".join(draft.object_name.split())
    return "" if name.lower().strip(".") in _UNNAMED else name


"""The agentic system's own settings (docs/evaluation.md "The agentic system"): its budgets and how its
calls travel. The defaults are crag_mm_agentic's (integrations/lmms_eval/tasks/crag_mm_agentic.yaml:
6 model replies, 4 tool calls, 3 hits per call, 4,000 characters of a call's results), so that a
model is measured alike in both."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from agents.settings import COUNT, ranged


@dataclass
class AgenticSettings:
    # Model replies a turn may take (each reply one request): the last one is asked to answer
    # without a call. A turn whose model still calls at the last reply ends under the branch "budget".
    max_steps: int = ranged(6, COUNT)
    # Tool calls a turn may make, all replies together; a reply's calls past it are answered with an
    # error, and the next reply is the last (asked to answer without a call).
    max_calls: int = ranged(4, COUNT)
    # native: tools in the request and calls in the reply (served and hosted engines); text: the
    # tools in the prompt and <tool_call> blocks in the reply (any engine); auto: native where the
    # VLM's engine takes tools (agents/agentic/protocol.py)
    tool_protocol: Literal["auto", "native", "text"] = "auto"
    hits_per_call: int = ranged(3, COUNT)  # hits a search returns
    result_chars: int = ranged(4000, COUNT)  # at most this much of a call's chunks go back to the model
    # A reply's budget: a call with its arguments, or the answer (the judge reads its first 75 tokens).
    reply_max_tokens: int = ranged(128, COUNT)

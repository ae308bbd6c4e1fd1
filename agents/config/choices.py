"""The choices a settings field may take: one `Literal` per kind of choice, each beside the module
that reads it, and the choices other modules keep (the hosted providers, the reasoning efforts),
asked of them only when a value is checked, so that reading the settings imports no engine."""
from __future__ import annotations

from typing import Literal

from agents.engines.registry import CHAT_ENGINES, RERANKERS
from agents.settings import COUNT_OR_OFF, ranged

Engine = Literal[tuple(CHAT_ENGINES)]  # agents/engines/registry.py
RerankerBackend = Literal[tuple(RERANKERS)]
StopStrings = Literal["server", "client"]
Prefill = Literal["auto", "batch", "rows"]  # agents/engines/rows_prefill.py
CpuWeights = Literal["auto", "float32", "bfloat16", "int8"]  # agents/engines/cpu_path.py
YesNoMode = Literal["text", "yes_no"]  # a verdict written, or read from the yes/no odds (agents/stages/verdicts.py)
CovMode = Literal["text", "yes_no", "grounding"]  # agents/cruise/stages/s8_verify.py, agents/stages/verdicts.py
Chunker = Literal["infobox", "paper_fields"]  # agents/stages/s4_chunk.py
HarnessContext = Literal["merge", "only", "ignore"]
CropMode = Literal["box", "tiles", "box_or_tiles"]  # agents/stages/s2b_crop.py
PerceptionMode = Literal["auto", "on", "off"]  # agents/stages/s0a_perceive.py
StandaloneMode = Literal["off", "rule", "model", "both"]  # agents/stages/s1c_standalone.py
CostPriorModel = Literal["", "l40s"]  # agents/runtime/cost_priors.py
AnswerPrompts = Literal["cruise", "baseline"]  # agents/stages/s6_answer.py
BaselineStyle = Literal["open", "hosted", "gemini"]  # agents/stages/baseline_prompt.py


def hosted_providers() -> tuple[str, ...]:
    """"" (the provider the model's name says) or a provider agents/engines/hosted_providers.py knows."""
    from agents.engines.hosted_providers import PROVIDERS

    return ("", *sorted(PROVIDERS))


def reasoning_efforts() -> tuple[str, ...]:
    from agents.engines.hosted_rules import EFFORTS

    return EFFORTS


def allowance_field():
    """effort -> reasoning tokens >= 0."""
    return ranged(dict, COUNT_OR_OFF, keys=reasoning_efforts)

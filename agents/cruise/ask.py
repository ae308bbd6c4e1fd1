"""The VLM request the summary and checking stages make: one prompt, filled per turn, one engine call."""
from __future__ import annotations

from typing import Callable

from agents.cruise.prompts import load_prompt
from agents.cruise.types import Turn
from agents.engines.base import ChatEngine, ChatRequest, Sampling


def ask_vlm(
    engine: ChatEngine,
    stage: str,
    turns: list[Turn],
    wanted: list[int],
    values: Callable[[int], dict],
    sampling: Sampling,
    *,
    with_history: bool = True,
) -> list[str]:
    """Raw replies for the turns in `wanted` (in that order); no call when nothing is wanted.
    The prompt is prompts/<stage>.txt, filled with `values(i)`; each turn's image goes along."""
    if not wanted:
        return []
    prompt = load_prompt(stage)
    requests = [
        ChatRequest(prompt.messages(turns[i].history if with_history else None, **values(i)), image=turns[i].image)
        for i in wanted
    ]
    return [r.text for r in engine.generate(requests, sampling, stage=stage)]

"""Prompt templates live in prompts/<stage>.txt, one per stage, with a [system] and a [user] part.

Placeholders are `$name` (string.Template), so braces in retrieved text or questions are inert.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass
from string import Template

from agents.config import REPO_ROOT

PROMPTS_DIR = REPO_ROOT / "prompts"


@dataclass(frozen=True)
class PromptTemplate:
    name: str
    system: Template
    user: Template

    def messages(self, history: list[dict] | None = None, **values: str) -> list[dict]:
        """System message, then the conversation so far, then this stage's user message."""
        return [
            {"role": "system", "content": self.system.substitute(values)},
            *(history or []),
            {"role": "user", "content": self.user.substitute(values)},
        ]


@functools.cache
def load_prompt(name: str) -> PromptTemplate:
    text = (PROMPTS_DIR / f"{name}.txt").read_text(encoding="utf-8")
    head, sep, rest = text.partition("[system]\n")
    system, sep2, user = rest.partition("[user]\n")
    if not sep or not sep2 or head.strip():
        raise ValueError(f"prompt {name!r} must hold a [system] part followed by a [user] part")
    return PromptTemplate(name, Template(system.strip()), Template(user.strip()))

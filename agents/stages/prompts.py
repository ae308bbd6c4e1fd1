"""Prompt templates live in prompts/<stage>.txt, one per stage, with a [system] and a [user] part.

Placeholders are `$name` (string.Template), so braces in retrieved text or questions are inert.
`ask_vlm` is the request the summary and checking stages make: one prompt, filled per turn,
one engine call. `quote_notes` fences retrieved text for every prompt that shows it.

A stage asks for its prompt by name. While a system answers, the name is looked for first in the
`prompts/` folder of the system's own package and of the packages its stages' steps come from
(agents/runtime/package_files.py: a system in a package of its own keeps its prompts there), then
in the repository's prompts/; a name found nowhere raises PromptNotFound, naming every folder
looked in, in that order. CRUISE_PROMPTS_DIR points at another folder of the repository's
files (to try prompt variants without editing the repository); the evaluator's resume fingerprint
hashes the folders in use (`prompt_hashes`).
"""
from __future__ import annotations

import functools
import hashlib
import os
from dataclasses import dataclass
from pathlib import Path
from string import Template
from typing import Callable

from agents.engines.base import ChatEngine, ChatRequest, ChatResult, Sampling
from agents.profiles import REPO_ROOT
from agents.runtime.package_files import prompt_folders, running_prompt_folders, running_prompt_search
from agents.stages.types import Turn

PROMPTS_DIR = REPO_ROOT / "prompts"


@dataclass(frozen=True)
class PromptTemplate:
    name: str
    system: Template
    user: Template

    def messages(self, history: list[dict] | None = None, picture: str = "", **values: str) -> list[dict]:
        """System message, then the conversation so far, then this stage's user message.
        `picture`: the image as text for a VLM that cannot see (s0a_perceive), put first in the
        user message; "" leaves the prompt exactly as written."""
        user = self.user.substitute(values)
        return [
            {"role": "system", "content": self.system.substitute(values)},
            *(history or []),
            {"role": "user", "content": f"{picture}\n\n{user}" if picture else user},
        ]


def prompts_dir() -> Path:
    return Path(os.environ.get("CRUISE_PROMPTS_DIR") or PROMPTS_DIR)


def prompt_hashes(folder: Path | None = None, system=None) -> dict[str, str]:
    """prompts/*.txt file name -> sha256 of its bytes (the folder the agent reads; the domain
    notes in prompts/domains/ change answers too), and `system`'s own packages' prompts under
    "PACKAGE:NAME" (agents/runtime/package_files.py). The judge's prompts (judge_*.txt) decide
    verdicts, not answers: --rejudge is for those."""
    hashes = _hashes(Path(folder or prompts_dir()))
    for package, own in prompt_folders(system) if system is not None else ():
        hashes.update({f"{package}:{name}": digest for name, digest in _hashes(own).items()})
    return hashes


def _hashes(folder, prefix: str = "") -> dict[str, str]:
    """name below `folder` -> sha256 of each .txt file there but the judge's (a folder on disk, or
    a package's read through importlib.resources)."""
    found = {}
    for entry in sorted(folder.iterdir(), key=lambda e: e.name):
        if entry.is_dir():
            found.update(_hashes(entry, f"{prefix}{entry.name}/"))
        elif entry.name.endswith(".txt") and not entry.name.startswith("judge_"):
            found[prefix + entry.name] = hashlib.sha256(entry.read_bytes()).hexdigest()
    return found


class PromptNotFound(FileNotFoundError):
    """A prompt in none of the folders it is looked for in; the message names them all."""


def prompt_file(name: str):
    """prompts/<name>.txt as the running system reads it: its own packages' first, then the
    repository's (the folder in use)."""
    for _, folder in running_prompt_folders():
        own = folder / f"{name}.txt"
        if own.is_file():
            return own
    return prompts_dir() / f"{name}.txt"


def searched_folders() -> list[str]:
    """Where a prompt is looked for now, in that order, as a reader finds each folder."""
    searched = [f"{package}'s prompts/ ({folder}{'' if folder.is_dir() else ', no such folder'})"
                for package, folder in running_prompt_search()]
    return searched + [f"the repository's prompts/ ({prompts_dir()})"]


def existing_prompt(name: str):
    """prompts/<name>.txt as `prompt_file` finds it; PromptNotFound naming every folder looked in,
    the running system's packages' first."""
    path = prompt_file(name)
    if not path.is_file():
        raise PromptNotFound(f"prompt {name!r} not found: looked for {name}.txt in "
                             + ", then ".join(searched_folders()))
    return path


def missing_prompts(system) -> list[str]:
    """Why each prompt `system`'s stages declare (System.prompts) is not there, as its batches would
    look for it (its own package's prompts/ first): one PromptNotFound message each ([]: all there)."""
    from agents.runtime.package_files import own_files

    missing = []
    with own_files(system):
        for name in system.prompts():
            try:
                existing_prompt(name)
            except PromptNotFound as exc:
                missing.append(str(exc))
    return missing


def load_prompt(name: str) -> PromptTemplate:
    """The chat prompt prompts/<name>.txt (its [system] and [user] parts), as `existing_prompt`
    finds it."""
    return _read_prompt(existing_prompt(name))


@functools.cache
def _read_prompt(path) -> PromptTemplate:
    name = path.name.removesuffix(".txt")
    text = path.read_text(encoding="utf-8")
    head, sep, rest = text.partition("[system]\n")
    system, sep2, user = rest.partition("[user]\n")
    if not sep or not sep2 or head.strip():
        raise ValueError(f"prompt {name!r} must hold a [system] part followed by a [user] part")
    return PromptTemplate(name, Template(system.strip()), Template(user.strip()))


def quote_notes(context: str) -> str:
    """Retrieved text goes inside a fenced block; it may not close the fence itself."""
    return context.replace("<<<", "").replace(">>>", "") if context else "(no notes were found)"


def ask_vlm(*args, **kwargs) -> list[str]:
    """Raw replies for the turns in `wanted` (in that order); no call when nothing is wanted.
    The prompt is prompts/<stage>.txt, filled with `values(i)`; each turn's image goes along, and
    its picture block where the chain perceived for a VLM that cannot see. The arguments are
    `ask_vlm_results`'s."""
    return [r.text for r in ask_vlm_results(*args, **kwargs)]


def ask_vlm_results(
    engine: ChatEngine,
    stage: str,
    turns: list[Turn],
    wanted: list[int],
    values: Callable[[int], dict],
    sampling: Sampling,
    *,
    with_history: bool = True,
    prompt_name: str | None = None,
) -> list[ChatResult]:
    """`ask_vlm` with the engine's whole results (log-probabilities, `Sampling.choices` odds);
    `prompt_name`: another prompt file of the stage (default prompts/<stage>.txt, found as
    `load_prompt` finds it)."""
    if not wanted:
        return []
    prompt = load_prompt(prompt_name or stage)
    requests = [
        ChatRequest(prompt.messages(turns[i].history if with_history else None, turns[i].picture, **values(i)),
                    image=vlm_image(turns[i], engine), turn=i)
        for i in wanted
    ]
    return engine.generate(requests, sampling, stage=stage)


def vlm_image(turn: Turn, engine: ChatEngine):
    """The image a request carries: none for an engine that cannot see where the picture block
    (s0a) stands in for it; a VLM that sees gets the image (with the block too, perception "on")."""
    return None if turn.picture and not engine.supports_images else turn.image


def load_prompt_lines(name: str) -> str:
    """A plain-text prompt fragment (prompts/<name>.txt, no [system]/[user] parts), "" when the
    file does not exist: e.g. a domain's extra lines for the answer prompt."""
    path = prompt_file(name)
    return path.read_text(encoding="utf-8").strip() if path.is_file() else ""

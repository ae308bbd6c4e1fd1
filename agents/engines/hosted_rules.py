"""What each hosted provider's documentation says a model takes, as data: the parameters each
model family accepts, how its reasoning is set, and the images a provider takes.
agents/engines/hosted_providers.py (one object per provider) builds its requests from these
rules; tests/test_hosted_engine.py checks them against stand-in servers built from the same
documentation (testkit/hosted_standin.py), not from our requests.

The documentation followed (docs/models.md "Hosted models" cites each rule):
- OpenAI: the Chat Completions reference (platform.openai.com/docs/api-reference/chat/create),
  the reasoning guide (platform.openai.com/docs/guides/reasoning), the GPT-5 family guide
  (platform.openai.com/docs/guides/latest-model), images and vision
  (platform.openai.com/docs/guides/images-vision).
- Anthropic: the Messages API reference (platform.claude.com/docs/en/api/messages), its versions
  (platform.claude.com/docs/en/api/migration-2026-10-21), vision
  (platform.claude.com/docs/en/build-with-claude/vision), stop reasons and refusals
  (platform.claude.com/docs/en/build-with-claude/handling-stop-reasons), the model migration
  guide (platform.claude.com/docs/en/about-claude/models/migration-guide).
- Google: the generateContent reference (ai.google.dev/api/generate-content), thinking
  (ai.google.dev/gemini-api/docs/thinking), image understanding
  (ai.google.dev/gemini-api/docs/image-understanding), Gemini 3 (ai.google.dev/gemini-api/docs/gemini-3).

Nothing here makes a request or reads a key.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

# Reasoning efforts in increasing order, as OpenAI names them; Gemini's thinking levels and
# budgets are mapped from them (gemini_thinking).
EFFORTS = ("none", "minimal", "low", "medium", "high", "xhigh")


@dataclass(frozen=True)
class ImageLimits:
    """The images a provider takes and the resolution its models read them at."""

    max_long_side: int  # pixels; larger images are shrunk here (the provider would shrink them anyway)
    max_short_side: int
    max_pixels: int
    max_bytes: int  # of the base64 text that travels in the request (the stricter reading)
    media_types: tuple[str, ...]


def bare_name(model: str) -> str:
    """The model id without a provider prefix ("openai/gpt-5-mini", "models/gemini-2.5-flash")."""
    return model.strip().lower().rsplit("/", 1)[-1]


_OPENAI_REASONING = re.compile(r"^(gpt-5|o[134])(\b|[-.])")


# --------------------------------------------------------------------------- OpenAI
def openai_reasoning_efforts(model: str) -> tuple[str, ...] | None:
    """The `reasoning_effort` values an OpenAI reasoning model accepts; None for a model that is
    not one (gpt-4o, gpt-4.1), which takes the classic sampling parameters.

    From the reasoning and GPT-5 guides: gpt-5, -mini, -nano take minimal..high; gpt-5.1 adds
    none (its default) and drops minimal; models after gpt-5.1-codex-max add xhigh; gpt-5-pro
    takes high only; the chat-latest aliases take medium only; the o-series low..high."""
    name = bare_name(model)
    if not _OPENAI_REASONING.match(name):
        return None
    if name.startswith("o"):
        return ("low", "medium", "high")
    version = re.match(r"gpt-5(?:\.(\d+))?", name)
    minor = int(version.group(1) or 0) if version else 0
    if "chat" in name:
        return ("medium",) if minor >= 1 else ()  # gpt-5-chat-latest takes no effort at all
    if "pro" in name:
        return ("high",) if minor == 0 else ("medium", "high", "xhigh")
    if "codex" in name:
        return ("low", "medium", "high", "xhigh") if minor >= 2 or "max" in name else ("low", "medium", "high")
    if minor == 0:
        return ("minimal", "low", "medium", "high")
    if minor == 1:
        return ("none", "low", "medium", "high")
    return ("none", "low", "medium", "high", "xhigh")


def is_openai_reasoning_model(model: str) -> bool:
    return openai_reasoning_efforts(model) is not None


def nearest_effort(wanted: str, accepted: tuple[str, ...]) -> str | None:
    """The accepted effort closest to `wanted` (a tie goes to the lower, cheaper one); None when
    the model takes none."""
    if not accepted:
        return None
    rank = EFFORTS.index(wanted) if wanted in EFFORTS else EFFORTS.index("minimal")
    return min(accepted, key=lambda e: (abs(EFFORTS.index(e) - rank), EFFORTS.index(e)))


# --------------------------------------------------------------------------- Gemini
@dataclass(frozen=True)
class GeminiThinking:
    """How a Gemini model's thinking is set: `level` (Gemini 3) or `budget` (2.5), or neither."""

    levels: tuple[str, ...] = ()  # thinkingLevel values it accepts
    budget_range: tuple[int, int] | None = None  # thinkingBudget bounds
    can_disable: bool = False  # thinkingBudget 0 switches thinking off
    takes_temperature: bool = True


def gemini_thinking(model: str) -> GeminiThinking:
    """Thinking guide: 2.5 Pro thinks with 128..32,768 tokens and cannot stop; 2.5 Flash takes
    0..24,576 (0 = off); 2.5 Flash-Lite 512..24,576 or 0. Gemini 3 takes thinkingLevel instead
    (Pro: low, high; Flash: minimal, low, medium, high), never both, and its guide asks to leave
    temperature at its default 1.0 (lower values can make it loop). Earlier models do not think."""
    name = bare_name(model)
    match = re.match(r"gemini-(\d+)(?:\.(\d+))?", name)
    major, minor = (int(match.group(1)), int(match.group(2) or 0)) if match else (0, 0)
    if major >= 3:
        levels = ("low", "high") if "pro" in name else ("minimal", "low", "medium", "high")
        if "pro" in name and minor >= 1:
            levels = ("low", "medium", "high")
        return GeminiThinking(levels=levels, takes_temperature=False)
    if (major, minor) == (2, 5):
        if "pro" in name:
            return GeminiThinking(budget_range=(128, 32768))
        if "lite" in name:
            return GeminiThinking(budget_range=(512, 24576), can_disable=True)
        return GeminiThinking(budget_range=(0, 24576), can_disable=True)
    return GeminiThinking()


def gemini_thinking_config(model: str, effort: str, allowance: int) -> tuple[dict | None, int]:
    """(generationConfig.thinkingConfig or None, thinking tokens to add to maxOutputTokens, which
    counts the thoughts too) for a stage's effort and its token allowance."""
    thinking = gemini_thinking(model)
    if thinking.levels:
        return {"thinkingLevel": nearest_effort(effort, thinking.levels)}, allowance
    if thinking.budget_range:
        low, high = thinking.budget_range
        if effort in ("none", "minimal") and thinking.can_disable:
            return {"thinkingBudget": 0}, 0
        budget = min(max(allowance, low), high)
        return {"thinkingBudget": budget}, budget
    return None, 0

"""What the turns of one conversation share, computed on its first turn and reused on the rest.

A CRAG-MM conversation asks several questions about one photo, and the official evaluator hands
its turns over one batch at a time (turn N+1 in a later batch than turn N) with no session id:
only the question, the image and the message history. A turn's conversation is therefore known by
what it carries: the image's content and the conversation's opening question (the first user
message of its history, or the question itself on the first turn). The photo does not change
within a conversation, so its image-search hits are looked up once and kept here for the later
turns (perception has its own cache by image content: agents/cruise/stages/s0a_perceive.py).

Each turn's search also leaves here what it found (`remember_found`: the names of its best web
pages), so that a later turn whose earlier answer was "I don't know" can still carry what that
turn was about into its own search (agents/stages/s1c_standalone.py).

Bounded: the least recently used conversation is dropped beyond `size` entries.
"""
from __future__ import annotations

import hashlib
from collections import OrderedDict

from PIL import Image


def image_identity(image: Image.Image) -> str:
    """A digest of the image's pixels and shape: the same photo gives the same identity in every
    batch, whatever object carries it."""
    digest = hashlib.blake2b(digest_size=16)  # pragma: no mutate (any length: identities are only compared with each other)
    digest.update(image.tobytes())
    digest.update(f"{image.size}{image.mode}".encode())
    return digest.hexdigest()


def opening_question(query: str, history: list[dict]) -> str:
    """The conversation's first question: the history's first user message, else this question."""
    first = next((m.get("content") for m in history or [] if m.get("role") == "user"), None)
    return " ".join(str(first if first is not None else query or "").split()).lower()


def conversation_key(query: str, history: list[dict], image: Image.Image) -> tuple[str, str]:
    return opening_question(query, history), image_identity(image)


def turn_number(history: list[dict]) -> int:
    """Which turn of its conversation a turn is (0 for the first): the user messages before it."""
    return sum(1 for m in history or [] if m.get("role") == "user")


class ConversationCache:
    """Values by (conversation key, what was computed), the last `size` conversations kept."""

    def __init__(self, size: int = 64):
        self.size = size
        self.entries: OrderedDict[tuple, dict] = OrderedDict()

    def get(self, conversation: tuple, name: str):
        """The value computed earlier in this conversation under `name`, or None."""
        found = self.entries.get(conversation)
        if found is None or name not in found:
            return None
        self.entries.move_to_end(conversation)
        return found[name]

    def put(self, conversation: tuple, name: str, value) -> None:
        self.entries.setdefault(conversation, {})[name] = value
        self.entries.move_to_end(conversation)
        while len(self.entries) > max(self.size, 0):
            self.entries.popitem(last=False)


# One per process: the agent serves one batch after another, and the key names the conversation
# and its photo, so an entry is only ever read by a later turn of the same conversation.
SHARED_CONVERSATIONS = ConversationCache()


def remember_found(cache: ConversationCache, query: str, history: list[dict], image: Image.Image,
                   names: list[str]) -> None:
    """Keep what this turn's search found best (page names), under its turn number."""
    cache.put(conversation_key(query, history, image), f"found:{turn_number(history)}", list(names))


def found_earlier(cache: ConversationCache, query: str, history: list[dict], image: Image.Image
                  ) -> dict[int, list[str]]:
    """{earlier turn number: what its search found best}, for the earlier turns this run searched."""
    key = conversation_key(query, history, image)
    found = {n: cache.get(key, f"found:{n}") for n in range(turn_number(history))}
    return {n: names for n, names in found.items() if names}

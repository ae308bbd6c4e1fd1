"""What one conversation's turns share (agents/runtime/conversation_cache.py): its key, its turn
numbers, the pages each turn's search found, and the bound on conversations kept."""
from __future__ import annotations

from PIL import Image

from agents.runtime.conversation_cache import (
    ConversationCache,
    conversation_key,
    found_earlier,
    image_identity,
    opening_question,
    remember_found,
    turn_number,
)


def photo(colour="red", size=(8, 8)):
    return Image.new("RGB", size, colour)


def history(*pairs):
    return [m for q, a in pairs for m in ({"role": "user", "content": q}, {"role": "assistant", "content": a})]


def test_the_opening_question_is_the_first_user_message_in_one_case_and_single_spaces():
    talk = [{"role": "system", "content": "be brief"}, *history(("What  Is\tTHIS?", "a boat"), ("and that?", "x"))]
    assert opening_question("where is it?", talk) == "what is this?"
    assert opening_question("  Where IS it? ", []) == "where is it?"
    assert opening_question(None, None) == ""
    assert conversation_key("Who?", [], photo()) == conversation_key("  WHO? ", [], photo())


def test_the_same_pixels_are_one_identity_and_a_changed_pixel_size_or_mode_another():
    same = image_identity(photo())
    assert image_identity(photo()) == same
    changed = photo()
    changed.putpixel((0, 0), (0, 0, 0))
    assert image_identity(changed) != same
    assert image_identity(photo(size=(4, 16))) != same  # the same bytes, laid out otherwise
    assert image_identity(Image.new("RGBA", (8, 8), "red").convert("RGB")) == same
    grey, palette = Image.new("L", (8, 8), 76), Image.new("P", (8, 8), 76)
    assert grey.tobytes() == palette.tobytes() and image_identity(grey) != image_identity(palette)
    assert len({image_identity(photo(c)) for c in ("red", "green", "blue")}) == 3


def test_a_turns_number_counts_the_user_messages_before_it():
    assert turn_number([]) == 0 and turn_number(None) == 0
    assert turn_number(history(("a?", "x"), ("b?", "y"))) == 2
    assert turn_number([{"role": "system", "content": "s"}, {"role": "system", "content": "t"},
                        {"role": "user", "content": "a?"}]) == 1


def test_a_later_turn_reads_what_each_earlier_turn_of_its_conversation_found_and_nothing_else():
    cache, image = ConversationCache(), photo()
    opening = "which mission is this patch from?"
    names = ["STS-93 - Wikipedia"]
    remember_found(cache, opening, [], image, names)
    names.append("changed after")  # what was kept is a copy
    second = history((opening, "I don't know"))
    remember_found(cache, "who commanded it?", second, image, ["Eileen Collins"])
    third = history((opening, "I don't know"), ("who commanded it?", "I don't know"))
    assert found_earlier(cache, "what did it deploy?", third, image) == {
        0: ["STS-93 - Wikipedia"], 1: ["Eileen Collins"]}
    assert found_earlier(cache, "who commanded it?", second, image) == {0: ["STS-93 - Wikipedia"]}
    assert found_earlier(cache, "what did it deploy?", third, photo("blue")) == {}  # another photo
    other = history(("what is on the wall?", "I don't know"))
    assert found_earlier(cache, "what did it deploy?", other, image) == {}  # another conversation
    assert found_earlier(cache, opening, [], image) == {}  # a first turn has no earlier turn
    remember_found(cache, "who commanded it?", history(("a?", "b")), image, [])
    assert found_earlier(cache, "c?", history(("a?", "b"), ("who commanded it?", "x")), image) == {}


def test_the_cache_keeps_64_conversations_by_default_and_none_at_size_zero():
    cache = ConversationCache()
    for n in range(65):
        cache.put(("q", str(n)), "hits", n)
    assert cache.get(("q", "0"), "hits") is None and cache.get(("q", "1"), "hits") == 1
    assert len(cache.entries) == 64
    empty = ConversationCache(size=0)
    empty.put(("q", "a"), "hits", 1)
    assert empty.get(("q", "a"), "hits") is None and not empty.entries

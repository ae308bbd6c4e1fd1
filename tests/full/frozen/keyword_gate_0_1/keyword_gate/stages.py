"""keyword_gate's own two stages. Each is a function over a batch that returns one dict per turn
of the fields its Stage record says it writes."""
import re

from agents.plugin import IDK_ANSWER, Stage, always

WORD = re.compile(r"[a-z0-9]+")
COMMON = frozenset("a an and are at be by can do does for from has have how i in is it its me my of on or "
                   "that the their there this to was were what when where which who whom whose why will "
                   "with you your".split())


def content_words(text: str) -> set[str]:
    return {word for word in WORD.findall(text.lower()) if word not in COMMON}


def best_chunk(batch):
    """The retrieved chunk sharing the most of the question's words, and how many it shares."""
    out = []
    for turn, reads in zip(batch.turns, batch.reads):
        words = content_words(turn.query)
        scored = [(len(words & content_words(chunk)), chunk) for chunk in reads["chunks"] or []]
        overlap, chunk = max(scored, key=lambda pair: pair[0], default=(0, ""))
        out.append({"overlap": overlap, "context": chunk})
    return out


OVERLAP = Stage("kwgate_overlap", batch_fn=best_chunk, reads=("chunks",), writes=("overlap", "context"),
                calls_no_model=always)


def answer(batch):
    """The VLM's answer from the best chunk, asked only where that chunk shares enough words."""
    wanted = [reads["overlap"] >= batch.settings.min_overlap for reads in batch.reads]
    values = [{"question": turn.query, "notes": reads["context"]} for turn, reads in zip(batch.turns, batch.reads)]
    replies = batch.ask("kwgate_answer", values, max_tokens=24, wanted=wanted)
    return [{"rag_answer": reply.strip() or IDK_ANSWER} for reply in replies]


ANSWER = Stage("kwgate_answer", batch_fn=answer, reads=("overlap", "context"), writes=("rag_answer",))

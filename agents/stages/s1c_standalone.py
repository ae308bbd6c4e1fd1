"""Stage 1c: a follow-up turn's question written so that it stands on its own.

In a conversation about one photo a follow-up names its subject only through what came before:
"what did that mission deploy?" after "which shuttle mission did she first command?" answered
"STS-93". Searching with the plain follow-up finds nothing about STS-93. This stage writes, for
each turn that has history, the question retrieval and the evidence checks read instead
(`Turn.standalone`; `search_question`), from the earlier questions, the agent's earlier answers
that are not "I don't know", the current question and what the photo shows (the summary s).

Two ways, chosen by `cfg.standalone_mode` (docs/chain.md "Conversations"):

- "rule": history query expansion in the manner of Lin et al. (2020): the question followed by
  salient terms carried over from earlier turns, newest turn first: the named things of each
  earlier answer (runs of capitalised words and codes such as "STS-93"; a short answer whole),
  or, for an earlier turn answered "I don't know", the names of the best pages its own search
  found (`standalone_found_pages`, off by default; kept per conversation by s3_retrieve), then
  the content words of each earlier question. No model, no time.
- "model": the VLM rewrites the question (prompts/standalone.txt), as CANARD-trained rewriters
  and BlackPearl's query writer do; one batched request per follow-up. "both": the rewrite
  followed by the rule's terms it lacks.

An answer that is "I don't know" never supplies a term: it refers to nothing, and the evaluator
hands back the agent's own answers, so the referent it lacked is still unknown. What that turn's
search found is another matter: the pages it ranked first are about what it asked, whether or
not the answer stage dared to answer from them (with the cpu profile's 135M answerer it seldom
does), so their names can carry the subject on; they steer search only. Off by default: a wrong
first page steered the next search away more often than a right one helped (docs/chain.md). A rewrite that is
empty, longer than `standalone_max_chars`, an abstention, shares no word with the question, or was
cut by the deadline is no rewrite: the turn keeps its plain question (and, in "both", the rule's terms).
A turn without history is not touched: its prompts and trace are those of a single-turn run.
"""
from __future__ import annotations

import dataclasses
import re

from agents.config.cruise_config import CruiseConfig
from agents.engines.base import ChatEngine, ChatRequest, Sampling
from agents.runtime.conversation_cache import SHARED_CONVERSATIONS, ConversationCache, found_earlier
from agents.runtime.system import Stage
from agents.stages.parsing import abstains
from agents.stages.prompts import load_prompt
from agents.stages.types import Standalone, Turn

# Words that name nothing a search could use: function words, question words and the verbs and
# nouns a question is framed with.
COMMON_WORDS = frozenset("""
a an the this that these those it its it's is are was were be been being am do does did done doing
has have had having of in on at to from by for with without about into onto over under than then
and or but nor so as if not no yes there here which who whom whose what what's when where why how
i you he she we they me him her us them my your his our their mine yours hers theirs
can could may might must shall should will would one ones some any all each both more most very
also just only still much many long old tall far often big high again other another same such
picture image photo photograph see seen visible called named known answer question tell know
thing things something anything kind sort type there's let's give get got make made use used
first last next now today ago currently usually about around roughly approximately exactly
""".split())
_WORD = re.compile(r"[A-Za-z0-9][A-Za-z0-9'&.-]*[A-Za-z0-9]|[A-Za-z0-9]")
# Lower-case words allowed inside a name between capitalised ones ("Deep Space Climate Observatory",
# "Tower of Buddhist Incense").
# An answer this short is carried whole: it is the thing the question asked for.
SHORT_ANSWER_WORDS = 6
_NAME_JOINERS = frozenset(("of", "the", "de", "du", "la", "von", "van", "and", "&"))
# A page name's site after its title: "Title - Site", "Title | Site", "Title — Site".
_SITE_SUFFIX = re.compile(r"\s+[-|–—]\s+[^-|–—]+$")
# How a model labels its rewrite; stripped before the rewrite is read.
_LABEL = re.compile(r"^\s*(?:standalone|rewritten|rewrite|new|full)?\s*(?:question|query)?\s*[:=-]\s*", re.I)


def is_idk(answer: str) -> bool:
    """Whether an earlier answer is an abstention, which names nothing."""
    return not str(answer or "").strip() or abstains(answer)


def earlier_turns(history: list[dict]) -> list[tuple[str, str]]:
    """(question, answer) pairs of the history, oldest first; an answer that is "I don't know",
    or missing, is ""."""
    pairs: list[tuple[str, str]] = []
    for message in history or []:
        content = " ".join(str(message.get("content") or "").split())
        if message.get("role") == "user":
            pairs.append((content, ""))
        elif message.get("role") == "assistant" and pairs and not pairs[-1][1]:
            pairs[-1] = (pairs[-1][0], "" if is_idk(content) else content)
    return pairs


def named_things(text: str) -> list[str]:
    """Runs of capitalised words and codes in `text` ("Eileen Collins", "STS-93", "Falcon 9"), in
    order; a common word that opens the run (a sentence's "The", "She") is left out."""
    words = _WORD.findall(text or "")
    spans, run = [], []

    def close():
        while run and (run[-1].lower() in _NAME_JOINERS or run[-1].lower() in COMMON_WORDS):
            run.pop()
        if run:
            spans.append(" ".join(run))
        run.clear()

    for word in words:
        marked = word[0].isupper() or any(ch.isdigit() for ch in word)
        if marked and not (not run and word.lower() in COMMON_WORDS):
            run.append(word)
        elif run and word.lower() in _NAME_JOINERS:
            run.append(word)
        else:
            close()
    close()
    return spans


def content_words(text: str) -> list[str]:
    """The words of `text` that are not common words, in order, each once (lower case)."""
    out: list[str] = []
    for word in _WORD.findall((text or "").lower()):
        if word not in COMMON_WORDS and len(word) > 1 and word not in out:
            out.append(word)
    return out


def answer_terms(answer: str) -> list[str]:
    """What an earlier answer names: a short answer whole ("Up to 2 hours", "Mount Vesuvius, in AD
    79"), a longer one its named things."""
    words = answer.split()
    if 0 < len(words) <= SHORT_ANSWER_WORDS:
        return [answer.strip().rstrip(".!?;:").strip()]
    return named_things(answer)


def page_title(name: str) -> str:
    """A page name without its site ("STS-93 - Wikipedia" -> "STS-93")."""
    return _SITE_SUFFIX.sub("", " ".join(name.split())).strip()


def carried_terms(turn: Turn, max_terms: int, found: dict[int, list[str]] | None = None) -> list[str]:
    """Salient terms of the earlier turns that the question does not already hold: what the
    earlier answers name, newest first (an answer names what the conversation is about), or for
    an earlier turn answered "I don't know" the names of the pages its search found best
    (`found`: {turn number: page names}), then the earlier questions' named things and content
    words, newest first."""
    present = set(content_words(turn.query))
    earlier = list(reversed(list(enumerate(earlier_turns(turn.history)))))
    candidates = [t for n, (_, answer) in earlier
                  for t in (answer_terms(answer) if answer else [page_title(p) for p in (found or {}).get(n, [])])]
    candidates += [t for _, (question, _) in earlier for t in named_things(question) + content_words(question)]
    terms: list[str] = []
    for term in candidates:
        words = set(content_words(term))
        if words and not words <= present:
            terms.append(term)
            present |= words
    return terms[: max(max_terms, 0)]


def with_terms(question: str, terms: list[str]) -> str:
    return " ".join([question, *terms]).strip()


def read_rewrite(text: str, turn: Turn, cfg: CruiseConfig) -> tuple[str, str]:
    """(the rewrite, "") when the reply holds a usable one, else ("", why not)."""
    line = next((part.strip() for part in (text or "").splitlines() if part.strip()), "")
    line = _LABEL.sub("", line).strip().strip('"“”\'`*').strip()
    if not line:
        return "", "empty rewrite"
    if len(line) > cfg.inputs.standalone_max_chars:
        return "", "rewrite too long"
    if abstains(line):  # "I don't know when she retired" repeats the question's words, and asks nothing
        return "", "rewrite is an abstention"
    asked = set(content_words(turn.query))
    if asked and not asked & set(content_words(line)):
        return "", "rewrite shares no word with the question"
    return line, ""


def history_lines(turn: Turn) -> str:
    """The earlier turns for the rewrite prompt; an "I don't know" answer is left out."""
    lines = []
    for question, answer in earlier_turns(turn.history):
        lines.append(f"Q: {question}")
        if answer:
            lines.append(f"A: {answer}")
    return "\n".join(lines)


def rewrite_requests(turns: list[Turn], wanted: list[int], summaries: list[str]) -> list[ChatRequest]:
    prompt = load_prompt("standalone")
    return [ChatRequest(prompt.messages(None, earlier=history_lines(turns[i]), photo=summaries[i] or "(not described)",
                                        query=turns[i].query), turn=i) for i in wanted]


def standalone_batch(turns: list[Turn], summaries: list[str], engine: ChatEngine | None,
                     cfg: CruiseConfig, found: list[dict[int, list[str]]] | None = None) -> list[Standalone]:
    """One Standalone per turn: empty for a turn without history or with the mode "off"; the
    model is asked once for all the follow-ups of the batch ("model", "both"). `found`: per
    turn, what its earlier turns' searches found best ({turn number: page names})."""
    mode = cfg.inputs.standalone_mode
    found = found or [{} for _ in turns]
    out = [Standalone() for _ in turns]
    wanted = [i for i, turn in enumerate(turns) if turn.history and turn.query]
    if mode == "off" or not wanted:
        return out
    rewrites = {i: ("", "", "") for i in wanted}  # (rewrite, why it was rejected, raw reply)
    if mode in ("model", "both") and engine is not None:
        try:
            results = engine.generate(rewrite_requests(turns, wanted, summaries),
                                      Sampling(max_tokens=cfg.inputs.standalone_max_tokens, stop=("\n",), seed=cfg.models.seed),
                                      stage="standalone")
        except Exception as exc:  # noqa: BLE001 - a failed rewrite costs the rewrite, not the answer
            results = []
            rewrites = {i: ("", f"rewrite failed: {type(exc).__name__}: {exc}", "") for i in wanted}
        for i, result in zip(wanted, results):
            rewrite, why = ("", "rewrite cut by the deadline") if result.cut_by_deadline else read_rewrite(
                result.text, turns[i], cfg)
            rewrites[i] = (rewrite, why, result.text)
    for i in wanted:
        rewrite, why, raw = rewrites[i]
        terms = carried_terms(turns[i], cfg.inputs.standalone_max_terms, found[i]) if mode in ("rule", "both") else []
        pages = {page_title(p) for names in found[i].values() for p in names}
        if mode == "rule":
            question = with_terms(turns[i].query, terms)
        elif mode == "model":
            question = rewrite
        else:
            base = rewrite or turns[i].query
            lacking = [t for t in terms if not set(content_words(t)) <= set(content_words(base))]
            question = with_terms(base, lacking)
        question = question if question != turns[i].query else ""
        out[i] = Standalone(question=question, carried=terms, found=[t for t in terms if t in pages], raw=raw,
                            fallback=why)
    return out


def with_standalone(turns: list[Turn], standalones: list[Standalone]) -> list[Turn]:
    """The turns carrying their standalone questions (new records; the inputs are unchanged)."""
    return [dataclasses.replace(t, standalone=s.question) if s.question else t for t, s in zip(turns, standalones)]


def follow_up_fields(turn: Turn, standalone: Standalone) -> dict:
    """The trace fields of a turn with history (a turn without history gets none: its trace is a
    single-turn run's)."""
    if not turn.history:
        return {}
    return {"standalone_question": standalone.question or turn.query, "standalone_carried": standalone.carried,
            "standalone_found": standalone.found, "standalone_raw": standalone.raw,
            "standalone_fallback": standalone.fallback}


def found_for(turns: list[Turn], cache: ConversationCache | None = None) -> list[dict[int, list[str]]]:
    """Per turn, what its conversation's earlier turns' searches found best (this run's)."""
    cache = SHARED_CONVERSATIONS if cache is None else cache
    return [found_earlier(cache, t.query, t.history, t.image) if t.history and t.image is not None else {}
            for t in turns]


def standalone(batch) -> list[dict]:
    """Over the follow-ups of a batch (`standalone_on` leaves the rest out): each carries its
    standalone question into every later stage ("turn"), with its trace fields. `summary`: what
    each photo shows, for the model's rewrite, where the system has made a summary (CRUISE's
    q' summary; "" before one is made)."""
    photos = [getattr(reads["summary"], "text", "") for reads in batch.reads]
    standalones = standalone_batch(batch.turns, photos, batch.engines.vlm, batch.cfg, found_for(batch.turns))
    turns = with_standalone(batch.turns, standalones)
    return [{"turn": turn, **follow_up_fields(turn, s)} for turn, s in zip(turns, standalones)]


def standalone_on(state) -> bool:
    """Whether the batch in flight writes standalone questions: a mode other than "off", and a
    follow-up among its turns (a batch without one, every single-turn batch, runs no stage, so its
    timings, deadline and traces are as before)."""
    return state.cfg.inputs.standalone_mode != "off" and any(t.history for t in state.turns)


FIELDS = ("standalone_question", "standalone_carried", "standalone_found", "standalone_raw", "standalone_fallback")
STAGE = Stage("standalone", batch_fn=standalone, reads=("summary",), writes=("turn", *FIELDS), switch=standalone_on,
              prompts=("standalone",))

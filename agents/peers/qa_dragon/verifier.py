"""The post-answer module, part 2: the answer verifier (seed 001, 3.7.2), on Search Verify and
RAG turns whose post-answer is not "I don't know".

The MLLM-based verifier asks whether the answer is supported by the photo and the evidence,
uncontradicted and complete (prompts/qa_dragon_verify.txt: "Verdict: correct | incorrect", the
verdict first so that a cut reply is still read). Read as the stack reads a support check
(agents/stages/verdicts.py, `cov_mode`): the written verdict (1 or 0), the odds of a one-word
yes/no (prompts/qa_dragon_verify_yes_no.txt), or, where the stack's model cannot verify, the
grounding share of the answer's words in the evidence and the picture. It passes at `tau_low`.

The white-box verifier is the token-probability gate `min_token_prob` on the Answer line's least
likely token (decide.py). The paper passes the minimum and the mean through a linear threshold
whose weights it does not give; one threshold on the minimum is what our calibration tool can fit.
"""
from __future__ import annotations

import re

from agents.base_agent import IDK_ANSWER
from agents.config.cruise_config import CruiseConfig
from agents.engines.base import ChatEngine
from agents.peers.qa_dragon.types import PostAnswer, PostCheck, Reranked, column
from agents.runtime.system import Prior, Stage
from agents.stages.parsing import labelled_value, strip_markdown
from agents.stages.prompts import quote_notes
from agents.stages.types import Turn
from agents.stages.verdicts import grounding_mode, support_checks

_WRONG = re.compile(r"\b(?:incorrect|not\s+correct|wrong|unsupported|not\s+supported|contradict\w*)\b", re.IGNORECASE)
_RIGHT = re.compile(r"\b(?:correct|supported)\b", re.IGNORECASE)


def read_verifier(text: str) -> tuple[float, bool]:
    """(1.0 correct / 0.0 incorrect, parsed) from "Verdict: correct"; a reply with neither word is
    unreadable (0.0, False)."""
    plain = strip_markdown(text or "")
    for value in (labelled_value(plain, r"verdict|response|judg(?:e)?ment|assessment"), plain):
        if value:
            if _WRONG.search(value):
                return 0.0, True
            if _RIGHT.search(value):
                return 1.0, True
    return 0.0, False


def needs_check(post: PostAnswer) -> bool:
    return post.parsed is not None and post.answer != IDK_ANSWER


def verify_batch(turns: list[Turn], posts: list[PostAnswer], reranked: list[Reranked], engine: ChatEngine,
                 cfg: CruiseConfig) -> list[PostCheck]:
    out = [PostCheck() for _ in turns]
    wanted = [i for i, p in enumerate(posts) if needs_check(p)]
    checks = support_checks(
        engine, cfg, turns, wanted, stage="verify", prompt="qa_dragon_verify",
        max_tokens=cfg.own.qa_dragon_verify_max_tokens, answer_of=lambda i: posts[i].answer,
        context_of=lambda i: reranked[i].evidence.context, read_text=read_verifier,
        values=lambda i: dict(query=turns[i].query, context=quote_notes(reranked[i].evidence.context),
                              answer=posts[i].answer, reason=posts[i].reason or "(none given)"))
    for i, (confidence, raw, parsed) in checks.items():
        out[i] = PostCheck(confidence, raw, parsed)
    return out


# Priced as CRUISE's CoV (one image request judging the answer against the notes).
def verify(batch) -> list[dict]:
    checks = verify_batch(batch.turns, column(batch.reads, "post"), column(batch.reads, "reranked"), batch.engines.vlm,
                          batch.cfg)
    return [{"post_check": c} for c in checks]


STAGE = Stage("verify", batch_fn=verify, reads=("post", "reranked"), writes=("post_check",), parsed="verify",
              prior=Prior("verify", max_tokens=lambda cfg: cfg.own.qa_dragon_verify_max_tokens,
                          requests_per_turn=lambda cfg: 0 if grounding_mode(cfg) else 1),  # grounding: no model
              prompts=("qa_dragon_verify", "qa_dragon_verify_yes_no"))

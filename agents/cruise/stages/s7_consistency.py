"""Stage 7: self-consistency. The VLM judges yes/no whether the RAG and non-RAG answers agree,
given the context and the image.

Turns whose RAG answer is already "I don't know" are not asked: the finalizer returns "I don't
know" for them whatever the verdict. Two answers that normalise to the same string (case, spaces,
quotes and final punctuation aside) are consistent without a request
(`consistency_skip_identical`); `Verification.consistency_rule` says which rule decided.
"""
from __future__ import annotations

from agents.base_agent import IDK_ANSWER
from agents.config.cruise_config import CruiseConfig
from agents.engines.base import ChatEngine, Sampling
from agents.runtime.system import Prior, Stage
from agents.stages.prompts import ask_vlm, quote_notes
from agents.stages.types import Answers, Evidence, Turn, Verification, column, question_beside_standalone
from agents.stages.verdicts import read_verdict


def parse_verdict(text: str) -> bool:
    return read_verdict(text)[0]


def same_answer(a: str, b: str) -> bool:
    """The same normalised string, ignoring case, spacing, quotes and final punctuation."""
    def canonical(s: str) -> str:
        return " ".join(s.casefold().split()).strip("\"'“”‘’").rstrip(".!?。 ")

    return canonical(a) == canonical(b)


def needs_consistency_check(answers: Answers, cfg: CruiseConfig) -> bool:
    return cfg.own.use_self_consistency and answers.direct is not None and answers.rag != IDK_ANSWER


def consistency_batch(
    turns: list[Turn], evidence: list[Evidence], answers: list[Answers], engine: ChatEngine, cfg: CruiseConfig
) -> list[Verification]:
    """The consistency half of each turn's Verification (consistent None where no check ran)."""
    out = [Verification() for _ in turns]
    wanted = []
    for i, a in enumerate(answers):
        if not needs_consistency_check(a, cfg):
            continue
        if cfg.own.consistency_skip_identical and same_answer(a.rag, a.direct):
            out[i] = Verification(consistent=True, consistency_rule="identical_answers")
        else:
            wanted.append(i)
    replies = ask_vlm(
        engine, "consistency", turns, wanted,
        lambda i: dict(query=question_beside_standalone(turns[i]), context=quote_notes(evidence[i].context),
                       direct_answer=answers[i].direct, rag_answer=answers[i].rag),
        # "yes_no": the verdict is the likelier of the two words at the first token (one forward
        # pass, always read); "text": the model writes it and `read_verdict` looks for it.
        Sampling(max_tokens=cfg.own.consistency_max_tokens, seed=cfg.models.seed,
                 choices=("yes", "no") if cfg.answer.consistency_mode == "yes_no" else ()),
    )
    for i, text in zip(wanted, replies):
        consistent, parsed = read_verdict(text)
        out[i] = Verification(consistent=consistent, consistency_raw=text, consistency_rule="vlm",
                              consistency_parsed=parsed)
    return out


def consistency(batch) -> list[dict]:
    checks = consistency_batch(batch.turns, column(batch.reads, "evidence"), column(batch.reads, "answers"),
                               batch.engines.vlm, batch.cfg)
    return [{"check": c} for c in checks]


STAGE = Stage("consistency", batch_fn=consistency, reads=("evidence", "answers"), writes=("check",),
              switch="use_self_consistency", parsed="consistency",
              prior=Prior("consistency", max_tokens=lambda cfg: cfg.own.consistency_max_tokens),
              prompts=("consistency",))

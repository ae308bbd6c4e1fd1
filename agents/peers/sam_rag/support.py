"""SAM-RAG's support verification, isSup (seed 002, Table 1 third row): is the final answer
supported by the relevant documents C (and the photo, aligned to text like the documents)?

Read as the stack reads a support check (agents/stages/verdicts.py, `cov_mode`): the written
verdict (prompts/sam_rag_is_sup.txt: "Supported: fully | partially | no", 1, 0.5 or 0), the odds of
a one-word yes/no (prompts/sam_rag_is_sup_yes_no.txt), or the grounding share of the answer's
words in C and the picture where the stack's model cannot verify. It passes at `tau_low`. The
paper answers "no" by emptying C and "partially" by keeping it, and retrieves again in both
cases; the retrieval rounds here ran before the answer, within the turn's deadline, so an answer
that does not pass is not given ("I don't know").
"""
from __future__ import annotations

import re

from agents.base_agent import IDK_ANSWER
from agents.config.cruise_config import CruiseConfig
from agents.engines.base import ChatEngine
from agents.peers.sam_rag.types import SupportCheck, column
from agents.runtime.system import Stage
from agents.stages.parsing import labelled_value, strip_markdown
from agents.stages.prompts import quote_notes
from agents.stages.types import Evidence, Turn
from agents.stages.verdicts import support_checks

SUPPORT_LEVELS = (("partially", re.compile(r"\bpartial(?:ly)?\b", re.I), 0.5),
                  ("no", re.compile(r"\b(?:no|not|unsupported|none)\b", re.I), 0.0),
                  ("fully", re.compile(r"\b(?:fully|full|yes|supported)\b", re.I), 1.0))


def read_support(text: str) -> tuple[float, bool]:
    """(1.0 fully / 0.5 partially / 0.0 no, parsed) from "Supported: fully"; unreadable (0.0, False)."""
    plain = strip_markdown(text or "")
    for value in (labelled_value(plain, r"support(?:ed)?|verdict"), plain):
        if value:
            for _, pattern, level in SUPPORT_LEVELS:
                if pattern.search(value):
                    return level, True
    return 0.0, False


def is_sup_batch(turns: list[Turn], evidence: list[Evidence], answers: list[str], engine: ChatEngine,
                 cfg: CruiseConfig) -> list[SupportCheck]:
    out = [SupportCheck() for _ in turns]
    wanted = [i for i, a in enumerate(answers) if a and a != IDK_ANSWER]
    checks = support_checks(
        engine, cfg, turns, wanted, stage="is_sup", prompt="sam_rag_is_sup", max_tokens=cfg.own.sam_rag_check_max_tokens,
        answer_of=lambda i: answers[i], context_of=lambda i: evidence[i].context, read_text=read_support,
        values=lambda i: dict(query=turns[i].query, context=quote_notes(evidence[i].context), answer=answers[i]))
    for i, (confidence, raw, parsed) in checks.items():
        out[i] = SupportCheck(confidence, raw, parsed)
    return out


def is_sup(batch) -> list[dict]:
    """isSup of each turn's answer that passed isUse (`checked`), against its `evidence`."""
    found = is_sup_batch(batch.turns, column(batch.reads, "evidence"), column(batch.reads, "checked"), batch.engines.vlm,
                         batch.cfg)
    return [{"support": c} for c in found]


IS_SUP = Stage("is_sup", batch_fn=is_sup, reads=("evidence", "checked"), writes=("support",), parsed="is_sup",
               prompts=("sam_rag_is_sup", "sam_rag_is_sup_yes_no"))

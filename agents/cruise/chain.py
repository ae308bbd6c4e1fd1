"""The CRUISE chain over one batch, top to bottom:

    turn -> [perceive] -> route -> summarize -> retrieve + chunk -> rerank -> answer twice -> consistency
         -> verify (CoV) -> finalize (Algorithm 1)

The peers' optional stages (docs/chain.md "Stages from the peer systems", all off in the paper's
presets) slot in as `sNx` files that run right after stage N: decompose (s2a) and crop (s2b)
before retrieval, the entity check (s3a) before reranking, the relevance filter (s5a) after it;
tool and domain routing (s1a, s1b) are read from the router's reply. Perception (s0a) runs first
when the VLM cannot see: the turns then carry their picture as text into every prompt. A stage that is off makes
no engine call and passes its input on unchanged.

The order is CRUISE's stage list (stages/__init__.py `STAGES`): `run_stages` calls each stage
over the batch in flight (`ChainState`) through the one door every system uses
(agents/run_stages.py `BatchState.call`: the deadline, the search for a faulting turn, refusals,
per-stage timing); the chain shapes two calls itself, the answer (not asked of a turn Algorithm
1's retrieval rules have decided) and the consistency check (asked only where the answers may
disagree). Each model stage is one batched engine call for all the turns that need it. Every turn
is then decided by Algorithm 1 and traced (`BatchState.finish`).
"""
from __future__ import annotations

from agents.cruise.stages import STAGES
from agents.cruise.stages.s7_consistency import needs_consistency_check
from agents.cruise.stages.s9_finalize import decided_before_answer, decision_inputs
from agents.cruise.trace import turn_trace
from agents.run_stages import BatchState, switched_on
from agents.stages.s1b_domain_route import domain_notes
from agents.stages.types import DEFAULTS, column

# CRUISE's records of a turn, by field (agents/stages/types.py DEFAULTS): its trace is made from
# them (trace.py); any other field a stage of its list wrote (the standalone question's, a stage
# added to the list) is traced as it is.
RECORDS = frozenset(DEFAULTS)


# How the chain runs each of its stages over the batch in flight: the optional ones only when
# their switch is on (a stage's own check, for a stage whose record has a switch: `switched_on`);
# a turn a stage did not reach (deadline, fault) keeps what it had.
def domain_route(s: BatchState) -> None:
    for fields, route in zip(s.fields, column(s.fields, "route")):
        fields["notes"] = domain_notes(route, s.cfg)


def answer(s: BatchState, stage) -> None:
    decided = [s.cfg.own.skip_decided_turns and decided_before_answer(r, e, s.cfg)
               for r, e in zip(column(s.fields, "route"), column(s.fields, "evidence"))]
    if not all(decided):  # all decided: nothing to ask, no engine call, and the stage is not timed as one
        s.call(stage, only=[not d for d in decided])


def consistency(s: BatchState, stage) -> None:
    # asked only of the turns it may check (an "I don't know" answer is never checked)
    s.call(stage, only=[needs_consistency_check(a, s.cfg) for a in column(s.fields, "answers")])


# The stages whose call the chain shapes itself.
STEPS = {"domain_route": lambda s, stage: domain_route(s), "answer": answer, "consistency": consistency}
# CRUISE's stages called whatever their switch says: each reads its own switch (a router switched
# off routes every turn to retrieval, with no request), and is timed. Every other stage of the
# list (the peers' optional stages, a stage added to the list) is called when it is switched on.
ALWAYS = frozenset({"route", "summarize", "retrieve", "rerank", "verify"})
# Stages of the list the chain does not call: the tool router is read from the router's reply,
# Algorithm 1 decides each turn when the batch finishes.
NOT_CALLED = ("tool_route", "finalize")


def run_stages(state: BatchState, stages) -> BatchState:
    """Each stage in order, but a shared step that opened the batch already."""
    for stage in stages:
        if stage.name in state.opened or stage.name in NOT_CALLED:
            continue
        if stage.name in STEPS:
            STEPS[stage.name](state, stage)
        elif stage.name in ALWAYS or switched_on(stage, state):
            state.call(stage)
    return state


def gather_evidence(state: BatchState, stages=STAGES) -> BatchState:
    """The stages up to the context each turn's answer will see (route, summarize, retrieve and
    rerank, and the peer stages that are on), over a batch opened for CRUISE. benchmarks.peer_stages
    measures this part alone."""
    names = [s.name for s in stages]
    return run_stages(state, stages[: names.index("relevance") + 1])


def run_chain(batch: BatchState) -> tuple[list[str], list[dict]]:
    """Answers and traces for one opened batch of CRUISE (its record: agents/cruise/system.py), its
    stages in the record's order, then Algorithm 1 on every turn."""
    s = run_stages(batch, batch.system.stages)
    return s.finish(signals=lambda i: decision_inputs(*record_of(s, i, "route", "evidence", "answers", "check")),
                    trace=lambda i, decision: traced(s, i, decision))


def record_of(s: BatchState, i: int, *names: str) -> list:
    return [column([s.fields[i]], name)[0] for name in names]


def traced(s: BatchState, i: int, decision) -> tuple[dict, dict]:
    """Turn i's trace: CRUISE's own fields (trace.py), then the fields other stages wrote."""
    route, summary, retrieval, evidence, answers, check, sub_queries, crops, notes = record_of(
        s, i, "route", "summary", "retrieval", "evidence", "answers", "check", "sub_queries", "crops", "notes")
    own, parsed = turn_trace(turn=s.turns[i], route=route, summary=summary, retrieval=retrieval, evidence=evidence,
                             answers=answers, check=check, decision=decision, sub_queries=sub_queries, crops=crops,
                             domain_notes=bool(notes))
    others = {k: v for k, v in s.fields[i].items() if k not in RECORDS and k != "perception"}
    return {**own, **others, "errors": retrieval.errors}, parsed

"""The agentic system as a registered System (`--set system=agentic`): the VLM searches for itself.

Per batch, after the opening every system has (perception, for a VLM that cannot see), the run
repeats two steps until every turn has ended (agents/agentic/loop.py):

    agentic_ask     one engine call: each live turn's conversation, its tools, its photo once
    agentic_search  each call the replies made, over the profile's search pipeline

A turn ends when its model answers without a call, when its budget is spent (`max_steps`
replies, `max_calls` calls: agents/agentic/settings.py), when the batch's deadline stops the
loop, or when a step faults for it (a provider that is down: every turn "error", "I don't know").
Its rule keeps the answer of a turn that answered, and "I don't know" for every other ending.
"""
from __future__ import annotations

from agents.agentic.loop import (
    PROMPTS,
    ask_replies,
    make_last,
    run_calls,
    start_loop,
    take_reply,
    take_results,
)
from agents.agentic.protocol import protocol_for
from agents.agentic.settings import AgenticSettings
from agents.agentic.trace import BRANCHES, funnel_flags, report_sections, summarize, turn_trace
from agents.base_agent import IDK_ANSWER
from agents.run_stages import BatchState
from agents.runtime.batch import fault_record
from agents.runtime.system import Decision, Prior, Stage, System, View, register


def ask(batch) -> list[dict]:
    """Each turn's next reply: its conversation so far (its `loop`), its tools, its photo once."""
    loops = [reads["loop"] for reads in batch.reads]
    replies = ask_replies(batch.turns, loops, batch.engines.vlm, batch.settings)
    return [{"reply": reply} for reply in replies]


def search(batch) -> list[dict]:
    """The results of each turn's pending calls, over the profile's search pipeline."""
    loops = [reads["loop"] for reads in batch.reads]
    return [{"results": results} for results in run_calls(batch.turns, loops, batch.pipeline, batch.cfg)]


ASK = Stage("agentic_ask", batch_fn=ask, reads=("loop",), writes=("reply",), parsed="agentic_answer",
            prior=Prior("answer", max_tokens=lambda cfg: cfg.own.reply_max_tokens), prompts=PROMPTS)
SEARCH = Stage("agentic_search", batch_fn=search, reads=("loop",), writes=("results",), prior=Prior("retrieve"))
# What the turn page shows without reading the key by name: the chunk table (kept_chunks), and each
# call's own row, which holds its hits, query and box (retrieved, searches_run, web_query,
# regions_searched are the same, in the shapes the coverage and diagnostics read).
SHOWN = frozenset({"kept_chunks", "rag_answer", "retrieved", "searches_run", "web_query", "regions_searched"})


def decide(signals: dict, cfg):
    """The model's answer where it answered; "I don't know" under the branch that ended the turn
    otherwise (budget, deadline)."""
    ended = signals.get("ended")
    if ended == "answered":
        answer = signals.get("rag_answer") or IDK_ANSWER
        return Decision(answer, "abstained" if answer == IDK_ANSWER else "answered")
    return Decision(IDK_ANSWER, str(ended or "error"))


def run_agentic(batch: BatchState):
    """(answers, traces) for one opened batch (see the module notes)."""
    settings, run = batch.settings, batch.run
    try:
        protocol = protocol_for(settings.tool_protocol, batch.engines.vlm)
    except ValueError as exc:
        for i in run.alive():
            run.fail(i, f"agentic_ask: {exc}", fault_record("agentic_ask", exc, None))
        protocol = "text"
    for fields, turn in zip(batch.fields, batch.turns):
        fields["loop"] = start_loop(turn, batch.pipeline, batch.cfg, protocol)
    loops = [fields["loop"] for fields in batch.fields]
    for step in range(settings.max_steps):
        live = [loop.ended is None and i not in run.failed for i, loop in enumerate(loops)]
        if not any(live) or run.cut_before or run.cut_during:
            break
        for loop, alive in zip(loops, live):
            if alive and step == settings.max_steps - 1:
                make_last(loop)
        for i, result in enumerate(batch.call(ASK, only=live)):
            if result is not None:
                take_reply(loops[i], result["reply"], step)
        # a reply that made calls leaves them pending (the batch itself leaves out a turn the run failed)
        searching = [bool(loop.pending) for loop in loops]
        if any(searching):
            for i, result in enumerate(batch.call(SEARCH, only=searching)):
                if result is not None:
                    take_results(loops[i], result["results"], step, settings.max_calls)
    # The last reply ended every turn it reached (an answer, or a call that ends it under "budget"):
    # a turn still open was failed by a step, or stopped by the deadline.
    for i, loop in enumerate(loops):
        if loop.ended is None:
            loop.ended = "error" if i in run.failed else "deadline"
    return batch.finish(signals=lambda i: {"ended": loops[i].ended, "rag_answer": loops[i].answer},
                        trace=lambda i, decision: turn_trace(batch.turns[i], loops[i], decision))


AGENTIC = register(System(
    name="agentic",
    stages=(ASK, SEARCH),
    run=run_agentic,
    decide=decide,
    # the rule names what ended a turn, an answer of "I don't know" included: no abstain_on
    view=View(funnel=funnel_flags, summarize=summarize, report_sections=report_sections, branches=BRANCHES,
              turn_template="report_turn.html.j2", shown_keys=SHOWN),
    settings=AgenticSettings,
))
__all__ = ["AGENTIC"]

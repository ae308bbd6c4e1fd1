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
    TurnLoop,
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
from agents.runtime.batch import BatchState, decide_turn, open_batch
from agents.runtime.system import Decision, Stage, System, View, always, register

ASK = Stage("agentic_ask", cost_prior="answer", max_tokens=lambda cfg: cfg.own.reply_max_tokens,
            parsed="agentic_answer", reads=("perception",), writes=("agentic_replies", "rag_answer"))
SEARCH = Stage("agentic_search", cost_prior="retrieve", calls_no_model=always,
               writes=("tool_calls", "chunks", "kept_chunks", "retrieved", "searches_run", "web_query",
                       "regions_searched"))
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


def guarded(state: BatchState, stage: Stage, fn, loops: list[TurnLoop], wanted: list[bool], fixed: tuple) -> list:
    """`fn(turns, loops, wanted, *fixed)` for the wanted turns, under the batch's guards (deadline,
    fault bisection, timing): one result per turn, None where the step did not reach it.

    The one call in the runtime's current form (BatchRun.stage); under the batch API the runtime
    is moving to, it is `batch.call(stage, only=wanted)`."""
    def step(positions, *fixed_args):
        return fn([state.turns[i] for i in positions], [loops[i] for i in positions],
                  [wanted[i] for i in positions], *fixed_args)

    return state.run.stage(stage.name, step, [list(range(len(loops)))], fixed, lambda: None, asked=wanted)


def run_agentic(system, turns, engines, pipeline, cfg, costs, started=None):
    """(answers, traces) for one batch (see the module notes)."""
    state = open_batch(system, turns, engines, pipeline, cfg, costs, started)
    settings = cfg.own
    try:
        protocol = protocol_for(settings.tool_protocol, engines.vlm)
    except ValueError as exc:
        for i in range(len(turns)):
            state.run.fail(i, f"agentic_ask: {exc}")
        protocol = "text"
    loops = [start_loop(turn, pipeline, cfg, protocol) for turn in state.turns]
    for step in range(settings.max_steps):
        live = [loop.ended is None and i not in state.run.failed for i, loop in enumerate(loops)]
        if not any(live) or state.run.cut_before or state.run.cut_during:
            break
        for loop, alive in zip(loops, live):
            if alive and step == settings.max_steps - 1:
                make_last(loop)
        for i, reply in enumerate(guarded(state, ASK, ask_replies, loops, live, (engines.vlm, settings))):
            if reply is not None:
                take_reply(loops[i], reply, step)
        searching = [loop.ended is None and bool(loop.pending) and i not in state.run.failed
                     for i, loop in enumerate(loops)]
        if any(searching):
            for i, results in enumerate(guarded(state, SEARCH, run_calls, loops, searching, (pipeline, cfg))):
                if results is not None:
                    take_results(loops[i], results, step, settings.max_calls)
    answers, traces = [], []
    for i, loop in enumerate(loops):
        if loop.ended is None:
            loop.ended = ("error" if i in state.run.failed else
                          "deadline" if state.run.cut_before or state.run.cut_during else "budget")
        decision = decide_turn(system, {"ended": loop.ended, "rag_answer": loop.answer}, cfg, state.run, i)
        answers.append(decision.answer)
        own, parsed = turn_trace(state.turns[i], loop, decision)
        traces.append(state.trace(i, own, parsed))
    return answers, traces


AGENTIC = register(System(
    name="agentic",
    stages=(ASK, SEARCH),
    run=run_agentic,
    decide=decide,
    # the rule names what ended a turn; an answer of "I don't know" is "abstained" there too
    abstains_first=False,
    view=View(funnel=funnel_flags, summarize=summarize, report_sections=report_sections, branches=BRANCHES,
              turn_template="report_turn.html.j2", shown_keys=SHOWN),
    settings=AgenticSettings,
))
# Every prompt the system may ask for (pre-flight's check, once Stage records name their prompts).
__all__ = ["AGENTIC", "PROMPTS"]

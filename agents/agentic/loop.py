"""One turn's search loop, as two steps the run repeats over the batch:

    ask     every live turn's conversation to the VLM in one engine call; a reply with calls
            leaves them pending, a reply without one is the answer
    search  every pending call run over the search pipeline (agents/agentic/tools.py), its result
            appended to the conversation (agents/agentic/protocol.py)

until each turn has answered or spent its budget: `max_steps` replies (the last one asked to
answer without a call), `max_calls` calls (the reply after the last one asked the same). The steps
are pure over the turns' loops (they return what each turn gets; `take_reply` and `take_results`
apply it), so a step the batch guard retries on half the turns (a fault) repeats nothing.

A turn's loop ends under one of the branches its trace records: "answered" (a reply without a
call), "budget" (a call in the reply that was asked to answer), "deadline" (the batch's deadline
stopped the loop before an answer), "refused" (the provider declined the request) and "error"
(a step that faulted for this turn).
"""
from __future__ import annotations

from dataclasses import dataclass, field

from agents.agentic.protocol import TEXT_STOP, read_text_calls, reply_message, result_messages, text_guide
from agents.agentic.tools import CallResult, offered_tools, run_call
from agents.base_agent import IDK_ANSWER
from agents.engines.base import ChatRequest, ChatResult, Sampling
from agents.engines.tool_calls import ToolCall
from agents.stages.prompts import load_prompt, load_prompt_lines, vlm_image
from agents.stages.s6_answer import read_answer
from agents.stages.types import Turn

ASK_PROMPT = "agentic_ask"
TEXT_CALLS_PROMPT = "agentic_text_calls"
LAST_PROMPT = "agentic_last"
PROMPTS = (ASK_PROMPT, TEXT_CALLS_PROMPT, LAST_PROMPT)


@dataclass
class TurnLoop:
    """One turn's loop so far: the conversation the next request sends, what the model wrote, the
    calls it made (their trace records), what they showed it, and how the loop ended."""

    protocol: str  # "native" or "text"
    tools: list[dict]
    messages: list[dict]
    replies: list[str] = field(default_factory=list)
    calls: list[dict] = field(default_factory=list)
    pending: list[ToolCall] = field(default_factory=list)
    results: list[CallResult] = field(default_factory=list)
    last: bool = False  # the next reply is asked to answer without a call
    ended: str | None = None
    answer: str = IDK_ANSWER
    answer_parsed: bool | None = None


def start_loop(turn: Turn, pipeline, cfg, protocol: str) -> TurnLoop:
    """A turn's conversation before the first reply: the system prompt (with the tools written
    into it for the text protocol), the conversation so far, the question and the photo's size
    (what a box is measured in)."""
    tools = offered_tools(turn, pipeline, cfg)
    guide = text_guide(load_prompt_lines(TEXT_CALLS_PROMPT), tools) if protocol == "text" and tools else ""
    size = f"The photo is {turn.image.size[0]} x {turn.image.size[1]} pixels." if turn.image is not None else ""
    messages = load_prompt(ASK_PROMPT).messages(turn.history, turn.picture, question=turn.query, tool_guide=guide,
                                                photo_size=size)
    return TurnLoop(protocol=protocol, tools=tools, messages=messages)


def make_last(loop: TurnLoop) -> None:
    """Ask the next reply to answer without a call (its budget is spent): a note after the last
    message, in it where that is a user message (two user messages in a row read as one)."""
    if loop.last:
        return
    loop.last = True
    note = load_prompt_lines(LAST_PROMPT)
    last = loop.messages[-1]
    if last["role"] == "user" and isinstance(last["content"], str):
        loop.messages[-1] = dict(last, content=f"{last['content']}\n\n{note}")
    else:
        loop.messages.append({"role": "user", "content": note})


# --------------------------------------------------------------------------- ask
def ask_replies(turns: list[Turn], loops: list[TurnLoop], engine, settings) -> list[ChatResult]:
    """The VLM's reply to each turn's conversation, one engine call (the turns are those the batch
    asks now). Each request carries the photo once and, natively, the turn's tools ("none" once
    its budget is spent), and names its turn by its position."""
    text = any(loop.protocol == "text" for loop in loops)
    requests = [ChatRequest(list(loop.messages), image=vlm_image(turn, engine), turn=k,
                            tools=loop.tools if loop.protocol == "native" and loop.tools else None,
                            tool_choice="none" if loop.last else "auto")
                for k, (turn, loop) in enumerate(zip(turns, loops))]
    sampling = Sampling(max_tokens=settings.reply_max_tokens, stop=TEXT_STOP if text else ())
    return engine.generate(requests, sampling, stage="agentic_ask")


def take_reply(loop: TurnLoop, result: ChatResult, step: int) -> None:
    """Apply one reply to its turn's loop (see the module notes)."""
    if result.refusal:
        loop.ended = "refused"
        return
    if result.cut_by_deadline:
        loop.ended = "deadline"
        return
    if loop.protocol == "native":
        text, calls = result.text, list(result.tool_calls)
    else:
        text, calls = read_text_calls(result.text, step)
    loop.messages.append(reply_message(loop.protocol, result.text, calls))
    loop.replies.append(result.text)
    if not calls:
        loop.answer, loop.answer_parsed = read_answer(text)
        loop.ended = "answered"
    elif loop.last:
        # it called when asked to answer: the calls are listed, not run
        loop.calls += [{"id": call.id, "tool": call.name, "arguments": call.arguments if call.arguments is not None
                        else call.raw_arguments, "hits": [], "ms": 0.0, "step": step,
                        "error": "not run: the turn's budget was spent (the reply was asked to answer)"}
                       for call in calls]
        loop.ended = "budget"
    else:
        loop.pending = calls


# --------------------------------------------------------------------------- search
def run_calls(turns: list[Turn], loops: list[TurnLoop], pipeline, cfg) -> list[list[CallResult]]:
    """Each turn's pending calls run in order (the turns are those the batch searches for now): a
    call past the turn's `max_calls` is not run, and its result tells the model so."""
    settings = cfg.own
    out = []
    for turn, loop in zip(turns, loops):
        results = []
        left = settings.max_calls - len(loop.calls)
        for number, call in enumerate(loop.pending):
            if number >= left:
                record = {"id": call.id, "tool": call.name, "arguments": call.arguments if call.arguments is not None
                          else call.raw_arguments, "hits": [], "ms": 0.0,
                          "error": f"not run: the turn's {settings.max_calls} calls are spent"}
                results.append(CallResult(record, f"error: {record['error']}; answer with what you have found"))
                continue
            results.append(run_call(call, turn, pipeline, cfg, loop.tools, settings.hits_per_call,
                                    settings.result_chars))
        out.append(results)
    return out


def take_results(loop: TurnLoop, results: list[CallResult], step: int, max_calls: int) -> None:
    """Apply one reply's call results to its turn's loop: recorded, returned to the model, and the
    next reply asked to answer once the calls are spent."""
    for call, result in zip(loop.pending, results):
        loop.calls.append({**result.record, "step": step})
        loop.results.append(result)
    loop.messages.extend(result_messages(loop.protocol, [(call, result.text, result.failed)
                                                         for call, result in zip(loop.pending, results)]))
    loop.pending = []  # pragma: no mutate - None reads the same: nothing pending until the next reply's calls
    if len(loop.calls) >= max_calls:
        make_last(loop)

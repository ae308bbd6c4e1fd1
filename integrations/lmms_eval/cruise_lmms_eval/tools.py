"""crag_mm_agentic's tool loop: the search pipeline as two tools the model calls, run one round
of lmms-eval's generate_until_agentic at a time.

The tools, in OpenAI's function-calling schema: image_search (the photo, or a box of it) and
web_search (a query). The model calls one as `<tool_call>{"name": ..., "arguments": {...}}
</tool_call>`, several in one reply as several such blocks (run in order); each call's passages
go back into its prompt as `<tool_result>...</tool_result>` after the call, and a reply without a
call is the answer. A call that cannot search (an unknown tool, an empty query, a box outside the
photo) is an error the model reads, not a search. A turn makes at most `max_tool_calls` calls:
the prompt then says to answer, and a further call ends the turn unanswered (the call budget);
lmms-eval's `max_agentic_steps` bounds its rounds (the step budget).

The turn's end is JSON {"answer", "calls", "ended"}: lmms-eval keeps a last reply as the
response, and replaces one that is not JSON by its own fallback record once a task keeps a round
state (`max_agentic_steps_reached`, which reads the calls from the round state). Each call's
record keeps the passages the model was shown: the report's evidence coverage reads them.
"""
from __future__ import annotations

import json
import math
import re

from agents.agentic.schemas import TOOLS as AGENTIC_TOOLS
from agents.base_agent import IDK_ANSWER
from agents.stages.prompts import load_prompt_lines

from .search import within

TOOL_CALL = re.compile(r"<tool_call>\s*(\{.*?\})\s*</tool_call>", re.DOTALL)
# the two tools' schemas, the agentic system's own (one place for both routes)
TOOLS = list(AGENTIC_TOOLS)


# how a turn ended: its answer, or a budget
ANSWERED, CALL_BUDGET, STEP_BUDGET = "answered", "call budget", "step budget"
BUDGET_SPENT = "not run: the call budget of this turn is spent"


def round_state(state: dict) -> dict:
    """The round state handed back to lmms-eval: ours, and the counts its fallback record reads
    (`tool_calls`, `valid_tool_calls`, `invalid_steps`: the calls that ran, those that searched,
    those that were errors)."""
    calls = state["calls"]
    valid = sum(1 for c in calls if not c.get("error"))
    return {**state, "state": {"calls": calls}, "tool_calls": len(calls), "valid_tool_calls": valid,
            "invalid_steps": len(calls) - valid}


def agentic_round(first_prompt: str, outputs: list[str], state: dict | None, run_call, max_calls: int):
    """One round after the model's reply `outputs[-1]`: its tool calls (within the budget) are run
    by `run_call(call_text) -> (record, result)` and the prompt grows by each call and its result;
    a reply without one ends the turn with it as the answer. Returns lmms-eval's (visuals, next
    prompt, ended, outputs, round state); None as visuals keeps the photo."""
    state = dict(state or {"calls": [], "transcript": []})
    reply = outputs[-1] if outputs else ""
    wanted = list(TOOL_CALL.finditer(reply or ""))
    left = max_calls - len(state["calls"])
    if not wanted or left <= 0:
        # a call past the budget ends the turn unanswered: "I don't know", a miss
        answer = (reply or "").strip() if not wanted else IDK_ANSWER
        final = json.dumps({"answer": answer, "calls": state["calls"], "ended": CALL_BUDGET if wanted else ANSWERED})
        return None, None, True, [*outputs[:-1], final], round_state(state)
    transcript = list(state["transcript"])
    calls = list(state["calls"])
    for i, found in enumerate(wanted):
        # calls in one reply past the budget get a result saying so, for a model that expects
        # one result per call (a native tool caller)
        result = BUDGET_SPENT if i >= left else None
        if result is None:
            call, result = run_call(found.group(1))
            calls.append(call)
        transcript.append(f"{found.group(0)}\n<tool_result>\n{result}\n</tool_result>")
    state.update(calls=calls, transcript=transcript)
    parts = [first_prompt, *transcript]
    if len(calls) >= max_calls:
        parts.append(load_prompt_lines("lmms_agentic_last"))
    return None, "\n\n".join(parts), False, outputs, round_state(state)


def cropped(image, box):
    """The part of the photo inside `box` ([x1, y1, x2, y2] in its pixels, cut to the photo);
    ValueError for a box that is not four numbers or holds no part of the photo."""
    if not isinstance(box, (list, tuple)) or len(box) != 4:
        raise ValueError(f"box {box!r}: four numbers [x1, y1, x2, y2]")
    try:
        x1, y1, x2, y2 = (float(v) for v in box)
    except (TypeError, ValueError):
        raise ValueError(f"box {box!r}: four numbers [x1, y1, x2, y2]") from None
    if not all(math.isfinite(v) for v in (x1, y1, x2, y2)):
        raise ValueError(f"box {box!r}: four finite numbers")
    width, height = image.size
    x1, x2 = max(0.0, x1), min(float(width), x2)
    y1, y2 = max(0.0, y1), min(float(height), y2)
    if x2 <= x1 or y2 <= y1:
        raise ValueError(f"box {box!r} holds no part of the {width}x{height} photo")
    return image.crop((x1, y1, x2, y2))


def run_tool(text: str, search, photo, hits: int, chars: int) -> tuple[dict, str]:
    """A tool call's record (tool, arguments, hits, image hits' entity names, the passages it
    returned, error) and those passages as the model reads them (within `chars`); a call that
    cannot search is an error the model reads, not a crash and not a search. `search()`: the
    pipeline and its chunking settings; `photo()`: the conversation's image in a list, empty
    where it could not be loaded."""
    call = {"tool": None, "arguments": None, "hits": 0, "entities": [], "passages": [], "error": None}
    try:
        parsed = json.loads(text)
        name, arguments = parsed.get("name"), parsed.get("arguments") or {}
        call.update(tool=name, arguments=arguments)  # as given, where its arguments are no JSON
        if isinstance(arguments, str):
            arguments = json.loads(arguments)
        call["arguments"] = arguments
        if not isinstance(arguments, dict):
            raise ValueError(f"arguments {arguments!r}: an object of the tool's parameters")
        from agents.stages.s4_chunk import chunks_from_image_hit, chunks_from_web_hit, dedupe, hit_entity_names

        if name == "image_search":
            images = photo()
            if not images:
                raise ValueError("no image")
            box = arguments.get("box")
            image = images[0] if box in (None, []) else cropped(images[0], box)
            pipeline, cfg = search()
            found = [h for h in (pipeline(image, k=hits) or []) if isinstance(h, dict)]
            call["entities"] = [hit_entity_names(h) for h in found]
            chunks = [c for h in found for c in chunks_from_image_hit(h, cfg)]
        elif name == "web_search":
            query = arguments.get("query")
            if not isinstance(query, str) or not query.strip():
                raise ValueError(f"web_search needs a query: got {query!r}")
            pipeline, cfg = search()
            found = [h for h in (pipeline(query, k=hits) or []) if isinstance(h, dict)]
            chunks = [c for h in found for c in chunks_from_web_hit(h, cfg, query)]
        else:
            raise ValueError(f"unknown tool {name!r}: image_search or web_search")
        call["hits"] = len(found)
        call["passages"] = within(dedupe(chunks, chunks)[0], chars)
        return call, "\n\n".join(call["passages"]) or "nothing found"
    except Exception as exc:  # noqa: BLE001 - a bad call or a failed search costs this call only
        call["error"] = f"{type(exc).__name__}: {str(exc)[:200]}"
        return call, f"error: {call['error']}"


def agentic_answer(reply: str) -> tuple[str, dict]:
    """The answer of crag_mm_agentic's final reply and how the turn ended ({"calls", "ended"}):
    the task's JSON, or lmms-eval's fallback once the rounds ran out (no answer: "I don't know",
    a miss, ended by the step budget)."""
    try:
        payload = json.loads(reply)
    except ValueError:
        return reply, {"calls": [], "ended": ANSWERED}
    if not isinstance(payload, dict):
        return reply, {"calls": [], "ended": ANSWERED}
    if "answer" in payload:
        answer = payload.get("answer")
        return "" if answer is None else str(answer), {"calls": list(payload.get("calls") or []),
                                                       "ended": payload.get("ended") or ANSWERED}
    state = payload.get("state") if isinstance(payload.get("state"), dict) else {}
    return IDK_ANSWER, {"calls": list(state.get("calls") or []), "ended": STEP_BUDGET}


def agentic_trace(trace: dict | None, ending: dict) -> dict:
    """A turn's trace with its tool calls and how it ended: what the report's funnel, coverage
    and diagnostics read (the passages each call returned, in call order, as the context it was
    shown; image hits as `retrieved`)."""
    trace = dict(trace or {})
    calls = ending["calls"]
    image_calls = [c for c in calls if c.get("tool") == "image_search" and not c.get("error")]
    trace["tool_calls"] = calls
    trace["calls_run"] = len(calls)
    trace["ended_by"] = ending["ended"]
    trace["passages"] = [p for c in calls if not c.get("error") for p in c.get("passages") or []]
    trace["retrieved"] = [{"source": "image", "entities": names} for c in image_calls for names in c["entities"]] + \
        [{"source": "web"} for c in calls if c.get("tool") == "web_search" and not c.get("error")
         for _ in range(int(c.get("hits") or 0))]
    trace["image_hits"] = sum(int(c.get("hits") or 0) for c in image_calls)
    trace["branch"] = ending["ended"] + " ended the turn" if ending["ended"] != ANSWERED else \
        "called tools" if calls else "answered without a tool"
    trace["funnel"] = {**(trace.get("funnel") or {}), "called a tool": bool(calls),
                       "a search found something": any(c.get("hits") for c in calls)}
    return trace

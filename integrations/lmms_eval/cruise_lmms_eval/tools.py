"""crag_mm_agentic's tool loop: the search pipeline as two tools the model calls, run one round
of lmms-eval's generate_until_agentic at a time.

The tools, in OpenAI's function-calling schema: image_search (the photo, or a box of it) and
web_search (a query). The model calls one as `<tool_call>{"name": ..., "arguments": {...}}
</tool_call>`; each call's passages go back into its prompt as `<tool_result>...</tool_result>`
after the call, and a reply without a call is the answer. The turn's end is JSON
{"answer", "calls"}: lmms-eval keeps a last reply as the response, and replaces one that is not
JSON by its own fallback record once a task keeps a round state (`max_agentic_steps_reached`).
"""
from __future__ import annotations

import json
import re

from agents.base_agent import IDK_ANSWER
from agents.stages.prompts import load_prompt_lines

from .search import within

TOOL_CALL = re.compile(r"<tool_call>\s*(\{.*?\})\s*</tool_call>", re.DOTALL)
TOOLS = [
    {"type": "function", "function": {
        "name": "image_search",
        "description": "Search the image index with the photo, or with the part of it inside a box, for the "
                       "entities it shows.",
        "parameters": {"type": "object", "properties": {
            "box": {"type": "array", "items": {"type": "number"}, "minItems": 4, "maxItems": 4,
                    "description": "optional crop [x1, y1, x2, y2] in the photo's pixels"}},
            "required": []}}},
    {"type": "function", "function": {
        "name": "web_search",
        "description": "Search the web index with a text query.",
        "parameters": {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]}}},
]


def agentic_round(first_prompt: str, outputs: list[str], state: dict | None, run_call, max_calls: int):
    """One round after the model's reply `outputs[-1]`: a tool call (within the budget) is run by
    `run_call(call_text) -> (record, result)` and the prompt grows by its result; a reply
    without one ends the turn with it as the answer. Returns lmms-eval's (visuals, next prompt,
    ended, outputs, state); None as visuals keeps the photo."""
    state = dict(state or {"calls": [], "transcript": []})
    reply = outputs[-1] if outputs else ""
    found = TOOL_CALL.search(reply or "")
    if found is None or len(state["calls"]) >= max_calls:
        # a call past the budget ends the turn unanswered: "I don't know", a miss
        answer = (reply or "").strip() if found is None else IDK_ANSWER
        final = json.dumps({"answer": answer, "calls": state["calls"]})
        return None, None, True, [*outputs[:-1], final], {**state, "state": {"calls": state["calls"]}}
    call, result = run_call(found.group(1))
    state["calls"] = [*state["calls"], call]
    state["transcript"] = [*state["transcript"], f"{found.group(0)}\n<tool_result>\n{result}\n</tool_result>"]
    parts = [first_prompt, *state["transcript"]]
    if len(state["calls"]) >= max_calls:
        parts.append(load_prompt_lines("lmms_agentic_last"))
    return None, "\n\n".join(parts), False, outputs, {**state, "state": {"calls": state["calls"]}}


def run_tool(text: str, search, photo, hits: int, chars: int) -> tuple[dict, str]:
    """A tool call's record (tool, arguments, hits, image hits' entity names, error) and the
    passages it returns to the model (within `chars`); a malformed call is an error the model
    reads, not a crash. `search()`: the pipeline and its chunking settings; `photo()`: the
    conversation's image in a list, empty where it could not be loaded."""
    call = {"tool": None, "arguments": None, "hits": 0, "entities": [], "error": None}
    try:
        parsed = json.loads(text)
        name, arguments = parsed.get("name"), parsed.get("arguments") or {}
        if isinstance(arguments, str):
            arguments = json.loads(arguments)
        call.update(tool=name, arguments=arguments)
        pipeline, cfg = search()
        from agents.stages.s4_chunk import chunks_from_image_hit, chunks_from_web_hit, dedupe, hit_entity_names

        if name == "image_search":
            images = photo()
            if not images:
                raise ValueError("no image")
            image, box = images[0], arguments.get("box")
            if box:
                image = image.crop(tuple(float(v) for v in box))
            found = [h for h in (pipeline(image, k=hits) or []) if isinstance(h, dict)]
            call["entities"] = [hit_entity_names(h) for h in found]
            chunks = [c for h in found for c in chunks_from_image_hit(h, cfg)]
        elif name == "web_search":
            query = str(arguments["query"])
            found = [h for h in (pipeline(query, k=hits) or []) if isinstance(h, dict)]
            chunks = [c for h in found for c in chunks_from_web_hit(h, cfg, query)]
        else:
            raise ValueError(f"unknown tool {name!r}: image_search or web_search")
        call["hits"] = len(found)
        kept = within(dedupe(chunks, chunks)[0], chars)
        return call, "\n\n".join(kept) or "nothing found"
    except Exception as exc:  # noqa: BLE001 - a bad call or a failed search costs this call only
        call["error"] = f"{type(exc).__name__}: {str(exc)[:200]}"
        return call, f"error: {call['error']}"


def agentic_answer(reply: str) -> tuple[str, list[dict]]:
    """The answer and the tool calls of crag_mm_agentic's final reply: the task's JSON, or
    lmms-eval's fallback once the rounds ran out (no answer: "I don't know", scored as a miss)."""
    try:
        payload = json.loads(reply)
    except ValueError:
        return reply, []
    if not isinstance(payload, dict):
        return reply, []
    if "answer" in payload:
        return str(payload.get("answer") or ""), list(payload.get("calls") or [])
    state = payload.get("state") if isinstance(payload.get("state"), dict) else {}
    return IDK_ANSWER, list(state.get("calls") or [])  # max_agentic_steps_reached: no answer, a miss


def agentic_trace(trace: dict | None, calls: list[dict]) -> dict:
    """A turn's trace with its tool calls: what the report's funnel and diagnostics read (image
    hits as `retrieved`, in call order)."""
    trace = dict(trace or {})
    image_calls = [c for c in calls if c.get("tool") == "image_search" and not c.get("error")]
    trace["tool_calls"] = calls
    trace["retrieved"] = [{"source": "image", "entities": names} for c in image_calls for names in c["entities"]] + \
        [{"source": "web"} for c in calls if c.get("tool") == "web_search" and not c.get("error")
         for _ in range(int(c.get("hits") or 0))]
    trace["image_hits"] = sum(int(c.get("hits") or 0) for c in image_calls)
    trace["branch"] = "called tools" if calls else "answered without a tool"
    trace["funnel"] = {**(trace.get("funnel") or {}), "called a tool": bool(calls),
                       "a search found something": any(c.get("hits") for c in calls)}
    return trace

"""The agentic system's trace: one JSON-ready record per turn, its funnel, and the run's figures for
the report.

A turn's own fields (agents/runtime/trace.py `record` adds those of every system):

- `tool_calls`: one entry per call, in order: `tool`, `arguments` (as the model wrote them),
  `hits` (each hit's `id`, `score` and `name`: an image hit's entity names, a web hit's page
  name), `error` (None for a call that ran), `ms`, the reply it came in (`step`) and its `id`;
- `agentic_replies`: every reply of the model, as written; `tool_protocol`: "native" or "text";
  `tools_offered`: the tools the turn's model was offered;
- what the calls showed the model, in the shapes every system's trace has (docs/add_a_system.md):
  `chunks` (each `text`, the hit it came from as `source`, its hit's `score`, the `call` it came
  back from) and `kept_chunks` (their texts: the model read them all, which the report's coverage
  reads), `retrieved` (each hit once, in the order the calls found them: the stage diagnostics'
  image retrieval@k reads the image hits), `searches_run`, `web_query` (the queries, joined),
  `regions_searched` (the boxes image search ran on: the diagnostics' grounding);
- `rag_answer` (the model's answer, "I don't know" where it gave none), `branch` (what ended the
  turn: answered, abstained, budget, deadline, refused, error) and `final_answer`.
"""
from __future__ import annotations

from agents.agentic.loop import TurnLoop
from agents.runtime.trace import not_idk
from agents.stages.types import Turn

# How a turn's loop ends (agents/agentic/loop.py); "abstained": an answer of "I don't know".
BRANCHES = ("answered", "abstained", "budget", "deadline", "refused", "error")


def turn_trace(turn: Turn, loop: TurnLoop, decision) -> tuple[dict, dict[str, bool]]:
    """(the turn's own trace fields, its parse outcomes)."""
    chunks, items, seen = [], [], set()
    for number, result in enumerate(loop.results):
        scores = {item["id"]: item["score"] for item in result.items}  # every chunk's hit is among them
        for text, source in zip(result.chunks, result.chunk_sources):
            chunks.append({"text": text, "source": source, "score": scores[source], "call": number})
        for item in result.items:
            if item["id"] not in seen:
                seen.add(item["id"])
                items.append(item)
    ran = [c for c in loop.calls if c["error"] is None]
    boxes = [{"view": f"call {n}", "box": c["box_searched"]} for n, c in enumerate(loop.calls)
             if c["error"] is None and c.get("box_searched")]
    own = {
        "tool_protocol": loop.protocol,
        "tools_offered": [tool["function"]["name"] for tool in loop.tools],
        "tool_calls": loop.calls,
        "agentic_steps": len(loop.replies),
        "agentic_replies": loop.replies,
        "chunks": chunks,
        "kept_chunks": [c["text"] for c in chunks],
        "retrieved": items,
        "searches_run": list(dict.fromkeys("image" if c["tool"] == "image_search" else "web" for c in ran)),
        "web_query": "; ".join(str((c["arguments"] or {}).get("query")) for c in ran if c["tool"] == "web_search"),
        "regions_searched": {"image_size": list(turn.image.size) if turn.image is not None else None, "boxes": boxes},
        "rag_answer": loop.answer,
        "ended": loop.ended,
        "branch": decision.branch,
        "final_answer": decision.answer,
    }
    parsed = {"agentic_answer": loop.answer_parsed} if loop.answer_parsed is not None else {}
    return own, parsed


def funnel_flags(trace: dict, cfg) -> dict[str, bool]:
    """Where a turn's answer can be lost, in order."""
    calls = trace.get("tool_calls") or []
    return {
        "offered a tool": bool(trace.get("tools_offered")),
        "called a tool": bool(calls),
        "a search found something": any(c.get("hits") for c in calls if isinstance(c, dict)),
        "answered within the budget": trace.get("ended") == "answered",
        "answer written (not I don't know)": not_idk(trace.get("rag_answer")),
    }


def _count(values) -> dict[str, int]:
    out: dict[str, int] = {}
    for value in values:
        out[str(value)] = out.get(str(value), 0) + 1
    return out


def summarize(traces: list[dict]) -> dict:
    calls = [c for t in traces for c in t.get("tool_calls") or [] if isinstance(c, dict)]
    return {"agentic": {
        "protocols": _count(t.get("tool_protocol") for t in traces),
        "calls_per_turn": dict(sorted(_count(len(t.get("tool_calls") or []) for t in traces).items(),
                                      key=lambda kv: int(kv[0]))),
        "replies_per_turn": dict(sorted(_count(t.get("agentic_steps") or 0 for t in traces).items(),
                                        key=lambda kv: int(kv[0]))),
        "calls_by_tool": _count(c.get("tool") or "(no name)" for c in calls),
        "failed_calls": sum(1 for c in calls if c.get("error")),
        "calls_with_hits": sum(1 for c in calls if c.get("hits")),
    }}


def report_sections(summary: dict) -> list[dict]:
    figures = summary.get("agentic") or {}
    rows = [[f"tool protocol: {k}", v] for k, v in (figures.get("protocols") or {}).items()]
    rows += [[f"turns with {k} call(s)", v] for k, v in (figures.get("calls_per_turn") or {}).items()]
    rows += [[f"turns with {k} model reply(ies)", v] for k, v in (figures.get("replies_per_turn") or {}).items()]
    rows += [[f"calls of {k}", v] for k, v in (figures.get("calls_by_tool") or {}).items()]
    rows += [["calls that failed (the model read the error)", figures.get("failed_calls", 0)],
             ["calls that found something", figures.get("calls_with_hits", 0)]]
    return [{"title": "Agentic: the model's searches", "id": "agentic-calls", "header": ["what", "count"],
             "rows": rows}]

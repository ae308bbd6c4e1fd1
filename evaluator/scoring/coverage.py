"""Evidence coverage of a run: did retrieval find anything, did the MAD filter keep anything,
and (on the shipped mini benchmark) does the kept context hold the gold answer?

`evidence_coverage(traces, records, dataset)` returns a flat dict of named numbers that goes
into run_summary.json under `evidence_coverage`:

- `turns`: answered turns;
- `retrieved_share`: share of turns whose retrieval returned at least one hit;
- `context_share`: share with a non-empty context after the MAD filter;
- `mean_chunks`, `mean_kept_chunks`: chunks reranked and kept, per turn;
- on a dataset with a `provenance.json` beside it (the shipped benchmark): `kg_turns`,
  `web_turns` and `answer_recall_kg`, `answer_recall_web`, `answer_recall_kg_web`, the share of
  KG- / web-answerable turns whose kept context contains the gold answer (answer recall at
  K_rerank). "Contains" uses the turn's `answer_keys` from provenance.json: short strings that
  all must occur (case-insensitive, as whole words; "a|b" accepts either), because the gold
  answers are full sentences that no context repeats verbatim.

A turn without a trace (an agent that reports none) counts as retrieving nothing.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

PROVENANCE = "provenance.json"
ANSWER_SOURCES = ("kg", "web")


def _fold(text: str) -> str:
    return " ".join(str(text).lower().split())


def key_in_text(key: str, text: str) -> bool:
    """One answer key (alternatives split by "|") occurs in text as whole words."""
    folded = _fold(text)
    for option in key.split("|"):
        option = _fold(option)
        if not option:
            continue
        left = r"(?<![a-z0-9])" if option[0].isalnum() else ""
        right = r"(?![a-z0-9])" if option[-1].isalnum() else ""
        if re.search(left + re.escape(option) + right, folded):
            return True
    return False


def answer_in_context(keys: list[str], context: str) -> bool:
    return bool(keys) and all(key_in_text(k, context) for k in keys)


def provenance_for(dataset: str | None) -> dict[str, dict]:
    """interaction_id -> its provenance note, when `dataset` is a local folder of the shipped
    benchmark (the provenance file sits in its parent); {} otherwise."""
    if not dataset:
        return {}
    folder = Path(dataset)
    for candidate in (folder / PROVENANCE, folder.parent / PROVENANCE):
        if candidate.is_file():
            try:
                notes = json.loads(candidate.read_text())
            except ValueError:
                return {}
            return {t["interaction_id"]: t for kind in notes.values() for s in kind for t in s["turns"]}
    return {}


def _mean(values: list[float]) -> float:
    return round(sum(values) / len(values), 4) if values else 0.0


def evidence_coverage(traces: list[dict], records: list[dict], dataset: str | None) -> dict:
    by_turn = {t.get("interaction_id"): t for t in traces if isinstance(t, dict)}
    ids = [r["interaction_id"] for r in records] or list(by_turn)
    turns = [by_turn.get(i) or {} for i in ids]
    out = {
        "turns": len(ids),
        "retrieved_share": _mean([1.0 if t.get("retrieved") else 0.0 for t in turns]),
        "context_share": _mean([1.0 if t.get("kept_chunks") else 0.0 for t in turns]),
        "mean_chunks": _mean([float(len(t.get("chunks") or [])) for t in turns]),
        "mean_kept_chunks": _mean([float(len(t.get("kept_chunks") or [])) for t in turns]),
    }
    notes = provenance_for(dataset)
    if not notes:
        return out
    hits: dict[str, list[float]] = {source: [] for source in ANSWER_SOURCES}
    for turn_id, trace in zip(ids, turns):
        note = notes.get(turn_id) or {}
        source = note.get("answer_source")
        if source in hits:
            context = "\n".join(trace.get("kept_chunks") or [])
            hits[source].append(1.0 if answer_in_context(note.get("answer_keys") or [], context) else 0.0)
    for source in ANSWER_SOURCES:
        out[f"{source}_turns"] = len(hits[source])
        out[f"answer_recall_{source}"] = _mean(hits[source])
    out["answer_recall_kg_web"] = _mean(hits["kg"] + hits["web"])
    return out


# (key, label, format): how a report shows evidence_coverage (terminal and report.html alike).
COVERAGE_LABELS = [
    ("retrieved_share", "Turns that retrieved something", "{:.2%}"),
    ("context_share", "Turns with context after the MAD filter", "{:.2%}"),
    ("mean_chunks", "Chunks reranked per turn", "{:.1f}"),
    ("mean_kept_chunks", "Chunks kept per turn", "{:.2f}"),
    ("answer_recall_kg", "Answer in kept context: KG turns", "{:.2%}"),
    ("answer_recall_web", "Answer in kept context: web turns", "{:.2%}"),
    ("answer_recall_kg_web", "Answer in kept context: KG + web turns", "{:.2%}"),
]


def coverage_figures(coverage: dict) -> list[tuple[str, str]]:
    """evidence_coverage -> (label, formatted value) rows, answer recall with its turn count."""
    rows = []
    for key, label, fmt in COVERAGE_LABELS:
        if key in coverage:
            turns = coverage.get(key.replace("answer_recall_", "") + "_turns")
            suffix = f" ({turns} turns)" if isinstance(turns, int) else ""
            rows.append((label + suffix, fmt.format(coverage[key])))
    return rows

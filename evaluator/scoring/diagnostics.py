"""Where answers are lost: each stage of a system's chain measured against human stage labels.

CRAG-MM-Diagnostics (arXiv 2607.21155; McGill-NLP/crag-mm-diagnostics) labels, per single-turn
question, the target object's box, its name and Wikipedia page, and how the question refers to it
(evaluator/harness/dataset.py `stage_labels`). That repository measures each stage with a separate
model; here the stages are the ones the evaluated system itself ran, read from its own traces, so
any registered system (or any agent whose traces carry the same keys) gets the same figures:

- grounding: the system cropped, and a crop image search ran on has IoU >= 0.5 with the target's
  box (that repository's evaluate_grounding: intersection over union of [x1, y1, x2, y2] boxes, at
  least 0.5). Only turns whose image search ran on a crop count (trace `regions_searched`); the best
  crop of a turn counts (a system that tiles the photo is credited with its best tile).
- image_retrieval@k (k = 1, 5, 10): the target among the names of the entities of the first k
  image-search hits (trace `retrieved`, source "image", in the system's order), matched as that
  repository's recall_at_k matches: case-folded difflib similarity of at least 0.85 with the
  target's name or with the title of its Wikipedia page. Every labelled turn counts (a turn that
  searched no image finds nothing).
- identification: the target is named by what the chain took from the picture for its search:
  the summary, the object a draft or crop step named, the search queries without the question's
  own words, the image-search entities the entity check kept (a name counts as named where the
  text holds it, or a run of as many words at 0.85 similarity).
- knowledge: the answer judged correct by the run's own verdicts (the rows the scores count), so
  its passed turns are the run's correct count on the labelled turns.

A trace may name the stages its system never ran (`stages_not_run`: a model that answers from the
photo alone searches nothing): those do not apply to its turn, and are not counted as failed.

Each stage gives labelled turns, passed turns and the rate with its 95% interval (the scores'
bootstrap over conversations, evaluator/scoring/intervals.py), the same by
`referring_expression_category`, and the answer's accuracy among the turns where each earlier
stage passed and where it failed.
"""
from __future__ import annotations

import difflib
import re
import urllib.parse

from evaluator.scoring.intervals import score_intervals

IOU_PASS = 0.5
MATCH_SIMILARITY = 0.85
RECALL_AT = (1, 5, 10)
STAGES = ("grounding", *(f"image_retrieval@{k}" for k in RECALL_AT), "identification", "knowledge")
EARLIER_STAGES = STAGES[:-1]
NO_CATEGORY = "(none)"


def iou(a, b) -> float:
    """Intersection over union of two [x1, y1, x2, y2] boxes (0 where they have no area)."""
    width = max(0.0, min(a[2], b[2]) - max(a[0], b[0]))
    height = max(0.0, min(a[3], b[3]) - max(a[1], b[1]))
    inter = width * height
    union = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter
    return inter / union if union > 0 else 0.0


def similar(a: str, b: str) -> bool:
    return difflib.SequenceMatcher(None, a.lower(), b.lower()).ratio() >= MATCH_SIMILARITY


def wiki_title(url: str | None) -> str:
    """The page title a Wikipedia URL names ("" for none)."""
    if not url:
        return ""
    last = urllib.parse.urlparse(str(url)).path.rstrip("/").rsplit("/", 1)[-1]
    return urllib.parse.unquote(last).replace("_", " ").strip()


def target_names(labels: dict) -> list[str]:
    return [n for n in (labels.get("target_object_name") or "", wiki_title(labels.get("wikipedia_url"))) if n]


def _words(text: str) -> list[str]:
    return re.findall(r"\w+", text.lower())


def named_in(names: list[str], text: str) -> bool:
    """Whether `text` names one of `names`: holds it, or a run of as many words similar to it."""
    words = _words(text)
    for name in names:
        wanted = _words(name)
        if not wanted:
            continue
        phrase = " ".join(wanted)
        if phrase in " ".join(words):
            return True
        for start in range(len(words) - len(wanted) + 1):
            if similar(phrase, " ".join(words[start:start + len(wanted)])):
                return True
    return False


def scaled_target(labels: dict, image_size) -> list[float] | None:
    """The target's box in the pixels of the image the system searched (of `image_size`)."""
    box, frame = labels.get("target_roi_bbox"), labels.get("image_size")
    if box is None:
        return None
    if not frame or not image_size:
        return list(box)
    sx, sy = image_size[0] / frame[0], image_size[1] / frame[1]
    return [box[0] * sx, box[1] * sy, box[2] * sx, box[3] * sy]


def best_iou(labels: dict, trace: dict) -> float | None:
    """The best IoU of the crops image search ran on with the target; None where it ran on none."""
    regions = trace.get("regions_searched") or {}
    boxes = [r.get("box") for r in regions.get("boxes") or [] if isinstance(r, dict) and r.get("box")]
    target = scaled_target(labels, regions.get("image_size"))
    if not boxes or target is None:
        return None
    return max(iou(target, [float(v) for v in box]) for box in boxes)


def image_hit_names(trace: dict) -> list[list[str]]:
    """Each image-search hit's entity names, in the system's order."""
    out = []
    for item in trace.get("retrieved") or []:
        if isinstance(item, dict) and item.get("source") == "image":
            names = item.get("entities")
            out.append([str(n) for n in names] if isinstance(names, list) else
                       [n.strip() for n in str(item.get("name") or "").split(",") if n.strip()])
    return out


def retrieval_rank(labels: dict, trace: dict) -> int | None:
    """The 1-based rank of the first image hit naming the target, None where none does."""
    names = target_names(labels)
    for rank, hit in enumerate(image_hit_names(trace), start=1):
        if any(similar(name, candidate) for name in names for candidate in hit):
            return rank
    return None


def identification_text(trace: dict, question: str) -> str:
    """What the chain took from the picture for its search, without the question's own words."""
    parts = [trace.get("summary"), trace.get("draft_object"), trace.get("crop_object")]
    for key in ("retrieval_query", "web_query"):
        parts.append(str(trace.get(key) or "").replace(question, " "))
    rejected = set(trace.get("entities_rejected") or [])
    verdicts = trace.get("entity_verdicts") or {}
    parts += [name for name, shown in verdicts.items() if shown and name not in rejected]
    return "\n".join(str(p) for p in parts if p)


def turn_diagnosis(labels: dict, trace: dict | None, row: dict) -> dict:
    """One labelled turn's stage outcomes (None: the stage does not apply to the turn)."""
    trace = trace or {}
    overlap = best_iou(labels, trace)
    rank = retrieval_rank(labels, trace)
    outcome = {
        "interaction_id": row["interaction_id"], "session_id": row["session_id"],
        "category": labels.get("referring_expression_category") or NO_CATEGORY,
        "iou": None if overlap is None else round(overlap, 4), "retrieval_rank": rank,
        "grounding": None if overlap is None else overlap >= IOU_PASS,
        **{f"image_retrieval@{k}": rank is not None and rank <= k for k in RECALL_AT},
        "identification": named_in(target_names(labels), identification_text(trace, row.get("query") or "")),
        "knowledge": bool(row["is_correct"]),
    }
    for stage in trace.get("stages_not_run") or []:
        if stage in outcome and stage != "knowledge":
            outcome[stage] = None
    if trace.get("oracle") is not None:
        outcome["oracle"] = trace["oracle"]
    return outcome


def rate(turns: list[dict], stage: str) -> dict:
    """Labelled turns (those the stage applies to), passed turns, the rate and its 95% interval."""
    applied = [t for t in turns if t[stage] is not None]
    passed = sum(1 for t in applied if t[stage])
    rows = [{"session_id": t["session_id"], "is_correct": bool(t[stage]), "is_miss": False} for t in applied]
    return {"labelled": len(applied), "passed": passed, "rate": passed / len(applied) if applied else None,
            "rate_ci": score_intervals(rows).get("accuracy")}


def stage_figures(turns: list[dict], stage: str) -> dict:
    categories = sorted({t["category"] for t in turns})
    return {**rate(turns, stage),
            "by_category": {c: rate([t for t in turns if t["category"] == c], stage) for c in categories}}


def diagnose(records: list[dict], rows: list[dict], traces: list[dict], oracle: str | None = None) -> dict | None:
    """diagnostics.json's content for a run (None when no turn is labelled). `records`: the saved
    answers (their `stage_labels`); `rows`: the rows the scores count (is_correct); `traces`: the
    agent's traces, one per turn."""
    labels = {r["interaction_id"]: r["stage_labels"] for r in records if r.get("stage_labels")}
    by_turn = {t.get("interaction_id"): t for t in traces}
    turns = [turn_diagnosis(labels[r["interaction_id"]], by_turn.get(r["interaction_id"]), r)
             for r in rows if r["interaction_id"] in labels]
    if not turns:
        return None
    return {
        "labelled_turns": len(turns),
        "oracle": oracle,
        "measures": {"iou_pass": IOU_PASS, "match_similarity": MATCH_SIMILARITY, "recall_at": list(RECALL_AT)},
        "stages": {stage: stage_figures(turns, stage) for stage in STAGES},
        # the answer's accuracy where each earlier stage passed and where it failed
        "accuracy_given": {stage: {outcome: rate([t for t in turns if t[stage] is flag], "knowledge")
                                   for outcome, flag in (("passed", True), ("failed", False))}
                           for stage in EARLIER_STAGES},
        "turns": turns,
    }

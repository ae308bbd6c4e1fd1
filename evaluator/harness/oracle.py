"""Oracle runs (`--oracle region|entity|question`): the system is given the human label of one
stage on every labelled turn (CRAG-MM-Diagnostics' metadata, evaluator/harness/dataset.py
`stage_labels`), so that the paired difference against its plain run measures what a perfect
stage would be worth (evaluator/scoring/diagnostics.py, tools/oracle_headroom.py).

The agent interface carries no labels; the channel is explicit: an agent class declares the oracles
it takes (`ORACLES`, agents/base_agent.py) and the harness then calls
`batch_generate_response(queries, images, histories, oracle=[...])` with one record per turn
(None where the turn has no such label):

- region: {"stage": "region", "box": [x1, y1, x2, y2]}, the target's box in the pixels of the
  image the agent receives (the label's box scaled from its `image_size`);
- entity: {"stage": "entity", "entity": the target's name};
- question: {"stage": "question", "question": the question with the entity written in}.

The harness writes the record it gave into each turn's trace (`oracle`) and the run's oracle into
run_config.json.
"""
from __future__ import annotations

from evaluator.settings import ORACLE_STAGES


def agent_oracles(cls) -> tuple[str, ...]:
    """The oracles an agent class takes (none unless it declares ORACLES)."""
    return tuple(getattr(cls, "ORACLES", ()) or ())


def refusal(stage: str | None, cls) -> str | None:
    """Why `--oracle STAGE` cannot run with this agent class, in one line, or None."""
    if stage is None:
        return None
    if stage not in ORACLE_STAGES:
        return f"--oracle {stage}: choose one of {', '.join(ORACLE_STAGES)}"
    if stage not in agent_oracles(cls):
        return (f"--oracle {stage}: the agent {cls.__module__}.{cls.__name__} takes no such oracle "
                f"(its ORACLES: {', '.join(agent_oracles(cls)) or 'none'})")
    return None


def scaled_box(box: list[float], frame: list[int] | tuple[int, int], size: tuple[int, int]) -> list[float]:
    """`box` in the pixels of an image of `frame` (width, height), in those of one of `size`."""
    sx, sy = size[0] / frame[0], size[1] / frame[1]
    return [round(box[0] * sx, 2), round(box[1] * sy, 2), round(box[2] * sx, 2), round(box[3] * sy, 2)]


def turn_oracle(stage: str | None, labels: dict | None, image_size: tuple[int, int] | None) -> dict | None:
    """The record handed to the agent for one turn, or None (no oracle, or the turn lacks its label).
    `image_size`: the image the agent receives; the label's box is in the pixels of the label's
    `image_size` (that image, where the label does not say)."""
    if stage is None or not labels:
        return None
    if stage == "region":
        box = labels.get("target_roi_bbox")
        if box is None or image_size is None:
            return None
        return {"stage": stage, "box": scaled_box(box, labels.get("image_size") or image_size, image_size)}
    if stage == "entity":
        return {"stage": stage, "entity": labels["target_object_name"]} if labels.get("target_object_name") else None
    question = labels.get("textual_only_question")
    return {"stage": stage, "question": question} if question else None

"""The functions a CRAG-MM task YAML names (`!function cruise_lmms_eval.hooks.NAME`), as
lmms-eval's own tasks name theirs: doc_to_visual, doc_to_text, doc_to_target, process_results,
and one aggregation per metric of `metric_list`.

Each finds its task (crag_mm.py's CragMMTask, registered by cruise_lmms_eval/task.py when
lmms-eval made the task) by the document's TASK_COLUMN, or by the task each document's turns
name, and hands over to it.
"""
from __future__ import annotations

from .crag_mm import TASKS, task_of


def doc_to_visual(doc: dict, lmms_eval_specific_kwargs=None) -> list:
    return task_of(doc).doc_to_visual(doc, lmms_eval_specific_kwargs)


def doc_to_text(doc: dict, lmms_eval_specific_kwargs=None, previous_output=None, round_idx=None,
                previous_round_info=None):
    return task_of(doc).doc_to_text(doc, lmms_eval_specific_kwargs, previous_output=previous_output,
                                    round_idx=round_idx, previous_round_info=previous_round_info)


def doc_to_target(doc: dict) -> str:
    return task_of(doc).doc_to_target(doc)


def process_results(doc: dict, results: list) -> dict:
    return task_of(doc).process_results(doc, results)


def aggregation(metric: str):
    """lmms-eval's aggregation of `metric`: its figure in the scored run of the documents' turns."""
    def aggregate(items: list[dict]):
        names = {item.get("task") for item in items}
        if len(names) != 1 or not names <= set(TASKS):
            raise ValueError(f"{metric}: the documents' turns name the tasks {sorted(map(str, names))}, not one "
                             f"registered CRAG-MM task ({sorted(TASKS)})")
        return TASKS[names.pop()].aggregate(metric, items)

    aggregate.__name__ = aggregate.__qualname__ = metric
    return aggregate


crag_mm_turns = aggregation("crag_mm_turns")
truthfulness = aggregation("truthfulness")
accuracy = aggregation("accuracy")
missing = aggregation("missing")
hallucination = aggregation("hallucination")
truthfulness_ci95 = aggregation("truthfulness_ci95")
ego_truthfulness = aggregation("ego_truthfulness")
agent_errors = aggregation("agent_errors")
conversation_score = aggregation("conversation_score")
truthfulness_kddcup2025 = aggregation("truthfulness_kddcup2025")
truthfulness_crag_mm = aggregation("truthfulness_crag_mm")
early_stop = aggregation("early_stop")

"""The class each CRAG-MM task YAML names (`class: !function cruise_lmms_eval.task.CragMMTaskClass`):
lmms-eval's own ConfigurableTask, made from the task's config as lmms-eval hands it over.

Before lmms-eval reads that config, the class makes the task's CragMMTask from it
(cruise_lmms_eval/crag_mm.py: the YAML's settings reach it as arguments, not through the
environment) and registers it by name for the functions the YAML names (hooks.py); it fills in
the config's dataset fields with the split the task found (the profile's dataset where the YAML
names none; a split the data lacks falls back to its first), and its `process_docs` with the
task's, which names the task in each document; its metadata keeps what the task read and how it
scores, for the results file. Everything else is lmms-eval's: it loads the documents, and its
own metric_list reading binds the YAML's aggregations.
"""
from __future__ import annotations

from lmms_eval.api.task import ConfigurableTask

from cruise_lmms_eval.crag_mm import CragMMTask, register
from cruise_lmms_eval.documents import lmms_eval_fields
from cruise_lmms_eval.settings import TaskSettings


class CragMMTaskClass(ConfigurableTask):
    def __init__(self, *args, config: dict | None = None, **kwargs):
        config = dict(config or {})
        config.pop("class", None)
        crag = register(CragMMTask(TaskSettings.from_task_config(config)))
        crag.load()
        config.update(lmms_eval_fields(crag.loaded), process_docs=crag.process_docs)
        config["metadata"] = {**(config.get("metadata") or {}), "crag_mm": crag.described()}
        super().__init__(*args, config=config, **kwargs)

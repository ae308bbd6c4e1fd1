"""The class that each CRAG-MM task YAML names (`class: !function cruise_lmms_eval.task.CragMMTaskClass`):
lmms-eval's own ConfigurableTask with our task's dataset, prompts, per-document results and
metrics (cruise_lmms_eval/crag_mm.py) bound in, so that what the YAML says reaches them as
arguments, not through the environment.
"""
from __future__ import annotations

import functools

from datasets import DatasetDict
from lmms_eval.api.task import ConfigurableTask

from cruise_lmms_eval.crag_mm import CragMMTask, TaskSettings


class CragMMTaskClass(ConfigurableTask):
    def __init__(self, *args, config: dict | None = None, **kwargs):
        config = dict(config or {})
        config.pop("class", None)
        self.crag = CragMMTask(TaskSettings.from_task_config(config))
        config.update(doc_to_visual=self.crag.doc_to_visual, doc_to_text=self.crag.doc_to_text,
                      doc_to_target=self.crag.doc_to_target, process_results=self.crag.process_results)
        super().__init__(*args, config=config, **kwargs)
        # the results file keeps the task config: what the task read and how it scores
        self.config.metadata = {**(self.config.metadata or {}), "crag_mm": self.crag.described()}

    def download(self, dataset_kwargs=None) -> None:
        """The split as local_evaluation.py reads it (crag_mm.CragMMTask.load), under the YAML's
        test_split."""
        ds = self.crag.load()
        split = self.config.test_split
        self.dataset = DatasetDict({split: ds})
        self.dataset_no_image = DatasetDict({split: ds.remove_columns([c for c in ("image",) if c in ds.column_names])})

    def _prepare_metric_and_aggregation(self) -> None:
        """The metrics are crag_mm's (METRICS, and MULTI_TURN_METRICS for a conversation task),
        each aggregated by scoring the documents' turns as a run of ours."""
        metrics = self.crag.settings.metrics
        self._metric_fn_list = dict.fromkeys(metrics)
        self._metric_fn_kwargs = {name: {} for name in metrics}
        self._aggregation_list = {name: functools.partial(self.crag.aggregate, name) for name in metrics}
        self._higher_is_better = {name: higher for name, (_, higher) in metrics.items()}

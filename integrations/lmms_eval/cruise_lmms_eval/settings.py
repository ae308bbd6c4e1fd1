"""A CRAG-MM task's settings, as its YAML gives them.

lmms-eval's channel for a task's settings is its YAML (a YAML of your own that `include`s ours
changes them): `dataset_path` (local_evaluation.py's --dataset; empty: the profile's),
`dataset_kwargs.revision`, `test_split` (--split), and under `metadata` the fields of
`TaskSettings` and of the evaluator's `ScoringSettings` (rules, eval_model, eval_base_url,
judge_prompt_from, ...). A metadata key that is neither is refused in one line, as a misspelt
--set is.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from agents.profiles import resolve_profile
from evaluator.scoring.rules import rule_set
from evaluator.settings import DATASET_TYPES, ScoringSettings

# the model alone; the search pipeline's results in the prompt; the search pipeline as tools the
# model calls (crag_mm_agentic, lmms-eval's generate_until_agentic)
PROMPTS = ("question", "rag", "agentic")
# lmms-eval's own task fields that are settings of ours: theirs -> ours
TASK_FIELDS_OF_LMMS_EVAL = {"task": "task", "dataset_path": "dataset", "test_split": "split"}


@dataclass(frozen=True)
class TaskSettings:
    """A task's settings (module notes)."""

    task: str = "crag_mm"  # its name in lmms-eval
    dataset_type: str = "single-turn"
    prompt: str = "question"  # question | rag | agentic
    # the machine, as local_evaluation.py's --profile: whose dataset is the default and whose
    # search pipeline a RAG prompt or a tool reads (cpu: the mini benchmark and its local indices)
    profile: str = "cpu"
    dataset: str | None = None  # a hub id or a folder; None: the profile's
    revision: str = "v0.1.2"
    split: str = "validation"
    search_hits: int = 3  # hits per search (the image, the question) a RAG prompt shows
    context_chars: int = 4000  # at most this much of them
    max_tool_calls: int = 4  # crag_mm_agentic: tool calls a turn may make (lmms-eval's max_agentic_steps bounds the rounds)
    output_dir: str | None = None  # the scored run is kept in output_dir/<task> (None: scored in a folder then removed)
    scoring: ScoringSettings = field(default_factory=ScoringSettings)

    def __post_init__(self):
        if self.dataset_type not in DATASET_TYPES:
            raise ValueError(f"dataset_type {self.dataset_type!r}: choose one of {list(DATASET_TYPES)}")
        if self.prompt not in PROMPTS:
            raise ValueError(f"prompt {self.prompt!r}: choose one of {list(PROMPTS)}")
        if self.prompt in ("rag", "agentic") and self.dataset_type == "multi-turn":
            raise ValueError(f"prompt {self.prompt!r} is for single-turn tasks")
        rule_set(self.scoring.rules)  # an unknown rule set stops here, in one line
        resolve_profile(self.profile)

    @property
    def multi_turn(self) -> bool:
        return self.dataset_type == "multi-turn"

    @property
    def metrics(self) -> dict:
        """The metrics this task reports (cruise_lmms_eval/metrics.py): name -> (where the figure
        is in the scored run, higher is better)."""
        from .metrics import metrics_of

        return metrics_of(self.multi_turn)

    @classmethod
    def from_task_config(cls, config: dict) -> TaskSettings:
        """From a task's YAML fields (lmms-eval's config dict); a metadata key that is no setting
        is refused in one line, as a misspelt --set is."""
        metadata = dict(config.get("metadata") or {})
        metadata.pop("version", None)  # lmms-eval's own
        metadata.pop("crag_mm", None)  # what a task recorded of itself (CragMMTask.described)
        given = {mine: config[theirs] for theirs, mine in TASK_FIELDS_OF_LMMS_EVAL.items() if config.get(theirs)}
        revision = (config.get("dataset_kwargs") or {}).get("revision")
        if revision:
            given["revision"] = revision
        scoring_names = {f.name for f in dataclasses.fields(ScoringSettings)}
        own_names = {f.name for f in dataclasses.fields(cls)} - {"scoring", "revision", *TASK_FIELDS_OF_LMMS_EVAL.values()}
        unknown = sorted(set(metadata) - scoring_names - own_names)
        if unknown:
            raise ValueError(f"unknown metadata of a CRAG-MM task: {unknown} (settings: {sorted(own_names)}; "
                             f"judge: {sorted(scoring_names)})")
        scoring = ScoringSettings(**{k: v for k, v in metadata.items() if k in scoring_names})
        return cls(**given, **{k: v for k, v in metadata.items() if k in own_names}, scoring=scoring)

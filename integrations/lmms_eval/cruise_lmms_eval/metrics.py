"""The metrics of the CRAG-MM tasks, and the scoring that every one of them reads.

Each document's turns are the records `answers.jsonl` holds, with a trace per turn where the
task knows what went into the prompt (cruise_lmms_eval/results.py). The aggregation scores the
documents' turns as local_evaluation.py scores a run (evaluator/imported_runs.py `score_turns`:
its judge, rule set, early stop, ego subset and intervals), once per set of turns, and each
metric reads its figure from that scored run (an EvaluationResult: its scores and run summary).
The task YAMLs list these metrics in lmms-eval's `metric_list`, each aggregated by the function
of cruise_lmms_eval/hooks.py named after it.
"""
from __future__ import annotations

import hashlib
import json
import tempfile
import threading
from pathlib import Path

from rich.console import Console

from evaluator.imported_runs import TURNS_KEY, imported_run_config, score_turns
from evaluator.scoring.rules import rule_set
from evaluator.settings import ScoringSettings

# Each metric a task reports in lmms-eval's results: name -> (where its figure is in the scored
# run, higher is better). The multi-turn task adds both rule sets' truthfulness, the
# conversation score and what the early stop took away.
METRICS = {
    TURNS_KEY: (("summary", "turns_answered"), True),  # how many turns were scored (each sample keeps its turns)
    "truthfulness": (("scores", "all", "truthfulness_score"), True),
    "accuracy": (("scores", "all", "accuracy"), True),
    "missing": (("scores", "all", "missing"), False),
    "hallucination": (("scores", "all", "hallucination_rate"), False),
    "truthfulness_ci95": (("summary", "intervals_95", "all", "truthfulness_score"), True),
    "ego_truthfulness": (("scores", "ego", "truthfulness_score"), True),
    # turns whose request failed or whose reply had no content (results.py): no answer given
    "agent_errors": (("summary", "agent_error_turns"), False),
}
MULTI_TURN_METRICS = {
    "conversation_score": (("scores", "all", "mean_multi_turn_conversation_score"), True),
    "truthfulness_kddcup2025": (("summary", "multi_turn", "rule_sets", "kddcup2025", "scores", "truthfulness_score"),
                                True),
    "truthfulness_crag_mm": (("summary", "multi_turn", "rule_sets", "crag-mm", "scores", "truthfulness_score"), True),
    "early_stop": (("summary", "multi_turn", "early_stop"), False),
}


def metrics_of(multi_turn: bool) -> dict:
    return {**METRICS, **(MULTI_TURN_METRICS if multi_turn else {})}


def figure(result, path: tuple[str, ...]):
    """The figure at `path` of a scored run (an EvaluationResult: its scores and run summary);
    None where the run has none (a rate of no turns: no egocentric turn among a few documents,
    no interval of one conversation), which lmms-eval writes as null and shows as N/A."""
    value = {"scores": result.scores, "summary": result.summary}
    for key in path:
        if not isinstance(value, dict) or key not in value:
            return None
        value = value[key]
    return value


class Scorer:
    """A task's scored runs: the documents' turns scored once per set of turns (lmms-eval
    aggregates each metric on its own, on several threads), kept in `output_dir/<task>` or in a
    folder removed after scoring."""

    def __init__(self, task: str, scoring: ScoringSettings, output_dir: str | None, console: Console):
        self.task, self.scoring, self.output_dir, self.console = task, scoring, output_dir, console
        self._lock = threading.Lock()
        self._scored: dict[str, object] = {}  # digest of the turns -> the scored run

    def scored(self, items: list[dict], described: dict):
        """The scored run of the documents' turns `items` ({"records", "traces"} each);
        `described`: what the task read (CragMMTask.described)."""
        records = [r for turns in items for r in turns["records"]]
        traces = [t for turns in items for t in turns["traces"]]
        digest = hashlib.sha256(json.dumps(records, sort_keys=True, default=str).encode()).hexdigest()
        with self._lock:
            if digest not in self._scored:
                run_config = imported_run_config(
                    dataset=described["dataset"], dataset_type=described["dataset_type"], split=described["split"],
                    revision=described["revision"], rules=rule_set(self.scoring.rules).name,
                    agent="a model run by lmms-eval", turns=len(records),
                    conversations=len({r["session_id"] for r in records}), task=self.task,
                    model="named in lmms-eval's results file")
                self._scored[digest] = self._score(records, traces, run_config)
            return self._scored[digest]

    def _score(self, records, traces, run_config):
        if self.output_dir:
            return score_turns(Path(self.output_dir) / self.task, records, traces, run_config, self.scoring,
                               self.console)
        with tempfile.TemporaryDirectory(prefix="crag_mm_scored_") as folder:
            return score_turns(Path(folder) / "run", records, traces, run_config, self.scoring, self.console)

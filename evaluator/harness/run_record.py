"""run_config.json: the record of a run, one typed record for every kind of run.

It says what a run was asked (its settings as given), which turns it covers, how they are
scored and which system answered them. A resume compares its selection and its system's
fingerprint with the run it continues (harness/fingerprint.py); a rejudge and a merge take its
rule set and judge; the run summary, the report, calibration (tools/calibrate.py) and the
workers read it. Every kind of run builds a `RunRecord` and writes it with `write_run_record`,
the file's one writer:
- a run, and a resumed run (evaluator/commands/run.py `run_record`);
- a merge of shard folders (`merged_record`);
- the judge's update, where a rejudge or a merge judges with another judge than the record
  names (`record_run_judge`);
- an lmms-eval `cruise_agent` run (integrations/lmms_eval/cruise_lmms_eval/agent_run.py): the
  agent that answered the documents, and which documents (`lmms_eval_documents`);
- an imported run (evaluator/imported_runs.py): another harness's answers, `imported` naming
  the harness, its model and the task.

A field a kind of run has no value for is None (or empty). A file written before a field
existed reads with the field's default, which is what its absence meant then (`rules`: the 2025
rules; `exact_conversations`: False). Keys this release does not know are kept in `extra` and
written back after the known ones, so a rewrite loses nothing.
"""
from __future__ import annotations

import dataclasses
import json
import os
from dataclasses import dataclass, field
from pathlib import Path

from evaluator.harness.batching import conversation_selection
from evaluator.scoring.rules import DEFAULT_RULES  # also what a run recorded before its rule set meant

RUN_CONFIG = "run_config.json"


@dataclass
class RunRecord:
    # what was asked: the settings record as given (EvaluationSettings; {} where no run of
    # ours was asked: a merge takes its first folder's, an imported run has none)
    args: dict = field(default_factory=dict)
    # which turns: the dataset and the selection a resume must share (fingerprint.RESUME_KEYS)
    dataset: str | None = None
    dataset_type: str | None = None
    split: str | None = None
    revision: str | None = None
    num_conversations: int | None = None
    exact_conversations: bool = False
    conversation_selection: str | None = None  # the selection in words (batching.conversation_selection)
    served_conversations: int | None = None
    shard: str | None = None  # "I/N"
    agent: str | None = None  # MODULE:NAME, or the harness's model in words
    # how they are scored
    rules: str = DEFAULT_RULES
    image_url_updates: list = field(default_factory=list)
    profile: str | None = None
    preset: str | None = None
    tokenizer: str | None = None
    judge_model: str | None = None
    judge_base_url: str | None = None
    judge_prompt: dict | None = None  # the judge prompt's origin (scoring/official_judge.py)
    # the system that answered
    batch_size: int | None = None
    expected_turns: int | None = None
    indices: dict | None = None  # the search indices opened: {"image", "web", "contents"}
    web_contents: str | None = None
    fingerprint: dict | None = None  # what a resume compares (harness/fingerprint.py)
    forced_resumes: list[dict] = field(default_factory=list)  # {"at", "differences"} per --force
    agent_description: dict | None = None  # the agent's `describe` (agents/base_agent.py)
    trace_view: str | None = None  # the module that shows its traces (harness/trace_view.py)
    oracle: str | None = None  # the stage whose human label each labelled turn was given
    # the kinds of run besides a run of ours
    merged_from: list[str] | None = None  # a merge: its folders, in order
    shards: list | None = None  # a merge: each folder's shard ("I/N" or None)
    imported: dict | None = None  # an imported run: {"harness", "model", "task"}
    lmms_eval_documents: list[int] | None = None  # a cruise_agent run: lmms-eval's doc ids
    extra: dict = field(default_factory=dict)  # keys of the file this release does not know

    @classmethod
    def from_json(cls, data) -> RunRecord:
        """The record of a run_config.json's object, of this release or an earlier one."""
        if not isinstance(data, dict):
            raise ValueError(f"{RUN_CONFIG} holds {type(data).__name__}, not a JSON object")
        known = {f.name: f for f in dataclasses.fields(cls) if f.name != "extra"}
        values = {}
        for name, value in data.items():
            if name not in known:
                continue
            if value is None and known[name].default is not None:
                continue  # null where the field has a default: what an absent key means
            values[name] = value
        return cls(**values, extra={k: v for k, v in data.items() if k not in known})

    def to_json(self) -> dict:
        fields = {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.name != "extra"}
        return {**fields, **{k: v for k, v in self.extra.items() if k not in fields}}

    @property
    def system(self) -> str | None:
        """The system the agent's configuration records (`system`), where it records one."""
        config = (self.agent_description or {}).get("config")
        return str(config["system"]) if isinstance(config, dict) and config.get("system") else None


def read_run_record(folder: Path) -> RunRecord | None:
    """The folder's run record; None where it holds no run_config.json (a folder made
    elsewhere). A file that is not a JSON object raises ValueError."""
    path = Path(folder) / RUN_CONFIG
    if not path.exists():
        return None
    return RunRecord.from_json(json.loads(path.read_text()))


def write_run_record(folder: Path, record: RunRecord) -> None:
    """run_config.json written (the folder made where it is not there yet): the one writer of
    the file. Written beside and moved into place, so that a run stopped while it writes
    leaves the earlier record whole."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    part = folder / (RUN_CONFIG + ".part")  # pragma: no mutate: the passing file's name is nobody's to read
    part.write_text(json.dumps(record.to_json(), indent=2, default=str))
    os.replace(part, folder / RUN_CONFIG)


def record_run_judge(folder: Path, record: RunRecord | None, model: str | None,
                     base_url: str | None) -> RunRecord | None:
    """The judge the scores rest on, written into the folder's record where it names another
    (a folder without a record is left without one); returns the record as it stands."""
    if record is None or (record.judge_model, record.judge_base_url) == (model, base_url):
        return record
    record = dataclasses.replace(record, judge_model=model, judge_base_url=base_url)
    write_run_record(folder, record)
    return record


def merged_record(records: list[RunRecord], sources: list[Path], served: int, answered: int) -> RunRecord:
    """The record of shard folders merged into one run: the first folder's, over all of them
    (`records` holds an empty RunRecord for a folder without one)."""
    first = records[0]
    shards = [r.shard for r in records]
    expected = sum(r.expected_turns or 0 for r in records) or None
    selection = conversation_selection(first.num_conversations, bool(first.exact_conversations), served,
                                       expected if expected is not None else answered,
                                       [s or str(src) for s, src in zip(shards, sources)])
    return dataclasses.replace(first, shard=None, merged_from=[str(s) for s in sources], shards=shards,
                               expected_turns=expected, served_conversations=served,
                               conversation_selection=selection)

"""Shard folders gathered into one run folder (answers, judgments, batches, traces and the run
record of the whole); `finalize` then judges and scores the merged turns as any run's.
"""
from __future__ import annotations

import json
from pathlib import Path

from evaluator.harness.run_record import RunRecord, merged_record, read_run_record, write_run_record
from evaluator.harness.runner import ANSWERS, BATCHES, JUDGMENTS, TRACES, append_jsonl, read_jsonl, saved_answers


def already_merged(sources: list[Path], output_dir: Path) -> bool:
    """Whether `output_dir` holds the finished merge of exactly these folders, with every turn they
    hold now (a merge is finished once its answers are written: they are written last)."""
    try:
        record = read_run_record(output_dir)
    except (OSError, ValueError):
        return False
    if record is None or record.merged_from != [str(s) for s in sources]:
        return False
    return set(saved_answers(output_dir)) == {iid for src in sources for iid in saved_answers(src)}


def merge_runs(sources: list[Path], output_dir: Path) -> list[str]:
    """Gather shard folders into `output_dir` (answers, judgments, batches, traces, config);
    returns notices. Scoring is left to `finalize`, over the merged turn rows. Merging the same
    folders into the same place again keeps the merge there (its saved verdicts too)."""
    output_dir.mkdir(parents=True, exist_ok=True)
    if (output_dir / ANSWERS).exists():
        if already_merged(sources, output_dir):
            return [f"{output_dir} already holds the merge of these folders: judged and scored again"]
        raise ValueError(f"{output_dir} already holds answers; merge into an empty folder")
    for name in (JUDGMENTS, TRACES, BATCHES):  # left by a merge stopped before its answers
        (output_dir / name).unlink(missing_ok=True)
    configs = []
    for src in sources:
        if not (src / ANSWERS).exists():
            raise ValueError(f"{src} has no {ANSWERS}: not an evaluation output folder")
        configs.append(read_run_record(src) or RunRecord())
    notices = []
    for key in ("dataset", "dataset_type", "split", "revision", "num_conversations", "exact_conversations",
                "rules"):
        values = {json.dumps(getattr(c, key)) for c in configs}
        if len(values) > 1:
            raise ValueError(f"folders disagree on {key}: {sorted(values)}")
    shards = [c.shard for c in configs]
    if all(shards):
        counts = {s.split("/")[1] for s in shards}
        indices = sorted(int(s.split("/")[0]) for s in shards)
        if len(counts) != 1 or indices != list(range(int(counts.pop()))):
            notices.append(f"shards {shards} do not form a complete set: the merged run is partial")
    seen: dict[str, Path] = {}
    answers = []
    served = 0
    for src, config in zip(sources, configs):
        saved = saved_answers(src).values()
        # a run_config.json from before the count was recorded: the conversations it answered
        served += config.served_conversations or len({r["session_id"] for r in saved})
        for record in saved:
            if record["interaction_id"] in seen:
                raise ValueError(f"turn {record['interaction_id']} is in both {seen[record['interaction_id']]} and {src}")
            seen[record["interaction_id"]] = src
            answers.append(record)
        for name in (JUDGMENTS, TRACES):
            append_jsonl(output_dir / name, read_jsonl(src / name))
        append_jsonl(output_dir / BATCHES, [{**b, "source": str(src)} for b in read_jsonl(src / BATCHES)])
    write_run_record(output_dir, merged_record(configs, sources, served, len(answers)))
    append_jsonl(output_dir / ANSWERS, answers)  # last: answers mark a finished merge
    return notices

"""Answers that another harness made, scored as `local_evaluation.py` scores its own runs.

lmms-eval runs any model it knows over this package's CRAG-MM tasks (integrations/lmms_eval/), and
each task turns a model's replies into our turn records: the records `answers.jsonl` holds, one
per turn (evaluator/harness/runner.py `answer_record`), plus a trace per turn where the task knows
what went into the prompt. `score_turns` writes them as a run folder (answers.jsonl, traces.jsonl,
run_config.json: what `--generate-only` leaves) and finishes it as a run: the judge that
local_evaluation.py builds for the same judge settings, either rule set, the intervals, the
multi-turn figures, the diagnostics, the official files and report.html. The tasks' aggregation
calls it on the records in hand; `from_lmms_eval` calls it on an lmms-eval output folder, whose
samples files (`<date>_samples_<task>.jsonl`, written with `--log_samples`) keep each document's
records under TURNS_KEY (`python local_evaluation.py from-lmms-eval DIR --output-dir OUT`).
"""
from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from pathlib import Path

from rich.console import Console

from evaluator.commands import EvaluationRefused, EvaluationResult, build_judge, finish, read_judge_prompt
from evaluator.harness.batching import conversation_selection
from evaluator.harness.run_record import RunRecord, write_run_record
from evaluator.harness.runner import ANSWERS, TRACES, append_jsonl
from evaluator.scoring.diagnostics import RECALL_AT
from evaluator.scoring.rules import rule_set
from evaluator.scoring.truncate import load_truncator
from evaluator.settings import ScoringSettings

# The field of a task's per-document result (and so of each logged sample) that holds the
# document's turns: {"records": [answer records], "traces": [one trace per record, or None]}.
TURNS_KEY = "crag_mm_turns"
SAMPLES_GLOB = "*_samples_*.jsonl"
RESULTS_GLOB = "*_results.json"


@dataclass
class ImportedTask:
    """One task of an lmms-eval run: its documents' turns and what the run says about them."""

    name: str
    records: list[dict]
    traces: list[dict]
    run_config: RunRecord  # its run_config.json, the judge's fields to come
    scoring: ScoringSettings


def imported_run_config(*, dataset: str, dataset_type: str, split: str, revision: str | None, rules: str,
                        agent: str, turns: int, conversations: int, task: str, model: str) -> RunRecord:
    """The record of an imported run (run_config.json; the judge's fields are added where the
    judge is built). `imported` names the harness, its model and the task, which the report shows
    where a run of ours shows its profile and preset (an imported run has none)."""
    return RunRecord(
        dataset=dataset, dataset_type=dataset_type, split=split, revision=revision, rules=rules, agent=agent,
        imported={"harness": "lmms-eval", "model": model, "task": task},
        tokenizer=load_truncator().name, expected_turns=turns, served_conversations=conversations,
        conversation_selection=conversation_selection(None, False, conversations, turns),
    )


# The stages of evaluator/scoring/diagnostics.py that a task's own steps can stand for: image
# search (the RAG task's, on the photo). None of the tasks crops or names the target before it
# searches, so grounding and identification never ran.
NO_IDENTIFICATION = ["grounding", "identification"]
IMAGE_RETRIEVAL = [f"image_retrieval@{k}" for k in RECALL_AT]


def imported_trace(record: dict, trace: dict | None) -> dict:
    """A turn's trace in the keys the report and the evidence coverage read, from what the task
    recorded of its prompt (cruise_lmms_eval/crag_mm.py `trace`): the passages it gave the model
    as the context (`chunks`, `kept_chunks`), the image and web hits as `retrieved`, the branch it
    took (the model alone, or with search results), and the stages it never ran, which the
    diagnostics leave out rather than count as failed (`stages_not_run`). A turn the task left no
    trace of gets one that says so."""
    trace = dict(trace or {})
    trace.setdefault("interaction_id", record["interaction_id"])
    trace.setdefault("session_id", record["session_id"])
    trace.setdefault("turn_idx", record.get("turn_idx"))
    searched = "passages" in trace or "image_hits" in trace
    passages = [str(p) for p in trace.get("passages") or []]
    trace.setdefault("chunks", passages)
    trace.setdefault("kept_chunks", passages)
    # image search ran and its hits were recorded by name: the RAG task's search on the photo,
    # crag_mm_agentic's image_search calls that searched (one that was an error did not; a run
    # logged before the hits were named ran it too, but cannot be scored)
    if "tool_calls" in trace:
        image_searched = any(c.get("tool") == "image_search" and not c.get("error") for c in trace["tool_calls"]
                             if isinstance(c, dict))
    else:
        image_searched = "passages" in trace and "retrieved" in trace
    if "retrieved" not in trace:
        # a run logged before its hits were: their number only, without the entities' names
        trace["retrieved"] = [{"source": source} for source in ("image", "web")
                              for _ in range(int(trace.get(f"{source}_hits") or 0))]
    not_run = NO_IDENTIFICATION + ([] if image_searched else IMAGE_RETRIEVAL)
    trace.setdefault("stages_not_run", not_run)
    trace.setdefault("branch", "search results in the prompt" if searched else "the model alone")
    return trace


def score_turns(output_dir: Path, records: list[dict], traces: list[dict], run_config: RunRecord,
                scoring: ScoringSettings, console: Console) -> EvaluationResult:
    """Write the turns as a run folder and judge, score and report it as local_evaluation.py does
    (a folder that already holds answers is refused, as a run is)."""
    output_dir = Path(output_dir)
    if (output_dir / ANSWERS).exists():
        raise EvaluationRefused(f"{output_dir} already holds answers: pick a new folder")
    rules = rule_set(scoring.rules or run_config.rules)
    official = read_judge_prompt(scoring.judge_prompt_from, rules)
    judge = build_judge(scoring.eval_model, scoring.eval_base_url, scoring, console, rules, official)
    write_run_record(output_dir, dataclasses.replace(
        run_config, rules=rules.name, judge_model=judge.model if judge else None,
        judge_base_url=judge.base_url if judge else None,
        judge_prompt=judge.prompt_origin if judge else official.origin() if official else None))
    by_turn = {t.get("interaction_id"): t for t in traces if isinstance(t, dict)}
    append_jsonl(output_dir / TRACES, [imported_trace(r, by_turn.get(r["interaction_id"])) for r in records])
    append_jsonl(output_dir / ANSWERS, records)
    return finish(scoring, output_dir, judge, console, [], rules, official)


def run_name(folder: Path, results_file: Path) -> str:
    """A run of an lmms-eval output folder by name: its results file's path below the folder,
    without `_results.json` (`<model folder>/<date>`, or `<date>`)."""
    return str(results_file.relative_to(folder))[: -len(RESULTS_GLOB) + 1]


def chosen_run(folder: Path, run: str | None) -> Path:
    """The results file of the one run in `folder`, or of the run named `run` (run_name, or its
    `<date>`); a folder of several runs without `run` is refused, naming them."""
    results_files = sorted(folder.rglob(RESULTS_GLOB), key=lambda path: (path.name, str(path)))
    if not results_files:
        raise EvaluationRefused(f"{folder} holds no lmms-eval results file ({RESULTS_GLOB}): a run that failed "
                                "writes none")
    names = {run_name(folder, path): path for path in results_files}
    if run is not None:
        found = [names[run]] if run in names else [path for name, path in names.items() if Path(name).name == run]
        if len(found) != 1:
            raise EvaluationRefused(f"--run {run}: {'no' if not found else 'more than one'} run of {folder} has that "
                                    f"name; its runs: {', '.join(names)}")
        return found[0]
    if len(names) > 1:
        raise EvaluationRefused(f"{folder} holds {len(names)} lmms-eval runs ({', '.join(names)}): pick one with "
                                "--run NAME")
    return results_files[0]


def lmms_eval_tasks(folder: Path, run: str | None = None) -> list[ImportedTask]:
    """The tasks of one run in an lmms-eval output folder (chosen_run) whose samples carry our
    turn records (TURNS_KEY): its results file (`<date>_results.json`, in a sub-folder named after
    the model where lmms-eval was given `pretrained=`) gives each task's dataset, rule set and
    judge (its task config's metadata, as the task read them) and the model that answered; its
    samples files share its `<date>`."""
    folder = Path(folder)
    latest = chosen_run(folder, run)
    results = json.loads(latest.read_text())
    run_started = latest.name.removesuffix(RESULTS_GLOB[1:])
    config = results.get("config") or {}
    model_name = f"{config.get('model')} ({config.get('model_args') or 'no model_args'})"
    model = f"lmms-eval model {model_name}"
    tasks = []
    for path in sorted(latest.parent.glob(f"{run_started}{SAMPLES_GLOB[1:]}")):
        name = path.stem.removeprefix(f"{run_started}_samples_")
        records, traces = [], []
        for line in path.read_text(encoding="utf-8").splitlines():
            turns = json.loads(line).get(TURNS_KEY) if line.strip() else None
            if turns:
                records += turns["records"]
                traces += [t for t in turns["traces"] if t]
        if not records:
            continue
        task_config = (results.get("configs") or {}).get(name) or {}
        described = dict((task_config.get("metadata") or {}).get("crag_mm") or {})
        scoring = ScoringSettings(**{f.name: described[f.name] for f in dataclasses.fields(ScoringSettings)
                                     if f.name in described})
        run_config = imported_run_config(
            dataset=described.get("dataset", "?"), dataset_type=described.get("dataset_type", "?"),
            split=described.get("split", "?"), revision=described.get("revision"), rules=scoring.rules or "kddcup2025",
            agent=model, turns=len(records), conversations=len({r["session_id"] for r in records}), task=name,
            model=model_name)
        tasks.append(ImportedTask(name, records, traces, run_config, scoring))
    if not tasks:
        raise EvaluationRefused(f"{folder} holds no samples of a CRAG-MM task (run lmms-eval with --log_samples "
                                "and a task of integrations/lmms_eval/tasks)")
    return tasks


def from_lmms_eval(folder: Path, output_dir: Path, console: Console, run: str | None = None,
                   **judge_options) -> list[EvaluationResult]:
    """Each CRAG-MM task of the lmms-eval output `folder` (of its run `run`, where it holds
    several) scored into `output_dir` (a sub-folder per task when the run holds several).
    `judge_options`: ScoringSettings fields that replace the task's own (a judge endpoint, the
    checkout of the official prompt)."""
    tasks = lmms_eval_tasks(folder, run)
    out = []
    for task in tasks:
        target = Path(output_dir) / task.name if len(tasks) > 1 else Path(output_dir)
        console.print(f"[bold blue]{task.name}[/bold blue]: {len(task.records)} turns from {folder}")
        given = {name: value for name, value in judge_options.items() if value is not None}
        scoring = dataclasses.replace(task.scoring, **given)
        out.append(score_turns(target, task.records, task.traces, task.run_config, scoring, console))
    return out

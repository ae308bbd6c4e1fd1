"""The generation loop: every turn of every conversation through the agent, saved as it goes.

After each batch the agent's traces, the batch's timings and then its answers are appended to
JSONL files in the output folder, each file in one write, so a run killed at any point (even
kill -9) loses at most the batch in flight. `--resume` reads those files back: turns already answered are not asked again,
their saved (truncated) answers feed later multi-turn histories, and the batches are rebuilt
exactly as in an uninterrupted run, so the final scores are the same.

An agent that raises, returns the wrong number of answers or a non-string gets "I don't know"
for every turn of that batch, with the error recorded, and the run goes on.
"""
from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path

from agents.base_agent import IDK_ANSWER, TURN_BUDGET_S
from evaluator.harness.batching import planned_batches
from evaluator.harness.dataset import Conversation, image_for_agent
from evaluator.harness.deadline_cuts import turn_budgets
from evaluator.harness.oracle import turn_oracle
from evaluator.scoring.truncate import Truncator

DIAGNOSTICS = "diagnostics.json"  # stage-wise figures against human stage labels (evaluator/scoring/diagnostics.py)
ANSWERS = "answers.jsonl"
TRACES = "traces.jsonl"
BATCHES = "batches.jsonl"
JUDGMENTS = "judgments.jsonl"


def read_jsonl(path: Path) -> list[dict]:
    """Every complete record of a JSONL file; a last line cut by a crash is skipped."""
    if not path.exists():
        return []
    records = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        try:
            records.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    return records


def append_jsonl(path: Path, records: list[dict]) -> None:
    """Append records as one write. A file whose last line a kill cut short gets a newline first,
    so the first appended record does not fuse with the cut line (and get skipped with it)."""
    if not records:
        return
    block = "".join(json.dumps(record, default=str) + "\n" for record in records).encode("utf-8")
    fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        size = os.fstat(fd).st_size
        if size and os.pread(fd, 1, size - 1) != b"\n":
            block = b"\n" + block
        while block:  # one write, unless the kernel takes it in parts
            block = block[os.write(fd, block):]
    finally:
        os.close(fd)


def latest_per_turn(records: list[dict], answered) -> list[dict]:
    """The last record of each interaction_id in `answered`, in the order each first appears:
    a batch killed after its traces were written and before its answers was asked again on
    resume and wrote its traces twice; a batch never answered left traces of no turn."""
    last = {r["interaction_id"]: r for r in records if r.get("interaction_id") in answered}
    return list(last.values())


def latest_per_batch(records: list[dict]) -> list[dict]:
    """The last record of each batch (by source folder, shard and number), in the order each first
    appears: a batch asked again after a kill wrote its record twice."""
    last = {(r.get("source"), r.get("shard"), r.get("batch")): r for r in records}
    return list(last.values())


def saved_answers(output_dir: Path) -> dict[str, dict]:
    """interaction_id -> the last saved answer record."""
    return {r["interaction_id"]: r for r in read_jsonl(output_dir / ANSWERS) if "interaction_id" in r}


def check_answers(answers, n: int) -> str | None:
    """Why a batch's return value is unusable, or None."""
    if not isinstance(answers, (list, tuple)):
        return f"agent returned {type(answers).__name__}, not a list of {n} strings"
    if len(answers) != n:
        return f"agent returned {len(answers)} answers for {n} queries"
    for i, answer in enumerate(answers):
        if not isinstance(answer, str):
            return f"answer {i} is {type(answer).__name__}, not str"
    return None


@dataclass
class GenerationStats:
    """What only the live run knows; everything else is read back from the saved files."""

    turns_reused: int = 0
    image_failures: list[str] = field(default_factory=list)


class ImageStore:
    """Each conversation's image, loaded when its first unanswered turn comes up and dropped
    after its last turn (the official iterator caches the same way)."""

    def __init__(self, ds, stats: GenerationStats):
        self.ds = ds
        self.stats = stats
        self.images: dict[int, object] = {}

    def get(self, conv: Conversation):
        """The conversation's image, or None when it cannot be loaded (its turns are then
        answered "I don't know" without asking the agent, and reported)."""
        if conv.index not in self.images:
            try:
                raw = self.ds[conv.index]["image"] if "image" in self.ds.column_names else None
                self.images[conv.index] = image_for_agent(raw, conv.image_url)
            except Exception as exc:  # noqa: BLE001 - unreachable URL, truncated or corrupt bytes
                self.stats.image_failures.append(f"{conv.session_id}: {type(exc).__name__}: {exc}")
                self.images[conv.index] = None
        return self.images[conv.index]

    def release(self, conv: Conversation) -> None:
        self.images.pop(conv.index, None)


def base_row(conv: Conversation, turn_idx: int, answer: str) -> dict:
    """The turn's columns up to `interaction_id_history`, in the official order."""
    turn = conv.turns[turn_idx]
    return {
        "session_id": conv.session_id,
        "interaction_id": turn.interaction_id,
        "turn_idx": turn_idx,
        "is_ego": conv.is_ego,
        "image_quality": conv.image_quality,
        "query_category": turn.query_category,
        "domain": turn.domain,
        "dynamism": turn.dynamism,
        "query": turn.query,
        "ground_truth": turn.ground_truth,
        "agent_response": answer,
        "total_turn_count": len(conv.turns),
        "interaction_id_history": [t.interaction_id for t in conv.turns[:turn_idx]],
    }


def answer_record(conv: Conversation, turn_idx: int, answer: str, raw_answer: str, error: str | None) -> dict:
    """A turn's record in answers.jsonl, what the outputs judge and score: its official columns up
    to the history (`answer`: cut to the judged length), its labels' names, the data's answer
    keys, its stage labels where it has them, the reply as the agent gave it, and the error."""
    turn = conv.turns[turn_idx]
    record = base_row(conv, turn_idx, answer)
    record.update({f"{field}_name": name for field, name in turn.labels.items()})
    record.update(ans_accepted=turn.ans_accepted, abstain_expected=turn.abstain_expected)
    if turn.stage_labels is not None:  # for the diagnostics (evaluator/scoring/diagnostics.py)
        record["stage_labels"] = turn.stage_labels
    record.update(raw_answer=raw_answer, error=error)
    return record


def history_for(conv: Conversation, turn_idx: int, answers: dict[str, str]) -> list[dict]:
    history = []
    for turn in conv.turns[:turn_idx]:
        history.append({"role": "user", "content": turn.query})
        history.append({"role": "assistant", "content": answers[turn.interaction_id]})
    return history


def _call_agent(agent, queries, images, histories, oracle=None) -> tuple[list[str], str | None, float, dict | None]:
    """(answers, error, wall ms, agent report) for one batch; never raises. `oracle`: one record
    per turn for an oracle run (evaluator/harness/oracle.py), else None and not passed."""
    if hasattr(agent, "last_batch_report"):
        try:
            agent.last_batch_report = None  # a stale report must not pass for this batch's
        except Exception:  # noqa: BLE001 - an agent that refuses the attribute has no report
            pass
    start = time.perf_counter()
    try:
        extra = {"oracle": oracle} if oracle is not None else {}
        answers = agent.batch_generate_response(queries, images, histories, **extra)
        error = check_answers(answers, len(queries))
    except Exception as exc:  # noqa: BLE001 - whatever the agent raises costs only this batch
        answers, error = None, f"agent raised {type(exc).__name__}: {str(exc)[:500]}"
    wall_ms = (time.perf_counter() - start) * 1000.0
    if error:
        answers = [IDK_ANSWER] * len(queries)
    report = getattr(agent, "last_batch_report", None)
    return list(answers), error, wall_ms, report if isinstance(report, dict) else None


# What an agent's engine calls may say about their tokens (agents/base_agent.py): "completion"
# is the answer text's tokens, "reasoning" the hidden reasoning a hosted model bills as output.
TOKEN_FIELDS = {"prompt": "prompt_tokens", "completion": "output_tokens", "reasoning": "reasoning_tokens"}


def _report_parts(report: dict | None, n: int) -> tuple[list[dict | None], int | None, dict | None, dict | None]:
    """(one trace per turn or None, number of engine calls, wall ms per stage, tokens per stage)
    from a report. Tokens per stage: {stage: {"requests", "prompt", "completion", "reasoning",
    "empty", "refused"}}, summed over the stage's calls."""
    if report is None:
        return [None] * n, None, None, None
    traces = report.get("traces")
    traces = list(traces) if isinstance(traces, list) else []
    traces = [t if isinstance(t, dict) else None for t in traces[:n]] + [None] * max(0, n - len(traces))
    calls = report.get("engine_calls")
    if not isinstance(calls, list):
        return traces, None, None, None
    stage_ms: dict[str, float] = {}
    stage_tokens: dict[str, dict[str, int]] = {}
    for call in calls:
        if isinstance(call, dict):
            stage = str(call.get("stage", "?"))
            try:
                wall = float(call.get("wall_ms") or 0.0)
                counts = {name: int(call.get(key) or 0) for name, key in TOKEN_FIELDS.items()}
                counts["requests"] = int(call.get("requests") or 0) if call.get("kind", "chat") == "chat" else 0
                counts["empty"] = int(call.get("empty_replies") or 0)
                counts["refused"] = len(call.get("refusals") or [])
            except (TypeError, ValueError):  # a malformed report must not stop the run
                wall, counts = 0.0, {}
            stage_ms[stage] = stage_ms.get(stage, 0.0) + wall
            totals = stage_tokens.setdefault(stage, {})
            for name, value in counts.items():
                totals[name] = totals.get(name, 0) + value
    return traces, len(calls), guarded_stage_ms(traces) or stage_ms, stage_tokens


def guarded_stage_ms(traces: list[dict | None]) -> dict[str, float] | None:
    """The batch's wall ms per stage as its own guards timed every stage, those without a model
    (perception, retrieval, a rule) too: a trace's `stage_ms` (each trace of a batch holds the
    batch's). None where no trace has one: the engine calls' time per stage stands in."""
    for trace in traces:
        timed = trace.get("stage_ms") if trace else None
        if isinstance(timed, dict) and timed and all(isinstance(v, (int, float)) for v in timed.values()):
            return {str(stage): float(ms) for stage, ms in timed.items()}
    return None


def generate(agent, ds, conversations: list[Conversation], batch_size: int, output_dir: Path,
             truncator: Truncator, *, resume: bool, progress: bool, shard: str | None = None,
             stop_after: int | None = None, oracle: str | None = None) -> GenerationStats:
    """Answer every turn of `planned_batches(conversations, batch_size, stop_after)`; `oracle`: the
    stage whose label each labelled turn is given (evaluator/harness/oracle.py)."""
    stats = GenerationStats()
    saved = saved_answers(output_dir) if resume else {}
    answers = {iid: r["agent_response"] for iid, r in saved.items()}
    batches = planned_batches(conversations, batch_size, stop_after)
    todo = sum(1 for b in batches for pos, t in b if conversations[pos].turns[t].interaction_id not in answers)
    stats.turns_reused = sum(len(b) for b in batches) - todo
    images = ImageStore(ds, stats)
    bar = progress_bar(todo, "Generating answers", progress)
    for number, batch in enumerate(batches):
        pending = [(pos, t) for pos, t in batch if conversations[pos].turns[t].interaction_id not in answers]
        if pending:
            _run_batch(agent, conversations, pending, number, batch_size, images, answers, truncator,
                       output_dir, stats, shard, oracle)
            bar.update(len(pending))
        for pos, t in batch:  # the official iterator drops a conversation's image after its last turn
            if t == len(conversations[pos].turns) - 1:
                images.release(conversations[pos])
    bar.close()
    return stats


def run_budget(traces: list[dict | None], batch_size: int) -> dict:
    """A batch record's own budget beside the competition's `budget_ms`: the per-turn budget the
    agent's traces say it ran under (`turn_budget_s`; None where they do not say, or differ) and
    that budget by the competition's rule, x batch size (`run_budget_ms`; None: no budget)."""
    budgets = turn_budgets([t for t in traces if t])
    seconds = budgets[0] if len(budgets) == 1 else None
    return {"turn_budget_s": seconds, "run_budget_ms": seconds * 1000.0 * batch_size if seconds else None}


def _run_batch(agent, conversations, pending, number, batch_size, images, answers, truncator,
               output_dir, stats, shard, oracle=None) -> None:
    convs = [conversations[pos] for pos, _ in pending]
    queries = [c.turns[t].query for c, (_, t) in zip(convs, pending)]
    failures_before = len(stats.image_failures)
    batch_images = [images.get(c) for c in convs]
    histories = [history_for(c, t, answers) for c, (_, t) in zip(convs, pending)]
    # Turns whose image could not be loaded are answered "I don't know" here; the rest go to the agent.
    asked = [i for i, image in enumerate(batch_images) if image is not None]
    labels = [c.turns[t].stage_labels for c, (_, t) in zip(convs, pending)]
    given = [turn_oracle(oracle, label, image.size if image is not None else None)
             for label, image in zip(labels, batch_images)]
    raw = [IDK_ANSWER] * len(pending)
    traces: list[dict | None] = [None] * len(pending)
    error, wall_ms, engine_calls, stage_ms, stage_tokens = None, 0.0, None, None, None
    if asked:
        got, error, wall_ms, report = _call_agent(agent, [queries[i] for i in asked],
                                                  [batch_images[i] for i in asked], [histories[i] for i in asked],
                                                  [given[i] for i in asked] if oracle else None)
        got_traces, engine_calls, stage_ms, stage_tokens = _report_parts(report, len(asked))
        for i, answer, trace in zip(asked, got, got_traces):
            raw[i], traces[i] = answer, trace
    cut = truncator.truncate(raw)
    answer_records, trace_records = [], []
    for i, (conv, (_, t), raw_answer, answer, trace) in enumerate(zip(convs, pending, raw, cut, traces)):
        turn_error = error if i in asked else "image could not be loaded; answered without asking the agent"
        row = answer_record(conv, t, answer, raw_answer, turn_error)
        answers[row["interaction_id"]] = answer
        answer_records.append({**row, "batch": number, "shard": shard, "batch_wall_ms": round(wall_ms, 3)})
        if trace is not None:
            oracle_field = {"oracle": given[i]} if oracle else {}
            trace_records.append({"interaction_id": row["interaction_id"], "session_id": conv.session_id,
                                  "turn_idx": t, **trace, **oracle_field})
    # answers last: a batch counts as done once its answers are saved, and a kill before that
    # leaves only records that the resumed run writes again (finalize keeps the last of each)
    append_jsonl(output_dir / TRACES, trace_records)
    append_jsonl(output_dir / BATCHES, [{
        "batch": number, "shard": shard, "turns": len(pending), "batch_size": batch_size,
        "wall_ms": round(wall_ms, 3), "budget_ms": TURN_BUDGET_S * 1000.0 * batch_size,
        **run_budget(traces, batch_size),
        "engine_calls": engine_calls, "stage_ms": stage_ms, "stage_tokens": stage_tokens, "error": error, "tokenizer": truncator.name,
        "image_errors": stats.image_failures[failures_before:],
    }])
    append_jsonl(output_dir / ANSWERS, answer_records)


def progress_bar(total: int, desc: str, enabled: bool):
    from tqdm import tqdm

    return tqdm(total=total, desc=desc, disable=not enabled, unit="turn")

"""An agent whose answers are a table handed to it as a setting, and a small dataset of
conversations whose turns are told apart by their queries: the runs that the tests of the tools
which read run folders (pairing, shards and their merge, resume, benchmarks' summaries) compare.

    --agent testkit.answer_table:AnswerTableAgent --set answers=TABLE.json [--set batch_size=N]
                                                  [--set exit_at_batch=K]

TABLE.json is {query: answer}, read when the agent is built; a query it lacks is answered "I
don't know". `exit_at_batch=K`: the process ends (os._exit(17)) when the agent is handed its K-th
batch, before answering it, as a process killed mid-run does (testkit/in_process.py stops an
in-process run there). Every answer is
scored by the exact-match rule alone (`--eval-model None`), so a table's outcomes are known by
hand: the ground truth -> correct, "I don't know" -> missed, anything else -> hallucinated.
Only the standard library at import; the dataset builder imports PIL and datasets.
"""
from __future__ import annotations

import json
import os
import time
from pathlib import Path

IDK = "I don't know"


class AnswerTableAgent:
    """Not built on BaseAgent: it answers the harness's optional questions itself
    (agents/base_agent.py): configure() reads its two settings, describe() records them."""

    @classmethod
    def configure(cls, *, profile, preset=None, settings=(), calibration=None):
        found = {"answers": None, "batch_size": "2", "exit_at_batch": "0"}
        for setting in settings:
            key, sep, value = setting.partition("=")
            if not sep or key.strip() not in found:
                raise ValueError(f"--set {setting!r}: AnswerTableAgent takes answers=PATH, batch_size=N and "
                                 "exit_at_batch=K")
            found[key.strip()] = value.strip()  # the last given wins, as for every agent
        if not found["answers"]:
            raise ValueError("AnswerTableAgent needs --set answers=PATH (a JSON object: query -> answer)")
        return {"answers": found["answers"], "batch_size": int(found["batch_size"]),
                "exit_at_batch": int(found["exit_at_batch"])}

    @classmethod
    def describe(cls, config) -> dict:
        return dict(config)

    def __init__(self, search_pipeline=None, config=None):
        self.config = config
        self.table = json.loads(Path(config["answers"]).read_text(encoding="utf-8"))
        self.last_batch_report = None
        self.batches = 0

    def get_batch_size(self) -> int:
        return self.config["batch_size"]

    def batch_generate_response(self, queries, images, message_histories):
        self.batches += 1
        if self.batches == self.config["exit_at_batch"]:
            os._exit(17)
        answers = [self.table.get(query, IDK) for query in queries]
        # each turn's trace names the query it answered, so a test can tell whose trace is whose,
        # the one stage's time is set, 100 ms a turn, so that a test can sum it by hand; it calls
        # no engine (an empty list: the harness reads the stage times only beside engine calls)
        # and the answers its history (the evaluator's message_histories) held, earliest first
        stage_ms = {"look_up": 100.0 * len(queries)}
        self.last_batch_report = {"traces": [
            {"answered_query": q, "answer": a, "stage_ms": stage_ms,
             "history_answers": [m["content"] for m in history if m["role"] == "assistant"]}
            for q, a, history in zip(queries, answers, message_histories)], "engine_calls": []}
        time.sleep(0.002)  # a batch takes some time, as any real one does (a ratio of agent seconds divides by it)
        return answers


def write_table(path: Path, answers: dict[str, str]) -> Path:
    path.write_text(json.dumps(answers), encoding="utf-8")
    return path


# session -> its turns [(interaction_id, query, ground truth)]; queries name their turn
def conversations(sessions: int, turns_each: int | list[int]) -> dict[str, list[tuple[str, str, str]]]:
    counts = turns_each if isinstance(turns_each, list) else [turns_each] * sessions
    return {f"s{s}": [(f"s{s}-{t}", f"question s{s}-{t}", f"gold s{s}-{t}") for t in range(counts[s])]
            for s in range(sessions)}


def build(folder: Path, convs: dict[str, list[tuple[str, str, str]]]) -> Path:
    """A CRAG-MM-schema dataset (testkit.scripted_agent.build_dataset) of `convs`, each with its
    image embedded. The first conversation is egocentric (no image_url); the others carry an
    image_url too, which the evaluator never fetches while the image is there, and so are not
    resized to the egocentric 960 x 1280 (most of a small run's time otherwise)."""
    from PIL import Image

    from testkit.scripted_agent import build_dataset

    rows = [dict(session_id=session, image=Image.new("RGB", (32, 24), (40 * i % 255, 90, 160)),
                 image_url=None if i == 0 else f"http://127.0.0.1:9/{session}.png", image_quality="normal",
                 turns=[(iid, q, gold, "misc", "simple", "static") for iid, q, gold in turns])
            for i, (session, turns) in enumerate(convs.items())]
    return build_dataset(folder, rows, form="list")


def run_args(dataset: Path, table: Path, out: Path, *extra: str) -> list[str]:
    """local_evaluation.py's flags for a run of the table's agent over `dataset`, scored by exact
    match, with no search."""
    return ["--dataset", str(dataset), "--dataset-type", "multi-turn", "--profile", "cpu",
            "--agent", "testkit.answer_table:AnswerTableAgent", "--set", f"answers={table}", "--search", "none",
            "--eval-model", "None", "--output-dir", str(out), "--no_progress", "--display-conversations", "0", *extra]


def run(main, dataset: Path, table: Path, out: Path, *extra: str, env: dict[str, str]):
    """local_evaluation.py with `run_args` in this process (local_evaluation_in_process); `main`
    is local_evaluation.main, handed in by the test (testkit sits below the entry points)."""
    return local_evaluation_in_process(main, run_args(dataset, table, out, *extra), env=env)


def local_evaluation_in_process(main, argv: list[str], *, env: dict[str, str]):
    """`local_evaluation.py ARGV` (`main`: local_evaluation.main) in this process
    (testkit.in_process.run_main), without report.html: its charts are most of a small run's time
    and none of what these runs are read for. Returns the CompletedProcess."""
    from unittest import mock

    from evaluator.report import html
    from testkit.in_process import run_main

    with mock.patch.object(html, "build_report", lambda output_dir: Path(output_dir) / "report.html (not built)"):
        return run_main(main, argv, env=env)

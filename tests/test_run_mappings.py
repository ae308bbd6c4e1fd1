"""Properties of the evaluator's mappings from positions to turns, over random shard counts, shard
orders, batch sizes, answers and interruptions (Hypothesis):

- shards and their merge: a run split into `--shard I/N` and merged back, the shards given in any
  order, gives each turn its own answer, trace and score: those the whole run gives it;
- resume: a run whose process died at a random batch, resumed, keeps each turn answered before
  the death with the answer it had then, and gives every other turn its own new one, each once;
- paired rows: each turn of one run is paired with its own turn of the other, whatever order
  either run lists its rows in.

The runs are local_evaluation.py in this process, with an agent that answers from a table
(testkit/answer_table.py), scored by exact match; every query names its turn, so a turn given
another's answer or trace shows. The dataset has conversations of one to four turns, so a batch
mixes turns of several conversations and a turn's position in its batch is not its turn index.
"""
from __future__ import annotations

import csv
import json
import tempfile
from pathlib import Path

import pytest
from hypothesis import Phase, given, settings
from hypothesis import strategies as st

import local_evaluation
from evaluator.scoring.intervals import paired_differences
from evaluator.scoring.scores import score_rows
from testkit import answer_table
from testkit.in_process import offline_env

# small enough for the default tier: each example of the run properties is a few runs of ~0.2 s,
# and a failing one is reported as found, not shrunk (shrinking reruns it for minutes)
PROPERTY = settings(max_examples=30, deadline=None, database=None)
RUN_PROPERTY = settings(PROPERTY, phases=[Phase.explicit, Phase.reuse, Phase.generate])
TURNS_PER_CONVERSATION = [3, 1, 2, 4, 1, 2]
CONVERSATIONS = answer_table.conversations(len(TURNS_PER_CONVERSATION), TURNS_PER_CONVERSATION)
TURNS = [turn for turns in CONVERSATIONS.values() for turn in turns]  # (interaction_id, query, gold)
# what differs between runs of the same answers by how they were batched, not by the turn
BATCHING = {"batch", "shard", "batch_wall_ms"}
SCORED = ("agent_response", "raw_answer", "is_correct", "is_miss", "is_hallucination", "after_two_wrong",
          "multi_turn_conversation_score", "error")


def answer_of(iid: str, outcome: str, tag: str = "") -> str:
    return {"right": f"gold {iid}", "wrong": f"{tag}not the gold of {iid}", "idk": answer_table.IDK}[outcome]


# the shard property's answers: every outcome, and two wrong in a row in s0 and s3 (the
# multi-turn rules' cut), so a turn's score depends on the turns before it in its conversation
FIXED = {"s0-0": "right", "s0-1": "wrong", "s0-2": "idk", "s1-0": "wrong", "s2-0": "idk", "s2-1": "right",
         "s3-0": "right", "s3-1": "idk", "s3-2": "wrong", "s3-3": "right", "s4-0": "right", "s5-0": "wrong",
         "s5-1": "right"}


class World:
    """The dataset, built once, and the runs over it, each made once and kept by what decides it."""

    def __init__(self, root: Path):
        self.root = root
        self.dataset = answer_table.build(root / "dataset", CONVERSATIONS)
        self.fixed = answer_table.write_table(root / "fixed.json", {
            f"question {iid}": answer_of(iid, FIXED[iid]) for iid, _, _ in TURNS})
        self.runs: dict[tuple, Path] = {}

    def fresh(self, name: str) -> Path:
        return Path(tempfile.mkdtemp(prefix=f"{name}-", dir=self.root))

    def run(self, table: Path, out: Path, *extra: str, expect: int = 0) -> Path:
        done = answer_table.run(local_evaluation.main, self.dataset, table, out, *extra, env=offline_env(self.root))
        assert done.returncode == expect, done.stdout[-2000:] + done.stderr[-2000:]
        return out

    def shard(self, index: int, count: int, batch_size: int) -> Path:
        key = ("shard", index, count, batch_size)
        if key not in self.runs:
            self.runs[key] = self.run(self.fixed, self.fresh("shard"), "--shard", f"{index}/{count}", "--generate-only",
                                      "--set", f"batch_size={batch_size}")
        return self.runs[key]

    def whole(self, batch_size: int) -> Path:
        key = ("whole", batch_size)
        if key not in self.runs:
            self.runs[key] = self.run(self.fixed, self.fresh("whole"), "--set", f"batch_size={batch_size}")
        return self.runs[key]

    def batch_count(self, batch_size: int) -> int:
        """How many batches a run of the dataset at this batch size serves."""
        key = ("batches", batch_size)
        if key not in self.runs:
            self.runs[key] = self.run(self.fixed, self.fresh("batches"), "--generate-only",
                                      "--set", f"batch_size={batch_size}")
        return len((self.runs[key] / "batches.jsonl").read_text().splitlines())

    def merge(self, folders: list[Path]) -> Path:
        out = self.fresh("merged")
        done = answer_table.local_evaluation_in_process(local_evaluation.main,
            ["merge", *map(str, folders), "--output-dir", str(out), "--eval-model", "None", "--no_progress",
             "--display-conversations", "0"], env=offline_env(self.root))
        assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
        return out


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    return World(tmp_path_factory.mktemp("mappings"))


def earlier_turns(iid: str) -> list[str]:
    """The interaction ids of the turns before `iid` in its conversation."""
    session, turn = iid.split("-")
    return [f"{session}-{t}" for t in range(int(turn))]


def by_turn(folder: Path, name: str) -> dict[str, dict]:
    """interaction_id -> its record in a run's JSONL file; a turn recorded twice fails."""
    records = [json.loads(line) for line in (folder / name).read_text().splitlines() if line.strip()]
    found = {r["interaction_id"]: r for r in records}
    assert len(found) == len(records), f"{name}: a turn recorded twice"
    return found


def scored_rows(folder: Path) -> dict[str, dict]:
    with open(folder / "turn_evaluation_results_all_extended.csv", newline="", encoding="utf-8") as f:
        return {row["interaction_id"]: row for row in csv.DictReader(f)}


@RUN_PROPERTY
@given(count=st.integers(1, 4), batch_size=st.sampled_from([1, 3]), data=st.data())
def test_shards_merged_in_any_order_give_each_turn_the_answer_trace_and_score_the_whole_run_gives_it(
        world, count, batch_size, data):
    order = data.draw(st.permutations(range(count)), label="shard order")
    merged = world.merge([world.shard(index, count, batch_size) for index in order])
    whole = world.whole(batch_size)
    answers, whole_answers = by_turn(merged, "answers.jsonl"), by_turn(whole, "answers.jsonl")
    assert set(answers) == {iid for iid, _, _ in TURNS}
    for iid, query, _ in TURNS:
        assert answers[iid]["agent_response"] == answer_of(iid, FIXED[iid])
        assert answers[iid]["query"] == query
        assert ({k: v for k, v in answers[iid].items() if k not in BATCHING}
                == {k: v for k, v in whole_answers[iid].items() if k not in BATCHING})
    traces = by_turn(merged, "traces.jsonl")
    for iid, query, _ in TURNS:
        assert (traces[iid]["answered_query"], traces[iid]["answer"]) == (query, answer_of(iid, FIXED[iid]))
        assert traces[iid]["history_answers"] == [answers[earlier]["agent_response"] for earlier in earlier_turns(iid)]
    rows, whole_rows = scored_rows(merged), scored_rows(whole)
    assert {iid: [rows[iid][k] for k in SCORED] for iid in rows} == {
        iid: [whole_rows[iid][k] for k in SCORED] for iid in whole_rows}
    assert (json.loads((merged / "scores_dictionary.json").read_text())["all"]
            == json.loads((whole / "scores_dictionary.json").read_text())["all"])


@RUN_PROPERTY
@given(first=st.lists(st.sampled_from(["right", "wrong", "idk"]), min_size=len(TURNS), max_size=len(TURNS)),
       second=st.lists(st.sampled_from(["right", "wrong", "idk"]), min_size=len(TURNS), max_size=len(TURNS)),
       batch_size=st.integers(1, 4), data=st.data())
def test_a_resumed_run_keeps_each_turn_answered_before_the_process_died_and_answers_each_other_turn_once(
        world, first, second, batch_size, data):
    died_at = data.draw(st.integers(1, world.batch_count(batch_size)), label="the batch the process died at")
    table = world.root / f"table-{died_at}-{batch_size}.json"
    answer_table.write_table(table, {f"question {iid}": answer_of(iid, outcome, "first: ")
                                     for (iid, _, _), outcome in zip(TURNS, first)})
    out = world.fresh("resume")
    args = ("--generate-only", "--set", f"batch_size={batch_size}")
    world.run(table, out, *args, "--set", f"exit_at_batch={died_at}", expect=17)
    kept = by_turn(out, "answers.jsonl") if (out / "answers.jsonl").exists() else {}
    assert {record["batch"] for record in kept.values()} == set(range(died_at - 1))  # the batches answered
    # the same run resumed (the same settings, so the same fingerprint); its table now says otherwise
    answer_table.write_table(table, {f"question {iid}": answer_of(iid, outcome, "second: ")
                                     for (iid, _, _), outcome in zip(TURNS, second)})
    world.run(table, out, *args, "--set", "exit_at_batch=0", "--resume", "--force")
    answers, traces = by_turn(out, "answers.jsonl"), by_turn(out, "traces.jsonl")
    assert set(answers) == set(traces) == {iid for iid, _, _ in TURNS}
    for (iid, query, _), before, after in zip(TURNS, first, second):
        expected = answer_of(iid, before, "first: ") if iid in kept else answer_of(iid, after, "second: ")
        assert (answers[iid]["query"], answers[iid]["agent_response"]) == (query, expected)
        assert (traces[iid]["answered_query"], traces[iid]["answer"]) == (query, expected)
        # its history: the answers its conversation's earlier turns have now, kept or new
        assert traces[iid]["history_answers"] == [answers[earlier]["agent_response"] for earlier in earlier_turns(iid)]
        if iid in kept:
            assert answers[iid] == kept[iid]


# --------------------------------------------------------------------------- paired rows
def rows_of(conversations: list[list[str]]) -> list[dict]:
    """Counted turn rows (evaluator.scoring.scores.score_rows over rows in the shape of a run's
    turn rows) of conversations given as their turns' outcomes."""
    rows = [{"session_id": f"c{c}", "interaction_id": f"c{c}-{t}", "turn_idx": t, "is_ego": c % 2 == 0,
             "is_correct": outcome == "right", "is_exact_match": outcome == "right", "is_miss": outcome == "idk",
             "is_semantically_correct": outcome == "right"}
            for c, turns in enumerate(conversations) for t, outcome in enumerate(turns)]
    return score_rows(rows)[0]


outcomes = st.sampled_from(["right", "wrong", "idk"])
conversation_shapes = st.lists(st.integers(1, 4), min_size=1, max_size=8)


def test_a_pair_of_one_turn_runs_has_no_difference_as_a_run_of_one_turn_has_no_interval():
    """A single turn's truthfulness is 0.0 by the official rule whatever its outcome, which the
    resampled accuracy - hallucination would not say."""
    right, wrong = rows_of([["right"]]), rows_of([["wrong"]])
    assert score_rows(right)[1]["truthfulness_score"] == score_rows(wrong)[1]["truthfulness_score"] == 0.0
    assert paired_differences(wrong, right) == {}


@PROPERTY
@given(shapes=conversation_shapes, data=st.data())
def test_a_paired_difference_pairs_each_turn_with_its_own_whatever_order_either_run_lists_them(shapes, data):
    a = rows_of([data.draw(st.lists(outcomes, min_size=n, max_size=n)) for n in shapes])
    b = rows_of([data.draw(st.lists(outcomes, min_size=n, max_size=n)) for n in shapes])
    found = paired_differences(a, b, resamples=200)
    if len(a) < 2:  # one turn: no spread, and its truthfulness is 0.0 by the official rule
        assert found == {}
        return
    shuffled_a, shuffled_b = data.draw(st.permutations(a)), data.draw(st.permutations(b))
    assert paired_differences(shuffled_a, shuffled_b, resamples=200) == found
    # system minus baseline: the runs swapped give every difference and interval negated
    swapped = paired_differences(shuffled_b, shuffled_a, resamples=200)
    for key, pair in found.items():
        assert swapped[key]["difference"] == pytest.approx(-pair["difference"])
        assert swapped[key]["interval"] == pytest.approx([-pair["interval"][1], -pair["interval"][0]])
    # each run's own score, as the scoring gives it over its own rows
    for key in ("accuracy", "hallucination_rate", "truthfulness_score"):
        assert found[key]["a"] == pytest.approx(score_rows(a)[1][key])
        assert found[key]["b"] == pytest.approx(score_rows(b)[1][key])


@PROPERTY
@given(shapes=conversation_shapes, data=st.data())
def test_a_run_paired_with_itself_in_another_order_differs_by_nothing(shapes, data):
    a = rows_of([data.draw(st.lists(outcomes, min_size=n, max_size=n)) for n in shapes])
    found = paired_differences(a, data.draw(st.permutations(a)), resamples=200)
    for pair in found.values():
        assert pair["difference"] == 0 and pair["interval"] == [0.0, 0.0]

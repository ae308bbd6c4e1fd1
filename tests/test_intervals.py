"""95% bootstrap intervals on the scores and paired run comparisons, on run folders the harness
itself finishes: answers saved with the runner's writer, scored by outputs.finalize (no judge, so
an answer equal to the gold one is correct, "I don't know" a miss and any other answer a
hallucination), compared with `python -m evaluator.report A B`."""
from __future__ import annotations

import json
import math
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from agents.base_agent import IDK_ANSWER
from evaluator.harness.outputs import finalize
from evaluator.harness.run_record import RUN_CONFIG
from evaluator.harness.runner import ANSWERS, append_jsonl
from evaluator.harness.score_files import INTERVALS_KEY
from evaluator.report.__main__ import main as report_main
from evaluator.scoring.intervals import BOOTSTRAP_RESAMPLES, BOOTSTRAP_SEED, score_intervals
from testkit.in_process import run_main

GOLD = "the gold answer"
ANSWER_OF = {"correct": GOLD, "missed": IDK_ANSWER, "hallucinated": "a wrong answer"}


def write_run(folder: Path, conversations: list[list[str]], *, rules: str = "kddcup2025",
              judge_model: str | None = None, prefix: str = "s") -> Path:
    """A finished run folder: conversation i holds turns with the given outcomes."""
    folder.mkdir(parents=True)
    records = []
    for i, outcomes in enumerate(conversations):
        session = f"{prefix}{i:05d}"
        for t, outcome in enumerate(outcomes):
            records.append({
                "session_id": session, "interaction_id": f"{session}-{t}", "turn_idx": t, "is_ego": i % 2 == 0,
                "image_quality": "normal", "query_category": "simple", "domain": "landmark" if i % 3 else "food",
                "dynamism": "static", "query": f"question {session}-{t}", "ground_truth": GOLD,
                "agent_response": ANSWER_OF[outcome], "total_turn_count": len(outcomes),
                "interaction_id_history": [f"{session}-{k}" for k in range(t)], "raw_answer": ANSWER_OF[outcome],
                "batch": 0, "shard": None, "error": None})
    append_jsonl(folder / ANSWERS, records)
    (folder / RUN_CONFIG).write_text(json.dumps({"rules": rules, "judge_model": judge_model,
                                                 "expected_turns": len(records)}))
    finalize(folder, None, progress=False)
    return folder


def saved(folder: Path) -> dict:
    return json.loads((folder / "scores_dictionary.json").read_text())


def width(interval: list[float]) -> float:
    return interval[1] - interval[0]


def test_every_turn_correct_gives_zero_width_intervals_everywhere(tmp_path):
    run = write_run(tmp_path / "run", [["correct"]] * 30 + [["correct"] * 3] * 10)
    scores = saved(run)
    assert list(scores)[:2] == ["all", "ego"]  # the official keys first and unchanged
    intervals = scores[INTERVALS_KEY]
    assert (intervals["resamples"], intervals["seed"], intervals["level"]) == (BOOTSTRAP_RESAMPLES, BOOTSTRAP_SEED, 0.95)
    for subset in ("all", "ego"):
        found = intervals[subset]
        assert found["accuracy"] == [1.0, 1.0] and found["missing"] == [0.0, 0.0]
        assert found["hallucination_rate"] == [0.0, 0.0] and found["truthfulness_score"] == [1.0, 1.0]
        assert found["mean_multi_turn_conversation_score"] == [1.0, 1.0]
    assert intervals["all"]["conversations"] == 40 and intervals["all"]["turns"] == 60
    summary = json.loads((run / "run_summary.json").read_text())
    assert summary[INTERVALS_KEY] == intervals
    for rows in summary["breakdowns"].values():
        for row in rows:
            assert row["accuracy_ci"] == [1.0, 1.0] and row["truthfulness_ci"] == [1.0, 1.0]


@pytest.mark.parametrize("n", [400, 4000])
def test_a_half_correct_half_hallucinated_run_has_the_textbook_width(tmp_path, n):
    # truthfulness is +1 or -1 per turn: sd 1, so the 95% interval is about +-1.96/sqrt(n)
    run = write_run(tmp_path / "run", [["correct"] if i % 2 else ["hallucinated"] for i in range(n)])
    found = saved(run)[INTERVALS_KEY]["all"]
    textbook = 2 * 1.96 / math.sqrt(n)
    assert width(found["truthfulness_score"]) == pytest.approx(textbook, rel=0.1)
    assert width(found["accuracy"]) == pytest.approx(textbook / 2, rel=0.1)
    assert found["truthfulness_score"][0] < 0.0 < found["truthfulness_score"][1]
    assert found["missing"] == [0.0, 0.0]


def test_the_intervals_match_a_plain_loop_over_the_extended_csv(tmp_path):
    rng = np.random.default_rng(7)
    outcomes = list(ANSWER_OF)
    conversations = [[outcomes[k] for k in rng.integers(0, 3, size=int(rng.integers(1, 6)))] for _ in range(80)]
    run = write_run(tmp_path / "run", conversations)
    table = pd.read_csv(run / "turn_evaluation_results_all_extended.csv", dtype={"session_id": str})
    sessions = sorted(table["session_id"].unique())
    groups = [table[table["session_id"] == s] for s in sessions]
    # each conversation's (turns, correct, hallucinated, conversation score), read from its rows once
    counted = [(len(g), int(g["is_correct"].sum()), int(g["is_hallucination"].sum()),
                float(g["multi_turn_conversation_score"].iloc[0])) for g in groups]
    draws = np.random.default_rng(BOOTSTRAP_SEED).integers(0, len(sessions), size=(BOOTSTRAP_RESAMPLES, len(sessions)))
    truth, conversation = [], []
    for draw in draws.tolist():
        picked = [counted[i] for i in draw]
        turns = sum(p[0] for p in picked)
        correct = sum(p[1] for p in picked)
        hallucinated = sum(p[2] for p in picked)
        truth.append((correct - hallucinated) / turns)
        conversation.append(sum(p[3] for p in picked) / len(picked))
    found = saved(run)[INTERVALS_KEY]["all"]
    assert found["truthfulness_score"] == pytest.approx(list(np.percentile(truth, [2.5, 97.5])), abs=1e-12)
    assert found["mean_multi_turn_conversation_score"] == pytest.approx(
        list(np.percentile(conversation, [2.5, 97.5])), abs=1e-12)


@pytest.mark.parametrize("rules, accuracy", [("kddcup2025", 0.0), ("crag-mm", 1 / 3)])
def test_the_resampled_turns_are_the_counted_ones(tmp_path, rules, accuracy):
    # two wrong turns then a right one: kddcup2025 counts the third as a miss (the cut), crag-mm
    # counts it correct; the conversation score (after the cut) is -2/3 under both
    run = write_run(tmp_path / "run", [["hallucinated", "hallucinated", "correct"]] * 20, rules=rules)
    found = saved(run)[INTERVALS_KEY]["all"]
    assert found["accuracy"] == pytest.approx([accuracy, accuracy])
    assert found["mean_multi_turn_conversation_score"] == pytest.approx([-2 / 3, -2 / 3])


def test_clustered_intervals_are_wider_when_a_conversations_turns_agree(tmp_path):
    # 100 conversations of 4 turns sharing one outcome: 100 independent draws, not 400
    run = write_run(tmp_path / "run", [["correct"] * 4 if i % 2 else ["missed"] * 4 for i in range(100)])
    clustered = saved(run)[INTERVALS_KEY]["all"]
    rows = pd.read_csv(run / "turn_evaluation_results_all_extended.csv", dtype={"session_id": str}).to_dict("records")
    naive = score_intervals([{**r, "session_id": r["interaction_id"]} for r in rows])
    assert width(clustered["accuracy"]) > 1.6 * width(naive["accuracy"])
    assert width(clustered["accuracy"]) == pytest.approx(2 * 1.96 * 0.5 / math.sqrt(100), rel=0.15)


def compare(tmp_path: Path, *runs: Path) -> tuple[str, str]:
    out = tmp_path / "compare.html"
    proc = run_main(report_main, [*map(str, runs), "--out", str(out)], columns=250)  # python -m evaluator.report
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return proc.stdout, out.read_text()


BASE = [["correct"]] * 20 + [["hallucinated"]] * 10 + [["missed"]] * 10 + [["correct", "correct"]] * 5


def test_a_paired_comparison_counts_the_known_flips_and_links_them(tmp_path):
    changed = [list(c) for c in BASE]
    for i in (20, 21, 22):
        changed[i] = ["correct"]  # hallucinated -> correct
    changed[0] = ["missed"]  # correct -> missed
    changed[30] = ["hallucinated"]  # missed -> hallucinated
    a = write_run(tmp_path / "a", BASE)
    b = write_run(tmp_path / "b", changed)
    stdout, page = compare(tmp_path, a, b)
    assert "Flip table" in stdout and "5 turns flipped" in stdout and "s00020-0: hallucinated -> correct" in stdout
    flips = dict(re.findall(r'data-flip="(\w+-\w+)"[^>]*>.*?<td class="num">(\d+)</td>', page))
    assert flips == {"hallucinated-correct": "3", "correct-missed": "1", "missed-hallucinated": "1",
                     "correct-correct": "29", "hallucinated-hallucinated": "7", "missed-missed": "9",
                     "correct-hallucinated": "0", "hallucinated-missed": "0", "missed-correct": "0"}
    # accuracy +2 turns of 50, hallucination -2 of 50: truthfulness +4/50
    accuracy = re.search(r'data-metric="accuracy">.*?data-subset="all">([^<]+)<', page, re.S).group(1)
    truth = re.search(r'data-metric="truthfulness_score">.*?data-subset="all">([^<]+)<', page, re.S).group(1)
    assert (accuracy, truth) == ("+4.0 pts", "+0.0800")
    # each flipped turn links to its page in each run's report_turns/, and the anchor is there
    links = re.findall(r'<a href="([^"#]+)#turn-([^"]+)"', page)
    assert len(links) == 10
    for href, iid in links:
        target = (tmp_path / href).resolve()
        assert target.exists() and f'id="turn-{iid}"' in target.read_text()


def test_identical_runs_differ_by_exactly_zero(tmp_path):
    from evaluator.report.html import load_comparison

    a = write_run(tmp_path / "a", BASE)
    b = write_run(tmp_path / "b", BASE)
    _, (pair,) = load_comparison([a, b], tmp_path / "compare.html")
    assert pair.refused is None and pair.flipped == []
    # no judge in these runs: their 10 wrong answers are unjudged, which the comparison says
    assert [f.split(":")[1].split(" turns")[0] for f in pair.flags] == [" 10", " 10"]
    for d in pair.differences["all"].values():
        assert d["difference"] == 0.0 and d["interval"] == [0.0, 0.0]


def test_runs_that_cannot_be_paired_are_refused_in_one_line(tmp_path):
    a = write_run(tmp_path / "a", BASE)
    other_turns = write_run(tmp_path / "other-turns", BASE[:-1])
    other_rules = write_run(tmp_path / "other-rules", BASE, rules="crag-mm")
    other_judge = write_run(tmp_path / "other-judge", BASE, judge_model="gpt-4o")
    stdout, page = compare(tmp_path, a, other_turns, other_rules, other_judge)
    refusals = [line for line in stdout.splitlines() if line.startswith("not compared")]
    assert len(refusals) == 2
    assert "different turns (0 only in" in refusals[0] and "2 only in" in refusals[0]
    assert "--rules crag-mm" in refusals[1]
    assert page.count('class="notice refused"') == 2 and page.count('class="paired-table"') == 1
    assert "flag: judged differently" in stdout  # compared, but flagged


def test_the_console_and_the_report_show_the_saved_intervals(tmp_path):
    from rich.console import Console

    from evaluator.report.html import build_report
    from evaluator.report.terminal import print_report

    run = write_run(tmp_path / "run", [["correct"], ["missed"], ["hallucinated"], ["correct", "hallucinated"]] * 15)
    low, high = saved(run)[INTERVALS_KEY]["all"]["truthfulness_score"]
    console = Console(record=True, width=200)
    print_report(console, finalize(run, None, progress=False), 0)
    text = console.export_text()
    assert "2000 resamples" in text and f"[{low:.4f}, {high:.4f}]" in text
    page = build_report(run, images=False).read_text()
    shown = re.search(r'data-interval="all-truthfulness_score">([^<]+)<', page).group(1)
    assert shown == f"[{low:.4f}, {high:.4f}]"
    # a run scored before intervals were saved: the report computes the same ones from its rows
    scores = saved(run)
    del scores[INTERVALS_KEY]
    (run / "scores_dictionary.json").write_text(json.dumps(scores))
    again = build_report(run, images=False).read_text()
    assert re.search(r'data-interval="all-truthfulness_score">([^<]+)<', again).group(1) == shown


def rewritten_run(folder: Path, conversations: list[list[str]], change) -> Path:
    """write_run, then every saved answer record passed through `change`, then scored again."""
    from evaluator.harness.runner import read_jsonl

    write_run(folder, conversations)
    records = [change(r) for r in read_jsonl(folder / ANSWERS)]
    (folder / ANSWERS).write_text("".join(json.dumps(r) + "\n" for r in records))
    finalize(folder, None, progress=False)
    return folder


def test_the_same_turns_grouped_or_marked_otherwise_are_refused(tmp_path):
    a = write_run(tmp_path / "a", BASE)
    regrouped = rewritten_run(tmp_path / "regrouped", BASE,  # turn s00001-0 moved into conversation s00000
                              lambda r: {**r, "session_id": "s00000"} if r["session_id"] == "s00001" else r)
    reviewed = rewritten_run(tmp_path / "reviewed", BASE,  # the same turns, another egocentric subset
                             lambda r: {**r, "is_ego": not r["is_ego"]} if r["session_id"] == "s00003" else r)
    stdout, page = compare(tmp_path, a, regrouped, reviewed)
    refusals = [line for line in stdout.splitlines() if line.startswith("not compared")]
    assert len(refusals) == 2 and page.count('class="notice refused"') == 2
    assert "put the same turns in different conversations" in refusals[0]
    assert "mark different turns egocentric" in refusals[1]


def test_the_sign_of_a_difference_follows_the_order_of_the_runs(tmp_path):
    from evaluator.report.html import load_comparison

    better = [["correct"]] * 30 + [["missed"]] * 10 + [["correct", "correct"]] * 5  # the 10 hallucinations fixed
    a, b = write_run(tmp_path / "a", BASE), write_run(tmp_path / "b", better)
    _, (forward,) = load_comparison([a, b], tmp_path / "forward.html")
    _, (backward,) = load_comparison([b, a], tmp_path / "backward.html")
    for metric, sign in (("accuracy", 1), ("hallucination_rate", -1), ("truthfulness_score", 1)):
        there, back = forward.differences["all"][metric], backward.differences["all"][metric]
        assert sign * there["difference"] > 0 and back["difference"] == pytest.approx(-there["difference"])
        assert back["interval"] == pytest.approx([-there["interval"][1], -there["interval"][0]], abs=1e-9)

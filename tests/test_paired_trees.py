"""benchmarks/paired_trees.py: each run's row gives its own right / wrong / abstained counts and
stage seconds, the rounds alternate which tree runs first, and each round's summary counts the
turns whose final answer is the same at both trees.

`main` runs in this process. Its runs are `local_evaluation.py` processes at each tree; here each
is local_evaluation.main in this process (testkit/answer_table.py), standing in for the process,
so both trees are this checkout and differ by their `--set answers=TABLE`, as `--this-set` gives
"this" tree's runs a setting the base's lack. Scored by exact match: known by hand.
"""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import local_evaluation
from agents.profiles import REPO_ROOT
from benchmarks import paired_trees
from testkit import answer_table
from testkit.in_process import offline_env

# six one-turn conversations; base: 3 right, 2 wrong, 1 abstained; this: 2 right, 1 wrong,
# 3 abstained; the same final answer on s0-0 and s1-0 (right), s3-0 (the same wrong one) and
# s5-0 (abstained)
BASE = {"question s0-0": "gold s0-0", "question s1-0": "gold s1-0", "question s2-0": "gold s2-0",
        "question s3-0": "a wrong one", "question s4-0": "another wrong one"}
THIS = {"question s0-0": "gold s0-0", "question s1-0": "gold s1-0", "question s3-0": "a wrong one"}


def test_each_run_row_has_its_own_counts_the_rounds_alternate_and_each_round_counts_the_same_answers(
        tmp_path, monkeypatch, capsys):
    dataset = answer_table.build(tmp_path / "dataset", answer_table.conversations(6, 1))
    base_table = answer_table.write_table(tmp_path / "base.json", BASE)
    this_table = answer_table.write_table(tmp_path / "this.json", THIS)
    base_tree = tmp_path / "base-tree"
    base_tree.mkdir()
    ran = []

    def local_evaluation_at(command, *, cwd, check, stdout, stderr):
        assert command[:2] == [sys.executable, "local_evaluation.py"] and check
        ran.append(Path(cwd))
        done = answer_table.local_evaluation_in_process(local_evaluation.main, command[2:], env=offline_env(tmp_path))
        if done.returncode:
            raise subprocess.CalledProcessError(done.returncode, command, done.stdout, done.stderr)
        return done

    monkeypatch.setattr(paired_trees, "subprocess", SimpleNamespace(run=local_evaluation_at, DEVNULL=subprocess.DEVNULL))
    every_run = ["--dataset", str(dataset), "--profile", "cpu", "--agent", "testkit.answer_table:AnswerTableAgent",
                 "--set", f"answers={base_table}", "--search", "none", "--eval-model", "None",
                 "--display-conversations", "0"]
    paired_trees.main([str(base_tree), "--rounds", "2", "--work", str(tmp_path / "work"),
                       "--this-set", f"answers={this_table}", "--", *every_run])
    out = capsys.readouterr().out.splitlines()

    assert ran == [base_tree, REPO_ROOT, REPO_ROOT, base_tree]  # round 2 starts with this tree
    assert sorted(p.name for p in (tmp_path / "work").iterdir()) == ["0-base", "0-this", "1-base", "1-this"]
    assert out[1] == f"base {base_tree}, this {REPO_ROOT} answers={this_table}, runs in {tmp_path / 'work'}"
    rows = [line.strip("|").split(" | ") for line in out[4:8]]
    assert [(r[0].strip(), r[1]) for r in rows] == [("1", "base"), ("1", "this"), ("2", "this"), ("2", "base")]
    for row in rows:
        # 100 ms a turn of the stage look_up, summed over the run's batches
        assert row[4] == "look_up 0.6"
        assert re.fullmatch(r"\d+%", row[5]) and (row[6], row[7]) == ("0", "0")
        assert row[8] == ("3 / 2 / 1" if row[1] == "base" else "2 / 1 / 3")
    for line, index in zip(out[8:10], (1, 2)):
        assert re.fullmatch(rf"round {index}: this / base wall \d+\.\d\d, agent \d+\.\d\d; same final answer 4/6", line)
    assert re.fullmatch(r"all rounds: this / base wall \d+\.\d\d, agent \d+\.\d\d", out[10])

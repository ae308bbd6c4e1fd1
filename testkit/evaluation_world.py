"""A hand-made multi-turn dataset and local_evaluation.py run over it, in this process
(run_in_process) or in a subprocess (run_cli), for the tests of the evaluator end to end
(tests/test_local_evaluation.py, tests/full/test_local_evaluation.py, tests/full/test_workers.py;
the fixtures `world` and `full_run` in tests/conftest.py build it).

The scripted agent's answers are fixed (CONVERSATIONS), the judge is a scripted server on
127.0.0.1 (markers [yes]/[no]/[fail]/[flaky] in an answer decide its verdict), so every score is
known by hand.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from agents.profiles import REPO_ROOT
from testkit.in_process import run_main

# the exit code of a run whose judge left a turn without a verdict: every run over s3-1 ("[fail]")
UNDECIDED = 3
SECRET = "sk-test-never-written-4242"
LONG_APPLES = "[yes] " + "apple " * 100
LONG_CHEESE = "[flaky] cheddar cheese" + " and more words" * 40

# session, ego?, image source, quality, [(interaction_id, query, ground truth, domain, category, answer)]
CONVERSATIONS = [
    ("s1-ego", "embedded", "normal", [
        ("s1-0", "s1q0", "Paris", "geo", "simple", "  paris "),          # exact match
        ("s1-1", "s1q1", "blue", "color", "simple", "[no] it is red"),   # judged wrong
        ("s1-2", "s1q2", "42", "math", "reasoning", "I don't know")]),    # miss
    ("s2-url", "url", "low", [
        ("s2-0", "s2q0", "Lion", "animal", "simple", "[no] a zebra"),    # judged wrong
        ("s2-1", "s2q1", "savanna", "animal", "simple", "Sorry, I don't know."),  # miss -> cut
        ("s2-2", "s2q2", "tiger", "animal", "comparison", "Tiger"),      # exact, cut -> miss
        ("s2-3", "s2q3", "stripes", "animal", "simple", "[yes] it has stripes")]),  # cut -> miss
    ("s3-web", "embedded+url", "normal", [
        ("s3-0", "s3q0", "Eiffel Tower", "place", "simple", "[yes] the Eiffel tower"),  # judged right
        ("s3-1", "s3q1", "1889", "place", "reasoning", "[fail] 1887")]),  # judge fails -> hallucination
    ("s4-ego", "embedded", "low", [
        ("s4-0", "s4q0", "apple", "food", "simple", LONG_APPLES)]),      # truncated, judged right
    ("s5-ego", "embedded", "normal", [
        ("s5-0", "s5q0", "a", "misc", "simple", "I don't know"),
        ("s5-1", "s5q1", "b", "misc", "simple", "i DON'T know either"),  # two misses -> cut
        ("s5-2", "s5q2", "Yes", "misc", "simple", "yes")]),              # exact, cut -> miss
    ("s6-url", "url", "normal", [
        ("s6-0", "s6q0", "cheese", "food", "simple", LONG_CHEESE),       # 2 x HTTP 500, then right
        ("s6-1", "s6q1", "moon ", "space", "simple", "Moon")]),          # exact match
]


def write_script(world, name, **extra) -> Path:
    path = world["root"] / f"{name}.json"
    script = {"answers": world["answers"], "batch_size": 2, "log": str(world["root"] / f"{name}.log.jsonl"),
              "deadline_cut_queries": ["s4q0"], **extra}
    path.write_text(json.dumps(script))
    return path


def run_env(world, script: Path | None, key: str | None, env_extra: dict | None) -> dict[str, str]:
    """What a run over the world adds to the environment (OPENAI_API_KEY and CRUISE_* are dropped first)."""
    env = dict(HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1", HF_DATASETS_CACHE=str(world["root"] / "hf-datasets"),
               CRUISE_CACHE=str(world["root"] / "cache"),
               SCRIPTED_AGENT_SCRIPT=str(script or world["root"] / "no-such-script.json"), **(env_extra or {}))
    if key:
        env["OPENAI_API_KEY"] = key
    return env


def run_argv(world, args, *, judge: bool, judge_url: str | None, judge_max_wait: str) -> list[str]:
    """judge_max_wait "0": every failed judge request costs an attempt (the tests' request counts
    rely on it); the rate-limit test passes its own."""
    judge_args = ["--eval-model", "judge-model", "--eval-base-url", judge_url or world["server"].url] if judge else []
    return [*args, *judge_args, "--judge-retry-wait", "0.01", "--judge-max-wait", judge_max_wait, "--no_progress",
            "--display-conversations", "3"]


def local_evaluation_process(argv: list[str], env: dict[str, str]) -> subprocess.CompletedProcess:
    """`python local_evaluation.py ARGV` in a process of its own, with this environment less
    OPENAI_API_KEY and CRUISE_* (each run chooses its own), plus `env`."""
    full = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY",) and not k.startswith("CRUISE_")}
    full.update(PYTHONPATH=str(REPO_ROOT), **env)
    return subprocess.run([sys.executable, "local_evaluation.py", *argv], cwd=REPO_ROOT, env=full,
                          capture_output=True, text=True, timeout=240)


def run_cli(world, args, script: Path | None, *, key: str | None = SECRET, judge=True, expect_rc=0,
            judge_url: str | None = None, judge_max_wait="0", env_extra: dict | None = None):
    """local_evaluation.py in a subprocess (the full tier: workers, a real interpreter's exit)."""
    proc = local_evaluation_process(run_argv(world, args, judge=judge, judge_url=judge_url,
                                             judge_max_wait=judge_max_wait), run_env(world, script, key, env_extra))
    assert proc.returncode == expect_rc, proc.stdout[-3000:] + proc.stderr[-3000:]
    return proc


def run_in_process(main, world, args, script: Path | None, *, key: str | None = SECRET, judge=True, expect_rc=0,
                   judge_url: str | None = None, judge_max_wait="0", env_extra: dict | None = None):
    """The same run as run_cli, in this process: `main` is local_evaluation.main (testkit/in_process.py)."""
    proc = run_main(main, run_argv(world, args, judge=judge, judge_url=judge_url, judge_max_wait=judge_max_wait),
                    env=run_env(world, script, key, env_extra))
    assert proc.returncode == expect_rc, proc.stdout[-3000:] + proc.stderr[-3000:]
    return proc


def generation_args(world, out: Path, *extra):
    return ["--dataset", str(world["dataset"]), "--dataset-type", "multi-turn", "--profile", "cpu",
            "--agent", "testkit.scripted_agent:ScriptedAgent", "--search", "testkit.scripted_agent:make_fake_search",
            "--suppress-web-search-api", "--set", "k_recall=7", "--output-dir", str(out), *extra]


def read_scores(out: Path) -> dict:
    return json.loads((out / "scores_dictionary.json").read_text())


def read_log(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]

"""The pre-flight on the run its flags name: the model that loads and answers is the one named,
and the dry run is judged by the agent's own budget and by the competition's. A broken
checkpoint goes through the real load path (CruiseAgent, the transformers engine); the dry run's
verdicts are read off a fake clock. A model that loads and runs the whole chain:
tests/full/test_submission.py.
"""
from __future__ import annotations

import re

import pytest

from agents.base_agent import TURN_BUDGET_S
from evaluator.harness.resolved import resolve_settings
from evaluator.settings import EvaluationSettings
from tools import preflight


@pytest.fixture
def offline_env(monkeypatch):
    for key in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_DATASETS_OFFLINE", "CRUISE_PROFILE"):
        monkeypatch.setenv(key, "")  # restored afterwards: the pre-flight sets them itself


def rows(printed: str) -> dict[str, tuple[str, str]]:
    found = {}
    for line in printed.splitlines():
        match = re.match(r"^(PASS|FAIL|SKIP)  (.+?)\s{2,}(.*)$", line)
        if match:
            found[match.group(2)] = (match.group(1), match.group(3))
    return found


def test_a_broken_checkpoint_of_a_known_family_fails_naming_its_folder(tmp_path, offline_env, capsys):
    """A folder named like a Qwen2.5-VL checkpoint whose config.json is cut short: its family's
    stack is chosen by the name, the engine tries to load it, and the run fails on that line."""
    folder = tmp_path / "Qwen2.5-VL-3B-Instruct"
    folder.mkdir()
    (folder / "config.json").write_text('{"model_type": "qwen2_5_vl", "hidden_size": ')
    code = preflight.main(["--profile", "cpu", "--model-name", str(folder), "--search", "none"])
    printed = capsys.readouterr().out
    assert code == 1, printed
    verdict, detail = rows(printed)["agent load"]
    assert verdict == "FAIL" and detail.startswith(f"--model-name {folder} did not load: OSError: ")
    assert str(folder / "config.json") in detail  # the loader's own first line says which file
    assert rows(printed)["dry run"] == ("SKIP", "not run: the agent did not load")
    assert printed.strip().splitlines()[-1] == "preflight: FAILED: agent load"


def test_a_flag_the_run_cannot_take_stops_the_pre_flight_in_one_line(offline_env, capsys):
    assert preflight.main(["--profile", "cpu", "--set", "no_such_field=1"]) == 2
    printed = capsys.readouterr().out
    assert printed.startswith("preflight: --set 'no_such_field=1': unknown config field 'no_such_field'") and printed.count("\n") == 1


class FakeClock:
    def __init__(self):
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


class TimedAgent:
    """Answers a batch in `seconds` of the fake clock; its one model call names `model`."""

    def __init__(self, clock: FakeClock, seconds: float, model: str):
        self.clock, self.seconds, self.model = clock, seconds, model

    def batch_generate_response(self, queries, images, histories):
        self.clock.now += self.seconds
        self.last_batch_report = {"engine_calls": [{"stage": "answer", "kind": "chat", "requests": len(queries),
                                                    "wall_ms": 1000.0 * self.seconds, "model": self.model}]}
        return ["I don't know" for _ in queries]


BATCH = (["q1", "q2"], [None, None], [[], []])  # two turns: the competition gives 2 x 10 s


def dry_run(seconds: float, *settings: str, model: str = "smollm2", model_name: str | None = None):
    run = resolve_settings(EvaluationSettings(profile="cpu", set=settings, model_name=model_name))
    clock = FakeClock()
    return preflight.check_dry_run(TimedAgent(clock, seconds, model), BATCH, run, clock)


@pytest.mark.parametrize("seconds, turn_budget_s, over", [
    (10.0, 5, []),  # exactly the agent's 2 x 5 s
    (10.5, 5, ["OVER the agent's budget (10.5 s > 10 s)"]),  # within the competition's 20 s
    (20.0, 30, []),  # exactly the competition's 2 x 10 s
    (20.5, 30, ["OVER the competition's budget (20.5 s > 20 s)"]),  # within the agent's 60 s
    (20.5, 0, ["OVER the competition's budget (20.5 s > 20 s)"]),  # 0: the agent sets none
    (31.0, 15, ["OVER the competition's budget (31.0 s > 20 s)", "OVER the agent's budget (31.0 s > 30 s)"]),
])
def test_the_dry_run_is_judged_by_the_agents_own_budget_and_the_competitions(seconds, turn_budget_s, over):
    check = dry_run(seconds, f"turn_budget_s={turn_budget_s}")
    assert check.ok is not over
    assert check.detail.startswith("; ".join(over) + ": " if over else f"2 answers in {seconds:.1f} s")
    agents_own = (f"the agent's {2 * turn_budget_s:g} s (turn_budget_s {turn_budget_s:g})" if turn_budget_s
                  else "the agent sets no budget of its own")
    assert f"budgets: {agents_own}, the competition's {2 * TURN_BUDGET_S:g} s ({TURN_BUDGET_S:g} s a turn)" in check.detail


def test_the_dry_run_says_which_model_answered_and_fails_when_the_named_one_did_not(tmp_path):
    named = str(tmp_path / "Qwen2.5-VL-3B-Instruct")
    answered = dry_run(1.0, model=named, model_name=named)
    assert answered.ok and f"; ran {named} (answer)" in answered.detail
    other = dry_run(1.0, model="smollm2", model_name=named)
    assert other.ok is False
    assert other.detail.startswith(f"the named model {named} answered none of its calls: 2 answers")
    assert "; ran smollm2 (answer)" in other.detail


def test_each_stages_share_of_the_competitions_budget_is_its_seconds_over_the_batchs():
    """The answer stage took 10 s of a two-turn batch's 20 s: 50%, from its calls' milliseconds."""
    check = dry_run(10.0, "turn_budget_s=30")
    assert check.detail.endswith("; of the competition's budget: answer 50%")


class SizedAgent:
    def __init__(self, size):
        self.size = size

    def get_batch_size(self):
        return self.size


@pytest.mark.parametrize("size, ok", [(0, False), (1, True), (16, True), (17, False), (8.0, False)])
def test_a_batch_size_passes_from_one_to_sixteen_both_included(size, ok):
    assert preflight.check_batch_size(SizedAgent(size)) == (size, preflight.Check(
        "batch size", ok, f"{size}" + ("" if ok else ": must be within 1..16")))

"""Two evaluations of the mini benchmark with different settings, as `evaluator.evaluate` takes
them and as local_evaluation.py's flags: tests/test_library.py runs both calls in one process,
tests/full/test_library.py also runs the command line in processes of its own. The agent is
testkit's ScriptedAgent; each run gets its own script, whose log records every batch with the
settings the agent was built with (`k_recall` of its --set)."""
from __future__ import annotations

import json
from pathlib import Path

from agents.profiles import REPO_ROOT
from evaluator.harness.dataset import load_split, read_conversations
from testkit.evaluation_world import read_log
from testkit.in_process import offline_env

MINI = REPO_ROOT / "data" / "crag-mm-mini"
AGENT = "testkit.scripted_agent:ScriptedAgent"
# files whose every byte follows from the settings and the agent's answers (the rest hold times or paths)
SAME_BYTES = ("scores_dictionary.json", "turn_evaluation_results_all.csv", "turn_evaluation_results_ego.csv",
              "turn_evaluation_results_all_extended.csv", "turn_evaluation_results_ego_extended.csv")
# what each run's agent must have been built with: its --set's k_recall (None: not set)
K_RECALL = (None, "3")


def first_turns(dataset_type: str, n: int):
    ds, _, _ = load_split(str(MINI / dataset_type), None, "validation")
    return read_conversations(ds, n)


def two_settings() -> list[dict]:
    """Single-turn with the defaults, then multi-turn with `set=["k_recall=3"]` and other rules."""
    common = dict(profile="cpu", agent=AGENT, search="none", eval_model="None", no_progress=True,
                  display_conversations=0, exact_conversations=True)
    return [dict(common, dataset_type="single-turn", dataset=str(MINI / "single-turn"), num_conversations=4),
            dict(common, dataset_type="multi-turn", dataset=str(MINI / "multi-turn"), num_conversations=3,
                 set=["k_recall=3"], rules="crag-mm")]


def run_env(root: Path, name: str) -> dict[str, str]:
    """The environment of run `name`: offline, with a script of its own whose log is `root/name.log`.
    The first two single-turn conversations are answered with their ground truth, the rest "I don't know"."""
    answers = {c.turns[0].query: c.turns[0].ground_truth for c in first_turns("single-turn", 2)}
    script = root / f"{name}.json"
    script.write_text(json.dumps({"answers": answers, "batch_size": 2, "log": str(root / f"{name}.log")}))
    return {**offline_env(root), "SCRIPTED_AGENT_SCRIPT": str(script)}


def agent_k_recall(root: Path, name: str) -> set:
    """The k_recall the agent of run `name` held at each of its batches."""
    return {call["k_recall"] for call in read_log(root / f"{name}.log")}


def local_evaluation_flags(options: dict) -> list[str]:
    """The flags as a user types them (written out here, not by the code under test)."""
    argv = []
    for name, value in options.items():
        flag = "--no_progress" if name == "no_progress" else "--" + name.replace("_", "-")
        if value is True:
            argv.append(flag)
        elif isinstance(value, list):
            for item in value:
                argv += [flag, item]
        else:
            argv += [flag, str(value)]
    return argv


def same_run(library: Path, cli: Path, i: int) -> None:
    """Assert that two output folders of run `i` hold the same files, byte for byte where they follow
    from the settings and the answers, and the same run_config.json but for the folder."""
    assert sorted(p.name for p in library.iterdir()) == sorted(p.name for p in cli.iterdir())
    for name in SAME_BYTES:
        assert (library / name).read_bytes() == (cli / name).read_bytes(), (i, name)
    answers = [[{k: v for k, v in json.loads(line).items() if k != "batch_wall_ms"}
                for line in (folder / "answers.jsonl").read_text().splitlines()] for folder in (library, cli)]
    assert answers[0] == answers[1]
    configs = [json.loads((folder / "run_config.json").read_text()) for folder in (library, cli)]
    for config, folder in zip(configs, (library, cli)):
        assert config["args"].pop("output_dir") == str(folder)
    assert configs[0] == configs[1]
    # what the run recorded of the agent's settings is what it was built with
    assert configs[0]["agent_description"]["settings"] == ({} if K_RECALL[i] is None else {"k_recall": K_RECALL[i]})

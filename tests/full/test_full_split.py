"""The evaluator at a size where the details matter, on the synthetic full split
(minibench/full_split.py): a run of 640 turns killed with SIGKILL mid-run and resumed, its report
in headless Chromium, and the output files a kill leaves behind. The killed runs are subprocesses;
the uninterrupted runs and the resumed halves run in this process (testkit/in_process.py)."""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import local_evaluation
from agents.profiles import REPO_ROOT
from evaluator.harness.dataset import load_split, read_conversations
from evaluator.harness.outputs import finalize
from evaluator.harness.runner import append_jsonl, read_jsonl
from minibench.full_split import build_full_split
from testkit.in_process import run_main
from testkit.scripted_agent import FakeOpenAIServer

CONVERSATIONS = 160  # multi-turn conversations of 2-6 turns: 640 turns
TURNS = 640
KILL_AFTER = 200  # saved answers before the kill
SECRET = "sk-test-full-split"
SCRIPTED = "testkit.scripted_agent:ScriptedAgent"
# the real chain over an engine that answers every stage at once
INSTANT_CHAIN = "testkit.fakes:InstantCruiseAgent"


def conversations_of(folder: Path):
    ds, _, _ = load_split(str(folder), None, "validation")
    return ds, read_conversations(ds)


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    root = tmp_path_factory.mktemp("fullsplit")
    dataset = build_full_split(root / "data", single=1, multi=CONVERSATIONS)["multi-turn"]
    _, convs = conversations_of(dataset)
    assert sum(len(c.turns) for c in convs) == TURNS
    queries = sorted({t.query for c in convs for t in c.turns})
    # every third question is answered right, every third wrong, the rest declined; two are cut
    answers = {q: ("[yes] right", "[no] wrong", "I don't know")[i % 3] for i, q in enumerate(queries)}
    with FakeOpenAIServer(lifetime_s=900) as server:
        yield {"root": root, "dataset": dataset, "server": server, "answers": answers,
               "cut": queries[:2]}


def script(world, name: str, **extra) -> Path:
    path = world["root"] / f"{name}.json"
    path.write_text(json.dumps({"answers": world["answers"], "batch_size": 8, "deadline_cut_queries": world["cut"],
                                "log": str(world["root"] / f"{name}.log.jsonl"), **extra}))
    return path


def arguments(world, out: Path, *extra: str, agent: str = SCRIPTED) -> list[str]:
    # the real chain's scripted engines write the paper's CoV reply: the paper's finalizer reads it
    return ["--dataset", str(world["dataset"]), "--dataset-type", "multi-turn", "--profile", "cpu",
            "--preset", "full+paper_finalizer", "--agent", agent, "--search", "none", "--eval-model", "judge-model",
            "--eval-base-url", world["server"].url, "--output-dir", str(out), "--no_progress", *extra]


def environment(world, script_path: Path) -> dict[str, str]:
    """What a run adds to the environment (OPENAI_API_KEY and CRUISE_* are dropped first)."""
    return dict(HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1", HF_DATASETS_CACHE=str(world["root"] / "hf-datasets"),
                CRUISE_CACHE=str(world["root"] / "cache"), OPENAI_API_KEY=SECRET,
                SCRIPTED_AGENT_SCRIPT=str(script_path))


def evaluate(world, out: Path, name: str, *extra: str, agent: str = SCRIPTED, **script_extra) -> None:
    """A run in this process."""
    proc = run_main(local_evaluation.main, arguments(world, out, *extra, agent=agent),
                    env=environment(world, script(world, name, **script_extra)))
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]


@pytest.fixture(scope="module")
def full_run(world):
    out = world["root"] / "uninterrupted"
    evaluate(world, out, "uninterrupted")
    return out


def scored(out: Path) -> dict:
    summary = json.loads((out / "run_summary.json").read_text())
    return {"scores": json.loads((out / "scores_dictionary.json").read_text()),
            "csv": (out / "turn_evaluation_results_all.csv").read_text(),
            "deadline_cut_turns": summary["deadline_cut_turns"], "turns_answered": summary["turns_answered"],
            "complete": summary["complete"]}


def test_kill_9_mid_run_then_resume_loses_nothing(world, full_run):
    """The scripted agent logs what it was asked: the resumed run's histories are checked too."""
    out = world["root"] / "killed"
    kill_and_resume(world, out, SCRIPTED)
    assert scored(out) == scored(full_run)
    # the resumed run fed the saved answers back as history: every (question, history) it asked
    # the uninterrupted run asked too
    def asked(log: str) -> set[str]:
        return {json.dumps([q, h]) for c in read_jsonl(world["root"] / log) for q, h in zip(c["queries"], c["histories"])}

    killed, full = asked("killed.log.jsonl"), asked("uninterrupted.log.jsonl")
    assert killed <= full and any(json.loads(x)[1] for x in killed)


def test_kill_9_mid_run_of_the_real_chain_then_resume_loses_nothing(world):
    """The real CruiseAgent chain on an engine that answers at once: the same scores, outcome
    mix and traces as an uninterrupted run."""
    full = world["root"] / "chain-uninterrupted"
    evaluate(world, full, "chain-uninterrupted", agent=INSTANT_CHAIN)
    scores = scored(full)["scores"]["all"]
    assert min(scores["correct"], scores["miss"], scores["hallucination"]) > 0  # a mix, not one outcome
    out = world["root"] / "chain-killed"
    kill_and_resume(world, out, INSTANT_CHAIN)
    assert scored(out) == scored(full)
    branches = [(t["interaction_id"], t["branch"]) for t in read_jsonl(full / "traces.jsonl")]
    resumed = {t["interaction_id"]: t["branch"] for t in read_jsonl(out / "traces.jsonl")}
    assert len(set(branches)) == TURNS and all(resumed[iid] == branch for iid, branch in branches)


def kill_and_resume(world, out: Path, agent: str) -> None:
    """Start a run, SIGKILL it once KILL_AFTER answers are saved, resume it; every turn once."""
    env = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY" and not k.startswith("CRUISE_")}
    env.update(environment(world, script(world, out.name, sleep_s=0.05)))
    process = subprocess.Popen([sys.executable, "local_evaluation.py", *arguments(world, out, agent=agent)],
                               cwd=REPO_ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 300
    answers = out / "answers.jsonl"
    while time.monotonic() < deadline and process.poll() is None:
        if answers.exists() and answers.read_bytes().count(b"\n") >= KILL_AFTER:
            break
        time.sleep(0.01)
    assert process.poll() is None, "the run ended before it could be killed"
    os.kill(process.pid, signal.SIGKILL)
    process.wait()
    saved = len(read_jsonl(answers))
    assert KILL_AFTER <= saved < TURNS and not (out / "scores_dictionary.json").exists()

    evaluate(world, out, out.name, "--resume", agent=agent)
    ids = [r["interaction_id"] for r in read_jsonl(out / "answers.jsonl")]
    csv_ids = [line.split(",")[1] for line in (out / "turn_evaluation_results_all.csv").read_text().splitlines()[1:]]
    assert len(csv_ids) == len(set(csv_ids)) == TURNS and set(ids) == set(csv_ids)


def test_records_written_twice_or_for_no_answer_count_once(world, full_run, tmp_path):
    """A kill between a batch's traces and its answers leaves traces that the resumed run writes
    again, and traces of turns never answered: each answered turn counts once."""
    copy = tmp_path / "rerun"
    shutil.copytree(full_run, copy)
    traces = read_jsonl(copy / "traces.jsonl")
    cut = [t for t in traces if t.get("deadline_cut")]
    assert cut  # the two cut questions were asked
    batches = read_jsonl(copy / "batches.jsonl")
    append_jsonl(copy / "traces.jsonl", cut + [{**cut[0], "interaction_id": "never-answered"}])
    append_jsonl(copy / "batches.jsonl", batches[-1:])
    again = finalize(copy, None, progress=False)
    assert again.summary["deadline_cut_turns"] == scored(full_run)["deadline_cut_turns"] == len(cut)
    assert again.summary["batches"] == len(batches)


# --------------------------------------------------------------------------- the report at this size
def test_the_report_of_640_turns_opens_fast_with_working_filters_and_turn_pages(full_run, browser):
    report = full_run / "report.html"
    assert report.stat().st_size < 10 * 1024 * 1024
    start = time.perf_counter()
    page = browser.open(report.as_uri())
    rows = page.evaluate("document.querySelectorAll('#turn-list tr.turn').length")
    opened_s = time.perf_counter() - start
    assert rows == TURNS and opened_s < 10, opened_s
    assert page.console_errors == []
    scores = json.loads((full_run / "scores_dictionary.json").read_text())["all"]
    visible = "[...document.querySelectorAll('#turn-list tr.turn')].filter(r => !r.hidden).length"

    def pick(select_id: str, value: str) -> int:
        page.evaluate(f"(() => {{ const s = document.getElementById('{select_id}'); s.value = '{value}'; "
                      "s.dispatchEvent(new Event('change')); })()")
        return page.evaluate(visible)

    assert pick("filter-outcome", "correct") == scores["correct"]
    assert pick("filter-outcome", "missed") == scores["miss"]
    assert pick("filter-outcome", "") == TURNS
    summary = json.loads((full_run / "run_summary.json").read_text())
    assert pick("filter-cut", "cut") == summary["deadline_cut_turns"] > 0
    pick("filter-cut", "")
    domains = page.evaluate("[...document.getElementById('filter-domain').options].map(o => o.value).filter(v => v)")
    assert sum(pick("filter-domain", d) for d in domains) == TURNS
    pick("filter-domain", "")
    # the last row's link opens its own turn page, offline, at that turn
    link = page.evaluate("[...document.querySelectorAll('#turn-list tr.turn a')].pop().href")
    last = read_jsonl(full_run / "answers.jsonl")
    target = link.rsplit("#turn-", 1)[1]
    assert link.startswith(full_run.as_uri() + "/report_turns/") and target in {r["interaction_id"] for r in last}
    turn_page = browser.open(link)
    text = turn_page.evaluate(f"document.getElementById('turn-{target}').innerText")
    record = next(r for r in last if r["interaction_id"] == target)
    assert record["query"] in text and record["ground_truth"] in text
    assert turn_page.console_errors == []
    assert all(url.startswith(("file:", "data:")) for url in page.requested_urls + turn_page.requested_urls)

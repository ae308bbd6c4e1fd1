"""The synthetic full split (minibench/full_split.py), and the evaluator at a size where the
details matter: a run of 640 turns killed with SIGKILL mid-run and resumed, its report in
headless Chromium, and the output files a kill leaves behind."""
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

from agents.profiles import REPO_ROOT
from evaluator.harness.dataset import load_split, read_conversations
from evaluator.harness.outputs import finalize
from evaluator.harness.runner import append_jsonl, read_jsonl
from minibench.full_split import MINI, build_full_split
from testkit.scripted_agent import FakeOpenAIServer

CONVERSATIONS = 160  # multi-turn conversations of 2-6 turns: 640 turns
TURNS = 640
KILL_AFTER = 200  # saved answers before the kill
SECRET = "sk-test-full-split"


def conversations_of(folder: Path):
    ds, _, _ = load_split(str(folder), None, "validation")
    return ds, read_conversations(ds)


def test_the_full_split_has_the_official_counts_schema_and_new_ids(tmp_path):
    written = build_full_split(tmp_path / "list", single=130, multi=25)
    as_dicts = build_full_split(tmp_path / "dict", single=130, multi=25, form="dict")
    _, mini_single = conversations_of(MINI / "single-turn")
    _, mini_multi = conversations_of(MINI / "multi-turn")
    mini_ids = {c.session_id for c in mini_single + mini_multi} | {
        t.interaction_id for c in mini_single + mini_multi for t in c.turns}
    for dataset_type, sessions in (("single-turn", 130), ("multi-turn", 25)):
        ds, convs = conversations_of(written[dataset_type])
        assert ds.column_names == ["session_id", "image", "image_url", "image_quality", "turns", "answers"]
        assert len(convs) == sessions
        ids = [c.session_id for c in convs] + [t.interaction_id for c in convs for t in c.turns]
        assert len(set(ids)) == len(ids) and not set(ids) & mini_ids
        raw = ds[0]
        assert isinstance(raw["turns"], list) and isinstance(raw["turns"][0], dict)
        dict_ds, dict_convs = conversations_of(as_dicts[dataset_type])
        assert isinstance(dict_ds[0]["turns"], dict)  # the published data's dict of lists
        assert [(c.session_id, [(t.interaction_id, t.query, t.ground_truth) for t in c.turns]) for c in dict_convs] \
            == [(c.session_id, [(t.interaction_id, t.query, t.ground_truth) for t in c.turns]) for c in convs]
    _, single = conversations_of(written["single-turn"])
    assert {len(c.turns) for c in single} == {1}
    # copies keep the mini rows' questions, answers and images: copy 55 is mini row 0 again
    assert (single[55].turns[0].query, single[55].turns[0].ground_truth, single[55].image_url) == \
        (mini_single[0].turns[0].query, mini_single[0].turns[0].ground_truth, mini_single[0].image_url)
    _, multi = conversations_of(written["multi-turn"])
    assert [len(c.turns) for c in multi[:5]] == [2, 3, 4, 5, 6]
    assert [t.query for t in multi[4].turns] == [mini_multi[4].turns[i % len(mini_multi[4].turns)].query
                                                 for i in range(6)]


def test_an_append_after_a_line_cut_by_a_kill_keeps_the_appended_record(tmp_path):
    path = tmp_path / "answers.jsonl"
    append_jsonl(path, [{"interaction_id": "a"}])
    with path.open("a") as f:
        f.write('{"interaction_id": "b", "agent_resp')  # the kill landed mid-line
    append_jsonl(path, [{"interaction_id": "c"}, {"interaction_id": "d"}])
    assert [r["interaction_id"] for r in read_jsonl(path)] == ["a", "c", "d"]


# --------------------------------------------------------------------------- a 640-turn run
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


SCRIPTED = "testkit.scripted_agent:ScriptedAgent"
# the real chain over an engine that answers every stage at once
INSTANT_CHAIN = "testkit.fakes:InstantCruiseAgent"


def command(world, out: Path, *extra: str, agent: str = SCRIPTED) -> tuple[list[str], dict]:
    env = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY" and not k.startswith("CRUISE_")}
    env.update(HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1", HF_DATASETS_CACHE=str(world["root"] / "hf-datasets"),
               CRUISE_CACHE=str(world["root"] / "cache"), OPENAI_API_KEY=SECRET)
    # the real chain's scripted engines write the paper's CoV reply: the paper's finalizer reads it
    return [sys.executable, "local_evaluation.py", "--dataset", str(world["dataset"]), "--dataset-type", "multi-turn",
            "--profile", "cpu", "--preset", "full+paper_finalizer", "--agent", agent, "--search", "none",
            "--eval-model", "judge-model", "--eval-base-url", world["server"].url, "--output-dir", str(out),
            "--no_progress", *extra], env


def evaluate(world, out: Path, name: str, *extra: str, agent: str = SCRIPTED, **script_extra) -> None:
    cmd, env = command(world, out, *extra, agent=agent)
    env["SCRIPTED_AGENT_SCRIPT"] = str(script(world, name, **script_extra))
    proc = subprocess.run(cmd, cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=600)
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


@pytest.mark.slow  # two 640-turn runs of the chain: about 90 s on a loaded 2-core machine
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
    cmd, env = command(world, out, agent=agent)
    env["SCRIPTED_AGENT_SCRIPT"] = str(script(world, out.name, sleep_s=0.05))
    process = subprocess.Popen(cmd, cwd=REPO_ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
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

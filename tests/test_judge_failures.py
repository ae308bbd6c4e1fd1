"""A judge that cannot answer is never silent: local_evaluation.py in-process against a closed
port and against an endpoint that refuses the key (HTTP 401), then --rejudge against one that
answers.

The scripted agent's answers are right (so a judge failure is the only thing that can make them
wrong), the official arithmetic still counts an undecided turn as not correct, and every figure
below is worked out by hand from the table.
"""
from __future__ import annotations

import json
import os
import shutil
import socket
import threading
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from unittest import mock

import pytest
from PIL import Image

import local_evaluation
from agents.hardware import choose_profile
from evaluator.harness.unjudged import UNJUDGED_EXIT_CODE
from testkit.scripted_agent import build_dataset
from testkit.served import Served

SECRET = "sk-judge-test-never-written-77"
GIVE_UP_AFTER = 2
# session, image url (None: egocentric), (interaction_id, query, ground truth, answer)
CONVERSATIONS = [
    ("c0", "http://127.0.0.1:9/never-fetched.png", ("c0-0", "Capital of France?", "Paris", " paris")),  # exact
    ("c1", None, ("c1-0", "How tall is it?", "330 m", "I don't know")),  # miss
    ("c2", None, ("c2-0", "Caffeine in an espresso?", "63 mg", "about 63 mg of caffeine")),
    ("c3", None, ("c3-0", "Which river?", "the Seine", "It is the Seine.")),
    ("c4", "http://127.0.0.1:9/never-fetched.png", ("c4-0", "Year it opened?", "1889", "It opened in 1889.")),
    ("c5", None, ("c5-0", "Its colour?", "red", "a bright red")),
    ("c6", None, ("c6-0", "How many legs?", "four", "it has 4 legs")),
]
NEEDING_JUDGE = 5  # c2..c6: neither a miss nor an exact match


def scores(total, correct, miss, exact) -> dict:
    wrong = total - correct - miss
    return {"total": total, "correct_exact": exact, "correct": correct, "miss": miss, "hallucination": wrong,
            "exact_match": exact / total, "accuracy": correct / total, "missing": miss / total,
            "hallucination_rate": wrong / total, "truthfulness_score": (2 * correct + miss) / total - 1,
            "mean_multi_turn_conversation_score": (correct - wrong) / total}


# judge down: only the exact match is correct, the 5 judged turns are hallucinations (official)
OFFICIAL_ALL = scores(7.0, 1.0, 1.0, 1.0)
OFFICIAL_EGO = scores(5.0, 0.0, 1.0, 0.0)  # c1, c2, c3, c5, c6
# the 5 turns left out: c0 (exact, not egocentric) and c1 (miss, egocentric) remain
LEFT_OUT_ALL = scores(2.0, 1.0, 1.0, 1.0)
# judge back: every judged answer is right
JUDGED_ALL = scores(7.0, 6.0, 1.0, 1.0)
JUDGED_EGO = scores(5.0, 4.0, 1.0, 0.0)


class JudgeEndpoint(Served):
    """An OpenAI-style chat endpoint on 127.0.0.1 that answers every request with `status`: 401
    (the key refused, as OpenAI words it) or 200 with the structured verdict {"accuracy": true}.
    It counts the requests it gets."""

    def __init__(self, status: int):
        self.status = status
        self.requests = 0
        self.lock = threading.Lock()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                with outer.lock:
                    outer.requests += 1
                if outer.status == 401:
                    body = {"error": {"message": "Incorrect API key provided.", "type": "invalid_request_error",
                                      "code": "invalid_api_key"}}
                else:
                    body = {"id": "chatcmpl-test", "object": "chat.completion", "created": 0, "model": "judge-model",
                            "choices": [{"index": 0, "finish_reason": "stop",
                                         "message": {"role": "assistant", "content": '{"accuracy": true}'}}],
                            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}
                data = json.dumps(body).encode()
                self.send_response(outer.status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        self.bind(Handler)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"


def closed_port_url() -> str:
    with socket.socket() as sock:  # a port that was free a moment ago: nothing listens on it
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    root = tmp_path_factory.mktemp("judgefail")
    convs = [dict(session_id=session, image=Image.new("RGB", (48, 32), (90, 60, 30)), image_url=url,
                  image_quality="normal", turns=[(iid, query, truth, "general", "simple", "static")])
             for session, url, (iid, query, truth, _) in CONVERSATIONS]
    dataset = build_dataset(root / "dataset", convs, form="dict")
    script = root / "script.json"
    script.write_text(json.dumps({"answers": {t[1]: t[3] for _, _, t in CONVERSATIONS}, "batch_size": 4}))
    return dict(root=root, dataset=dataset, script=script)


@pytest.fixture
def env(world, monkeypatch):
    """What the evaluator reads from the environment, restored afterwards (it writes CRUISE_*)."""
    with mock.patch.dict(os.environ, clear=False):
        for key in [k for k in os.environ if k.startswith("CRUISE_") or k == "OPENAI_API_KEY"]:
            del os.environ[key]
        os.environ.update(OPENAI_API_KEY=SECRET, SCRIPTED_AGENT_SCRIPT=str(world["script"]),
                          CRUISE_CACHE=str(world["root"] / "cache"), COLUMNS="250",
                          HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
        yield


def judge_flags(url: str, *extra: str) -> list[str]:
    return ["--eval-model", "judge-model", "--eval-base-url", url, "--judge-retry-wait", "0.01",
            "--judge-max-wait", "0", "--judge-timeout", "5", "--num-workers", "1",
            "--judge-give-up-after", str(GIVE_UP_AFTER), "--no_progress", "--display-conversations", "0", *extra]


def run_args(world, out: Path, url: str) -> list[str]:
    return ["--dataset", str(world["dataset"]), "--dataset-type", "single-turn", "--profile", "auto",
            "--agent", "testkit.scripted_agent:ScriptedAgent", "--search", "testkit.scripted_agent:make_fake_search",
            "--suppress-web-search-api", "--output-dir", str(out), *judge_flags(url)]


def evaluate(argv: list[str]) -> int:
    """local_evaluation.main in this process; its exit code."""
    try:
        local_evaluation.main(argv)
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else 1
    return 0


def read(out: Path, name: str):
    return json.loads((out / name).read_text())


DEAD_RUNS: dict[str, tuple[Path, int, int | None, str]] = {}  # judge -> (folder, exit code, requests, judge URL)


def dead_judge_run(world, judge: str) -> tuple[Path, int, int | None, str]:
    """The run against a dead judge, made once per judge for the tests below."""
    if judge not in DEAD_RUNS:
        out = world["root"] / judge.replace(" ", "-")
        if judge == "closed port":
            url = closed_port_url()
            DEAD_RUNS[judge] = (out, evaluate(run_args(world, out, url)), None, url)
        else:
            with JudgeEndpoint(401) as endpoint:
                code = evaluate(run_args(world, out, endpoint.url))
            DEAD_RUNS[judge] = (out, code, endpoint.requests, endpoint.url)
    return DEAD_RUNS[judge]


@pytest.mark.parametrize("judge", ["closed port", "HTTP 401"])
def test_a_dead_judge_is_said_everywhere_and_asked_no_more(world, env, capsys, judge):
    out, code, requests, url = dead_judge_run(world, judge)
    printed = capsys.readouterr().out

    # the run completes: every output is written, and the exit code is the documented one
    assert code == UNJUDGED_EXIT_CODE == 3
    for name in ("scores_dictionary.json", "run_summary.json", "turn_evaluation_results_all.csv", "report.html"):
        assert (out / name).exists(), name
    # the official arithmetic: an undecided turn is not correct
    official = read(out, "scores_dictionary.json")
    assert official["all"] == pytest.approx(OFFICIAL_ALL) and official["ego"] == pytest.approx(OFFICIAL_EGO)

    summary = read(out, "run_summary.json")
    assert (summary["needing_judge"], summary["unjudged_turns"]) == (NEEDING_JUDGE, NEEDING_JUDGE)
    # after GIVE_UP_AFTER turns failed every attempt (3 each), the others were not sent at all
    assert (summary["judge_failures"], summary["judge_not_asked"]) == (GIVE_UP_AFTER, NEEDING_JUDGE - GIVE_UP_AFTER)
    if requests is not None:
        assert requests == GIVE_UP_AFTER * 3
    judgments = [json.loads(line) for line in (out / "judgments.jsonl").read_text().splitlines()]
    assert sorted(j["attempts"] for j in judgments) == [0] * 3 + [3] * 2
    assert all(j["verdict"] is None for j in judgments)
    assert all(j["error"].startswith("not asked: the judge failed every attempt on 2 turns in a row")
               for j in judgments if j["attempts"] == 0)
    gave_up = summary["judge_gave_up"]
    assert gave_up.startswith("the judge failed every attempt on 2 turns in a row")
    assert ("check OPENAI_API_KEY" in gave_up) == (judge == "HTTP 401")
    assert ("cannot be reached" in gave_up) == (judge == "closed port")

    unjudged = summary["unjudged"]
    # the judge's own flags: run as printed, the command asks this judge again, not the default one
    command = f"python local_evaluation.py --rejudge --output-dir {out} --eval-model judge-model --eval-base-url {url}"
    assert unjudged["rejudge_command"] == command and unjudged["turns"] == NEEDING_JUDGE
    assert unjudged["scores_without_unjudged"]["all"] == pytest.approx(LEFT_OUT_ALL)
    ego_left = unjudged["scores_without_unjudged"]["ego"]  # c1 alone: one miss
    assert (ego_left["total"], ego_left["miss"], ego_left["truthfulness_score"]) == (1.0, 1.0, 0.0)
    notice = summary["notices"][0]
    assert notice == unjudged["notice"]
    assert notice.startswith("5 of 5 turns that needed the judge have no verdict (the judge failed every attempt "
                             "on 2; 3 were not sent to it after it gave up)")
    assert "all 2 turns: accuracy 50.0%, hallucination rate 0.0%, missing 50.0%, truthfulness +0.500" in notice
    assert notice.endswith(f"Judge them again: {command}")

    # the console: which profile auto chose and why, the panel under the scores, the judge line
    assert f"--profile auto: {choose_profile().profile} (" in printed
    assert "5 TURNS WITHOUT A VERDICT" in printed and "Scores with the unjudged turns left out" in printed
    assert f"Judge them again: {command}" in printed
    assert "failures 2, not asked 3, unjudged 5" in printed
    assert printed.index("5 TURNS WITHOUT A VERDICT") < printed.index("rules: kddcup2025")
    assert SECRET not in printed

    # report.html: the banner, its left-out scores and the command; its notice is not repeated
    page = (out / "report.html").read_text()
    banner = page[page.index('<div class="banner" id="unjudged-banner">'):]
    banner = banner[:banner.index("</div>")]
    assert "<b>5 turns that needed the judge have no verdict</b>" in banner
    assert f'<code id="rejudge-command">{command}</code>' in banner
    assert '<tr data-metric="accuracy"><td>accuracy</td><td class="num">50.0%</td>' in banner
    assert page.count("5 of 5 turns that needed the judge") == 0
    for path in out.rglob("*"):
        assert path.is_dir() or SECRET not in path.read_text(errors="ignore"), path.name


def test_rejudge_against_a_working_judge_gives_the_right_scores(world, env, capsys):
    out = world["root"] / "rejudged"
    shutil.copytree(dead_judge_run(world, "HTTP 401")[0], out)
    capsys.readouterr()
    with JudgeEndpoint(200) as endpoint:
        code = evaluate(["--rejudge", "--output-dir", str(out), *judge_flags(endpoint.url)])
    printed = capsys.readouterr().out
    assert code == 0
    assert endpoint.requests == NEEDING_JUDGE  # each undecided turn once, and nothing else
    official = read(out, "scores_dictionary.json")
    assert official["all"] == pytest.approx(JUDGED_ALL) and official["ego"] == pytest.approx(JUDGED_EGO)
    summary = read(out, "run_summary.json")
    assert (summary["unjudged_turns"], summary["judge_failures"], summary["judge_not_asked"]) == (0, 0, 0)
    assert summary["unjudged"] is None and not any("no verdict" in n for n in summary["notices"])
    assert "WITHOUT A VERDICT" not in printed
    assert 'id="unjudged-banner"' not in (out / "report.html").read_text()


def test_a_judge_switched_off_exits_0_but_counts_the_turns(world, env, capsys):
    out = world["root"] / "no-judge"
    argv = run_args(world, out, "unused")
    argv[argv.index("--eval-model") + 1] = "None"
    assert evaluate(argv) == 0
    unjudged = read(out, "run_summary.json")["unjudged"]
    assert unjudged["turns"] == NEEDING_JUDGE and not unjudged["llm_judge"]
    assert unjudged["notice"].endswith("set OPENAI_API_KEY (or add --eval-base-url URL), then "
                                       f"python local_evaluation.py --rejudge --output-dir {out}")


def test_a_rejudge_judge_becomes_the_runs_and_its_printed_command_keeps_the_url(world, env, capsys):
    """A run judged by nobody, then --rejudge --eval-base-url URL against a judge that fails: the
    command it prints names that URL, and the URL is the run's judge now, so the bare --rejudge
    asks it again rather than scoring without a judge."""
    out = world["root"] / "judged-later"
    argv = run_args(world, out, "unused")
    argv[argv.index("--eval-model") + 1] = "None"
    assert evaluate(argv) == 0
    with JudgeEndpoint(401) as endpoint:
        flags = judge_flags(endpoint.url)
        assert evaluate(["--rejudge", "--output-dir", str(out), *flags]) == UNJUDGED_EXIT_CODE
        printed = capsys.readouterr().out
        command = (f"python local_evaluation.py --rejudge --output-dir {out} --eval-model judge-model "
                   f"--eval-base-url {endpoint.url}")
        assert read(out, "run_summary.json")["unjudged"]["rejudge_command"] == command
        assert f"Judge them again: {command}" in printed
        config = read(out, "run_config.json")
        assert (config["judge_model"], config["judge_base_url"]) == ("judge-model", endpoint.url)
        asked = endpoint.requests
        assert asked == GIVE_UP_AFTER * 3
        # the bare command, the judge's flags left out (the retry and give-up flags kept): the run's judge
        quiet = flags[flags.index("--judge-retry-wait"):]
        assert evaluate(["--rejudge", "--output-dir", str(out), *quiet]) == UNJUDGED_EXIT_CODE
        assert endpoint.requests == asked + GIVE_UP_AFTER * 3
    summary = read(out, "run_summary.json")
    assert summary["judge"] == f"judge-model @ {endpoint.url} (kddcup2025 protocol)"
    assert summary["unjudged"]["rejudge_command"] == command


def test_a_refused_start_leaves_no_folder(world, env, tmp_path):
    out = tmp_path / "never-made"
    argv = run_args(world, out, "unused")
    argv[argv.index("--dataset") + 1] = str(tmp_path / "no-such-dataset")
    assert evaluate(argv) == 1
    assert not out.exists()


@pytest.mark.parametrize("error, hint", [
    ("AuthenticationError: Error code: 401 - {'error': {'code': 'invalid_api_key'}}", "check OPENAI_API_KEY"),
    ("RateLimitError: Error code: 429 - {'error': {'code': 'insufficient_quota'}}", "the account's quota is used up"),
    ("APIConnectionError: Connection error.", "the endpoint cannot be reached"),
    ("APITimeoutError: Request timed out.", "the endpoint cannot be reached"),
    ("ValueError: judge reply has no Result line: 'hm'", None),
])
def test_the_give_up_line_says_what_to_check(error, hint):
    from evaluator.scoring.judge import give_up_line

    line = give_up_line(5, error)
    assert line.startswith(f"the judge failed every attempt on 5 turns in a row, so it was not asked again ({error}")
    assert "\n" not in line
    assert (hint in line) if hint else line.endswith(")")


OPENAI_LABEL = "judge-model @ https://api.openai.com/v1 (kddcup2025 protocol)"


def shard_args(world, out: Path, shard: str, *, judged: bool) -> list[str]:
    """A shard judged by the stand-in as OpenAI's own judge: no --eval-base-url (the client reads
    OPENAI_BASE_URL), so a later scoring without OPENAI_API_KEY has no judge at all."""
    argv = run_args(world, out, "unused")
    at = argv.index("--eval-base-url")
    del argv[at:at + 2]
    if not judged:
        argv[argv.index("--eval-model") + 1] = "None"
    return [*argv, "--shard", shard]


def judged_shards(world, shards: dict[str, bool], name: str) -> list[Path]:
    """Shard folders, those marked True judged by a working stand-in judge (every answer right)."""
    folders = []
    with JudgeEndpoint(200) as endpoint, mock.patch.dict(os.environ, OPENAI_BASE_URL=endpoint.url):
        for shard, judged in shards.items():
            out = world["root"] / f"{name}-{shard.replace('/', 'of')}"
            assert evaluate(shard_args(world, out, shard, judged=judged)) == 0
            folders.append(out)
    return folders


def test_a_merge_without_a_judge_keeps_the_verdicts_the_shards_saved(world, env, capsys):
    # shard 0/2: c0 (exact), c2, c4, c6; shard 1/2: c1 (miss), c3, c5; the 5 others judged right
    folders = judged_shards(world, {"0/2": True, "1/2": True}, "kept")
    del os.environ["OPENAI_API_KEY"]
    capsys.readouterr()
    merged = world["root"] / "kept-merged"
    assert evaluate(["merge", *map(str, folders), "--output-dir", str(merged), "--no_progress"]) == 0
    printed = capsys.readouterr().out
    official = read(merged, "scores_dictionary.json")
    assert official["all"] == pytest.approx(JUDGED_ALL) and official["ego"] == pytest.approx(JUDGED_EGO)
    summary = read(merged, "run_summary.json")
    assert (summary["kept_verdict_turns"], summary["unjudged_turns"], summary["offline_judged_turns"]) == (5, 0, 0)
    assert summary["kept_verdict_judges"] == {OPENAI_LABEL: 5} and summary["judge"] == OPENAI_LABEL
    # the prompt those verdicts were given with, as each shard recorded it
    assert summary["judge_prompt_origin"] == read(folders[0], "run_summary.json")["judge_prompt_origin"] is not None
    assert f"no LLM judge: 5 turns keep the verdicts {OPENAI_LABEL} (5) saved in judgments.jsonl; every turn " \
           "that needed the judge has one" in summary["notices"]
    config = read(merged, "run_config.json")
    assert (config["judge_model"], config["judge_base_url"]) == ("judge-model", None)
    # every verdict it needs is there: no warning panel
    assert "NO JUDGE" not in printed and "ATTENTION" not in printed and "WITHOUT A VERDICT" not in printed

    # a rejudge without a judge keeps them too, but not for an answer they were not given on
    shard = world["root"] / "kept-rejudged"
    shutil.copytree(folders[1], shard)
    answers = [json.loads(line) for line in (shard / "answers.jsonl").read_text().splitlines()]
    changed = next(a for a in answers if a["interaction_id"] == "c3-0")
    with (shard / "answers.jsonl").open("a") as f:
        f.write(json.dumps({**changed, "agent_response": "It is the Loire."}) + "\n")
    capsys.readouterr()
    assert evaluate(["--rejudge", "--output-dir", str(shard), "--no_progress"]) == 0
    printed = capsys.readouterr().out
    # c1 a miss, c5 kept (right), c3 without a verdict for its answer now: hallucination
    official = read(shard, "scores_dictionary.json")
    assert official["all"] == pytest.approx(scores(3.0, 1.0, 1.0, 0.0))
    summary = read(shard, "run_summary.json")
    assert (summary["kept_verdict_turns"], summary["unjudged_turns"]) == (1, 1)
    assert "NO JUDGE" in printed
    assert (f"1 turns keep the verdicts {OPENAI_LABEL} saved; 1 turns without one are scored by exact match"
            in " ".join(printed.split()))


def test_a_merge_without_a_judge_falls_back_only_for_the_turn_no_shard_judged(world, env, capsys):
    # index % 3: shard 0/3 c0 (exact), c3, c6; 1/3 c1 (miss), c4 (not judged: --eval-model None); 2/3 c2, c5
    folders = judged_shards(world, {"0/3": True, "1/3": False, "2/3": True}, "partial")
    del os.environ["OPENAI_API_KEY"]
    capsys.readouterr()
    merged = world["root"] / "partial-merged"
    assert evaluate(["merge", *map(str, folders), "--output-dir", str(merged), "--no_progress"]) == 0
    printed = " ".join(capsys.readouterr().out.split())
    official = read(merged, "scores_dictionary.json")
    # c4 (not egocentric) alone counts as not correct; the egocentric turns all keep their verdicts
    assert official["all"] == pytest.approx(scores(7.0, 5.0, 1.0, 1.0))
    assert official["ego"] == pytest.approx(JUDGED_EGO)
    summary = read(merged, "run_summary.json")
    assert (summary["kept_verdict_turns"], summary["unjudged_turns"], summary["offline_judged_turns"]) == (4, 1, 0)
    assert summary["unjudged"]["turns"] == 1 and not summary["unjudged"]["llm_judge"]
    assert "NO JUDGE" in printed and "ATTENTION" not in printed
    assert (f"4 turns keep the verdicts {OPENAI_LABEL} saved; 1 turns without one are scored by exact match"
            in printed)
    assert "1 of them have no verdict" in printed


def test_verdicts_kept_from_two_judges_are_said_to_be_mixed():
    from evaluator.harness.judging import kept_verdict_notices

    counts = {"kept_verdict_turns": 5, "kept_verdict_judges": {"a @ u (kddcup2025 protocol)": 3,
                                                                "b @ u (kddcup2025 protocol)": 2},
              "offline_judged_turns": 1, "unjudged_turns": 2}
    kept, mixed = kept_verdict_notices(counts)
    assert kept == ("no LLM judge: 5 turns keep the verdicts a @ u (kddcup2025 protocol) (3) and "
                    "b @ u (kddcup2025 protocol) (2) saved in judgments.jsonl; the 3 turns without one are scored "
                    "by exact match (1 of them decided by the offline lexical judge (not the official judge), "
                    "2 left without a verdict)")
    assert mixed == ("the saved verdicts kept come from 2 judges, mixed in these scores: "
                     "a @ u (kddcup2025 protocol) (3) and b @ u (kddcup2025 protocol) (2)")
    assert kept_verdict_notices({"kept_verdict_judges": {}}) == []

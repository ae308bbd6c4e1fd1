"""tools/compare_systems.py end to end: every system of the comparison through evaluator.evaluate
in this process, over the real chains with engines that answer at once (testkit.fakes:InstantCruiseAgent,
whose stand-in engine replies to every step of CRUISE, QA-Dragon and SAM-RAG), on the first 4
conversations of each mini benchmark split."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from testkit.in_process import fresh_environment, offline_env
from tools.ablation import conversation_indices
from tools.compare_systems import DOC_END, DOC_START, main

SYSTEMS = ["full", "qa_dragon", "sam_rag", "rag_baseline"]
ARGS = ["--agent", "testkit.fakes:InstantCruiseAgent", "--search", "none", "--num-conversations", "4"]


@pytest.fixture(scope="module")
def compared(tmp_path_factory):
    root = tmp_path_factory.mktemp("systems")
    doc = root / "benchmarks.md"
    doc.write_text(f"# Benchmarks\n\nbefore\n{DOC_START}\nold figures\n{DOC_END}\nafter\n")
    out = root / "out"
    with fresh_environment(offline_env(root)):
        assert main([*ARGS, "--systems", *SYSTEMS, "--output-dir", str(out), "--write-doc", str(doc)]) == 0
        yield out, doc


def test_each_system_is_calibrated_on_its_own_traces_of_shard_zero(compared):
    out, _ = compared
    assert sorted(p.name for p in out.glob("calibration-*.json")) == [
        "calibration-full.json", "calibration-qa_dragon.json", "calibration-sam_rag.json"]  # rag_baseline has none
    for system in ("full", "qa_dragon", "sam_rag"):
        calibration = json.loads((out / f"calibration-{system}.json").read_text())
        for run in map(Path, calibration["runs"]):
            assert run.parent.name == system
            traces = [json.loads(line) for line in (run / "traces.jsonl").read_text().splitlines()]
            index = conversation_indices(run)
            assert traces and all(index[t["session_id"]] % 2 == 0 for t in traces)
            assert {t.get("system", "cruise") for t in traces} == {"cruise" if system == "full" else system}
        for dataset in ("single-turn", "multi-turn"):
            config = json.loads((out / "runs" / dataset / system / "run_config.json").read_text())
            assert config["preset"] == system and Path(config["args"]["calibration"]) == out / f"calibration-{system}.json"


def test_the_tables_hold_every_system_and_its_pairing_with_full(compared):
    out, doc = compared
    results = json.loads((out / "systems.json").read_text())["results"]
    assert list(results) == ["single-turn", "multi-turn"]
    for dataset, found in results.items():
        assert [r["system"] for r in found["rows"]] == SYSTEMS
        assert all(r["over_budget"] == 0 for r in found["rows"])
        official = json.loads((Path(found["rows"][1]["run_dir"]) / "scores_dictionary.json").read_text())
        assert found["rows"][1]["scores"]["truthfulness_score"] == pytest.approx(official["all"]["truthfulness_score"])
        assert [p["system"] for p in found["pairs"]] == SYSTEMS[1:]
        for pair in found["pairs"]:
            assert not pair.get("refused")
            difference = pair["differences"]["truthfulness_score"]
            assert difference["difference"] == pytest.approx(difference["b"] - difference["a"])
            assert sum(pair["flips"].values()) + pair["unchanged"] == found["rows"][0]["turns"]
    table = (out / "systems.md").read_text()
    assert "python -m tools.compare_systems" in table and "Machine:" in table and "Date:" in table
    # each run by its system, with the preset beside it
    for label in ("cruise (full)", "qa_dragon (qa_dragon)", "sam_rag (sam_rag)", "cruise (rag_baseline)"):
        assert f"| `{label}` |" in table
    text = doc.read_text()
    assert text.startswith("# Benchmarks\n\nbefore\n") and text.endswith(f"{DOC_END}\nafter\n")
    assert "old figures" not in text and table.strip() in text


def test_the_peer_runs_trace_their_own_branches_and_funnels(compared):
    out, _ = compared
    for system, branches in (("qa_dragon", {"direct_output", "search_verify", "rag"}),
                             ("sam_rag", {"supported", "supported_after_regeneration", "unsupported", "not_useful",
                                          "not_checked", "abstained"})):
        for dataset in ("single-turn", "multi-turn"):
            run = out / "runs" / dataset / system
            traces = [json.loads(line) for line in (run / "traces.jsonl").read_text().splitlines()]
            assert traces and all(t["system"] == system and t["branch"] in branches and t["funnel"] for t in traces)
            summary = json.loads((run / "run_summary.json").read_text())
            assert summary["agent_summary"]["system"] == system and summary["over_budget_count"] == 0


# A system of the user's own, in a module outside the repository, found by MODULE:NAME: it answers
# each question with its first word (one stage that calls no model, run in order by the runtime).
FIRST_WORD_SYSTEM = '''
from agents.plugin import Decision, Stage, System, View, always, register


def first_words(batch):
    return [{"rag_answer": turn.query.split()[0]} for turn in batch.turns]


register(System(name="first_word", stages=(Stage("first_word_pick", batch_fn=first_words, writes=("rag_answer",),
                                                 calls_no_model=always),),
                decide=lambda trace, cfg: Decision(trace["rag_answer"], "picked"),
                view=View(funnel=lambda trace, cfg: {}, branches=("picked",))))
'''


def test_a_system_named_by_module_and_name_is_compared_beside_cruise(tmp_path, monkeypatch, registered_systems):
    (tmp_path / "first_word_system.py").write_text(FIRST_WORD_SYSTEM)
    monkeypatch.syspath_prepend(str(tmp_path))
    out = tmp_path / "out"
    args = ["--agent", "testkit.fakes:InstantCruiseAgent", "--search", "none", "--num-conversations", "2"]
    with fresh_environment(offline_env(tmp_path)):
        assert main([*args, "--systems", "first_word_system:first_word", "--datasets", "single-turn",
                     "--output-dir", str(out)]) == 0
    table = (out / "systems.md").read_text()
    assert "| `cruise (full)` |" in table and "| `first_word_system:first_word (full)` |" in table
    run_dir = out / "runs" / "single-turn" / "first_word_system_first_word"
    traces = [json.loads(line) for line in (run_dir / "traces.jsonl").read_text().splitlines()]
    assert traces and {t["system"] for t in traces} == {"first_word_system:first_word"}
    assert all("first_word_pick" in t["stage_ms"] for t in traces)
    assert not (out / "calibration-first_word_system_first_word.json").exists()  # a system by name: as declared

"""tools/compare_systems.py takes any system: a preset, or a system by name (registered, an
installed entry point, MODULE:NAME) with the preset beside it; its tables name each run by its
system. (The comparison run end to end: tests/full/test_compare_systems.py.)"""
from __future__ import annotations

import pytest

from agents.base_agent import IDK_ANSWER
from agents.runtime.system import Decision, Stage, System, View
from tools.compare_systems import parse_args, tables
from tools.runs import Entry, entry, folder_name

GATE = System(name="keyword_gate", stages=(Stage("kwgate_look"),), run=lambda *a: ([], []),
              decide=lambda trace, cfg: Decision(IDK_ANSWER, "none"), view=View(funnel=lambda t, c: {}))


def test_a_system_is_named_by_its_name_or_by_a_preset(registered_systems):
    registered_systems(GATE)
    assert parse_args(["--systems", "keyword_gate", "full"]).systems == ["keyword_gate", "full"]
    assert entry("qa_dragon") == Entry("qa_dragon", "qa_dragon", "qa_dragon")
    assert entry("no_cov") == Entry("no_cov", "cruise", "no_cov")
    gate = entry("keyword_gate")
    assert (gate.system, gate.preset, gate.settings, gate.label) == ("keyword_gate", "full", ("system=keyword_gate",),
                                                                     "keyword_gate (full)")
    assert entry("keyword_gate@no_cov").label == "keyword_gate (no_cov)"
    assert folder_name("my_pkg.system:gate@no_cov") == "my_pkg.system_gate@no_cov"


def test_an_unknown_system_or_preset_is_refused_with_the_closest_names(registered_systems):
    registered_systems(GATE)
    with pytest.raises(SystemExit, match=r"^--systems keyword_gat: not a preset .*did you mean 'keyword_gate'\?$"):
        entry("keyword_gat")
    with pytest.raises(SystemExit, match=r"^--systems keyword_gate@no_covv: unknown preset 'no_covv'"):
        entry("keyword_gate@no_covv")


def test_the_tables_name_each_run_by_its_system_with_the_preset_beside_it():
    row = {"label": "keyword_gate (full)", "correct": 1, "miss": 0, "hallucination": 0, "scores": {}, "intervals": {},
           "held_out_truthfulness": None, "over_budget": 0, "batches": 1, "deadline_cut_turns": 0, "turns": 1}
    base = {**row, "label": "cruise (full)"}
    pair = {"label": "keyword_gate (full)", "differences": {}, "flips": {}, "unchanged": 1}
    text = tables({"single-turn": {"rows": [base, row], "pairs": [pair]}})
    assert "| `keyword_gate (full)` | 1 / 0 / 0 |" in text and "Paired with `cruise (full)`" in text

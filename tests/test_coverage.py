"""Evidence coverage in run_summary.json: computed from traces, answers and provenance.json."""
from __future__ import annotations

import json

import pytest

from agents.profiles import REPO_ROOT
from evaluator.scoring.coverage import answer_in_context, evidence_coverage, key_in_text, provenance_for


@pytest.mark.parametrize("key, text, found", [
    ("1813", "published on 28 January 1813.", True),
    ("1813", "published in 18130 copies", False),  # whole words only
    ("79", "abandoned: AD 79, buried", True),
    ("79", "about 1979", False),
    ('"M"', 'the typical "M" on its forehead', True),
    ('"M"', "about 41 m tall", False),
    ("Eileen Collins", "EILEEN   COLLINS commanded", True),
    ("DSCOVR|Deep Space Climate Observatory", "the deep space climate observatory launched", True),
    ("384,400", "mean distance: 384,400 km", True),
])
def test_answer_keys_match_whole_words_case_blind(key, text, found):
    assert key_in_text(key, text) is found


def test_every_key_must_be_found():
    assert answer_in_context(["41 m", "38 m"], "tower: 41 m; hall: 38 m")
    assert not answer_in_context(["41 m", "38 m"], "tower: 41 m")
    assert not answer_in_context([], "anything")  # a turn without keys never counts as found


def _trace(iid, retrieved, chunks, kept):
    return {"interaction_id": iid, "retrieved": [{"source": "image"}] * retrieved,
            "chunks": [{"text": c} for c in chunks], "kept_chunks": kept}


def test_coverage_figures_from_traces_and_provenance(tmp_path):
    dataset = tmp_path / "bench" / "single-turn"
    dataset.mkdir(parents=True)
    provenance = {"single-turn": [
        {"session_id": "s1", "turns": [{"interaction_id": "a", "answer_source": "kg", "answer_keys": ["Frank Gehry"]}]},
        {"session_id": "s2", "turns": [{"interaction_id": "b", "answer_source": "kg", "answer_keys": ["76"]}]},
        {"session_id": "s3", "turns": [{"interaction_id": "c", "answer_source": "web", "answer_keys": ["2011"]}]},
        {"session_id": "s4", "turns": [{"interaction_id": "d", "answer_source": "image"}]},
    ]}
    (tmp_path / "bench" / "provenance.json").write_text(json.dumps(provenance))
    traces = [
        _trace("a", 2, ["x", "y", "8 Spruce Street: architect: Frank Gehry"], ["8 Spruce Street: architect: Frank Gehry"]),
        _trace("b", 1, ["8 Spruce Street: floor count: 76"], []),  # retrieved, nothing kept
        _trace("c", 1, ["opened in February 2011", "z"], ["opened in February 2011", "z"]),
    ]  # "d" has no trace: it counts as retrieving nothing
    records = [{"interaction_id": i} for i in "abcd"]
    got = evidence_coverage(traces, records, str(dataset))
    assert got == {"turns": 4, "retrieved_share": 0.75, "context_share": 0.5, "mean_chunks": 1.5,
                   "mean_kept_chunks": 0.75, "kg_turns": 2, "answer_recall_kg": 0.5, "web_turns": 1,
                   "answer_recall_web": 1.0, "answer_recall_kg_web": round(2 / 3, 4)}
    assert all(isinstance(v, (int, float)) for v in got.values())  # a flat dict of named numbers


def test_no_recall_figures_without_provenance(tmp_path):
    got = evidence_coverage([_trace("a", 1, ["c"], ["c"])], [{"interaction_id": "a"}], "crag-mm-2025/crag-mm-single-turn-public")
    assert set(got) == {"turns", "retrieved_share", "context_share", "mean_chunks", "mean_kept_chunks"}
    assert provenance_for(None) == {} and provenance_for(str(tmp_path)) == {}


def test_the_shipped_benchmark_has_keys_for_every_kg_and_web_turn():
    notes = provenance_for(str(REPO_ROOT / "data" / "crag-mm-mini" / "multi-turn"))
    answerable = [n for n in notes.values() if n["answer_source"] in ("kg", "web")]
    assert len(answerable) >= 40 and all(n["answer_keys"] for n in answerable)

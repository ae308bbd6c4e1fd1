"""The shipped crag-mm-mini dataset: loadable with `datasets`, CRAG-MM schema, coverage, determinism."""
from __future__ import annotations

import json

import pytest

from agents.config import REPO_ROOT
from minibench.build_benchmark import SPLIT_FILE, build

DATA = REPO_ROOT / "data" / "crag-mm-mini"
CATEGORIES = {"simple recognition", "simple knowledge", "multi-hop", "comparison", "aggregation", "reasoning"}
DYNAMISM = {"static", "slow-changing", "fast-changing", "real-time"}
TURN_KEYS = {"interaction_id", "domain", "query_category", "dynamism", "query"}


@pytest.fixture(scope="module")
def splits(tmp_path_factory):
    import datasets

    cache = tmp_path_factory.mktemp("hf-datasets")
    return {kind: datasets.load_dataset(str(DATA / kind), cache_dir=str(cache))
            for kind in ("single-turn", "multi-turn")}


def _rows(splits, kind):
    return list(splits[kind]["validation"])


def test_both_splits_load_with_the_crag_mm_schema(splits):
    from PIL import Image

    for kind, dd in splits.items():
        assert list(dd) == ["validation"]
        ds = dd["validation"]
        assert set(ds.column_names) == {"session_id", "image", "image_url", "image_quality", "turns", "answers"}
        for row in ds:
            assert isinstance(row["session_id"], str)
            assert isinstance(row["image"], Image.Image) and max(row["image"].size) <= 384
            assert row["image_url"] is None or row["image_url"].startswith("https://")
            assert isinstance(row["image_quality"], str) and row["image_quality"]
            assert all(set(t) == TURN_KEYS for t in row["turns"])
            assert all(set(a) == {"interaction_id", "ans_full"} and a["ans_full"] for a in row["answers"])


def test_sizes_and_turn_counts(splits):
    single, multi = _rows(splits, "single-turn"), _rows(splits, "multi-turn")
    assert len(single) >= 40 and all(len(r["turns"]) == 1 for r in single)
    assert len(multi) >= 10 and all(2 <= len(r["turns"]) <= 6 for r in multi)
    ids = [r["session_id"] for r in single + multi]
    assert len(ids) == len(set(ids))


def test_coverage_of_categories_domains_ego_and_real_time(splits):
    rows = _rows(splits, "single-turn") + _rows(splits, "multi-turn")
    turns = [t for r in rows for t in r["turns"]]
    assert {t["query_category"] for t in turns} == CATEGORIES
    assert {t["dynamism"] for t in turns} == DYNAMISM
    assert len({t["domain"] for t in turns}) >= 11
    assert any(r["image_url"] is None for r in rows) and any(r["image_url"] for r in rows)
    assert {"normal", "low light", "blurred"} <= {r["image_quality"] for r in rows}
    for kind in splits:  # both splits have real-time turns and ego/non-ego sessions
        kind_rows = _rows(splits, kind)
        assert any(t["dynamism"] == "real-time" for r in kind_rows for t in r["turns"])
        assert any(r["image_url"] is None for r in kind_rows) and any(r["image_url"] for r in kind_rows)


def test_every_answer_matches_a_turn_in_order(splits):
    for kind in splits:
        for row in _rows(splits, kind):
            assert [a["interaction_id"] for a in row["answers"]] == [t["interaction_id"] for t in row["turns"]]
    all_ids = [t["interaction_id"] for k in splits for r in _rows(splits, k) for t in r["turns"]]
    assert len(all_ids) == len(set(all_ids))


def test_provenance_covers_every_turn_and_every_source(splits):
    provenance = json.loads((DATA / "provenance.json").read_text())
    for kind in splits:
        notes = {n["session_id"]: n for n in provenance[kind]}
        for row in _rows(splits, kind):
            where = [t["interaction_id"] for t in notes[row["session_id"]]["turns"]]
            assert where == [t["interaction_id"] for t in row["turns"]]
    sources = {t["answer_source"] for k in provenance for n in provenance[k] for t in n["turns"]}
    assert sources == {"image", "kg", "web", "none"}


def test_build_is_deterministic_and_matches_the_shipped_files(tmp_path):
    build(tmp_path / "a")
    build(tmp_path / "b")
    for kind in ("single-turn", "multi-turn"):
        first = (tmp_path / "a" / kind / SPLIT_FILE).read_bytes()
        assert first == (tmp_path / "b" / kind / SPLIT_FILE).read_bytes()
        assert first == (DATA / kind / SPLIT_FILE).read_bytes(), "rebuild data/ with python -m minibench.build_benchmark"
    assert (tmp_path / "a" / "provenance.json").read_text() == (DATA / "provenance.json").read_text()


def test_dataset_is_small():
    total = sum(p.stat().st_size for p in DATA.rglob("*") if p.is_file())
    assert total < 2_000_000

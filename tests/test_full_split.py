"""The synthetic full split (minibench/full_split.py): its counts, schema and ids, and the JSONL
append that a kill cannot fuse with. The evaluator at that size (a 640-turn run killed and
resumed, its report in Chromium): tests/full/test_full_split.py."""
from __future__ import annotations

from pathlib import Path

from evaluator.harness.dataset import load_split, read_conversations
from evaluator.harness.runner import append_jsonl, read_jsonl
from minibench.full_split import MINI, build_full_split


def conversations_of(folder: Path):
    ds, _, _ = load_split(str(folder), None, "validation")
    return ds, read_conversations(ds)


def test_the_full_split_has_the_official_counts_schema_and_new_ids(tmp_path):
    written = build_full_split(tmp_path / "list", single=130, multi=25)
    as_dicts = build_full_split(tmp_path / "dict", single=130, multi=25, form="dict")
    _, mini_single = conversations_of(MINI / "single-turn")
    _, mini_multi = conversations_of(MINI / "multi-turn")
    mini_ids = {c.session_id for c in mini_single + mini_multi} | {
        t.interaction_id for c in mini_single + mini_multi for t in c.turns}
    for dataset_type, sessions in (("single-turn", 130), ("multi-turn", 25)):
        ds, convs = conversations_of(written[dataset_type])
        assert ds.column_names == ["session_id", "image", "image_url", "image_quality", "turns", "answers"]
        assert len(convs) == sessions
        ids = [c.session_id for c in convs] + [t.interaction_id for c in convs for t in c.turns]
        assert len(set(ids)) == len(ids) and not set(ids) & mini_ids
        raw = ds[0]
        assert isinstance(raw["turns"], list) and isinstance(raw["turns"][0], dict)
        dict_ds, dict_convs = conversations_of(as_dicts[dataset_type])
        assert isinstance(dict_ds[0]["turns"], dict)  # the published data's dict of lists
        assert [(c.session_id, [(t.interaction_id, t.query, t.ground_truth) for t in c.turns]) for c in dict_convs] \
            == [(c.session_id, [(t.interaction_id, t.query, t.ground_truth) for t in c.turns]) for c in convs]
    _, single = conversations_of(written["single-turn"])
    assert {len(c.turns) for c in single} == {1}
    # copies keep the mini rows' questions, answers and images: copy 55 is mini row 0 again
    assert (single[55].turns[0].query, single[55].turns[0].ground_truth, single[55].image_url) == \
        (mini_single[0].turns[0].query, mini_single[0].turns[0].ground_truth, mini_single[0].image_url)
    _, multi = conversations_of(written["multi-turn"])
    assert [len(c.turns) for c in multi[:5]] == [2, 3, 4, 5, 6]
    assert [t.query for t in multi[4].turns] == [mini_multi[4].turns[i % len(mini_multi[4].turns)].query
                                                 for i in range(6)]


def test_an_append_after_a_line_cut_by_a_kill_keeps_the_appended_record(tmp_path):
    path = tmp_path / "answers.jsonl"
    append_jsonl(path, [{"interaction_id": "a"}])
    with path.open("a") as f:
        f.write('{"interaction_id": "b", "agent_resp')  # the kill landed mid-line
    append_jsonl(path, [{"interaction_id": "c"}, {"interaction_id": "d"}])
    assert [r["interaction_id"] for r in read_jsonl(path)] == ["a", "c", "d"]



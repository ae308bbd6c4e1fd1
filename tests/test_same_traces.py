"""benchmarks/same_traces.py: two runs' turns compared, timings left out."""
import json

from benchmarks.same_traces import compare, main


def write_run(folder, traces, answers):
    folder.mkdir()
    (folder / "traces.jsonl").write_text("".join(json.dumps(t) + "\n" for t in traces))
    (folder / "answers.jsonl").write_text("".join(json.dumps(a) + "\n" for a in answers))
    return folder


def turn(i, answer, ms, **fields):
    return ({"interaction_id": f"t{i}", "turn_idx": 0, "final_answer": answer, "stage_ms": {"answer": ms},
             "perception": {"block": "a sign", "ms": ms}, **fields},
            {"interaction_id": f"t{i}", "turn_idx": 0, "agent_response": answer})


def test_turns_that_differ_only_in_their_timings_are_equal_and_any_other_field_is_named(tmp_path, capsys):
    base = write_run(tmp_path / "base", *zip(turn(0, "Paris", 10.0), turn(1, "I don't know", 5.0, branch="a")))
    same = write_run(tmp_path / "same", *zip(turn(0, "Paris", 99.0), turn(1, "I don't know", 7.5, branch="a")))
    other = write_run(tmp_path / "other", *zip(turn(0, "Lyon", 10.0), turn(1, "I don't know", 5.0, branch="b")))
    assert compare(base, same) == {"turns": 2, "equal_traces": 2, "equal_branches": 2, "equal_stage_keys": 2,
                                   "equal_answers": 2, "differing_keys": [], "added_keys": []}
    assert compare(base, other) == {"turns": 2, "equal_traces": 0, "equal_branches": 1, "equal_stage_keys": 2,
                                    "equal_answers": 1, "differing_keys": ["branch", "final_answer"], "added_keys": []}
    assert main([str(base), str(same)]) == 0 and main([str(base), str(other)]) == 1
    assert "traces equal on 0 of 2 turns, branches on 1, stage times' keys on 2, answers on 1; keys that differ: ['branch', 'final_answer']" \
        in capsys.readouterr().out


def test_a_turn_missing_from_the_new_run_differs(tmp_path):
    base = write_run(tmp_path / "base", *zip(turn(0, "Paris", 1.0), turn(1, "Rome", 1.0)))
    new = write_run(tmp_path / "new", *zip(turn(0, "Paris", 1.0)))
    found = compare(base, new)
    assert (found["equal_traces"], found["equal_stage_keys"], found["equal_answers"]) == (1, 1, 1)


def test_two_turns_of_one_conversation_are_told_apart_and_a_key_on_one_side_only_is_named(tmp_path):
    first, second = turn(0, "Paris", 1.0), turn(0, "Rome", 1.0)
    second[0]["turn_idx"] = second[1]["turn_idx"] = 1
    base = write_run(tmp_path / "base", *zip(first, second))
    extra = turn(0, "Paris", 1.0, chunks=[{"text": "x", "ms": 3}])
    new = write_run(tmp_path / "new", *zip(extra, second))
    assert compare(base, new) == {"turns": 2, "equal_traces": 1, "equal_branches": 2, "equal_stage_keys": 2,
                                  "equal_answers": 2, "differing_keys": ["chunks"], "added_keys": []}
    # timings inside lists are left out too
    again = write_run(tmp_path / "again", *zip(turn(0, "Paris", 2.0, chunks=[{"text": "x", "ms": 9}]), second))
    assert compare(new, again)["equal_traces"] == 2


def test_a_field_every_new_trace_gained_is_named_apart_and_the_turns_still_read_equal(tmp_path, capsys):
    """A release that adds `faults` to every trace changes no turn; a key the base run has on one
    turn is no new field, and a turn whose value differs there differs."""
    base = write_run(tmp_path / "base", *zip(turn(0, "Paris", 1.0, branch="rag"), turn(1, "Rome", 1.0, branch="rag")))
    new = write_run(tmp_path / "new", *zip(turn(0, "Paris", 1.0, branch="rag", faults=[]),
                                           turn(1, "Rome", 1.0, branch="direct", faults=[])))
    found = compare(base, new)
    assert (found["equal_traces"], found["equal_branches"], found["added_keys"]) == (1, 1, ["faults"])
    assert found["differing_keys"] == ["branch"]
    assert main([str(base), str(new)]) == 1
    assert "traces equal on 1 of 2 turns (keys only the new run has, left out: ['faults']), branches on 1" in \
        capsys.readouterr().out
    had = write_run(tmp_path / "had", *zip(turn(0, "Paris", 1.0, branch="rag", faults=[]),
                                           turn(1, "Rome", 1.0, branch="rag")))
    found = compare(had, new)
    assert found["added_keys"] == [] and found["differing_keys"] == ["branch", "faults"]


def test_a_turn_that_timed_another_stage_differs_though_every_other_field_is_equal(tmp_path):
    """Stage times are left out as values, not as names: a stage timed on one side only is a stage
    run on one side only."""
    base = write_run(tmp_path / "base", *zip(turn(0, "Paris", 1.0), turn(1, "Rome", 1.0)))
    later, other = turn(0, "Paris", 4.0), turn(1, "Rome", 1.0)
    other[0]["stage_ms"]["check"] = 2.0
    new = write_run(tmp_path / "new", *zip(later, other))
    found = compare(base, new)
    assert (found["equal_traces"], found["equal_stage_keys"]) == (2, 1)
    assert main([str(base), str(new)]) == 1


def test_a_list_is_compared_item_by_item_and_an_empty_new_run_differs_on_every_turn(tmp_path):
    base = write_run(tmp_path / "base", *zip(turn(0, "Paris", 1.0, chunks=[{"text": "Eiffel", "ms": 1}])))
    other = write_run(tmp_path / "other", *zip(turn(0, "Paris", 1.0, chunks=[{"text": "Louvre", "ms": 1}])))
    assert compare(base, other)["differing_keys"] == ["chunks"]
    empty = write_run(tmp_path / "empty", [], [])
    found = compare(base, empty)
    assert (found["turns"], found["equal_traces"], found["equal_answers"], found["added_keys"]) == (1, 0, 0, [])

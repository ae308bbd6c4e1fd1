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
    assert compare(base, same) == {"turns": 2, "equal_traces": 2, "equal_answers": 2, "differing_keys": []}
    assert compare(base, other) == {"turns": 2, "equal_traces": 0, "equal_answers": 1,
                                    "differing_keys": ["branch", "final_answer"]}
    assert main([str(base), str(same)]) == 0 and main([str(base), str(other)]) == 1
    assert "traces equal on 0 of 2 turns, answers on 1; keys that differ: ['branch', 'final_answer']" in \
        capsys.readouterr().out


def test_a_turn_missing_from_the_new_run_differs(tmp_path):
    base = write_run(tmp_path / "base", *zip(turn(0, "Paris", 1.0), turn(1, "Rome", 1.0)))
    new = write_run(tmp_path / "new", *zip(turn(0, "Paris", 1.0)))
    found = compare(base, new)
    assert (found["equal_traces"], found["equal_answers"]) == (1, 1)


def test_two_turns_of_one_conversation_are_told_apart_and_a_key_on_one_side_only_is_named(tmp_path):
    first, second = turn(0, "Paris", 1.0), turn(0, "Rome", 1.0)
    second[0]["turn_idx"] = second[1]["turn_idx"] = 1
    base = write_run(tmp_path / "base", *zip(first, second))
    extra = turn(0, "Paris", 1.0, chunks=[{"text": "x", "ms": 3}])
    new = write_run(tmp_path / "new", *zip(extra, second))
    assert compare(base, new) == {"turns": 2, "equal_traces": 1, "equal_answers": 2, "differing_keys": ["chunks"]}
    # timings inside lists are left out too
    again = write_run(tmp_path / "again", *zip(turn(0, "Paris", 2.0, chunks=[{"text": "x", "ms": 9}]), second))
    assert compare(new, again)["equal_traces"] == 2

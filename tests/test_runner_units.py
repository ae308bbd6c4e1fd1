"""The generation loop's parts (evaluator/harness/runner.py): the JSONL files a run appends and
reads back, the official row of a turn, the histories, the agent's call and its report, and the
records one batch leaves in the output folder.

The agents are stand-ins for what is outside the unit (a participant's agent); the dataset holds
its images as the Hugging Face split does (an `image` column)."""
from __future__ import annotations

from pathlib import Path

from PIL import Image

from agents.base_agent import IDK_ANSWER, TURN_BUDGET_S
from evaluator.harness import runner
from evaluator.harness.dataset import Conversation, DatasetTurn
from evaluator.harness.runner import (
    GenerationStats,
    ImageStore,
    _call_agent,
    _report_parts,
    answer_record,
    append_jsonl,
    base_row,
    check_answers,
    generate,
    guarded_stage_ms,
    history_for,
    latest_per_batch,
    latest_per_turn,
    read_jsonl,
    run_budget,
    saved_answers,
)
from evaluator.scoring.truncate import load_truncator

# The official per-turn columns up to the history, in the official evaluator's order.
OFFICIAL_COLUMNS = ["session_id", "interaction_id", "turn_idx", "is_ego", "image_quality", "query_category", "domain",
                    "dynamism", "query", "ground_truth", "agent_response", "total_turn_count", "interaction_id_history"]


def conversation(index=0, turns=2, url=None, labels=None):
    return Conversation(index, f"s{index}", url, "normal", [
        DatasetTurn(f"s{index}-t{t}", f"query {index}.{t}", f"truth {index}.{t}", domain="plants",
                    query_category="simple", dynamism="static", labels=dict(labels or {}),
                    stage_labels={"target_object_name": "oak"} if t == 0 else None)
        for t in range(turns)])


class Split:
    """A split's rows as `datasets` hands them: an `image` column, row by index."""

    column_names = ["image", "session_id"]

    def __init__(self, broken=()):
        self.broken, self.reads = set(broken), []

    def __getitem__(self, i):
        self.reads.append(i)
        if i in self.broken:
            raise OSError("truncated image file")
        return {"image": Image.new("RGB", (40 + i, 30), (i, 0, 0))}


# --------------------------------------------------------------------------- the JSONL files
def test_a_jsonl_file_reads_back_its_whole_records_skipping_blank_and_cut_lines(tmp_path):
    assert read_jsonl(tmp_path / "none.jsonl") == []
    path = tmp_path / "a.jsonl"
    path.write_text('{"a": 1}\n\n   \n{"b": 2}\n{"c": ', encoding="utf-8")
    assert read_jsonl(path) == [{"a": 1}, {"b": 2}]


def test_an_append_after_a_cut_line_starts_on_a_line_of_its_own_and_writes_what_json_cannot_as_text(tmp_path):
    path = tmp_path / "a.jsonl"
    append_jsonl(path, [])
    assert not path.exists()  # nothing to write: no file made
    append_jsonl(path, [{"a": 1}, {"path": Path("/x/y")}])
    assert path.read_text(encoding="utf-8") == '{"a": 1}\n{"path": "/x/y"}\n'
    with path.open("a", encoding="utf-8") as f:
        f.write('{"cut": ')  # a kill in the middle of a line
    append_jsonl(path, [{"b": "é"}])
    assert read_jsonl(path) == [{"a": 1}, {"path": "/x/y"}, {"b": "é"}]
    append_jsonl(path, [{"c": 3}])  # after a whole line: no blank line in between
    assert path.read_text(encoding="utf-8").endswith('{"b": "\\u00e9"}\n{"c": 3}\n')


def test_a_turn_or_batch_written_twice_keeps_its_last_record_and_others_are_left_out():
    records = [{"interaction_id": "a", "v": 1}, {"interaction_id": "b", "v": 1}, {"interaction_id": "c", "v": 1},
               {"interaction_id": "a", "v": 2}, {"v": 9}]
    assert latest_per_turn(records, {"a", "b"}) == [{"interaction_id": "a", "v": 2}, {"interaction_id": "b", "v": 1}]
    batches = [{"source": "x", "shard": "0", "batch": 0, "v": 1}, {"source": "x", "shard": "1", "batch": 0, "v": 1},
               {"source": "x", "shard": "0", "batch": 0, "v": 2}, {"source": "y", "shard": "0", "batch": 0, "v": 1},
               {"source": "x", "shard": "0", "batch": 1, "v": 1}]
    assert [b["v"] for b in latest_per_batch(batches)] == [2, 1, 1, 1]


def test_the_saved_answers_are_the_last_of_each_turn(tmp_path):
    append_jsonl(tmp_path / "answers.jsonl", [{"interaction_id": "a", "agent_response": "x"}, {"note": "no id"},
                                              {"interaction_id": "a", "agent_response": "y"}])
    assert saved_answers(tmp_path) == {"a": {"interaction_id": "a", "agent_response": "y"}}


# --------------------------------------------------------------------------- rows and histories
def test_a_turns_row_has_the_official_columns_in_order_then_its_labels_answer_keys_and_error():
    conv = conversation(turns=3, url="https://example.org/a.jpg", labels={"domain": "plants"})
    conv.turns[0].ans_accepted, conv.turns[0].abstain_expected = ["oak", "an oak tree"], False
    row = base_row(conv, 2, "an oak")
    assert list(row) == OFFICIAL_COLUMNS
    assert row == {"session_id": "s0", "interaction_id": "s0-t2", "turn_idx": 2, "is_ego": False,
                   "image_quality": "normal", "query_category": "simple", "domain": "plants", "dynamism": "static",
                   "query": "query 0.2", "ground_truth": "truth 0.2", "agent_response": "an oak",
                   "total_turn_count": 3, "interaction_id_history": ["s0-t0", "s0-t1"]}
    first = answer_record(conv, 0, "an oak", "An oak, I think", "late")
    assert list(first)[:len(OFFICIAL_COLUMNS)] == OFFICIAL_COLUMNS
    assert first["domain_name"] == "plants" and first["stage_labels"] == {"target_object_name": "oak"}
    assert (first["ans_accepted"], first["abstain_expected"]) == (["oak", "an oak tree"], False)
    assert (first["raw_answer"], first["error"]) == ("An oak, I think", "late")
    assert "stage_labels" not in answer_record(conv, 1, "x", "x", None)


def test_a_turns_history_is_its_earlier_questions_and_the_answers_as_saved():
    conv = conversation(turns=3)
    answers = {"s0-t0": "an oak", "s0-t1": IDK_ANSWER}
    assert history_for(conv, 0, answers) == []
    assert history_for(conv, 2, answers) == [
        {"role": "user", "content": "query 0.0"}, {"role": "assistant", "content": "an oak"},
        {"role": "user", "content": "query 0.1"}, {"role": "assistant", "content": IDK_ANSWER}]


# --------------------------------------------------------------------------- the agent's call
def test_a_batchs_return_value_is_refused_saying_why():
    assert check_answers(["a", "b"], 2) is None and check_answers(("a",), 1) is None
    assert check_answers("ab", 2) == "agent returned str, not a list of 2 strings"
    assert check_answers(["a"], 2) == "agent returned 1 answers for 2 queries"
    assert check_answers(["a", None, 3], 3) == "answer 1 is NoneType, not str"
    assert check_answers(["a", 3], 2) == "answer 1 is int, not str"


class Agent:
    def __init__(self, reply, report=None):
        self.reply, self.report, self.kwargs = reply, report, None
        self.last_batch_report = {"traces": ["stale"]}

    def batch_generate_response(self, queries, images, histories, **kwargs):
        self.kwargs = kwargs
        assert self.last_batch_report is None  # the last batch's report is gone before this one
        self.last_batch_report = self.report
        if isinstance(self.reply, Exception):
            raise self.reply
        return self.reply(queries) if callable(self.reply) else self.reply


class Clock:
    """perf_counter's stand-in: the agent's call moves it on."""

    def __init__(self):
        self.now = 100.0

    def perf_counter(self):
        return self.now


def test_the_agents_answers_come_back_with_its_report_and_the_oracle_only_in_an_oracle_run(monkeypatch):
    clock = Clock()
    monkeypatch.setattr(runner, "time", clock)

    def slow_upper(queries):
        clock.now += 0.25
        return [q.upper() for q in queries]

    agent = Agent(slow_upper, report={"traces": []})
    answers, error, wall_ms, report = _call_agent(agent, ["a", "b"], [None, None], [[], []])
    assert (answers, error, report, agent.kwargs) == (["A", "B"], None, {"traces": []}, {})
    assert wall_ms == 250.0
    _call_agent(agent, ["a"], [None], [[]], oracle=[{"stage": "entity", "entity": "oak"}])
    assert agent.kwargs == {"oracle": [{"stage": "entity", "entity": "oak"}]}
    not_a_dict = Agent(lambda queries: ["x"] * len(queries), report=["not", "a", "dict"])
    assert _call_agent(not_a_dict, ["a"], [None], [[]])[3] is None


def test_an_agent_that_raises_or_answers_wrongly_costs_its_batch_i_dont_know_with_the_error():
    long = "x" * 600
    answers, error, _, _ = _call_agent(Agent(RuntimeError(long)), ["a", "b"], [None, None], [[], []])
    assert answers == [IDK_ANSWER, IDK_ANSWER] and error == "agent raised RuntimeError: " + "x" * 500
    answers, error, _, _ = _call_agent(Agent(["only one"]), ["a", "b"], [None, None], [[], []])
    assert answers == [IDK_ANSWER, IDK_ANSWER] and error == "agent returned 1 answers for 2 queries"


def test_an_agent_whose_report_attribute_cannot_be_set_is_still_asked():
    class Stubborn:
        @property
        def last_batch_report(self):
            return {"traces": [{"n": 1}]}

        def batch_generate_response(self, queries, images, histories):
            return ["yes"] * len(queries)

    assert _call_agent(Stubborn(), ["a"], [None], [[]])[::3] == (["yes"], {"traces": [{"n": 1}]})
    plain = type("Plain", (), {"batch_generate_response": lambda self, q, i, h: ["ok"] * len(q)})()
    assert _call_agent(plain, ["a"], [None], [[]])[0] == ["ok"] and not hasattr(plain, "last_batch_report")


# --------------------------------------------------------------------------- the agent's report
def test_a_report_gives_one_trace_per_turn_and_each_stages_time_and_tokens():
    calls = [{"stage": "answer", "kind": "chat", "requests": 2, "wall_ms": 100.0, "prompt_tokens": 50,
              "output_tokens": 7, "reasoning_tokens": 3, "empty_replies": 1, "refusals": [[0, "policy"]]},
             {"stage": "answer", "kind": "chat", "requests": 1, "wall_ms": "20.5", "prompt_tokens": 5},
             {"stage": "rerank", "kind": "rerank", "requests": 9, "wall_ms": 4},
             {"wall_ms": 1.0}, "not a call", {"stage": "bad", "wall_ms": "slow", "requests": 1},
             {"stage": "route", "wall_ms": None}]
    traces, n_calls, stage_ms, tokens = _report_parts({"traces": [{"a": 1}, "x", {"b": 2}], "engine_calls": calls}, 2)
    assert traces == [{"a": 1}, None] and n_calls == 7
    assert stage_ms == {"answer": 120.5, "rerank": 4.0, "?": 1.0, "bad": 0.0, "route": 0.0}
    assert tokens["answer"] == {"prompt": 55, "completion": 7, "reasoning": 3, "requests": 3, "empty": 1, "refused": 1}
    assert tokens["rerank"]["requests"] == 0  # a reranker's pairs are not chat requests
    assert tokens["bad"] == {} and tokens["?"]["requests"] == 0


def test_a_report_short_of_traces_or_calls_gives_what_it_has():
    assert _report_parts(None, 2) == ([None, None], None, None, None)
    assert _report_parts({"traces": "x", "engine_calls": None}, 2) == ([None, None], None, None, None)
    assert _report_parts({"traces": [{"a": 1}]}, 3) == ([{"a": 1}, None, None], None, None, None)
    assert _report_parts({"traces": ({"a": 1},)}, 1) == ([None], None, None, None)  # traces must be a list
    guarded = {"traces": [None, {"stage_ms": {"route": 5}}], "engine_calls": [{"stage": "answer", "wall_ms": 9.0}]}
    assert _report_parts(guarded, 2)[2] == {"route": 5.0}  # the guards' times win over the calls'


def test_the_guards_times_are_the_first_trace_that_has_them_all_as_numbers():
    assert guarded_stage_ms([None, {"stage_ms": {}}, {"stage_ms": {"a": "1"}}, {"stage_ms": {"a": 2, 3: 1.5}},
                             {"stage_ms": {"b": 9}}]) == {"a": 2.0, "3": 1.5}
    assert guarded_stage_ms([{"stage_ms": None}, {}]) is None and guarded_stage_ms([]) is None


def test_a_batchs_own_budget_is_the_one_its_traces_agree_on():
    assert run_budget([{"turn_budget_s": 10.0}, None, {"turn_budget_s": 10.0}], 8) == {
        "turn_budget_s": 10.0, "run_budget_ms": 80000.0}
    assert run_budget([{"turn_budget_s": 10.0}, {"turn_budget_s": 5}], 8) == {"turn_budget_s": None,
                                                                             "run_budget_ms": None}
    assert run_budget([{"turn_budget_s": 0}], 8) == {"turn_budget_s": 0, "run_budget_ms": None}
    assert run_budget([], 8) == {"turn_budget_s": None, "run_budget_ms": None}


# --------------------------------------------------------------------------- images
def test_a_conversations_image_is_read_once_kept_until_released_and_a_broken_one_recorded():
    split, stats = Split(broken={1}), GenerationStats()
    store = ImageStore(split, stats)
    ok, broken = conversation(0, url="https://example.org/a.jpg"), conversation(1, url="https://example.org/b.jpg")
    first = store.get(ok)
    assert store.get(ok) is first and first.size == (40, 30) and split.reads == [0]
    assert store.get(broken) is None and store.get(broken) is None and split.reads == [0, 1]
    assert stats.image_failures == ["s1: OSError: truncated image file"]
    store.release(ok)
    store.release(ok)  # released twice: nothing to drop
    assert store.get(ok) is not first and split.reads == [0, 1, 0]
    ego = ImageStore(Split(), GenerationStats()).get(conversation(2))
    assert ego.size == (960, 1280)  # egocentric: resized as the evaluator hands it over


def test_a_split_without_images_and_a_row_without_url_is_recorded_not_raised():
    class NoImages:
        column_names = ["session_id"]

        def __getitem__(self, i):
            raise AssertionError("not read: the split has no image column")

    stats = GenerationStats()
    assert ImageStore(NoImages(), stats).get(conversation(3)) is None
    assert stats.image_failures == ["s3: ValueError: row has neither an image nor an image_url"]


# --------------------------------------------------------------------------- one batch's records
def test_a_batch_writes_its_traces_timings_and_answers_and_a_turn_without_image_is_not_asked(tmp_path, monkeypatch):
    clock = Clock()
    monkeypatch.setattr(runner, "time", clock)
    convs = [conversation(0, turns=1, url="https://example.org/a.jpg"),
             conversation(1, turns=1, url="https://example.org/b.jpg"),
             conversation(2, turns=1, url="https://example.org/c.jpg")]
    report = {"traces": [{"turn_budget_s": 10.0, "stage_ms": {"answer": 5.0}}, {"turn_budget_s": 10.0}],
              "engine_calls": [{"stage": "answer", "requests": 2, "wall_ms": 5.0}]}
    def answer(queries):
        clock.now += 0.1234567
        return [f"answer to {q}" for q in queries]

    agent = Agent(answer, report=report)
    stats = generate(agent, Split(broken={1}), convs, 3, tmp_path, load_truncator(prefer_llama=False),
                     resume=False, progress=False, shard="2")
    assert stats.turns_reused == 0 and stats.image_failures == ["s1: OSError: truncated image file"]
    answers = read_jsonl(tmp_path / runner.ANSWERS)
    assert [(a["interaction_id"], a["agent_response"], a["error"], a["batch"], a["shard"]) for a in answers] == [
        ("s0-t0", "answer to query 0.0", None, 0, "2"),
        ("s1-t0", IDK_ANSWER, "image could not be loaded; answered without asking the agent", 0, "2"),
        ("s2-t0", "answer to query 2.0", None, 0, "2")]
    assert all(a["batch_wall_ms"] == 123.457 for a in answers)
    traces = read_jsonl(tmp_path / runner.TRACES)
    assert [(t["interaction_id"], t["session_id"], t["turn_idx"]) for t in traces] == [("s0-t0", "s0", 0),
                                                                                     ("s2-t0", "s2", 0)]
    assert traces[0]["stage_ms"] == {"answer": 5.0} and "oracle" not in traces[0]
    (batch,) = read_jsonl(tmp_path / runner.BATCHES)
    assert {k: batch[k] for k in ("batch", "shard", "turns", "batch_size", "budget_ms", "turn_budget_s",
                                  "run_budget_ms", "engine_calls", "stage_ms", "error", "image_errors")} == {
        "batch": 0, "shard": "2", "turns": 3, "batch_size": 3, "budget_ms": TURN_BUDGET_S * 1000.0 * 3,
        "turn_budget_s": 10.0, "run_budget_ms": 30000.0, "engine_calls": 1, "stage_ms": {"answer": 5.0},
        "error": None, "image_errors": ["s1: OSError: truncated image file"]}
    assert batch["stage_tokens"]["answer"]["requests"] == 2 and batch["tokenizer"] and batch["wall_ms"] == 123.457


def test_a_batch_of_turns_whose_images_all_failed_asks_nothing_and_each_batch_lists_its_own_failures(tmp_path):
    convs = [conversation(0, turns=1, url="https://example.org/a.jpg"),
             conversation(1, turns=1, url="https://example.org/b.jpg")]
    asked = []
    agent = Agent(lambda queries: asked.extend(queries) or ["x"] * len(queries))
    generate(agent, Split(broken={0}), convs, 1, tmp_path, load_truncator(prefer_llama=False), resume=False,
             progress=False)
    first, second = read_jsonl(tmp_path / runner.BATCHES)
    assert (first["wall_ms"], first["engine_calls"], first["error"]) == (0.0, None, None)
    assert first["image_errors"] == ["s0: OSError: truncated image file"] and second["image_errors"] == []
    assert asked == ["query 1.0"]


def test_a_resumed_run_asks_only_the_turns_without_a_saved_answer_and_feeds_the_saved_ones_as_history(tmp_path):
    convs = [conversation(0, turns=2), conversation(1, turns=1)]
    append_jsonl(tmp_path / runner.ANSWERS, [{"interaction_id": "s0-t0", "agent_response": "saved oak"}])
    seen = []

    class Recorder:
        def batch_generate_response(self, queries, images, histories):
            seen.append((list(queries), histories))
            return ["new"] * len(queries)

    stats = generate(Recorder(), Split(), convs, 2, tmp_path, load_truncator(prefer_llama=False), resume=True,
                     progress=False)
    assert stats.turns_reused == 1
    asked = [q for queries, _ in seen for q in queries]
    assert "query 0.0" not in asked and sorted(asked) == ["query 0.1", "query 1.0"]
    history = next(h for queries, hs in seen for q, h in zip(queries, hs) if q == "query 0.1")
    assert history[1] == {"role": "assistant", "content": "saved oak"}
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    append_jsonl(fresh / runner.ANSWERS, [{"interaction_id": "s0-t0", "agent_response": "ignored"}])
    assert generate(Recorder(), Split(), convs, 2, fresh, load_truncator(prefer_llama=False), resume=False,
                    progress=False).turns_reused == 0


def test_an_oracle_run_hands_each_turn_its_label_and_traces_it(tmp_path):
    convs = [conversation(0, turns=1)]

    class Oracled:
        def __init__(self):
            self.oracle, self.last_batch_report = None, None

        def batch_generate_response(self, queries, images, histories, oracle=None):
            self.oracle = oracle
            self.last_batch_report = {"traces": [{"n": 1}]}
            return ["oak"]

    agent = Oracled()
    generate(agent, Split(), convs, 1, tmp_path, load_truncator(prefer_llama=False), resume=False, progress=False,
             oracle="entity")
    assert agent.oracle == [{"stage": "entity", "entity": "oak"}]
    (trace,) = read_jsonl(tmp_path / runner.TRACES)
    assert trace["oracle"] == {"stage": "entity", "entity": "oak"} and trace["n"] == 1
    boxed = conversation(5, turns=1, url="https://example.org/a.jpg")
    boxed.turns[0].stage_labels = {"target_roi_bbox": [0, 0, 20, 15], "image_size": [90, 60]}
    region = Oracled()
    (tmp_path / "region").mkdir()
    generate(region, Split(), [boxed], 1, tmp_path / "region", load_truncator(prefer_llama=False), resume=False,
             progress=False, oracle="region")
    assert region.oracle == [{"stage": "region", "box": [0.0, 0.0, 10.0, 7.5]}]  # to the 45 x 30 image handed over


def test_each_conversations_image_is_dropped_after_its_last_turn(tmp_path, monkeypatch):
    released = []
    monkeypatch.setattr(ImageStore, "release", lambda self, conv: released.append(conv.session_id))
    convs = [conversation(0, turns=2), conversation(1, turns=1)]
    generate(Agent(lambda q: ["x"] * len(q)), Split(), convs, 1, tmp_path, load_truncator(prefer_llama=False),
             resume=False, progress=False)
    assert released == ["s0", "s1"] or released == ["s1", "s0"]
    assert len(read_jsonl(tmp_path / runner.BATCHES)) == 3


def test_the_run_shows_one_bar_of_the_turns_to_ask_moved_on_by_each_batch(tmp_path, monkeypatch):
    bars = []

    class Bar:
        def __init__(self, total, desc, enabled):
            self.args, self.steps, self.closed = (total, desc, enabled), [], False
            bars.append(self)

        def update(self, n):
            self.steps.append(n)

        def close(self):
            self.closed = True

    monkeypatch.setattr(runner, "progress_bar", Bar)
    append_jsonl(tmp_path / runner.ANSWERS, [{"interaction_id": "s0-t0", "agent_response": "saved"}])
    generate(Agent(lambda q: ["x"] * len(q)), Split(), [conversation(0, turns=2), conversation(1, turns=3)], 2,
             tmp_path, load_truncator(prefer_llama=False), resume=True, progress=True)
    (bar,) = bars
    assert bar.args == (4, "Generating answers", True) and sum(bar.steps) == 4 and bar.closed


def test_the_progress_bar_counts_turns_and_is_silent_when_off(monkeypatch):
    from tqdm import tqdm

    # no monitor thread: a process forked after it (mutmut forks one per mutant) could inherit its lock held
    monkeypatch.setattr(tqdm, "monitor_interval", 0)
    bar = runner.progress_bar(5, "Generating answers", True)
    assert (bar.total, bar.desc, bar.unit, bar.disable) == (5, "Generating answers", "turn", False)
    bar.close()
    assert runner.progress_bar(5, "Generating answers", False).disable is True

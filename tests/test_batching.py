"""The turn-batch iterator and the generation loop's histories."""
import json
import random

import pytest
from PIL import Image

from evaluator.harness.batching import (
    SKIPPED_SESSIONS,
    clip_batch_size,
    conversation_selection,
    planned_batches,
    turn_batches,
)
from evaluator.harness.dataset import Conversation, DatasetTurn
from evaluator.harness.runner import generate
from evaluator.scoring.truncate import load_truncator


def conversations(turn_counts, ego=True):
    return [Conversation(i, f"s{i}", None if ego else f"http://x/{i}.png", "normal",
                         [DatasetTurn(f"s{i}-t{t}", f"query {i}.{t}", f"truth {i}.{t}") for t in range(n)])
            for i, n in enumerate(turn_counts)]


def test_official_order_worked_by_hand():
    # queue 0..4; unfinished conversations go back to the front one by one (appendleft)
    batches = list(turn_batches(conversations([3, 1, 2, 4, 1]), 2))
    assert batches == [
        [(0, 0), (1, 0)],
        [(0, 1), (2, 0)],
        [(2, 1), (0, 2)],
        [(3, 0), (4, 0)],
        [(3, 1)], [(3, 2)], [(3, 3)],
    ]


def test_iterator_properties_on_random_datasets():
    rng = random.Random(7)
    for _ in range(200):
        counts = [rng.randint(1, 6) for _ in range(rng.randint(1, 25))]
        size = rng.randint(1, 8)
        batches = list(turn_batches(conversations(counts), size))
        assert batches == list(turn_batches(conversations(counts), size))  # deterministic
        where = {}
        for number, batch in enumerate(batches):
            assert 1 <= len(batch) <= size
            assert len({pos for pos, _ in batch}) == len(batch)  # one turn per conversation
            for pos, t in batch:
                assert (pos, t) not in where
                where[(pos, t)] = number
        assert set(where) == {(i, t) for i, n in enumerate(counts) for t in range(n)}
        for i, n in enumerate(counts):
            for t in range(1, n):
                assert where[(i, t)] > where[(i, t - 1)]  # strictly later batch
        first_seen = sorted(range(len(counts)), key=lambda i: where[(i, 0)])
        assert first_seen == sorted(first_seen)  # conversations start in dataset order


def test_num_conversations_stops_in_whole_batches_after_passing_n():
    # the official loop: after each batch, stop once MORE than N conversations have been served
    convs = conversations([3, 1, 2, 4, 1])
    everything = list(turn_batches(convs, 2))
    assert planned_batches(convs, 2, None) == everything
    assert planned_batches(convs, 2, -1) == everything
    assert planned_batches(convs, 2, 5) == everything == planned_batches(convs, 2, 99)
    # N=1: the first batch already served 2 conversations
    assert planned_batches(convs, 2, 1) == [[(0, 0), (1, 0)]]
    # N=2: batches 1-2 serve 0, 1, 2 -> stop; conversations 0 and 2 end part-way
    assert planned_batches(convs, 2, 2) == [[(0, 0), (1, 0)], [(0, 1), (2, 0)]]
    # N=3: 3 served after batch 3 (not more than 3), batch 4 brings 3 and 4
    assert planned_batches(convs, 2, 3) == everything[:4]
    single = conversations([1] * 10)
    assert sum(len(b) for b in planned_batches(single, 4, 5)) == 8  # overshoots by a whole batch
    assert sum(len(b) for b in planned_batches(single, 4, 4)) == 8  # 4 served is not more than 4
    assert sum(len(b) for b in planned_batches(single, 4, 0)) == 4


def test_batch_size_is_clipped():
    assert [clip_batch_size(v) for v in (0, -3, 1, 5, 16, 40, "7", None, "x")] == [1, 1, 1, 5, 16, 16, 7, 1, 1]


def test_skipped_sessions_never_reach_the_agent():
    convs = conversations([1, 2, 1])
    convs[1].session_id = next(iter(SKIPPED_SESSIONS))
    served = [pos for batch in turn_batches(convs, 2) for pos, _ in batch]
    assert served == [0, 2]
    # facebookresearch/CRAG-MM's CRAGTurnBatchIterator pops a skipped session into the batch's
    # conversations before it drops it, so it still takes a slot: the batch is one turn short
    assert list(turn_batches(convs, 2)) == [[(0, 0)], [(2, 0)]]


class FakeDataset:
    column_names = ["image"]

    def __getitem__(self, i):
        return {"image": Image.new("RGB", (50 + i, 40), (i, 0, 0))}


class RecordingAgent:
    def __init__(self, replies):
        self.replies = replies
        self.calls = []

    def batch_generate_response(self, queries, images, histories):
        self.calls.append({"queries": list(queries), "histories": histories, "sizes": [im.size for im in images]})
        return [self.replies[q] for q in queries]


def test_agent_gets_its_own_truncated_answers_as_history(tmp_path):
    convs = conversations([3, 2], ego=True)
    long_answer = "The answer is " + " ".join(["banana"] * 120)
    replies = {"query 0.0": long_answer, "query 0.1": "second", "query 0.2": "third",
               "query 1.0": "I don't know", "query 1.1": "fine"}
    agent = RecordingAgent(replies)
    truncator = load_truncator(prefer_llama=False)
    generate(agent, FakeDataset(), convs, 2, tmp_path, truncator, resume=False, progress=False)
    # MiniLM's WordPiece reads "the" 1996, "answer" 3437, "is" 2003, then one id 15212 per "banana":
    # its 75th token is the 72nd banana, and the raw string is cut at that token's end
    ids = truncator.tokenizer.encode(long_answer, add_special_tokens=False).ids
    assert ids == [1996, 3437, 2003] + [15212] * 120
    cut = "The answer is " + " ".join(["banana"] * 72)

    by_query = {q: h for call in agent.calls for q, h in zip(call["queries"], call["histories"])}
    assert by_query["query 0.0"] == [] and by_query["query 1.0"] == []
    assert by_query["query 0.2"] == [
        {"role": "user", "content": "query 0.0"}, {"role": "assistant", "content": cut},
        {"role": "user", "content": "query 0.1"}, {"role": "assistant", "content": "second"},
    ]
    assert by_query["query 1.1"] == [{"role": "user", "content": "query 1.0"},
                                     {"role": "assistant", "content": "I don't know"}]
    assert all(size == (960, 1280) for call in agent.calls for size in call["sizes"])  # egocentric
    saved = [json.loads(line) for line in (tmp_path / "answers.jsonl").read_text().splitlines()]
    first = next(r for r in saved if r["interaction_id"] == "s0-t0")
    assert first["raw_answer"] == long_answer and first["agent_response"] == cut


def test_the_official_cut_keeps_75_ids_counting_begin_of_text():
    from tokenizers import Tokenizer

    from evaluator.scoring.truncate import LlamaTruncator, packaged_tokenizer_file

    answer = "The answer is " + " ".join(["banana"] * 120)
    # Llama 3.2: begin-of-text 128000, "The" 791, " answer" 4320, " is" 374, " banana" 44196 each;
    # 75 ids are begin-of-text, 3 words and 71 bananas, decoded without the special id
    assert Tokenizer.from_file(packaged_tokenizer_file()).encode(answer).ids == [128000, 791, 4320, 374] + [44196] * 120
    truncator = LlamaTruncator(packaged_tokenizer_file(), "Llama 3.2 (packaged)")
    short = "It is " + " ".join(["banana"] * 70)  # 1 + 2 + 70 = 73 ids: kept whole
    assert truncator.truncate([answer, short, "I don't know"]) == [
        "The answer is " + " ".join(["banana"] * 71), short, "I don't know"]


def test_only_egocentric_frames_are_resized(tmp_path):
    # conversation 0 has no image_url (egocentric), conversation 1 has one (third-person); the
    # official iterator resizes only the first to 960 x 1280
    convs = conversations([1, 1], ego=True)
    convs[1].image_url = "http://x/1.png"  # its image is embedded, so it is never fetched
    agent = RecordingAgent({"query 0.0": "a", "query 1.0": "b"})
    generate(agent, FakeDataset(), convs, 2, tmp_path, load_truncator(prefer_llama=False),
             resume=False, progress=False)
    sizes = dict(zip(agent.calls[0]["queries"], agent.calls[0]["sizes"]))
    assert sizes == {"query 0.0": (960, 1280), "query 1.0": (51, 40)}  # FakeDataset: (50 + i, 40)


def test_stop_after_limits_what_the_agent_is_asked(tmp_path):
    convs = conversations([2, 2, 2], ego=True)
    replies = {f"query {i}.{t}": "x" for i in range(3) for t in range(2)}
    agent = RecordingAgent(replies)
    generate(agent, FakeDataset(), convs, 2, tmp_path, load_truncator(prefer_llama=False),
             resume=False, progress=False, stop_after=1)
    assert [call["queries"] for call in agent.calls] == [["query 0.0", "query 1.0"]]


def test_crag_mm_replaces_one_single_turn_image_url():
    from evaluator.harness.dataset import apply_image_url_updates
    from evaluator.scoring.rules import RULE_SETS

    convs = conversations([1, 1], ego=False)
    convs[1].session_id = "0df99a9a-6a5d-4ff4-b8e4-e3ee90209dfe"  # listed in the published config.py
    updates = RULE_SETS["crag-mm"].image_url_updates
    assert apply_image_url_updates(convs, updates["single-turn"]) == [convs[1].session_id]
    assert convs[1].image_url.startswith("https://web.archive.org/") and convs[0].image_url == "http://x/0.png"
    assert "multi-turn" not in updates and RULE_SETS["kddcup2025"].image_url_updates == {}


def test_a_batchs_stage_times_are_its_guards_for_every_stage_with_the_engine_calls_only_where_no_trace_has_them():
    from evaluator.harness.runner import _report_parts

    calls = [{"stage": "answer", "wall_ms": 900.0, "requests": 2}]
    timed = {"perceive": 120.0, "retrieve": 40.0, "kwgate_overlap": 2, "kwgate_answer": 950.0}
    traces = [None, {"stage_ms": timed}, {"stage_ms": timed}]
    _, count, stage_ms, tokens = _report_parts({"traces": traces, "engine_calls": calls}, 3)
    assert count == 1 and stage_ms == {"perceive": 120.0, "retrieve": 40.0, "kwgate_overlap": 2.0,
                                       "kwgate_answer": 950.0}
    assert tokens["answer"]["requests"] == 2  # tokens still come from the engine calls
    # an agent whose traces time nothing (or hold a malformed stage_ms): the engine calls' times
    for traces in ([{"answer": "x"}], [{"stage_ms": {}}], [{"stage_ms": {"answer": "slow"}}], [{"stage_ms": [1]}]):
        assert _report_parts({"traces": traces, "engine_calls": calls}, 1)[2] == {"answer": 900.0}


def test_a_batch_size_under_one_is_refused_with_its_reason():
    convs = conversations([2, 1])
    for size in (0, -1):
        with pytest.raises(ValueError, match=r"^batch_size must be at least 1$"):
            next(turn_batches(convs, size))
    assert list(turn_batches(convs, 1)) == [[(0, 0)], [(0, 1)], [(1, 0)]]


def test_the_selection_rule_as_run_summary_says_it():
    assert conversation_selection(None, False, 6, 15) == "all conversations (6 served, 15 turns)"
    assert conversation_selection(-1, True, 6, 15) == "all conversations (6 served, 15 turns)"
    # 0 is a count, not "all": the official loop stops after the first batch
    assert conversation_selection(0, False, 2, 2) == (
        "official --num-conversations 0: whole batches until more than 0 conversations were served "
        "(2 served, 2 turns)")
    assert conversation_selection(2, True, 2, 5) == (
        "exactly the first 2 conversations (--exact-conversations; 2 served, 5 turns)")
    assert conversation_selection(None, False, 6, 15, shards=["a/s0", "a/s1"]) == (
        "all conversations (6 served, 15 turns in all); merged from 2 folders (a/s0, a/s1), "
        "each selected on its own")
    assert conversation_selection(3, False, 4, 9, shards=[]) == (
        "official --num-conversations 3: whole batches until more than 3 conversations were served "
        "(4 served, 9 turns)")

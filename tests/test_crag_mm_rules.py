"""`--rules crag-mm` against the relaunched evaluator's own code, one test per rule.

Each test quotes the line it checks from facebookresearch/CRAG-MM (files at commit 36b6b4b,
the snapshot read for this) and states what that line does, on inputs chosen so that another
reading of the rule would fail the test (the quirks included).
"""
from __future__ import annotations

import json

import pytest

from evaluator.harness.batching import SKIPPED_SESSIONS, planned_batches
from evaluator.harness.dataset import Conversation, DatasetTurn, apply_image_url_updates
from evaluator.harness.outputs import finalize
from evaluator.scoring.judge import Judge
from evaluator.scoring.rules import RULE_SETS, rule_set
from evaluator.scoring.scores import needs_judge, score_rows, verdict_fields
from evaluator.scoring.truncate import load_truncator
from testkit.scripted_agent import FakeOpenAIServer

CRAG_MM = RULE_SETS["crag-mm"]
KDDCUP = RULE_SETS["kddcup2025"]


# (a) ---------------------------------------------------------------------------------------
# evaluation/dataset_utils.py, clean_text:
#     return re.sub(r"[^a-z0-9\s]", "", text.lower())
# evaluation/evaluator.py, evaluate_response:
#     agent_response_clean = clean_text(agent_response)
#     is_idk = (
#         "i dont know" in agent_response_clean
#         or "i do not know" in agent_response_clean
#     )
#     ...
#     if not is_idk and not is_exact_match and self.llm_judge:
@pytest.mark.parametrize("answer, miss", [
    ("I don't know.", True),
    ("I DO NOT KNOW", True),
    ("I don\u2019t know", True),          # the curly apostrophe is stripped like any punctuation
    ("Sorry - i dont know!", True),
    ("I don't knowingly guess", True),    # a substring test: "i dont know" is in "i dont knowingly"
    ("I really don't know", False),       # "i really dont know" holds neither phrase
    ("I don't\nknow", False),             # \s survives the cleaning: a newline is not a space
    ("I  don't know", False),             # nor are two spaces one
    ("Idk", False),
])
def test_a_a_miss_is_the_cleaned_answer_containing_i_dont_know_or_i_do_not_know(answer, miss):
    assert CRAG_MM.is_miss(answer) is miss
    assert needs_judge(answer, "Paris", CRAG_MM) is not miss  # a miss is never sent to the judge
    fields = verdict_fields(answer, "Paris", None, CRAG_MM)
    assert fields["is_miss"] is miss and fields["is_correct"] is False


# (b) ---------------------------------------------------------------------------------------
# evaluation/config.py:
#     MAX_RESPONSE_LENGTH_IN_TOKENS = 75
# evaluation/evaluator.py, __init__ and truncate_agent_responses:
#     self.tokenizer = Tokenizer.from_pretrained("meta-llama/Llama-3.2-1B-Instruct")
#     self.tokenizer.enable_truncation(max_length=MAX_RESPONSE_LENGTH_IN_TOKENS)
#     ...
#     encodings = self.tokenizer.encode_batch(agent_responses)
#     trimmed_agent_responses = [self.tokenizer.decode(enc.ids) for enc in encodings]
# and generate_agent_responses cuts before anything else sees the answer:
#     agent_responses = self.truncate_agent_responses(agent_responses)
#     ...
#     self.agent_response_map[interaction_id] = agent_response
def test_b_answers_are_cut_to_75_llama_tokens_before_the_miss_test():
    truncator = load_truncator()
    if not truncator.official:
        pytest.skip(f"no Llama 3.2 tokenizer here ({truncator.name})")
    long = "The tower was finished in 1889 " * 30 + "but I don't know more."
    short = "It is the Eiffel Tower, in Paris."
    cut, kept = truncator.truncate([long, short])
    assert kept == short  # 10 tokens: decoded back unchanged
    # 75 ids with the begin-of-text id the tokenizer adds, which decode() leaves out: 74 of text
    ids = truncator.tokenizer.encode(cut).ids
    assert len(ids) == 75 and truncator.tokenizer.id_to_token(ids[0]) == "<|begin_of_text|>"
    assert long.startswith(cut) and len(cut) < len(long)
    assert CRAG_MM.is_miss(long) and not CRAG_MM.is_miss(cut)  # the tail was cut before the test


# (c) ---------------------------------------------------------------------------------------
# evaluation/config.py:
#     DEFAULT_EVAL_MODEL = "gpt-4o"
#     MAX_EVAL_TOKENS = 1024
# evaluation/llm_judge.py, attempt_api_call:
#     completion = self.client.chat.completions.create(
#         model=self.model_name, messages=messages, temperature=0.0, max_tokens=MAX_EVAL_TOKENS)
def test_c_the_default_judge_is_gpt_4o_at_temperature_0_and_1024_tokens(tmp_path):
    assert rule_set("crag-mm").judge_model == "gpt-4o" and KDDCUP.judge_model == "gpt-4o-mini"
    out = tmp_path / "run"
    out.mkdir()
    row = {"session_id": "s", "interaction_id": "s0", "turn_idx": 0, "is_ego": False, "image_quality": "normal",
           "query_category": "simple", "domain": "d", "dynamism": "static", "query": "q", "ground_truth": "Rome",
           "agent_response": "[yes] it is Rome", "total_turn_count": 1, "interaction_id_history": [],
           "raw_answer": "[yes] it is Rome", "error": None}
    (out / "answers.jsonl").write_text(json.dumps(row) + "\n")
    with FakeOpenAIServer() as server:
        judge = Judge(None, server.url, None, rules=CRAG_MM, num_workers=1, max_wait_s=0.0,
                      cache_path=tmp_path / "verdicts.jsonl")
        finalize(out, judge, rules=CRAG_MM, progress=False)
        [request] = server.chat_requests()
    body = request["body"]
    assert (body["model"], body["temperature"], body["max_tokens"]) == ("gpt-4o", 0.0, 1024)
    assert "response_format" not in body  # a free-text verdict, read from its "Result:" line
    assert json.loads((out / "scores_dictionary.json").read_text())["all"]["correct"] == 1.0


# (d) ---------------------------------------------------------------------------------------
# evaluation/evaluation_utils.py, calculate_scores: the counts are taken first,
#     correct = turn_evaluation_results_df["is_correct"].sum()
#     miss = turn_evaluation_results_df["is_miss"].sum()
#     hallucination = total - (correct + miss)
# and only then the early stop runs, feeding the conversation score alone:
#     turn_evaluation_results_df = turn_evaluation_results_df.groupby(
#         "session_id", group_keys=False)[...].apply(_set_is_correct_false_after_consecutive)
#     ...
#     truthfulness_score = ((2 * correct + miss) / total) - 1 if total > 1 else 0.0
# where the stop (inside _set_is_correct_false_after_consecutive) is
#     if (not group_copy.loc[i - 1, "is_correct"] and not group_copy.loc[i, "is_correct"]):
#         group_copy.loc[i + 1 :, "is_correct"] = False ... group_copy.loc[i + 1 :, "is_miss"] = True
def test_d_truthfulness_counts_the_turns_before_the_early_stop_which_changes_only_the_conversation_score():
    def turn(idx, answer, truth, verdict=None):
        row = {"session_id": "s", "interaction_id": f"s{idx}", "turn_idx": idx, "is_ego": False,
               "query": "q", "ground_truth": truth, "agent_response": answer}
        return {**row, **verdict_fields(answer, truth, verdict, CRAG_MM)}

    rows = [turn(0, "Lyon", "Paris", False),       # wrong
            turn(1, "the Loire", "Seine", False),  # wrong again (i = 1): the stop starts at turn 2
            turn(2, "1889", "1889"),               # exact: stopped for the conversation score only
            turn(3, "about 330 m", "330 m", True),
            turn(4, "Lyon", "Paris", False),       # wrong: stopped too (a miss after the stop)
            turn(5, "I do not know", "Eiffel")]    # a miss either way
    _, scores = score_rows(rows, CRAG_MM)
    # counted as answered: 2 correct (2, 3), 1 miss (5), 3 hallucinations (0, 1, 4) over 6 turns
    assert (scores["correct"], scores["miss"], scores["hallucination"]) == (2.0, 1.0, 3.0)
    assert scores["truthfulness_score"] == pytest.approx((2 * 2 + 1) / 6 - 1)
    # after the stop: turns 2-5 are misses; correct 0, hallucinations 2 (turns 0 and 1) of 6. A stop
    # one turn early (turn 1 a miss) would give -1/6; one turn late (turn 2 still correct) -1/6 too.
    assert scores["mean_multi_turn_conversation_score"] == pytest.approx(0 / 6 - 2 / 6)
    _, kdd = score_rows(rows, KDDCUP)  # the starter kit counts after the stop
    assert (kdd["correct"], kdd["miss"], kdd["hallucination"]) == (0.0, 4.0, 2.0)
    assert kdd["mean_multi_turn_conversation_score"] == scores["mean_multi_turn_conversation_score"]
    _, one = score_rows(rows[:1], CRAG_MM)
    assert one["truthfulness_score"] == 0.0  # "if total > 1 else 0.0"


# (e) ---------------------------------------------------------------------------------------
# evaluation/config.py:
#     SESSIONS_TO_SKIP = {
#         "single-turn": ["04d98259-27af-41b1-a7be-5798fd1b8e95", "695b4b5c-7c65-4f7b-8968-50fe10482a16"],
#         "multi-turn": ["04d98259-27af-41b1-a7be-5798fd1b8e95", "695b4b5c-7c65-4f7b-8968-50fe10482a16"],
#     }
#     SESSIONS_TO_UPDATE = {"single-turn": {"0df99a9a-6a5d-4ff4-b8e4-e3ee90209dfe": {"image_url":
#         "https://web.archive.org/web/20250521025904/https://upload.wikimedia.org/wikipedia/commons/1/13/BMW_5_SERIES_LWB_SEDAN_(G30)_China_(82).jpg"}}}
# evaluation/evaluator.py, initialize_for_generation:
#     sessions_to_skip=SESSIONS_TO_SKIP.get(self.dataset_type, []),
#     sessions_to_update=SESSIONS_TO_UPDATE.get(self.dataset_type, {}),
OFFICIAL_SKIPPED = {"04d98259-27af-41b1-a7be-5798fd1b8e95", "695b4b5c-7c65-4f7b-8968-50fe10482a16"}
OFFICIAL_UPDATED_SESSION = "0df99a9a-6a5d-4ff4-b8e4-e3ee90209dfe"
OFFICIAL_UPDATED_URL = ("https://web.archive.org/web/20250521025904/https://upload.wikimedia.org/wikipedia/"
                        "commons/1/13/BMW_5_SERIES_LWB_SEDAN_(G30)_China_(82).jpg")


def _conversations(session_ids):
    return [Conversation(index=i, session_id=sid, image_url="https://example.org/broken.jpg", image_quality=0,
                         turns=[DatasetTurn(interaction_id=f"{sid}-0", query="q", ground_truth="a")])
            for i, sid in enumerate(session_ids)]


def test_e_two_sessions_are_skipped_and_one_single_turn_image_url_is_rewritten():
    assert SKIPPED_SESSIONS == OFFICIAL_SKIPPED
    ids = ["keep-a", *sorted(OFFICIAL_SKIPPED), OFFICIAL_UPDATED_SESSION, "keep-b"]
    served = [ids[pos] for batch in planned_batches(_conversations(ids), 16) for pos, _ in batch]
    assert served == ["keep-a", OFFICIAL_UPDATED_SESSION, "keep-b"]  # both task types skip the same two
    assert CRAG_MM.image_url_updates == {"single-turn": {OFFICIAL_UPDATED_SESSION: OFFICIAL_UPDATED_URL}}
    single = _conversations(ids)
    assert apply_image_url_updates(single, CRAG_MM.image_url_updates.get("single-turn", {})) == [
        OFFICIAL_UPDATED_SESSION]
    assert [c.image_url for c in single if c.session_id == OFFICIAL_UPDATED_SESSION] == [OFFICIAL_UPDATED_URL]
    multi = _conversations(ids)
    assert apply_image_url_updates(multi, CRAG_MM.image_url_updates.get("multi-turn", {})) == []
    assert KDDCUP.image_url_updates == {}

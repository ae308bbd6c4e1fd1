"""The judge against a scripted OpenAI-compatible server on 127.0.0.1."""
import pytest

from evaluation.judge import MAX_ATTEMPTS, Judge, JudgeItem, parse_result_line, parse_verdict_text
from evaluation.rules import RULE_SETS
from tests.scripted_agent import FakeOpenAIServer


def make_judge(server, tmp_path, **kw):
    return Judge("judge-model", server.url, None, num_workers=3, timeout_s=10, backoff_s=0.01,
                 cache_path=tmp_path / "verdicts.jsonl", **kw)


def items(*predictions):
    return [JudgeItem(f"id{i}", f"question {i}", "ground truth", p) for i, p in enumerate(predictions)]


def test_verdicts_are_parsed_and_requests_carry_the_turn(tmp_path):
    with FakeOpenAIServer() as server:
        outcomes = make_judge(server, tmp_path).judge_all(items("[yes] right", "[no] wrong"))
        requests = server.chat_requests()
    assert outcomes["id0"].verdict is True and outcomes["id1"].verdict is False
    assert all(o.attempts == 1 and not o.cached for o in outcomes.values())
    assert len(requests) == 2
    body = next(r["body"] for r in requests if "[yes]" in r["body"]["messages"][-1]["content"])
    assert body["model"] == "judge-model"
    assert body["messages"][0]["role"] == "system" and "accuracy" in body["messages"][0]["content"]
    assert body["messages"][1]["content"] == "Question: question 0\nGround truth: ground truth\nPrediction: [yes] right\n"
    assert body["response_format"]["type"] == "json_schema"  # structured output


def test_retries_after_server_errors_then_succeeds(tmp_path):
    with FakeOpenAIServer() as server:
        outcome = make_judge(server, tmp_path).judge_one(items("[flaky] ok")[0])
        assert len(server.chat_requests()) == 3
    assert outcome.verdict is True and outcome.attempts == 3 and outcome.error is None


def test_all_attempts_failing_gives_no_verdict_and_is_not_cached(tmp_path):
    with FakeOpenAIServer() as server:
        judge = make_judge(server, tmp_path)
        outcomes = judge.judge_all(items("[fail] a", "[garbage] b", "[yes] c"))
        assert len(server.chat_requests()) == 2 * MAX_ATTEMPTS + 1
        failures = [o for o in outcomes.values() if o.verdict is None]
        assert sorted(o.key for o in failures) == ["id0", "id1"]
        assert all(o.attempts == MAX_ATTEMPTS and o.error for o in failures)
        # a second run asks again for the failures only (failures are not cached)
        before = len(server.chat_requests())
        again = make_judge(server, tmp_path).judge_all(items("[fail] a", "[garbage] b", "[yes] c"))
        assert len(server.chat_requests()) - before == 2 * MAX_ATTEMPTS
        assert again["id2"].cached and again["id2"].verdict is True


def test_second_run_is_served_from_the_disk_cache(tmp_path):
    predictions = ("[yes] one", "[no] two", "[yes] three")
    with FakeOpenAIServer() as server:
        first = make_judge(server, tmp_path).judge_all(items(*predictions))
        asked = len(server.chat_requests())
        second = make_judge(server, tmp_path).judge_all(items(*predictions))  # fresh object, same file
        assert len(server.chat_requests()) == asked == 3
    assert {k: o.verdict for k, o in first.items()} == {k: o.verdict for k, o in second.items()}
    assert all(o.cached and o.attempts == 0 for o in second.values())


def test_cache_key_separates_models_and_turns(tmp_path):
    with FakeOpenAIServer() as server:
        judge = make_judge(server, tmp_path)
        other = Judge("other-model", server.url, None, cache_path=tmp_path / "verdicts.jsonl")
        item = items("[yes] x")[0]
        changed = JudgeItem("k", item.question, "another truth", item.prediction)
        assert len({judge.cache_key(item), other.cache_key(item), judge.cache_key(changed)}) == 3


def test_endpoint_without_structured_output_falls_back_to_json_mode(tmp_path):
    with FakeOpenAIServer(reject_structured=True) as server:
        judge = make_judge(server, tmp_path)
        outcomes = judge.judge_all(items("[yes] a", "[no] b"))
        formats = [r["body"].get("response_format", {}).get("type") for r in server.chat_requests()]
    assert outcomes["id0"].verdict is True and outcomes["id1"].verdict is False
    assert "json_object" in formats and judge.structured is False


@pytest.mark.parametrize("text,expected", [
    ('{"accuracy": true}', True), ('```json\n{"accuracy": false}\n```', False),
    ('{"accuracy": "True"}', True), ('Verdict: {"accuracy": false} done', False),
])
def test_parse_verdict_text(text, expected):
    assert parse_verdict_text(text) is expected


@pytest.mark.parametrize("text", ["", "yes", '{"accuracy": 1}', '{"other": true}'])
def test_parse_verdict_text_rejects(text):
    with pytest.raises(ValueError):
        parse_verdict_text(text)


# ------------------------------------------------------------------ crag-mm (result-line) protocol
def crag_mm_judge(server, tmp_path, model=None):
    return Judge(model, server.url, None, rules=RULE_SETS["crag-mm"], num_workers=3, timeout_s=10,
                 backoff_s=0.01, cache_path=tmp_path / "verdicts.jsonl")


def test_crag_mm_request_shape_and_verdicts(tmp_path):
    with FakeOpenAIServer() as server:
        judge = crag_mm_judge(server, tmp_path)
        outcomes = judge.judge_all(items("[yes] right", "[no] wrong"))
        requests = server.chat_requests()
    assert judge.model == "gpt-4o"  # the published evaluator's default judge
    assert outcomes["id0"].verdict is True and outcomes["id1"].verdict is False
    assert outcomes["id0"].reply.splitlines()[-1] == "Result: CORRECT"
    assert len(requests) == 2
    for request in requests:
        body = request["body"]
        assert body["model"] == "gpt-4o" and body["temperature"] == 0 and body["max_tokens"] == 1024
        assert "response_format" not in body  # free text, not structured output
        system, user = body["messages"]
        assert system["role"] == "system" and user["role"] == "user"
        # our wording of its rules: refusals, numbers, sets, grounded extras, units, last line
        for phrase in ("declines to answer", "practically the same value", "names the same things",
                       "Extra detail", "1 mile = 1.60934 km", '"Result: CORRECT" or "Result: WRONG"'):
            assert phrase in system["content"], phrase
    asked = next(r["body"] for r in requests if "[yes]" in r["body"]["messages"][-1]["content"])
    assert asked["messages"][1]["content"].endswith(
        "Question: question 0\nGround truth: ground truth\nPrediction: [yes] right")


def test_crag_mm_reply_without_a_result_line_is_a_failed_attempt(tmp_path):
    with FakeOpenAIServer() as server:
        outcome = crag_mm_judge(server, tmp_path).judge_one(items("[garbage] maybe")[0])
        assert len(server.chat_requests()) == MAX_ATTEMPTS
    assert outcome.verdict is None and "no Result line" in outcome.error


def test_protocols_do_not_share_cached_verdicts(tmp_path):
    with FakeOpenAIServer() as server:
        structured = make_judge(server, tmp_path)
        free_text = crag_mm_judge(server, tmp_path, model="judge-model")
        item = items("[yes] x")[0]
        assert structured.cache_key(item) != free_text.cache_key(item)
        structured.judge_one(item)
        again = free_text.judge_one(item)
    assert not again.cached and again.verdict is True


@pytest.mark.parametrize("text,expected", [
    ("Same building.\nResult: CORRECT", True),
    ("It names another city.\nResult: WRONG", False),
    ("Result: WRONG\nthough some might say CORRECT", False),   # the phrase anywhere wins, WRONG first
    ("Explanation: fine.\nCORRECT", True),                     # the word alone on the last line
    ("Explanation: not fine.\nWRONG.", False),
    ("Explanation: it is INCORRECT", True),                    # the published reading, quirk kept
    ("I cannot decide.", None), ("", None), (None, None),
])
def test_parse_result_line(text, expected):
    assert parse_result_line(text) is expected

"""The judge against a scripted OpenAI-compatible server on 127.0.0.1."""
import threading
from types import SimpleNamespace

import pytest

from evaluator.scoring.judge import (
    MAX_ATTEMPTS,
    Judge,
    JudgeItem,
    parse_result_line,
    parse_verdict_text,
    retry_after_s,
)
from evaluator.scoring.rules import RULE_SETS
from testkit.scripted_agent import FakeOpenAIServer


def make_judge(server, tmp_path, **kw):
    # max_wait_s=0: no 429/5xx is waited out, so every failed request costs an attempt
    kw = {"num_workers": 3, "backoff_s": 0.01, "max_wait_s": 0.0, **kw}
    return Judge("judge-model", server.url, None, timeout_s=10, cache_path=tmp_path / "verdicts.jsonl", **kw)


class FakeTime:
    """An injectable clock and sleep: sleeping only moves the clock, and is recorded."""

    def __init__(self):
        self.now = 1000.0
        self.sleeps: list[float] = []
        self.lock = threading.Lock()

    def clock(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        with self.lock:
            self.sleeps.append(seconds)
            self.now += seconds


def statuses(server) -> list[int]:
    return [r["status"] for r in server.chat_requests()]


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


def test_a_rate_limited_endpoint_is_waited_out_without_spending_attempts(tmp_path):
    fake = FakeTime()
    throttle = ["2", "date+30", None, "2", "1.5"]  # seconds, an HTTP date, no header
    with FakeOpenAIServer(throttle=throttle) as server:
        judge = make_judge(server, tmp_path, num_workers=1, backoff_s=1.0, max_wait_s=120.0,
                           sleep=fake.sleep, clock=fake.clock)
        outcomes = judge.judge_all(items("[yes] a", "[no] b", "[yes] c", "[flaky] d"))
        codes = statuses(server)
    # every turn judged, each at its first attempt
    assert [outcomes[f"id{i}"].verdict for i in range(4)] == [True, False, True, True]
    assert all(o.attempts == 1 and o.error is None for o in outcomes.values())
    assert codes == [429] * 5 + [200, 200, 200, 500, 500, 200]
    assert [o.waits for o in outcomes.values()] == [5, 0, 0, 2] and len(fake.sleeps) == 7
    # one thread: the first turn met all five 429s, the last the two 500s
    ask2, date30, backoff, ask2b, ask15, fail1, fail2 = fake.sleeps
    assert 2 <= ask2 <= 2.2 and 2 <= ask2b <= 2.2 and 1.5 <= ask15 <= 1.65  # Retry-After, a bit more
    assert 28 <= date30 <= 33  # the HTTP date, 30 s ahead (to the second)
    assert 2 <= backoff <= 4  # third wait without Retry-After: 1 s x 2^2, jittered down to half
    assert 0.5 <= fail1 <= 1 and 1 <= fail2 <= 2
    assert outcomes["id0"].waited_s == pytest.approx(sum(fake.sleeps[:5]))


def test_waits_stop_at_the_per_turn_cap_then_attempts_count(tmp_path):
    fake = FakeTime()
    with FakeOpenAIServer(throttle=["10"] * 20) as server:
        judge = make_judge(server, tmp_path, backoff_s=1.0, max_wait_s=35.0, sleep=fake.sleep, clock=fake.clock)
        outcome = judge.judge_one(items("[yes] x")[0])
        codes = statuses(server)
    # three waits of 10-11 s fit in 35 s, a fourth does not: from then on each 429 is an attempt
    assert codes == [429] * 6  # 3 waited out + 3 attempts: the SDK adds no requests of its own
    assert outcome.verdict is None and outcome.attempts == MAX_ATTEMPTS and "429" in outcome.error
    assert outcome.waits == 3 and all(10 <= s <= 11 for s in fake.sleeps[:3])
    assert fake.sleeps[3:] == [1.0, 2.0]  # the official back-off between attempts
    assert sum(fake.sleeps) <= 35 + 1 + 2
    assert judge.cache.get(judge.cache_key(items("[yes] x")[0])) is None


def test_server_errors_without_retry_after_back_off_exponentially_within_the_cap(tmp_path):
    fake = FakeTime()
    middle = SimpleNamespace(random=lambda: 0.5)  # jitter fixed at its middle: 3/4 of each back-off
    with FakeOpenAIServer() as server:
        judge = make_judge(server, tmp_path, backoff_s=1.0, max_wait_s=20.0, sleep=fake.sleep, clock=fake.clock,
                           rng=middle)
        outcome = judge.judge_one(items("[fail] x")[0])
        assert statuses(server) == [500] * 8
    # 1, 2, 4, 8, 8 s back-offs (capped at 8), jittered to 3/4; a sixth wait would end past 20 s,
    # so the 500s from then on cost the 3 attempts, with the official 1 s and 2 s between them
    assert fake.sleeps == [0.75, 1.5, 3.0, 6.0, 6.0, 1.0, 2.0]
    assert outcome.verdict is None and outcome.waits == 5 and outcome.attempts == MAX_ATTEMPTS
    assert outcome.waited_s == pytest.approx(17.25)


def test_an_exhausted_quota_is_not_waited_out(tmp_path):
    fake = FakeTime()
    with FakeOpenAIServer() as server:
        judge = make_judge(server, tmp_path, backoff_s=1.0, max_wait_s=120.0, sleep=fake.sleep, clock=fake.clock)
        outcome = judge.judge_one(items("[quota] x")[0])
        assert statuses(server) == [429] * MAX_ATTEMPTS
    assert outcome.waits == 0 and fake.sleeps == [1.0, 2.0] and "quota" in outcome.error


@pytest.mark.parametrize("headers,expected", [
    ({"retry-after-ms": "250", "retry-after": "1"}, 0.25), ({"retry-after": "3"}, 3.0),
    ({"retry-after": "0.5"}, 0.5), ({"retry-after": "soon"}, None), ({}, None),
])
def test_retry_after_header_forms(headers, expected):
    assert retry_after_s(SimpleNamespace(response=SimpleNamespace(headers=headers))) == expected
    assert retry_after_s(ValueError("no response at all")) is None


def test_retry_after_as_an_http_date():
    import email.utils

    header = {"retry-after": email.utils.formatdate(1_000_000_060, usegmt=True)}
    assert retry_after_s(SimpleNamespace(response=SimpleNamespace(headers=header)), now=lambda: 1_000_000_000) == 60


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
def crag_mm_judge(server, tmp_path, model=None, **kw):
    kw = {"num_workers": 3, "backoff_s": 0.01, "max_wait_s": 0.0, **kw}  # as make_judge
    return Judge(model, server.url, None, rules=RULE_SETS["crag-mm"], timeout_s=10,
                 cache_path=tmp_path / "verdicts.jsonl", **kw)


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


def test_the_crag_mm_protocol_waits_out_rate_limits_too(tmp_path):
    fake = FakeTime()
    with FakeOpenAIServer(throttle=["3", None]) as server:
        judge = crag_mm_judge(server, tmp_path, num_workers=1, max_wait_s=60.0, sleep=fake.sleep, clock=fake.clock)
        outcomes = judge.judge_all(items("[yes] a", "[flaky] b"))
        codes = statuses(server)
    assert codes == [429, 429, 200, 500, 500, 200]
    assert outcomes["id0"].verdict is True and outcomes["id1"].verdict is True
    assert [o.attempts for o in outcomes.values()] == [1, 1] and [o.waits for o in outcomes.values()] == [2, 2]
    assert 3 <= fake.sleeps[0] <= 3.3 and len(fake.sleeps) == 4


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

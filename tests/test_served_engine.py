"""The served engines (`engine = "openai"`, `reranker_backend = "server"`) and the pre-run server
check, against loopback HTTP servers (testkit/loopback.py) that answer in the shapes read from vLLM
0.10.1.1's source (entrypoints/openai/protocol.py) and SGLang's: `/rerank` (no reranker server runs
cheaply on this machine), `/v1/models`, a chat completion with log-probabilities (transformers
serve sends none), 503 with Retry-After. These stand in for what could not run here, and say so.
Against a real server (`transformers serve` with SmolLM2): tests/full/test_served_engine.py.
"""
from __future__ import annotations

import threading
import time

import pytest

import local_evaluation
from agents.config.loading import load_config
from agents.engines.base import ChatRequest, Sampling
from agents.engines.openai_engine import OpenAIChatEngine, read_completion, request_messages
from agents.engines.reranker import ServerReranker
from testkit.in_process import run_main
from testkit.loopback import chat_answer
from testkit.transformers_serve import free_port


def overlap_score(query: str, document: str) -> float:
    q, d = set(query.lower().split()), set(document.lower().split())
    return len(q & d) / max(1, len(q))


def vllm_rerank_answer(path, body, count):
    """vLLM's RerankResponse: results sorted by relevance_score, each with its document's index;
    the first request of all gets a 503 with Retry-After (a server still warming up)."""
    if count == 1:
        return 503, {"retry-after": "0.2"}, {"error": {"message": "warming up", "code": 503}}
    assert path == "/v1/rerank"
    results = [{"index": i, "document": {"text": doc}, "relevance_score": overlap_score(body["query"], doc)}
               for i, doc in enumerate(body["documents"])]
    results.sort(key=lambda r: r["relevance_score"], reverse=True)
    return 200, {}, {"id": "rerank-1", "model": body["model"], "usage": {"total_tokens": 10}, "results": results}


def test_server_reranker_places_each_score_by_its_index_and_waits_out_a_503(loopback):
    server = loopback(vllm_rerank_answer)
    reranker = ServerReranker("BAAI/bge-reranker-v2-m3", base_url=server.base_url)
    pairs = [("red apple", "a green pear"), ("red apple", "one red apple"), ("blue sky", "the sky is blue"),
             ("red apple", "red")]
    assert reranker.score(pairs) == [overlap_score(q, p) for q, p in pairs]
    bodies = [body for path, _, body in server.requests[1:]]
    assert sorted(b["query"] for b in bodies) == ["blue sky", "red apple"]  # one request per distinct query
    assert all(b["model"] == "BAAI/bge-reranker-v2-m3" for b in bodies)
    assert reranker.ledger.records[-1].requests == 4  # one call in the ledger


def test_a_reranker_server_that_loses_a_document_fails_the_call(loopback):
    def answer(path, body, count):
        results = [{"index": 0, "document": {"text": body["documents"][0]}, "relevance_score": 0.5}]
        return 200, {}, {"id": "r", "model": "m", "usage": {"total_tokens": 1}, "results": results}

    reranker = ServerReranker("m", base_url=loopback(answer).base_url)
    with pytest.raises(RuntimeError, match="scored 1 of 2"):
        reranker.score([("q", "a"), ("q", "b")])


def vllm_chat_answer(path, body, count):
    """vLLM's ChatCompletionResponse, with per-token logprobs when asked for."""
    tokens = [("Paris", -0.1), (" is", -0.5), (" nice", -2.0), (".", -0.3)]
    logprobs = {"content": [{"token": t, "logprob": lp, "bytes": list(t.encode()), "top_logprobs": []}
                            for t, lp in tokens]} if body.get("logprobs") else None
    return 200, {}, {
        "id": "chatcmpl-1", "object": "chat.completion", "created": 0, "model": body["model"],
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "Paris is nice.", "tool_calls": []},
                     "logprobs": logprobs, "finish_reason": "stop", "stop_reason": None}],
        "usage": {"prompt_tokens": 21, "total_tokens": 25, "completion_tokens": 4}}


def test_log_probabilities_and_token_counts_arrive_in_vllm_shape(loopback, monkeypatch):
    monkeypatch.setenv("CRUISE_ENGINE_API_KEY", "sk-test-secret")
    server = loopback(vllm_chat_answer)
    engine = OpenAIChatEngine("smollm2", base_url=server.base_url, served_name="served-name")
    request = ChatRequest([{"role": "user", "content": "Which city?"}])
    plain, with_logprobs, cut = engine.generate([request] * 3, Sampling(), stage="answer")[:1] + engine.generate(
        [request, request], Sampling(logprobs=True, stop=(" nice",)))
    assert plain.text == "Paris is nice." and plain.token_logprobs is None and plain.prompt_tokens == 21
    assert with_logprobs.text == "Paris is" and with_logprobs.token_logprobs == [-0.1, -0.5, -2.0]
    assert with_logprobs.tokens == ["Paris", " is", " nice"]  # up to the token that completed the stop string
    sent = server.requests[-1][2]
    assert sent["model"] == "served-name" and sent["logprobs"] is True and sent["stop"] == [" nice"]
    assert sent["temperature"] == 0.0 and sent["seed"] == 0 and sent["stream"] is False
    assert server.requests[-1][1]["Authorization"] == "Bearer sk-test-secret"
    assert [r.requests for r in engine.ledger.records] == [3, 2]  # one ledger record per engine call
    assert "sk-test-secret" not in repr(engine.endpoint)


PARIS = (["Paris", ".", "<|eot_id|>"], [-0.1, -0.2, -0.05], "Paris.")


def test_an_answer_in_sglangs_shape_is_read_as_vllms(loopback):
    """SGLang's ChatCompletionResponse (srt/entrypoints/openai/protocol.py, serving_chat.py
    `_build_chat_response`): `matched_stop` in the choice, `metadata` and `sglext` beside it,
    usage with `prompt_tokens_details` and `reasoning_tokens`."""
    def answer(path, body, count):
        content = [{"token": t, "logprob": lp, "bytes": list(t.encode()), "top_logprobs": []}
                   for t, lp in zip(*PARIS[:2])]
        return 200, {}, {
            "id": "3f1c", "object": "chat.completion", "created": 0, "model": body["model"],
            "choices": [{"index": 0, "message": {"role": "assistant", "content": PARIS[2], "reasoning_content": None,
                                                 "tool_calls": None},
                         "logprobs": {"content": content}, "finish_reason": "stop", "matched_stop": 128009,
                         "hidden_states": None}],
            "usage": {"prompt_tokens": 73, "completion_tokens": 3, "total_tokens": 76,
                      "prompt_tokens_details": {"image_tokens": 68}, "reasoning_tokens": 0},
            "metadata": {"weight_version": "default"}, "sglext": None}

    engine = OpenAIChatEngine("m", base_url=loopback(answer).base_url)
    got = engine.generate([ChatRequest([{"role": "user", "content": "Capital of France?"}])], Sampling(logprobs=True))[0]
    assert (got.text, got.output_tokens, got.token_logprobs, got.prompt_tokens) == ("Paris.", 2, [-0.1, -0.2], 73)


@pytest.mark.parametrize("finish, counted", [
    ({"finish_reason": "stop", "stop_reason": None}, 2),             # vLLM: the EOS
    ({"finish_reason": "stop", "stop_reason": 128009}, 2),           # vLLM: another stop token id
    ({"finish_reason": "stop", "matched_stop": 128009}, 2),          # SGLang: the EOS id it matched
    ({"finish_reason": "stop"}, 2),                                  # a server that says no more
    ({"finish_reason": "length", "stop_reason": None}, 3),           # max_tokens: no end token
])
def test_a_served_answer_leaves_out_the_end_token_the_server_lists(loopback, finish, counted):
    engine = OpenAIChatEngine("m", base_url=loopback(chat_answer(*PARIS, finish)).base_url)
    got = engine.generate([ChatRequest([{"role": "user", "content": "Capital of France?"}])], Sampling(logprobs=True))[0]
    assert got.text == "Paris." and got.output_tokens == counted
    assert got.token_logprobs == PARIS[1][:counted] and got.tokens == PARIS[0][:counted]
    plain = engine.generate([ChatRequest([{"role": "user", "content": "Capital of France?"}])], Sampling())[0]
    # from usage.completion_tokens, less the end token where the server says what stopped it
    says = "stop_reason" in finish or "matched_stop" in finish
    assert plain.output_tokens == (counted if says else 3)


@pytest.mark.parametrize("finish", [{"finish_reason": "stop", "stop_reason": "."},
                                    {"finish_reason": "stop", "matched_stop": "."}])
def test_a_served_answer_cut_at_a_stop_string_keeps_the_token_that_completed_it(loopback, finish):
    answer = chat_answer(["Paris", "."], [-0.1, -0.2], "Paris", finish)  # the server cut the "."
    engine = OpenAIChatEngine("m", base_url=loopback(answer).base_url)
    got = engine.generate([ChatRequest([{"role": "user", "content": "q"}])], Sampling(logprobs=True, stop=(".",)))[0]
    assert got.text == "Paris" and got.token_logprobs == [-0.1, -0.2]


def test_a_server_that_lists_no_end_token_keeps_every_token(loopback):
    answer = chat_answer(["Paris", "."], [-0.1, -0.2], "Paris.", {"finish_reason": "stop"})
    engine = OpenAIChatEngine("m", base_url=loopback(answer).base_url)
    got = engine.generate([ChatRequest([{"role": "user", "content": "q"}])], Sampling(logprobs=True))[0]
    assert got.token_logprobs == [-0.1, -0.2] and got.output_tokens == 2


@pytest.mark.parametrize("batch_images", [True, False])
def test_image_requests_go_one_at_a_time_when_images_must_not_share_a_batch(loopback, batch_images):
    from PIL import Image

    open_images, most = [0], [0]
    changed = threading.Condition()
    # An image request is held until all three have been open at once: sent together, they are released
    # as soon as the third arrives (10 s of slack for a loaded machine); sent one at a time, each
    # waits 0.3 s in vain, time for a second one to come in if the engine sent it too early.
    hold_s = 10.0 if batch_images else 0.3

    def answer(path, body, count):
        has_image = any(isinstance(m["content"], list) for m in body["messages"])
        with changed:
            open_images[0] += has_image
            most[0] = max(most[0], open_images[0])
            changed.notify_all()
            if has_image:
                changed.wait_for(lambda: most[0] == 3, timeout=hold_s)
            open_images[0] -= has_image
        return vllm_chat_answer(path, body, count)

    engine = OpenAIChatEngine("m", base_url=loopback(answer).base_url, supports_images=True,
                              batch_images=batch_images)
    image = ChatRequest([{"role": "user", "content": "What is it?"}], image=Image.new("RGB", (8, 8), "red"))
    text = ChatRequest([{"role": "user", "content": "Which city?"}])
    results = engine.generate([image, text, image, image], Sampling())
    assert [r.text for r in results] == ["Paris is nice."] * 4
    assert most[0] == (3 if batch_images else 1)


def test_requests_carry_the_in_process_layout_and_the_image_lossless():
    import base64
    import io

    import numpy as np
    from PIL import Image

    messages = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "What is it?"}]
    noisy = Image.fromarray(np.random.default_rng(0).integers(0, 256, size=(48, 64, 3), dtype=np.uint8))
    request = ChatRequest(messages, image=noisy)
    plain = request_messages(request, with_image=False)
    assert plain == messages
    sent = request_messages(request, with_image=True, image_placeholder="<|image|>")
    assert [m["role"] for m in sent] == ["system", "user", "user"]
    assert sent[0] == messages[0] and sent[2] == messages[1]  # plain strings, as template_messages keeps them
    placeholder, image = sent[1]["content"]
    assert placeholder == {"type": "text", "text": "<|image|>"}
    head, data = image["image_url"]["url"].split(",", 1)
    assert head == "data:image/png;base64"
    # what a server decodes (vLLM: base64, then PIL) is the very pixels the in-process engines get
    assert np.array_equal(np.asarray(Image.open(io.BytesIO(base64.b64decode(data))).convert("RGB")), np.asarray(noisy))
    assert request_messages(request, with_image=True)[1]["content"][0]["type"] == "image_url"


def test_a_streamed_answer_with_an_error_event_is_a_failure():
    from agents.engines.served import ServerGaveUp, _events

    lines = ['data: {"choices": [{"delta": {"content": "Hi"}, "index": 0}]}', 'data: {"error": "boom"}']
    with pytest.raises(ServerGaveUp, match="boom"):
        list(_events(iter(lines), time.monotonic() + 10, "here"))
    assert read_completion([{"choices": [{"delta": {"content": "Hi"}, "index": 0}]},
                            {"choices": [{"delta": {"content": " there"}, "index": 0}]}])[0] == "Hi there"


# --- the pre-run check --------------------------------------------------------------------------

def models_answer(ids):
    def answer(path, body, count):
        assert path == "/v1/models"
        return 200, {}, {"object": "list", "data": [{"id": i, "object": "model", "owned_by": "vllm"} for i in ids]}
    return answer


def test_the_served_profile_checks_each_server_and_names_what_it_serves(loopback):
    from agents.preload import served_problem
    from evaluator.harness.agent_setup import setup_agent
    from evaluator.harness.models import loaded_models
    from evaluator.harness.resolved import resolve_run

    vlm = loopback(models_answer(["meta-llama/Llama-3.2-11B-Vision-Instruct"]))
    router = loopback(models_answer(["some/other-model"]))
    reranker = loopback(models_answer(["BAAI/bge-reranker-v2-m3"]))
    urls = dict(vlm_base_url=vlm.base_url, router_base_url=router.base_url, reranker_base_url=reranker.base_url)
    problem = served_problem(load_config("served", **urls))
    assert problem.count("\n") == 0
    assert router.base_url in problem and "meta-llama/Llama-3.2-1B-Instruct" in problem and "some/other-model" in problem
    assert served_problem(load_config("served", router_served_name="some/other-model", **urls)) is None
    # the served models are not looked for in the local Hugging Face cache
    agent = setup_agent("agents.user_config:UserAgent", profile="served")
    assert not {"meta-llama/Llama-3.2-11B-Vision-Instruct", "BAAI/bge-reranker-v2-m3"} & set(loaded_models(resolve_run("served", agent)))
    cfg = load_config("served")
    assert (cfg.models.engine, cfg.models.reranker_backend, cfg.models.served_image_placeholder) == \
        ("openai", "server", "<|image|>")


def test_the_cpu_chain_on_one_server_asks_it_for_its_served_name_in_both_roles(loopback, monkeypatch):
    """README's line: `--profile cpu --set engine=openai --set vlm_base_url=URL --set vlm_served_name=NAME`.
    The router is the VLM's model on the VLM's URL, so it is that server and takes that name."""
    from agents import factory
    from agents.config.loading import load_config_from_settings
    from agents.engines.base import Ledger
    from agents.factory import build_engines
    from agents.preload import served_problem
    from testkit.fakes import FunctionReranker

    # the cpu profile's reranker (MiniLM, in-process) is not what is checked here
    monkeypatch.setattr(factory, "build_reranker", lambda config, ledger: FunctionReranker(lambda query, chunk: 0.0))

    def answer(path, body, count):
        if path == "/v1/models":
            return models_answer(["NAME"])(path, body, count)
        return vllm_chat_answer(path, body, count)

    server = loopback(answer)
    settings = ["engine=openai", f"vlm_base_url={server.base_url}", "vlm_served_name=NAME"]
    cfg = load_config_from_settings("cpu", None, settings)
    assert served_problem(cfg) is None
    engines = build_engines(cfg, Ledger())
    engines.router.generate([ChatRequest([{"role": "user", "content": "Which city?"}])], Sampling(), stage="route")
    assert engines.router is engines.vlm and server.requests[-1][2]["model"] == "NAME"
    # a router that is another model on the same server keeps its own name
    problem = served_problem(load_config_from_settings(
        "cpu", None, [*settings, "router_model=HuggingFaceTB/SmolLM2-135M-Instruct"]))
    assert problem is not None and "does not serve HuggingFaceTB/SmolLM2-135M-Instruct;" in problem


def test_no_server_at_start_is_one_line_and_exit_code_1(tmp_path):
    url = f"http://127.0.0.1:{free_port()}/v1"
    proc = run_main(local_evaluation.main, [  # in this process (testkit/in_process.py)
        "--profile", "cpu", "--set", "engine=openai", "--set", f"vlm_base_url={url}", "--set",
        "vlm_served_name=smollm2", "--eval-model", "None", "--output-dir", str(tmp_path / "out"), "--no_progress"],
        env=dict(HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1", TRANSFORMERS_OFFLINE="1"))
    assert proc.returncode == 1
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and url in lines[0] and "no model server answers" in lines[0], proc.stderr
    assert "Traceback" not in proc.stdout + proc.stderr

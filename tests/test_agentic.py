"""The agentic system (agents/agentic/): the VLM calls image_search and web_search over the search
pipeline until it answers or its budget or the deadline ends the turn.

Through the agent (CruiseAgent over the registered system) with the real engines against stand-ins
of the providers that call tools natively (testkit/tool_standins.py: built from OpenAI's API
reference and its SDK's types, Anthropic's and Gemini's documentation), and with a scripted
in-process engine over the text protocol. The search pipeline is a stand-in (outside the unit)
that returns hits in the official shapes (FORMATS.md) and records what it was asked.
"""
from __future__ import annotations

import json
import socket

import pytest
from PIL import Image

from agents.agentic.protocol import read_text_calls
from agents.agentic.tools import ToolError, crop_box
from agents.base_agent import IDK_ANSWER
from agents.config.loading import load_config
from agents.cruise_agent import CruiseAgent
from agents.engines.base import Engines
from agents.engines.hosted_engine import HostedChatEngine
from agents.engines.openai_engine import OpenAIChatEngine
from evaluator.scoring.diagnostics import turn_diagnosis
from testkit.fakes import FunctionReranker, ScriptedEngine
from testkit.tool_standins import STAND_IN_KEY, ToolCallingStandIn

IMAGE_HITS = [  # the official image search's shape: one hit per entity match, best first
    {"index": 7, "score": 0.91, "url": "https://example.org/route24.jpg",
     "entities": [{"entity_name": "Route 24", "entity_attributes": {"operator": "Metroline", "start": "Pimlico"}}]},
    {"index": 3, "score": 0.42, "url": "https://example.org/bus.jpg",
     "entities": [{"entity_name": "AEC Routemaster", "entity_attributes": {"manufacturer": "AEC"}}]},
]
WEB_HITS = [  # the official web search's shape
    {"index": "https://example.org/route-24_chunk_0", "score": 0.77, "page_name": "Route 24 history",
     "page_url": "https://example.org/route-24",
     "page_snippet": "Route 24 opened in 1910 and runs from Pimlico to Hampstead Heath."},
]


class RecordingPipeline:
    """The search pipeline: image search gives IMAGE_HITS, web search WEB_HITS; records the size of
    each image and each text it was asked."""

    def __init__(self, web=True):
        self.images: list[tuple[int, int]] = []
        self.texts: list[str] = []
        self.web_search = web

    def __call__(self, query, k=5):
        if isinstance(query, str):
            self.texts.append(query)
            return WEB_HITS[:k]
        self.images.append(query.size)
        return IMAGE_HITS[:k]


def ask(vlm, queries, pipeline=None, **settings):
    """Answers and traces of one batch under the agentic system, each turn with a 64 x 48 photo."""
    config = load_config("cpu", "full", system="agentic", warmup_at_load=False, turn_budget_s=0, **settings)
    engines = Engines(router=vlm, vlm=vlm, reranker=FunctionReranker(lambda q, c: 0.0))
    agent = CruiseAgent(pipeline if pipeline is not None else RecordingPipeline(), config=config, engines=engines)
    answers = agent.batch_generate_response(queries, [Image.new("RGB", (64, 48), "red") for _ in queries],
                                            [[] for _ in queries])
    return answers, agent.last_batch_report["traces"]


# A decided turn first: positions differ from what each turn does.
QUERIES = ["[empty] What is this?", "[parallel] Which route is this bus on?", "[direct] What colour is the bus?",
           "[chain] Who runs this route?", "[loop] When did it open?", "[badbox] Where does it go?"]


def check_native_run(server, answers, traces, pipeline):
    """What every native dialect must show after QUERIES (see the module notes)."""
    assert server.refused() == []  # every request met the provider's documented rules
    seen = [e.seen for e in server.exchanges]
    # every request offers both tools, and carries the photo once
    assert all(s.tools == ["image_search", "web_search"] for s in seen)
    assert all(s.images == 1 for s in seen)
    # the answers reach the traces, and each trace lists its calls
    assert [t["final_answer"] for t in traces] == answers
    assert answers == [IDK_ANSWER, "It is Route 24", "Red", "Route 24 history: Route 24 opened", answers[4],
                       IDK_ANSWER]
    assert [t["branch"] for t in traces] == ["abstained", "answered", "answered", "answered", "answered", "abstained"]
    assert [[c["tool"] for c in t["tool_calls"]] for t in traces] == [
        ["web_search"], ["image_search", "web_search"], [], ["image_search", "web_search"], ["web_search"] * 4,
        ["image_search"]]
    empty, parallel, _, chain, loop, badbox = traces
    assert empty["tool_calls"][0]["error"].startswith("web_search needs a non-empty text query")
    assert badbox["tool_calls"][0]["error"].startswith("box [10, 10, 10, 40] is empty")
    for call in parallel["tool_calls"] + chain["tool_calls"]:
        assert call["error"] is None and call["ms"] >= 0 and call["hits"]
    assert parallel["tool_calls"][0]["hits"][0] == {"id": "image:7", "score": 0.91, "name": "Route 24"}
    assert parallel["tool_calls"][1] == {**parallel["tool_calls"][1], "arguments": {"query": "Which route is this bus on?"},
                                         "hits": [{"id": "web:https://example.org/route-24", "score": 0.77,
                                                   "name": "Route 24 history"}]}
    # the box reached the search (16 x 16 of the photo), the query too; nothing ran for a bad call
    assert sorted(pipeline.images) == [(16, 16), (64, 48)]
    assert pipeline.texts.count("history of Route 24") == 1 and "  " not in pipeline.texts
    assert chain["regions_searched"] == {"image_size": [64, 48], "boxes": [{"view": "call 0", "box": [0.0, 0.0, 16.0, 16.0]}]}
    # the loop spent its calls, and the reply after was asked to answer without one
    last = [e for e in server.exchanges if e.seen.question.startswith("[loop]")][-1]
    assert last.seen.calls_made == 4 and last.seen.must_answer and loop["branch"] == "answered"
    # what the calls showed the model is its chunks, in the shapes every system's trace has
    assert parallel["kept_chunks"][0] == "The photo may show: Route 24"
    assert [i["id"] for i in parallel["retrieved"]] == ["image:7", "image:3", "web:https://example.org/route-24"]
    assert parallel["searches_run"] == ["image", "web"] and parallel["stage_ms"].keys() >= {"agentic_ask", "agentic_search"}
    assert all(t["errors"] == [] for t in traces)


def test_openai_native_calls_go_as_tools_and_every_result_comes_back_as_a_tool_message():
    pipeline = RecordingPipeline()
    with ToolCallingStandIn("openai") as server:
        engine = OpenAIChatEngine("standin-vl", base_url=server.url, supports_images=True)
        answers, traces = ask(engine, QUERIES, pipeline)
    check_native_run(server, answers, traces, pipeline)
    bodies = [e.body for e in server.exchanges]
    assert all({t["function"]["name"] for t in b["tools"]} == {"image_search", "web_search"} for b in bodies)
    # each call id the model gave comes back once, as a role "tool" message right after its call
    given = [c["id"] for e in server.exchanges for c in e.reply["choices"][0]["message"].get("tool_calls") or []]
    for body in bodies:
        for n, message in enumerate(body["messages"]):
            if message["role"] == "assistant" and message.get("tool_calls"):
                ids = [c["id"] for c in message["tool_calls"]]
                after = body["messages"][n + 1:n + 1 + len(ids)]
                assert [(m["role"], m["tool_call_id"]) for m in after] == [("tool", i) for i in ids]
    answered = {m["tool_call_id"] for b in bodies for m in b["messages"] if m["role"] == "tool"}
    assert answered == set(given) and len(given) == 10
    # a parallel reply: two calls, both results after it, in its order; the error goes back as text
    parallel = [b for b in bodies if "[parallel]" in json.dumps(b["messages"])][-1]["messages"]
    assert [m["role"] for m in parallel[-3:]] == ["assistant", "tool", "tool"]
    assert parallel[-2]["content"].startswith("The photo may show: Route 24")
    empty = [b for b in bodies if "[empty]" in json.dumps(b["messages"])][-1]["messages"]
    assert empty[-1]["content"].startswith("error: web_search needs a non-empty text query")
    # the budget's last request: tool_choice none
    assert [b["tool_choice"] for b in bodies if "[loop]" in json.dumps(b["messages"])] == ["auto"] * 4 + ["none"]


@pytest.mark.parametrize("dialect, model, variable", [("anthropic", "claude-sonnet-4-6", "ANTHROPIC_API_KEY"),
                                                      ("gemini", "gemini-2.5-flash", "GEMINI_API_KEY")])
def test_claude_and_gemini_calls_travel_in_their_own_shapes(dialect, model, variable, monkeypatch):
    monkeypatch.setenv(variable, STAND_IN_KEY)
    pipeline = RecordingPipeline()
    with ToolCallingStandIn(dialect) as server:
        answers, traces = ask(HostedChatEngine(model, provider=dialect, base_url=server.url), QUERIES, pipeline)
    check_native_run(server, answers, traces, pipeline)
    bodies = [e.body for e in server.exchanges]
    if dialect == "anthropic":
        assert all([t["name"] for t in b["tools"]] == ["image_search", "web_search"] for b in bodies)
        turn = [b for b in bodies if "[parallel]" in json.dumps(b)][-1]["messages"]
        assert [block["type"] for block in turn[-2]["content"]] == ["tool_use", "tool_use"]
        assert [block["type"] for block in turn[-1]["content"]] == ["tool_result", "tool_result"]
        assert [b["tool_use_id"] for b in turn[-1]["content"]] == [b["id"] for b in turn[-2]["content"]]
        empty = [b for b in bodies if "[empty]" in json.dumps(b)][-1]["messages"]
        assert empty[-1]["content"][0]["is_error"] is True
    else:
        assert all([d["name"] for d in b["tools"][0]["functionDeclarations"]] == ["image_search", "web_search"]
                   for b in bodies)
        turn = [b for b in bodies if "[parallel]" in json.dumps(b)][-1]["contents"]
        assert [list(p)[0] for p in turn[-2]["parts"]] == ["functionCall", "functionCall"]
        assert [p["functionResponse"]["name"] for p in turn[-1]["parts"]] == ["image_search", "web_search"]
        assert [b["toolConfig"]["functionCallingConfig"]["mode"] for b in bodies
                if "[loop]" in json.dumps(b)] == ["AUTO"] * 4 + ["NONE"]


def test_gemini_call_ids_come_back_on_their_responses(monkeypatch):
    monkeypatch.setenv("GEMINI_API_KEY", STAND_IN_KEY)
    with ToolCallingStandIn("gemini", call_ids=True) as server:
        answers, traces = ask(HostedChatEngine("gemini-2.5-flash", provider="gemini", base_url=server.url),
                              ["[parallel] Which route is this bus on?"])
    assert server.refused() == [] and answers == ["It is Route 24"]
    last = server.exchanges[-1].body["contents"]
    assert [p["functionResponse"]["id"] for p in last[-1]["parts"]] == \
        [p["functionCall"]["id"] for p in last[-2]["parts"]]
    assert [c["id"] for c in traces[0]["tool_calls"]] == [p["functionCall"]["id"] for p in last[-2]["parts"]]


def test_parallel_calls_past_the_call_budget_are_answered_not_run():
    pipeline = RecordingPipeline()
    with ToolCallingStandIn("openai") as server:
        engine = OpenAIChatEngine("standin-vl", base_url=server.url, supports_images=True)
        answers, traces = ask(engine, ["[parallel] Which route is this bus on?"], pipeline, max_calls=1)
    assert server.refused() == [] and pipeline.texts == [] and len(pipeline.images) == 1
    calls = traces[0]["tool_calls"]
    assert [(c["tool"], c["error"]) for c in calls] == [("image_search", None),
                                                        ("web_search", "not run: the turn's 1 calls are spent")]
    after = server.exchanges[-1].body
    assert [m["role"] for m in after["messages"][-3:]] == ["tool", "tool", "user"] and after["tool_choice"] == "none"
    assert after["messages"][-2]["content"].startswith("error: not run")
    assert answers == ["It is Route 24"]


def closed_port_url() -> str:
    with socket.socket() as free:
        free.bind(("127.0.0.1", 0))
        port = free.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"  # nothing listens there now: connection refused


def test_a_provider_that_is_down_faults_its_turns_and_answers_none():
    engine = OpenAIChatEngine("standin-vl", base_url=closed_port_url(), timeout_s=5, supports_images=True)
    answers, traces = ask(engine, QUERIES[:3])
    assert answers == [IDK_ANSWER] * 3
    assert [t["branch"] for t in traces] == ["error"] * 3
    assert all(t["errors"] and t["errors"][0].startswith("agentic_ask: ConnectError") for t in traces)
    assert all(t["tool_calls"] == [] for t in traces)


# --------------------------------------------------------------------------- the text protocol
def text_model(request):
    """An in-process model writing the text protocol: [loop] calls at every reply; others call both
    tools in one reply, then answer from the first result."""
    system = request.messages[0]["content"]
    assert request.tools is None and "<tool_call>" in system and '"name": "image_search"' in system
    question = next(m["content"] for m in request.messages if m["role"] == "user")
    results = [m["content"] for m in request.messages if m["role"] == "user" and "<tool_result>" in m["content"]]
    if "[loop]" in question or not results:
        return ('Searching.\n<tool_call>{"name": "image_search", "arguments": {}}</tool_call>\n'
                '<tool_call>{"name": "web_search", "arguments": "{\\"query\\": \\"route 24\\"}"}</tool_call>')
    first = results[0].split("<tool_result>\n", 1)[1].split("\n", 1)[0]
    return f"Answer: {first.removeprefix('The photo may show: ')}"


def test_the_text_protocol_writes_the_tools_in_the_prompt_and_reads_the_calls_from_the_reply():
    engine = ScriptedEngine({"agentic_ask": text_model})
    answers, traces = ask(engine, ["[loop] When did it open?", "Which route is this?"], max_steps=3, max_calls=10)
    loop, plain = traces
    assert answers == [IDK_ANSWER, "Route 24"]
    assert (plain["branch"], plain["tool_protocol"], [c["tool"] for c in plain["tool_calls"]]) == \
        ("answered", "text", ["image_search", "web_search"])
    assert plain["tool_calls"][1]["arguments"] == {"query": "route 24"}
    # the results came back in one user message, one block per call, in the calls' order
    second = [r for stage, r in engine.requests if stage == "agentic_ask"][2]
    results = second.messages[-1]["content"]
    assert results.count("<tool_result>") == 2 and results.index("Route 24") < results.index("opened in 1910")
    # the loop called at its last reply, which was asked to answer: ended by the budget, its calls listed
    assert loop["branch"] == "budget" and loop["agentic_steps"] == 3
    assert [c["error"] for c in loop["tool_calls"]][-2:] == [
        "not run: the turn's budget was spent (the reply was asked to answer)"] * 2
    assert len([c for c in loop["tool_calls"] if c["error"] is None]) == 4



def results_seen(request) -> int:
    """How many result messages of the text protocol a request's conversation holds."""
    return sum(1 for m in request.messages if m["role"] == "user" and "<tool_result>" in m["content"])


def calls_then_two_at_once(request):
    """A text-protocol model: one call, then two calls in one reply, then its answer."""
    if "[direct]" in request.messages[-1]["content"]:
        return "Answer: Red"
    seen = results_seen(request)
    if seen == 0:
        return '<tool_call>{"name": "image_search", "arguments": {}}</tool_call>'
    if seen == 1:
        return ('<tool_call>{"name": "web_search", "arguments": {"query": "first"}}</tool_call>\n'
                '<tool_call>{"name": "web_search", "arguments": {"query": "second"}}</tool_call>')
    return "Answer: Route 24"


def test_a_turns_call_budget_counts_its_earlier_replies_calls_so_parallel_calls_past_it_are_answered_not_run():
    pipeline = RecordingPipeline()
    engine = ScriptedEngine({"agentic_ask": calls_then_two_at_once})
    answers, traces = ask(engine, ["Which route is this?"], pipeline, max_steps=5, max_calls=2)
    assert [(c["tool"], c["error"]) for c in traces[0]["tool_calls"]] == [
        ("image_search", None), ("web_search", None), ("web_search", "not run: the turn's 2 calls are spent")]
    assert pipeline.texts == ["first"] and len(pipeline.images) == 1
    assert answers == ["Route 24"]


def test_the_conversation_keeps_each_reply_as_the_model_wrote_it_calls_included_before_their_results():
    engine = ScriptedEngine({"agentic_ask": calls_then_two_at_once})
    ask(engine, ["Which route is this?"], max_steps=5, max_calls=5)
    last = [r for stage, r in engine.requests if stage == "agentic_ask"][-1].messages
    replies = [m["content"] for m in last if m["role"] == "assistant"]
    assert replies == ['<tool_call>{"name": "image_search", "arguments": {}}</tool_call>',
                       '<tool_call>{"name": "web_search", "arguments": {"query": "first"}}</tool_call>\n'
                       '<tool_call>{"name": "web_search", "arguments": {"query": "second"}}</tool_call>']
    roles = [m["role"] for m in last]
    assert roles[-4:] == ["assistant", "user", "assistant", "user"]  # each reply, then its results


def test_a_turn_that_answered_is_not_searched_for_while_another_turn_of_its_batch_searches():
    engine = ScriptedEngine({"agentic_ask": calls_then_two_at_once})
    answers, traces = ask(engine, ["[direct] What colour is the bus?", "Which route is this?"], max_steps=5,
                          max_calls=5)
    direct, searched = traces
    assert answers == ["Red", "Route 24"]
    assert "agentic_ask" in direct["stages_run"] and "agentic_search" not in direct["stages_run"]
    assert {"agentic_ask", "agentic_search"} <= set(searched["stages_run"])
    # the answered turn was asked once and its conversation got no result after its answer
    asked = [r for stage, r in engine.requests if stage == "agentic_ask" and "[direct]" in json.dumps(r.messages)]
    assert len(asked) == 1 and direct["tool_calls"] == []

def test_native_asked_of_an_engine_without_tools_faults_every_turn_in_one_line():
    engine = ScriptedEngine({"agentic_ask": lambda r: "Red"})
    answers, traces = ask(engine, ["What colour is it?", "And this?"], tool_protocol="native")
    assert answers == [IDK_ANSWER] * 2 and [t["branch"] for t in traces] == ["error"] * 2
    assert traces[0]["errors"] == ["agentic_ask: tool_protocol native: the VLM engine ScriptedEngine (scripted) has "
                                   "no tool-call parser; use tool_protocol=text (or auto)"]
    assert engine.calls == []


def test_the_deadline_ends_a_turn_that_is_still_searching(fake_clock):
    engine = ScriptedEngine({"agentic_ask": text_model}, sleep_s={"agentic_ask": 4.0})
    cfg = load_config("cpu", "full", system="agentic", warmup_at_load=False, turn_budget_s=10, max_steps=20,
                      max_calls=40)
    agent = CruiseAgent(RecordingPipeline(), config=cfg, engines=Engines(router=engine, vlm=engine,
                                                                         reranker=FunctionReranker(lambda q, c: 0.0)))
    answers = agent.batch_generate_response(["[loop] one", "[loop] two"], [Image.new("RGB", (64, 48))] * 2, [[], []])
    traces = agent.last_batch_report["traces"]
    assert answers == [IDK_ANSWER] * 2 and [t["branch"] for t in traces] == ["deadline"] * 2
    assert all(t["tool_calls"] and t["deadline_cut"] for t in traces)
    assert fake_clock.now <= 20.0


# --------------------------------------------------------------------------- units
def test_a_box_is_four_numbers_inside_the_photo():
    assert crop_box(None, (64, 48)) is None
    assert crop_box([10, 5, 20, 30], (64, 48)) == [10.0, 5.0, 20.0, 30.0]
    assert crop_box([-5, -5, 100, 100], (64, 48)) == [0.0, 0.0, 64.0, 48.0]  # clipped to the photo
    for bad, message in [([1, 2, 3], "four numbers"), ([0, 0, True, 5], "four numbers"), ("0,0,5,5", "four numbers"),
                         ([5, 5, 5, 9], "is empty"), ([9, 5, 5, 9], "is empty"), ([70, 50, 90, 60], "outside the photo"),
                         ([0, 0, float("nan"), 5], "four numbers")]:
        with pytest.raises(ToolError, match=message):
            crop_box(bad, (64, 48))


def test_text_calls_are_read_in_order_and_a_broken_one_is_kept_as_a_call():
    text, calls = read_text_calls('Let me see.\n<tool_call>{"name": "web_search", "arguments": {"query": "a"}}'
                                  '</tool_call><tool_call>not json</tool_call>\n<tool_call>{"name": "image_search"}', 2)
    assert text == "Let me see."
    assert [(c.id, c.name, c.arguments) for c in calls] == [("text-2-0", "web_search", {"query": "a"}),
                                                            ("text-2-1", "", None), ("text-2-2", "image_search", {})]
    assert calls[1].raw_arguments == "not json"
    assert read_text_calls("Paris.", 0) == ("Paris.", [])


def test_image_retrieval_at_k_reads_the_image_search_hits():
    with ToolCallingStandIn("openai") as server:
        _, traces = ask(OpenAIChatEngine("standin-vl", base_url=server.url, supports_images=True),
                        ["[direct] What is it?", "[parallel] Which route is this bus on?"])
    row = {"interaction_id": "t", "session_id": "s", "is_correct": False, "query": "Which route?"}
    labels = {"target_object_name": "AEC Routemaster"}
    direct, parallel = (turn_diagnosis(labels, trace, row) for trace in traces)
    assert direct["retrieval_rank"] is None and direct["image_retrieval@10"] is False  # it searched nothing
    assert parallel["retrieval_rank"] == 2 and (parallel["image_retrieval@1"], parallel["image_retrieval@5"]) == \
        (False, True)


def test_the_tools_are_crag_mm_agentics():
    """One schema for both routes: lmms-eval's crag_mm_agentic shows its model the same tools."""
    from agents.agentic.schemas import TOOLS
    from integrations.lmms_eval.cruise_lmms_eval.tools import TOOLS as LMMS_TOOLS

    assert all(a is b for a, b in zip(TOOLS, LMMS_TOOLS, strict=True))


class SlowFailingPipeline(RecordingPipeline):
    """Image search takes 20 ms; web search fails (an index that is down)."""

    def __call__(self, query, k=5):
        if isinstance(query, str):
            raise RuntimeError("the web index is down")
        import time

        time.sleep(0.02)
        return super().__call__(query, k)


def test_a_search_that_fails_is_an_error_the_model_reads_and_each_call_is_timed():
    with ToolCallingStandIn("openai") as server:
        engine = OpenAIChatEngine("standin-vl", base_url=server.url, supports_images=True)
        answers, traces = ask(engine, ["[parallel] Which route is this bus on?"], SlowFailingPipeline())
    image, web = traces[0]["tool_calls"]
    assert image["error"] is None and 20.0 <= image["ms"] < 2000.0
    assert web["error"] == "web search failed: RuntimeError: the web index is down" and web["hits"] == []
    sent = server.exchanges[-1].body["messages"]
    assert sent[-1]["content"] == "error: web search failed: RuntimeError: the web index is down"
    assert traces[0]["searches_run"] == ["image"] and answers == ["It is Route 24"]


def test_a_task_without_web_search_offers_image_search_alone_and_no_pipeline_offers_nothing():
    with ToolCallingStandIn("openai") as server:
        engine = OpenAIChatEngine("standin-vl", base_url=server.url, supports_images=True)
        _, traces = ask(engine, ["[parallel] Which route is this bus on?"], RecordingPipeline(web=False))
        assert [e.seen.tools for e in server.exchanges] == [["image_search"], ["image_search"]]
        assert traces[0]["tool_calls"][1]["error"] == "unknown tool 'web_search'; the tools of this question: image_search"
        assert traces[0]["tools_offered"] == ["image_search"]
        server.exchanges.clear()
        answers, traces = ask(engine, ["[chain] Who runs this route?"], pipeline=NoSearch())
    assert [e.seen.tools for e in server.exchanges] == [[]] and "tools" not in server.exchanges[0].body
    assert traces[0]["tools_offered"] == [] and traces[0]["tool_calls"] == [] and answers == [IDK_ANSWER]


class NoSearch:
    """A pipeline that searches neither images nor the web (a harness that switched both off)."""

    image_search = False
    web_search = False

    def __call__(self, query, k=5):
        raise AssertionError("nothing may be searched")


def test_what_a_call_shows_the_model_is_bounded_by_result_chars():
    for chars, shown in ((40, ["The photo may show: Route 24"]), (20, ["The photo may show: "])):
        with ToolCallingStandIn("openai") as server:
            engine = OpenAIChatEngine("standin-vl", base_url=server.url, supports_images=True)
            _, traces = ask(engine, ["Which route is this?"], result_chars=chars)
        # chunks that fit together are shown whole; a first chunk longer than the budget is cut
        assert traces[0]["kept_chunks"] == shown
        assert server.exchanges[-1].body["messages"][-1]["content"] == "".join(shown)


def test_the_view_counts_calls_per_turn_and_its_funnel_follows_each_turn():
    from agents.agentic.trace import report_sections, summarize

    with ToolCallingStandIn("openai") as server:
        engine = OpenAIChatEngine("standin-vl", base_url=server.url, supports_images=True)
        _, traces = ask(engine, QUERIES)
    figures = summarize(traces)["agentic"]
    assert figures["calls_per_turn"] == {"0": 1, "1": 2, "2": 2, "4": 1}
    assert figures["replies_per_turn"] == {"1": 1, "2": 3, "3": 1, "5": 1}
    assert figures["calls_by_tool"] == {"web_search": 7, "image_search": 3}
    assert (figures["failed_calls"], figures["calls_with_hits"]) == (2, 8)
    rows = dict(map(tuple, report_sections({"agentic": figures})[0]["rows"]))
    assert rows["turns with 4 call(s)"] == 1 and rows["calls of web_search"] == 7
    funnels = [t["funnel"] for t in traces]
    assert [f["called a tool"] for f in funnels] == [True, True, False, True, True, True]
    assert [f["a search found something"] for f in funnels] == [False, True, False, True, True, False]
    assert [f["answer written (not I don't know)"] for f in funnels] == [False, True, True, True, True, False]


def test_a_streamed_reply_with_tool_calls_is_joined_by_index():
    """Chat Completions streams a call's id and name once and its arguments in pieces (the SDK's
    ChatCompletionChunk); two calls interleave by their index."""
    from openai.types.chat import ChatCompletionChunk

    from agents.engines.openai_engine import read_tool_calls

    def chunk(delta, finish=None):
        return ChatCompletionChunk.model_validate({
            "id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "m",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}).model_dump(mode="json",
                                                                                       exclude_unset=True)

    bodies = [chunk({"role": "assistant", "content": None}),
              chunk({"tool_calls": [{"index": 0, "id": "call_a", "type": "function",
                                     "function": {"name": "web_search", "arguments": ""}}]}),
              chunk({"tool_calls": [{"index": 1, "id": "call_b", "type": "function",
                                     "function": {"name": "image_search", "arguments": "{}"}}]}),
              chunk({"tool_calls": [{"index": 0, "function": {"arguments": '{"query": "rou'}}]}),
              chunk({"tool_calls": [{"index": 0, "function": {"arguments": 'te 24"}'}}]}),
              chunk({}, finish="tool_calls")]
    calls = read_tool_calls(bodies)
    assert [(c.id, c.name, c.arguments) for c in calls] == [("call_a", "web_search", {"query": "route 24"}),
                                                            ("call_b", "image_search", {})]
    broken = read_tool_calls([chunk({"tool_calls": [{"index": 0, "id": "c", "type": "function",
                                                      "function": {"name": "web_search", "arguments": '{"q'}}]})])
    assert broken[0].arguments is None and broken[0].raw_arguments == '{"q'

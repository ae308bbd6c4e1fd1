"""Follow-up turns: the standalone question (agents/stages/s1c_standalone.py) reaches retrieval,
never borrows from an "I don't know", falls back on a bad rewrite, leaves single turns alone; and
the per-conversation cache of the photo's image hits (agents/runtime/conversation_cache.py)."""
from __future__ import annotations

import pytest
from PIL import Image

from agents.config.loading import load_config
from agents.engines.base import ChatEngine, ChatResult
from agents.runtime.conversation_cache import ConversationCache, conversation_key
from agents.stages.s1c_standalone import carried_terms, is_idk, named_things, standalone_batch, with_standalone
from agents.stages.s3_retrieve import whole_photo_hits
from agents.stages.types import Turn, search_question
from testkit.fakes import IDK_SPELLINGS, FakePipeline, ScriptedEngine
from testkit.scripted_chain import WHERE, make_agent

WEB_HIT = {"page_name": "STS-93", "page_url": "https://example.org/sts-93",
           "page_snippet": "STS-93 deployed the Chandra X-ray Observatory in 1999."}


def talk(*pairs):
    """A message history from (question, answer) pairs."""
    return [m for q, a in pairs for m in ({"role": "user", "content": q}, {"role": "assistant", "content": a})]


def photo(colour="red"):
    return Image.new("RGB", (64, 48), colour)


def follow_up(agent, question, history, image=None):
    agent.batch_generate_response([question], [image or photo()], [history])
    return agent.last_batch_report["traces"][0]


def test_an_entity_named_in_an_earlier_question_reaches_the_web_and_rerank_queries():
    agent = make_agent("full", web_hits=[WEB_HIT])
    history = talk(("which shuttle mission did Eileen Collins first command?", "STS-93"))
    trace = follow_up(agent, "what did that mission deploy?", history)
    web_query = agent.search_pipeline.text_queries[-1]
    # the earlier answer (short: whole), then the question's name, then its content words
    assert trace["standalone_question"] == "what did that mission deploy? STS-93 Eileen Collins shuttle command"
    assert web_query.startswith(trace["standalone_question"])
    assert trace["retrieval_query"].startswith(trace["standalone_question"])
    assert trace["standalone_carried"] == ["STS-93", "Eileen Collins", "shuttle", "command"]


@pytest.mark.parametrize("idk", IDK_SPELLINGS)
def test_an_earlier_answer_is_an_abstention_in_any_spelling(idk):
    assert is_idk(idk) and is_idk(f"{idk}. Perhaps DSCOVR.") and is_idk(idk.upper()) and is_idk("")
    assert not is_idk("Falcon 9") and not is_idk("STS-93, known as Columbia's last")


@pytest.mark.parametrize("idk", IDK_SPELLINGS)
def test_an_i_dont_know_answer_never_supplies_a_term(idk):
    turn = Turn("where does that spacecraft sit in space?", None,
                talk(("what rocket is on the pad?", "Falcon 9"),
                     ("what was it carrying on this launch?", f"{idk}. Perhaps DSCOVR.")))
    terms = carried_terms(turn, 10)
    assert "DSCOVR" not in " ".join(terms)
    # the earlier turns still give theirs: the answer that names something first, then the
    # questions' words, newest first
    assert terms == ["Falcon 9", "carrying", "launch", "rocket", "pad"]


@pytest.mark.parametrize("idk", IDK_SPELLINGS)
def test_an_earlier_turn_answered_i_dont_know_is_carried_by_the_pages_its_search_found(idk):
    history = talk(("which shuttle mission did she first command?", idk))
    turn = Turn("what did that mission deploy?", None, history)
    found = {0: ["STS-93 - Wikipedia"]}
    assert carried_terms(turn, 10, found) == ["STS-93", "shuttle", "command"]
    assert carried_terms(turn, 10) == ["shuttle", "command"]  # nothing found: the question's words alone
    # an answer that names something is carried, not the pages
    answered = Turn("what did that mission deploy?", None, talk(("which shuttle mission did she first command?",
                                                                 "STS-93")))
    assert carried_terms(answered, 10, {0: ["Eileen Collins - NASA"]}) == ["STS-93", "shuttle", "command"]


@pytest.mark.parametrize("idk", IDK_SPELLINGS)
def test_a_follow_up_through_the_agent_carries_the_page_its_idk_turn_found_and_no_other_conversations(idk):
    page = {**WEB_HIT, "page_name": "STS-93 - Wikipedia"}
    agent = make_agent("full", web_hits=[page], standalone_found_pages=1)
    opening = "which shuttle mission did the astronaut on this patch first command?"
    image = photo("purple")
    agent.batch_generate_response([opening], [image], [[]])
    trace = follow_up(agent, "what did that mission deploy?", talk((opening, idk)), image)
    assert trace["standalone_found"] == ["STS-93"] and "STS-93" in agent.search_pipeline.text_queries[-1]
    # another photo is another conversation: nothing of this one's search reaches it
    other = follow_up(agent, "what did that mission deploy?", talk((opening, idk)), photo("orange"))
    assert other["standalone_found"] == [] and "STS-93" not in other["standalone_question"]
    # with the carry-over off (the default), the same follow-up names nothing its earlier turn found
    off = make_agent("full", web_hits=[page])
    off.batch_generate_response([opening + " (again)"], [image], [[]])
    trace = follow_up(off, "what did that mission deploy?", talk((opening + " (again)", idk)), image)
    assert trace["standalone_found"] == [] and "STS-93" not in trace["standalone_question"]


@pytest.mark.parametrize("idk", IDK_SPELLINGS)
def test_the_rewrite_prompt_leaves_i_dont_know_answers_out(idk):
    engine = ScriptedEngine({"standalone": lambda r: "where does Falcon 9's payload sit in space?"})
    turn = Turn("where does that spacecraft sit in space?", None,
                talk(("what rocket is on the pad?", "Falcon 9"), ("what was it carrying?", f"{idk}, maybe DSCOVR")))
    (out,) = standalone_batch([turn], ["a rocket on a launch pad"], engine, load_config("cpu", standalone_mode="model"))
    (stage, request), = engine.requests
    assert stage == "standalone"
    prompt = request.messages[-1]["content"]
    assert "Falcon 9" in prompt and "DSCOVR" not in prompt and "know" not in prompt
    assert out.question == "where does Falcon 9's payload sit in space?" and not out.fallback


@pytest.mark.parametrize("idk", [s for s in IDK_SPELLINGS if "\n" not in s] + ["Not sure"])
def test_a_rewrite_that_abstains_is_no_rewrite_though_it_repeats_the_question(idk):
    engine = ScriptedEngine({"standalone": lambda r: f"{idk} when Eileen Collins did retire"})
    turn = Turn("when did she retire?", None, talk(("who is this?", "Eileen Collins")))
    (out,) = standalone_batch([turn], [""], engine, load_config("cpu", standalone_mode="model"))
    assert (out.question, out.fallback) == ("", "rewrite is an abstention")
    assert search_question(with_standalone([turn], [out])[0]) == "when did she retire?"


class CutEngine(ChatEngine):
    """An engine whose every request the deadline stopped."""

    def __init__(self):
        super().__init__("cut")

    def _generate(self, requests, sampling):
        return [ChatResult(text="", cut_by_deadline=True) for _ in requests]


def test_a_garbage_too_long_or_cut_rewrite_falls_back_to_the_plain_question():
    cfg = load_config("cpu", standalone_mode="model")
    history = talk(("who is this?", "Eileen Collins"))
    turns = [Turn(q, None, history) for q in ("when did she retire?", "how tall is she?", "where was she born?")]
    replies = {"when did she retire?": "?!?!", "how tall is she?": "how tall " + "very " * 200 + "is she?",
               "where was she born?": "Where was Eileen Collins born?"}
    engine = ScriptedEngine({"standalone": lambda r: next(v for k, v in replies.items() if k in r.messages[-1]["content"])})
    garbage, long, good = standalone_batch(turns, ["", "", ""], engine, cfg)
    assert (garbage.question, garbage.fallback) == ("", "rewrite shares no word with the question")
    assert (long.question, long.fallback) == ("", "rewrite too long")
    assert good.question == "Where was Eileen Collins born?"
    shown = with_standalone(turns, [garbage, long, good])
    assert [search_question(t) for t in shown] == ["when did she retire?", "how tall is she?", "Where was Eileen Collins born?"]
    (cut,) = standalone_batch(turns[:1], [""], CutEngine(), cfg)
    assert (cut.question, cut.fallback) == ("", "rewrite cut by the deadline")
    # "both": a failed rewrite still gets the rule's terms
    (both,) = standalone_batch(turns[:1], [""], CutEngine(), load_config("cpu", standalone_mode="both"))
    assert both.question == "when did she retire? Eileen Collins" and both.fallback == "rewrite cut by the deadline"


def comparable(agent):
    """Every prompt the engines were sent, and the traces without their timings."""
    prompts = [(stage, r.messages) for engine in (agent.engines.router, agent.engines.vlm) for stage, r in engine.requests]
    traces = [{k: v for k, v in t.items() if k != "stage_ms"} for t in agent.last_batch_report["traces"]]
    return prompts, traces


def test_turns_without_history_get_the_same_prompts_and_traces_whatever_the_mode():
    runs = {}
    for mode in ("off", "rule", "model", "both"):
        agent = make_agent("full", web_hits=[WEB_HIT], standalone_mode=mode)
        agent.batch_generate_response([WHERE, "What is it?"], [photo(), photo("blue")], [[], []])
        runs[mode] = comparable(agent)
        assert "standalone" not in agent.last_batch_report["traces"][0]["stage_ms"]
    assert runs["rule"] == runs["off"] and runs["model"] == runs["off"] and runs["both"] == runs["off"]
    assert not any(k.startswith("standalone") or k == "image_hits_reused" for k in runs["off"][1][0])


def test_named_things_keep_codes_and_multiword_names():
    assert named_things("She commanded STS-93, which carried the Chandra X-ray Observatory.") == [
        "STS-93", "Chandra X-ray Observatory"]
    assert named_things("The Tower of Buddhist Incense.") == ["Tower of Buddhist Incense"]


def test_the_cache_serves_a_later_turn_of_the_same_conversation_only():
    cfg = load_config("cpu")
    cache = ConversationCache(size=8)
    pipeline = FakePipeline([{"index": 0, "score": 0.9, "entities": [{"entity_name": "Eileen Collins"}]}])
    first = Turn("who is this?", photo(), [])
    second = Turn("when did she retire?", photo(), talk(("who is this?", "Eileen Collins")))
    other_photo = Turn("when did she retire?", photo("blue"), talk(("who is this?", "Eileen Collins")))
    other_talk = Turn("what year is it?", photo(), talk(("what is on the wall?", "a clock")))
    assert whole_photo_hits(first, pipeline, cfg, cache)[1] is False
    hits, reused = whole_photo_hits(second, pipeline, cfg, cache)
    assert reused is True and hits == pipeline.image_hits and pipeline.calls == ["image"]
    assert whole_photo_hits(other_photo, pipeline, cfg, cache)[1] is False
    assert whole_photo_hits(other_talk, pipeline, cfg, cache)[1] is False
    assert pipeline.calls == ["image"] * 3


def test_the_cache_drops_the_least_recently_used_conversation():
    cache = ConversationCache(size=2)
    a, b, c = (conversation_key(q, [], photo()) for q in ("a?", "b?", "c?"))
    cache.put(a, "hits", 1)
    cache.put(b, "hits", 2)
    assert cache.get(a, "hits") == 1  # a is now the most recent
    cache.put(c, "hits", 3)
    assert cache.get(b, "hits") is None and cache.get(a, "hits") == 1 and cache.get(c, "hits") == 3


def test_a_follow_up_through_the_agent_reuses_the_first_turns_image_search():
    agent = make_agent("full", web_hits=[WEB_HIT])
    image = photo("green")
    agent.batch_generate_response(["Which bus is this?"], [image], [[]])
    before = agent.search_pipeline.calls.count("image")
    trace = follow_up(agent, "where does it go?", talk(("Which bus is this?", "Route 24")), image)
    assert agent.search_pipeline.calls.count("image") == before
    assert trace["image_hits_reused"] is True
    assert [r["name"] for r in trace["retrieved"] if r["source"] == "image"] == ["Route 24"]


def test_qa_dragons_sub_question_enhancement_completes_each_query_with_the_referent():
    from agents.peers.qa_dragon.rephrase import enhance_sub_queries
    from agents.stages.types import SubQueries

    rephrased = SubQueries(queries=["what did the mission deploy", "STS-93 shuttle payload"])
    assert enhance_sub_queries(rephrased, ["STS-93", "shuttle"]).queries == [
        "what did the mission deploy STS-93 shuttle", "STS-93 shuttle payload"]
    assert enhance_sub_queries(rephrased, []) is rephrased


def test_the_report_turn_page_shows_a_follow_ups_standalone_question():
    from agents.cruise.trace_view import TURN_TEMPLATE, prepare_turn
    from evaluator.report.html import template_environment

    agent = make_agent("full", web_hits=[WEB_HIT])
    trace = follow_up(agent, "what did that mission deploy?", talk(("which mission did Eileen Collins command?", "STS-93")))
    macro = template_environment(str(TURN_TEMPLATE.parent)).get_template(TURN_TEMPLATE.name).module.trace_details
    page = str(macro({"trace": trace, "branch": trace["branch"], **prepare_turn(trace)}))
    assert "<th>standalone question</th><td>what did that mission deploy? STS-93 Eileen Collins command" in page
    assert "carried from earlier turns: STS-93, Eileen Collins, command" in page
    # a term carried from what an "I don't know" turn's search found says so
    agent = make_agent("full", web_hits=[WEB_HIT], standalone_found_pages=1)
    image, opening = photo("teal"), "which mission did the commander in this photo fly first?"
    agent.search_pipeline.web_hits = [{**WEB_HIT, "page_name": "STS-93 - Wikipedia"}]
    agent.batch_generate_response([opening], [image], [[]])
    trace = follow_up(agent, "what did that mission deploy?", talk((opening, "I don't know")), image)
    page = str(macro({"trace": trace, "branch": trace["branch"], **prepare_turn(trace)}))
    assert 'found by the search of a turn answered "I don\'t know": STS-93' in page


def test_the_benchmark_builds_the_histories_the_evaluator_hands_over():
    from benchmarks.conversations import histories, names_referent

    rows = [{"session_id": "s", "interaction_id": f"t{i}", "turn_idx": i, "query": q, "ground_truth": g,
             "agent_response": a} for i, (q, g, a) in enumerate([("who is this?", "Eileen Collins", "I don't know"),
                                                                  ("which mission?", "STS-93", "STS-93"),
                                                                  ("what did it deploy?", "Chandra", "I don't know")])]
    own, gold = histories(rows, gold=False), histories(rows, gold=True)
    assert own["t0"] == [] and [m["content"] for m in own["t2"]] == ["who is this?", "I don't know", "which mission?", "STS-93"]
    assert [m["content"] for m in gold["t1"]] == ["who is this?", "Eileen Collins"]
    assert names_referent("what did it deploy? sts-93", ["STS-93"]) and not names_referent("STS-930", ["STS-93"])


def test_the_benchmark_reads_what_each_earlier_turn_found_from_the_run_traces():
    from benchmarks.conversations import found_pages

    def row(i, names):
        retrieved = [{"source": "image", "name": "Eileen Collins"}] + [{"source": "web", "name": n} for n in names]
        return {"session_id": "s", "interaction_id": f"t{i}", "turn_idx": i, "trace": {"retrieved": retrieved}}

    pages = found_pages([row(2, ["Chandra - NASA"]), row(0, ["Eileen Collins - Wikipedia", "NASA"]), row(1, [])])
    assert pages["t0"] == {} and pages["t1"] == {0: ["Eileen Collins - Wikipedia"]}
    assert pages["t2"] == {0: ["Eileen Collins - Wikipedia"]}  # turn 1's search found no web page


def test_the_model_rewrite_of_each_follow_up_reads_its_own_photos_summary_and_asks_the_vlm():
    """Position is not turn: a single-turn question comes first in the batch, so the follow-ups
    are the batch's second and third turns; the third answers from the photo (no retrieval, no
    summary made)."""
    from agents.cruise_agent import CruiseAgent
    from agents.engines.base import Engines
    from testkit.fakes import FunctionReranker
    from testkit.scripted_chain import COLOR, IMAGE_HITS, VLM_SCRIPT, route

    shown = {"red": "A red double-decker bus.", "blue": "A blue tram in the snow."}
    vlm = ScriptedEngine({**VLM_SCRIPT, "standalone": lambda r: "where does the blue tram go?",
                          "summarize": lambda r: shown["blue" if "again" in last_text(r) else "red"]})
    router = ScriptedEngine({"route": route})
    agent = CruiseAgent(FakePipeline(IMAGE_HITS, [WEB_HIT]), engines=Engines(router, vlm, FunctionReranker(lambda q, c: 0.9)),
                        profile="cpu", preset="full+paper_finalizer", standalone_mode="model", skip_decided_turns=False)
    agent.batch_generate_response(["Where does this bus go?", "where does it go again?", COLOR],
                                  [photo("red"), photo("blue"), photo("green")],
                                  [[], talk(("what is this?", "a tram")), talk(("what is this?", "a bus"))])
    rewrites = [last_text(r) for stage, r in vlm.requests if stage == "standalone"]
    assert len(rewrites) == 2 and not [stage for stage, _ in router.requests if stage == "standalone"]
    assert f"The photo shows: {shown['blue']}" in rewrites[0] and shown["red"] not in rewrites[0]
    assert "The photo shows: (not described)" in rewrites[1]
    single, follow, _ = agent.last_batch_report["traces"]
    assert follow["standalone_question"] == "where does the blue tram go?" and "standalone_question" not in single


def test_with_the_mode_off_a_follow_up_is_searched_as_asked():
    agent = make_agent("full", web_hits=[WEB_HIT], standalone_mode="off")
    history = talk(("which shuttle mission did Eileen Collins first command?", "STS-93"))
    trace = follow_up(agent, "what did that mission deploy?", history)
    assert "standalone_question" not in trace and "standalone" not in trace.get("stages_run", [])
    assert agent.search_pipeline.text_queries[-1].startswith("what did that mission deploy?")
    assert "STS-93" not in agent.search_pipeline.text_queries[-1]


def last_text(request) -> str:
    content = request.messages[-1]["content"]
    return content if isinstance(content, str) else " ".join(p.get("text", "") for p in content if isinstance(p, dict))


def test_in_a_system_without_a_summary_the_model_rewrite_says_the_photo_is_not_described():
    from agents.cruise_agent import CruiseAgent
    from agents.engines.base import Engines
    from testkit.fakes import FunctionReranker

    vlm = ScriptedEngine({"standalone": lambda r: "what did STS-93 deploy?"})
    agent = CruiseAgent(FakePipeline([], [WEB_HIT]), engines=Engines(ScriptedEngine({}), vlm, FunctionReranker(lambda q, c: 0.9)),
                        profile="cpu", preset="qa_dragon", standalone_mode="model")
    follow_up(agent, "what did that mission deploy?", talk(("which mission did she command?", "STS-93")))
    (rewrite,) = [last_text(r) for stage, r in vlm.requests if stage == "standalone"]
    assert "The photo shows: (not described)" in rewrite

"""QA-Dragon and SAM-RAG run whole (presets qa_dragon, sam_rag) inside the real CruiseAgent, over
scripted engines and a fake search pipeline.

The turns and the scripted replies come from the seeds, not from the presets' code:
- QA-Dragon's Table 1 (seed 001, section 3.2) gives one question per branch (testkit/scripted_peers.py):
  Direct Output emits the draft of a self-contained (OCR) question; Search Verify runs the text
  toolchain then the verifier on a hedged draft; RAG, on a failed draft about an entity, runs
  the toolchains the tool router picks, then the verifier.
- SAM-RAG's Table 1 (seed 002): isRel keeps only relevant documents and retrieval goes on until
  one is found; isUse false means the answer is regenerated; isSup false means the answer is not
  given as supported.
The scripted engines write text verdicts, so the agents run on the paper's model stack
(`stack="llama-3.2-vision"`: text router, text consistency and CoV readings) on the cpu machine.
"""
from __future__ import annotations

import dataclasses
import json
import math

import pytest
from PIL import Image

from agents.base_agent import IDK_ANSWER
from agents.config.loading import load_config, load_config_from_settings
from agents.cruise.trace_view import report_sections, summarize
from agents.cruise_agent import CruiseAgent
from agents.engines.base import ChatResult, Engines
from agents.peers.qa_dragon.draft import read_draft
from agents.peers.qa_dragon.post_answer import answer_line_probabilities, read_post_answer
from agents.peers.qa_dragon.search_router import names_something
from agents.peers.qa_dragon.verifier import read_verifier
from agents.peers.sam_rag.support import read_support
from agents.runtime.batch import decide_from_trace
from agents.runtime.system import Decision
from evaluator.harness.run_record import RunRecord
from testkit.fakes import IDK_SPELLINGS, FakePipeline, FunctionReranker, ScriptedEngine, WithoutWebFlag, last_user_text
from testkit.scripted_peers import CAFE, CAFE_HIT, CAR, CAR_PAGE, UMBRELLAS, qa_dragon_engines


def qa_dragon_agent(pipeline=None, engines=None, **overrides):
    pipeline = pipeline if pipeline is not None else FakePipeline([CAFE_HIT], [CAR_PAGE])
    config = load_config("cpu", "qa_dragon", stack="llama-3.2-vision", chunker="paper_fields", **overrides)
    return CruiseAgent(pipeline, config=config, engines=engines or qa_dragon_engines())


def ask(agent, *questions):
    answers = agent.batch_generate_response(list(questions), [Image.new("RGB", (64, 48), "gray")] * len(questions),
                                            [[] for _ in questions])
    return answers, agent.last_batch_report["traces"]


def stages(agent) -> list[str]:
    return [c["stage"] for c in agent.last_batch_report["engine_calls"]]


# ---- QA-Dragon: each branch on the turn built to need it -----------------------------------------


def test_direct_output_emits_the_draft_of_an_ocr_question_without_searching():
    pipeline = FakePipeline([CAFE_HIT], [CAR_PAGE])
    agent = qa_dragon_agent(pipeline)
    answers, (trace,) = ask(agent, UMBRELLAS)
    assert answers == ["RAIN OR SHINE"]
    assert trace["system"] == "qa_dragon" and trace["branch"] == "direct_output"
    assert trace["router_features"]["answer_type"] == "ocr" and trace["decision"] == "direct_output"
    assert trace["draft_steps"] == ["The umbrellas carry printed words.", "The words read RAIN OR SHINE."]
    assert pipeline.calls == []  # no search of any kind
    assert stages(agent) == ["domain", "draft"]  # nothing after the pre-answer
    assert trace["tool_search"] is None and trace["post_answer"] is None and trace["verifier_confidence"] is None
    assert all(trace["funnel"].values())


def test_search_verify_checks_an_uncertain_draft_with_the_text_toolchain():
    pipeline = FakePipeline([CAFE_HIT], [CAR_PAGE])
    agent = qa_dragon_agent(pipeline)
    answers, (trace,) = ask(agent, CAR)
    assert answers == ["1964"]
    assert trace["branch"] == "search_verify" and trace["router_features"]["hedged"] is True
    assert trace["draft_object"] == "Ford Mustang" and trace["router_features"]["named"] is True
    # the text toolchain alone: the tool router is not asked and no image search runs
    assert trace["tool_search"] == "web" and pipeline.calls and set(pipeline.calls) == {"text"}
    assert "tool_route" not in stages(agent) and "crop" not in stages(agent)
    assert any("Ford Mustang" in q for q in pipeline.text_queries)  # q' names the object the draft named
    assert any("1964" in c for c in trace["kept_chunks"])
    assert trace["post_answer"] == "1964" and trace["verifier_confidence"] == 1.0 and trace["decision"] == "verified"


def test_rag_lets_the_tool_router_pick_the_searches_for_a_question_about_an_entity():
    pipeline = FakePipeline([CAFE_HIT], [CAR_PAGE])
    agent = qa_dragon_agent(pipeline)
    answers, (trace,) = ask(agent, CAFE)
    assert answers == ["James Freeman"]
    assert trace["branch"] == "rag" and trace["router_features"]["failed"] is True
    assert trace["tool_search"] == "both" and "image" in pipeline.calls and "text" in pipeline.calls
    calls = dict((c["stage"], c["requests"]) for c in agent.last_batch_report["engine_calls"])
    assert calls["tool_route"] == 2  # the paper's two flags: image search? text search?
    assert calls["rephrase"] == 1 and "Blue Bottle Coffee founder" in pipeline.text_queries
    assert trace["entity_verdicts"] == {"Blue Bottle Coffee": True}
    assert trace["fine_rerank_ran"] and any("James Freeman" in c for c in trace["kept_chunks"])
    assert trace["decision"] == "verified"


def test_one_batch_takes_all_three_branches_with_one_engine_call_per_step():
    agent = qa_dragon_agent()
    answers, traces = ask(agent, UMBRELLAS, CAR, CAFE)
    assert answers == ["RAIN OR SHINE", "1964", "James Freeman"]
    assert [t["branch"] for t in traces] == ["direct_output", "search_verify", "rag"]
    called = stages(agent)
    assert len(called) == len(set(called))  # each step one call for the batch
    summary = summarize(traces)
    assert summary["system"] == "qa_dragon"
    assert {b: v["turns"] for b, v in summary["qa_dragon"]["branches"].items()} == {
        "direct_output": 1, "search_verify": 1, "rag": 1}
    titles = [s["title"] for s in report_sections(summary)]
    assert "QA-Dragon: the search router's branches" in titles


def test_the_tool_router_saying_no_search_leaves_the_post_answer_without_evidence():
    pipeline = FakePipeline([CAFE_HIT], [CAR_PAGE])
    agent = qa_dragon_agent(pipeline, qa_dragon_engines(tool=lambda r: "no"))
    answers, (trace,) = ask(agent, CAFE)
    assert trace["branch"] == "rag" and trace["tool_search"] == "none"
    assert pipeline.calls == [] and trace["context"] == ""
    assert answers == [IDK_ANSWER] and trace["decision"] == "abstained"


def test_the_verifier_rejects_an_answer_the_evidence_does_not_support():
    agent = qa_dragon_agent(engines=qa_dragon_engines(verify=lambda r: "**Verdict:** Incorrect\nWhy: unsupported."))
    answers, traces = ask(agent, UMBRELLAS, CAR)
    assert answers == ["RAIN OR SHINE", IDK_ANSWER]  # Direct Output is not verified (Table 1)
    assert traces[1]["decision"] == "verifier_rejected" and traces[1]["verifier_confidence"] == 0.0
    assert list(traces[1]["funnel"].values()) == [True, False]


def test_the_token_gate_rejects_an_answer_the_engine_gave_no_probabilities_for():
    agent = qa_dragon_agent(min_token_prob=0.2)
    answers, (trace,) = ask(agent, CAR)
    assert answers == [IDK_ANSWER] and trace["decision"] == "low_token_prob"
    assert trace["rag_min_token_prob"] is None
    assert list(trace["funnel"])[-1].startswith("least likely answer token >= 0.2")


def test_task_one_without_web_search_verifies_with_the_image_search():
    pipeline = FakePipeline([CAFE_HIT], None)  # Task 1: the image KG only
    agent = qa_dragon_agent(pipeline)
    _, (trace,) = ask(agent, CAR)
    assert trace["branch"] == "search_verify" and trace["tool_search"] == "image"
    assert set(pipeline.calls) == {"image"} and "no web search" in trace["tool_rule"]


@pytest.mark.parametrize("pipeline, web", [(FakePipeline([CAFE_HIT], [CAR_PAGE]), True),
                                           (FakePipeline([CAFE_HIT], None), False),
                                           (WithoutWebFlag(FakePipeline([CAFE_HIT], [CAR_PAGE])), True)])
def test_the_tool_router_of_a_rag_turn_searches_the_web_only_where_the_pipeline_can(pipeline, web):
    agent = qa_dragon_agent(pipeline)
    _, (first, cafe) = ask(agent, CAR, CAFE)  # the RAG turn second in its batch
    assert cafe["branch"] == "rag" and ("no web search" in cafe["tool_rule"]) is not web
    assert cafe["tool_search"] == ("both" if web else "image")


def test_a_step_the_deadline_does_not_start_leaves_direct_output_answers_standing():
    # the post-answer is expected to take far longer than the batch's budget: it is not started
    agent = qa_dragon_agent(stage_cost_priors_s={"post_answer": 1000.0})
    answers, traces = ask(agent, UMBRELLAS, CAR)
    assert answers == ["RAIN OR SHINE", IDK_ANSWER]
    assert all(t["deadline_cut_before"] == "post_answer" for t in traces)
    assert traces[1]["decision"] == "abstained" and "post_answer" not in stages(agent)


def test_a_stage_fault_costs_its_turns_only_with_branch_error():
    engines = qa_dragon_engines()
    engines.vlm.fail = {"post_answer": lambda r: CAR in last_user_text(r)}
    agent = qa_dragon_agent(engines=engines)
    # the guard retries a failing step once on each half of its turns: the car's half is itself
    answers, traces = ask(agent, CAR, UMBRELLAS, CAFE)
    assert answers == [IDK_ANSWER, "RAIN OR SHINE", "James Freeman"]
    assert traces[0]["branch"] == "error" and traces[0]["errors"]
    assert [t["branch"] for t in traces[1:]] == ["direct_output", "rag"]


# ---- SAM-RAG: Table 1's actions ------------------------------------------------------------------

DOCUMENTS = {"index": 0, "score": 0.9, "entities": [{"entity_name": "Blue Bottle Coffee", "entity_attributes": {
    "description": "\n\n".join([
        "Blue Bottle Coffee sells beans online.",  # ranked first, not about the founder
        "Blue Bottle Coffee has a blue logo.",
        "Blue Bottle Coffee opened shops in Tokyo.",
        "Blue Bottle Coffee was founded by James Freeman in 2002.",  # ranked fourth: the second round
        "Blue Bottle Coffee serves pastries.",
    ])}}]}
RANK = ["sells beans", "blue logo", "Tokyo", "founded by", "pastries"]


def rank_score(query: str, chunk: str) -> float:
    return next((0.9 - 0.1 * k for k, words in enumerate(RANK) if words in chunk), 0.1)


def sam_rag_agent(is_use=None, is_sup=None, is_rel=None, answer=None, regenerate=None, **overrides):
    vlm = ScriptedEngine({
        "summarize": lambda r: "The front of a cafe with a blue bottle logo.",
        "is_rel": is_rel or (lambda r: "yes" if "founded by" in last_user_text(r) else "no"),
        "answer": answer or (lambda r: "James Freeman" if "founded by" in last_user_text(r) else "I don't know"),
        "is_use": is_use or (lambda r: "yes"),
        "regenerate": regenerate or (lambda r: "James Freeman"),
        "is_sup": is_sup or (lambda r: "Supported: fully"),
    })
    config = load_config("cpu", "sam_rag", stack="llama-3.2-vision", chunker="paper_fields", **overrides)
    return CruiseAgent(FakePipeline([DOCUMENTS]), config=config,
                       engines=Engines(vlm, vlm, FunctionReranker(rank_score))), vlm


def test_relevance_rounds_go_on_until_a_relevant_document_is_found():
    agent, vlm = sam_rag_agent()
    answers, (trace,) = ask(agent, CAFE)
    assert answers == ["James Freeman"] and trace["branch"] == "supported"
    assert trace["relevance_rounds"] == 2 and trace["relevance_judged"] == 5  # 3, then the 2 left
    assert trace["kept_chunks"] == ["Blue Bottle Coffee was founded by James Freeman in 2002."]
    assert "founded by James Freeman" in trace["context"] and "sells beans" not in trace["context"]
    assert [c for c in stages(agent) if c == "is_rel"] == ["is_rel", "is_rel"]


def test_relevance_rounds_stop_at_their_bound_when_nothing_is_relevant():
    agent, vlm = sam_rag_agent(is_rel=lambda r: "no", sam_rag_rounds=2, sam_rag_batch_docs=2)
    answers, (trace,) = ask(agent, CAFE)
    # 2 rounds of 2: the fifth document is never judged
    assert trace["relevance_rounds"] == 2 and trace["relevance_judged"] == 4 and trace["context"] == ""
    assert answers == [IDK_ANSWER] and trace["funnel"]["relevant document kept (isRel)"] is False


def test_an_answer_that_misses_the_question_is_regenerated_once_then_given():
    agent, vlm = sam_rag_agent(answer=lambda r: "Coffee is a drink.",
                               is_use=lambda r: "no" if "Coffee is a drink" in last_user_text(r) else "yes")
    answers, (trace,) = ask(agent, CAFE)
    assert answers == ["James Freeman"] and trace["branch"] == "supported_after_regeneration"
    assert trace["first_answer"] == "Coffee is a drink." and trace["is_use_first"] is False
    assert trace["regenerated"] and trace["is_use_second"] is True
    regenerate = [r for stage, r in vlm.requests if stage == "regenerate"]
    assert len(regenerate) == 1 and "Coffee is a drink." in last_user_text(regenerate[0])


def test_an_answer_that_keeps_missing_the_question_is_regenerated_once_then_stops():
    agent, vlm = sam_rag_agent(answer=lambda r: "Coffee is a drink.", regenerate=lambda r: "Coffee is a drink.",
                               is_use=lambda r: "no")
    answers, (trace,) = ask(agent, CAFE)
    assert answers == [IDK_ANSWER] and trace["branch"] == "not_useful"
    assert stages(agent).count("answer") == 1 and stages(agent).count("regenerate") == 1
    assert stages(agent).count("is_use") == 2 and "is_sup" not in stages(agent) and trace["is_use"] is False
    assert trace["funnel"]["isUse: answers the question (one regeneration at most)"] is False


def test_an_unsupported_answer_is_not_given():
    agent, vlm = sam_rag_agent(is_sup=lambda r: "Supported: no")
    answers, (trace,) = ask(agent, CAFE)
    assert answers == [IDK_ANSWER] and trace["branch"] == "unsupported"
    assert trace["is_sup_confidence"] == 0.0 and trace["rag_answer"] == "James Freeman"
    summary = summarize([trace])
    assert summary["system"] == "sam_rag" and summary["sam_rag"]["outcomes"]["unsupported"] == 1


def test_a_partly_supported_answer_passes_only_a_threshold_at_or_below_one_half():
    strict, _ = sam_rag_agent(is_sup=lambda r: "Supported: partially")
    lenient, _ = sam_rag_agent(is_sup=lambda r: "Supported: partially", tau_low=0.5)
    assert ask(strict, CAFE)[0] == [IDK_ANSWER]
    assert ask(lenient, CAFE)[0] == ["James Freeman"]


# ---- the readers -------------------------------------------------------------------------------


@pytest.mark.parametrize("reply, answer, parsed", [
    ("Object: Ford Mustang\n1. It is a Ford Mustang.\nDraft answer: 1964", "1964", True),
    ("**Object:** Eiffel Tower\n1. The tower is in Paris.\n**Draft Answer:** 1889", "1889", True),
    ("Object: cafe\n1. I cannot determine the founder.\nDraft answer: I'm not sure", IDK_ANSWER, True),
    ("The answer is: 42", "42", True),
    ("Object: car\n1. It is red.", IDK_ANSWER, False),  # cut before the answer
    ("The answer is:\nThe answer is:", IDK_ANSWER, False),  # a repeated label, no answer
    ("Draft answer: a short answer, or I don't know", IDK_ANSWER, False),  # the format copied
    *[(f"Object: cafe\n1. Nothing names the founder.\nDraft answer: {idk}.", IDK_ANSWER, True) for idk in IDK_SPELLINGS],
    *[(f"Object: cafe\n**Draft answer:**\n{idk}", IDK_ANSWER, True) for idk in IDK_SPELLINGS],
])
def test_draft_reader(reply, answer, parsed):
    from agents.stages.prompts import load_prompt

    found = read_draft(reply, load_prompt("qa_dragon_draft").user.template)
    assert (found.answer, found.parsed) == (answer, parsed)


@pytest.mark.parametrize("phrase, named", [
    ("Ford Mustang", True), ("iPhone 13", True), ("BMW", True), ("Pride and Prejudice", True),
    ("the red car", False), ("Car", False), ("unknown", False), ("The car on the right", False), ("", False),
])
def test_what_counts_as_a_named_object(phrase, named):
    assert names_something(phrase) is named


@pytest.mark.parametrize("reply, expected", [
    ("Reason: the notes say so.\nAnswer: Paris", ("Paris", "the notes say so.", True)),
    ("Reason: nothing fits.\nAnswer: I don't know", (IDK_ANSWER, "nothing fits.", True)),
    ("The tower is in Paris.", ("The tower is in Paris.", "", True)),  # no labels: read as CRUISE reads an answer
    ("Reason: cut off before the", (IDK_ANSWER, "cut off before the", False)),
    *[(f"Reason: nothing fits.\nAnswer: {idk}", (IDK_ANSWER, "nothing fits.", True)) for idk in IDK_SPELLINGS],
    *[(f"{idk}.", (IDK_ANSWER, "", True)) for idk in IDK_SPELLINGS],
])
def test_post_answer_reader(reply, expected):
    assert read_post_answer(reply) == expected


def test_the_white_box_signal_is_the_answer_lines_least_likely_token():
    tokens = ["Reason", ":", " a", " guess", "\n", "Answer", ":", " Paris"]
    probs = [0.9, 0.9, 0.9, 0.01, 0.9, 0.9, 0.9, 0.6]
    result = ChatResult(text="".join(tokens), tokens=tokens, token_logprobs=[math.log(p) for p in probs])
    lowest, mean = answer_line_probabilities(result)
    assert lowest == pytest.approx(0.6) and mean == pytest.approx(0.6)


@pytest.mark.parametrize("reply, expected", [
    ("Verdict: correct\nWhy: supported.", (1.0, True)), ("**Verdict:** Incorrect", (0.0, True)),
    ("Response: Correct Answer", (1.0, True)), ("The answer is not supported.", (0.0, True)), ("", (0.0, False)),
])
def test_verifier_reader(reply, expected):
    assert read_verifier(reply) == expected


@pytest.mark.parametrize("reply, expected", [
    ("Supported: fully", (1.0, True)), ("supported: Partially", (0.5, True)), ("Supported: no", (0.0, True)),
    ("**Supported:** Yes", (1.0, True)), ("maybe", (0.0, False)),
])
def test_support_reader(reply, expected):
    assert read_support(reply) == expected


# ---- calibration replays each system's own rule ----------------------------------------------------


def test_the_calibration_replay_decides_a_peer_trace_by_its_systems_rule():
    qa = load_config("cpu", "qa_dragon", stack="llama-3.2-vision")
    trace = {"branch": "rag", "rag_answer": "James Freeman", "verifier_confidence": 1.0, "rag_min_token_prob": 0.3}
    assert decide_from_trace(trace, qa).answer == "James Freeman"
    assert decide_from_trace(trace, qa.replace(min_token_prob=0.5)).branch == "low_token_prob"
    assert decide_from_trace({**trace, "branch": "direct_output"}, qa.replace(min_token_prob=0.5)).answer == "James Freeman"
    sam = load_config("cpu", "sam_rag", stack="llama-3.2-vision")
    trace = {"branch": "supported", "rag_answer": "James Freeman", "is_use": True, "is_sup_confidence": 0.5}
    assert decide_from_trace(trace, sam).answer == IDK_ANSWER
    assert decide_from_trace(trace, sam.replace(tau_low=0.5)).answer == "James Freeman"


@pytest.mark.parametrize("preset, confidence, unchecked, rejected", [
    ("qa_dragon", "verifier_confidence", "not_verified", "verifier_rejected"),
    ("sam_rag", "is_sup_confidence", "not_checked", "unsupported"),
])
def test_a_peer_abstains_under_its_own_branch_where_its_support_check_did_not_run_or_fell_short(
        preset, confidence, unchecked, rejected):
    cfg = load_config("cpu", preset, stack="llama-3.2-vision").replace(tau_low=0.6, min_token_prob=0.0)
    trace = {"branch": "rag", "rag_answer": "James Freeman", "is_use": True}
    # no check ran (the deadline cut it): "I don't know", under the branch that says so
    assert decide_from_trace({**trace, confidence: None}, cfg) == Decision(IDK_ANSWER, unchecked)
    assert decide_from_trace({**trace, confidence: 0.59}, cfg) == Decision(IDK_ANSWER, rejected)
    assert decide_from_trace({**trace, confidence: 0.6}, cfg).answer == "James Freeman"
    # without the finalizer the RAG answer stands, whatever the checks said
    assert decide_from_trace({**trace, confidence: 0.1}, cfg.replace(use_finalizer=False)) == Decision(
        "James Freeman", "no_finalizer")


def test_sam_rag_abstains_where_its_usefulness_check_did_not_run_or_said_no():
    cfg = load_config("cpu", "sam_rag", stack="llama-3.2-vision").replace(tau_low=0.6)
    trace = {"branch": "supported", "rag_answer": "James Freeman", "is_sup_confidence": 1.0}
    assert decide_from_trace({**trace, "is_use": None}, cfg) == Decision(IDK_ANSWER, "not_checked")
    assert decide_from_trace({**trace, "is_use": False}, cfg) == Decision(IDK_ANSWER, "not_useful")
    assert decide_from_trace({**trace, "is_use": True}, cfg) == Decision("James Freeman", "supported")
    assert decide_from_trace({**trace, "is_use": True, "regenerated": True}, cfg) == Decision(
        "James Freeman", "supported_after_regeneration")


def test_qa_dragons_token_gate_lets_an_answer_whose_least_likely_token_reaches_it_stand():
    cfg = load_config("cpu", "qa_dragon", stack="llama-3.2-vision").replace(tau_low=0.6, min_token_prob=0.5)
    trace = {"branch": "rag", "rag_answer": "James Freeman", "verifier_confidence": 1.0}
    assert decide_from_trace({**trace, "rag_min_token_prob": 0.5}, cfg) == Decision("James Freeman", "verified")
    assert decide_from_trace({**trace, "rag_min_token_prob": 0.49}, cfg) == Decision(IDK_ANSWER, "low_token_prob")
    assert decide_from_trace({**trace, "rag_min_token_prob": None}, cfg) == Decision(IDK_ANSWER, "low_token_prob")


# ---- a whole evaluation, in process: the report shows the system's own steps ---------------------


REPORTED = {
    "qa_dragon": ("QA-Dragon: the search router&#39;s branches",
                  ["answer written (not I don&#39;t know)", "verifier &gt;= 0.9 (Direct Output: not checked)"],
                  ["direct_output", "search_verify", "rag"], "<th>D-CoT draft</th>"),
    "sam_rag": ("SAM-RAG: what its checks did",
                ["retrieved", "relevant document kept (isRel)", "answer written (not I don&#39;t know)",
                 "isUse: answers the question (one regeneration at most)", "isSup: supported (&gt;= 0.9)"],
                ["supported"], "<th>isRel</th>"),
}


@pytest.mark.parametrize("system", sorted(REPORTED))
def test_an_evaluation_reports_each_turns_branch_and_the_systems_funnel(system, tmp_path, monkeypatch):
    import local_evaluation
    from testkit.scripted_agent import build_dataset

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.setenv("HF_DATASETS_CACHE", str(tmp_path / "hf-datasets"))
    questions = [("u", UMBRELLAS, "RAIN OR SHINE"), ("m", CAR, "1964"), ("f", CAFE, "James Freeman")]
    dataset = build_dataset(tmp_path / "dataset", [
        dict(session_id=f"s-{key}", image=Image.new("RGB", (96, 64), "gray"), image_url=None, image_quality="normal",
             turns=[(f"{key}-0", question, gold, "others", "simple", "static")]) for key, question, gold in questions],
        form="list")
    out = tmp_path / system
    # the scripted verifiers write text verdicts: the paper's readings (paper_finalizer) over the cpu stack
    local_evaluation.main(["--dataset", str(dataset), "--dataset-type", "single-turn", "--profile", "cpu",
                           "--preset", f"{system}+paper_finalizer", "--agent", "testkit.scripted_peers:TableOneAgent",
                           "--search", "none", "--eval-model", "None", "--output-dir", str(out), "--no_progress",
                           "--display-conversations", "0"])
    summary = json.loads((out / "run_summary.json").read_text())
    assert summary["over_budget_count"] == 0 and summary["agent_summary"]["system"] == system
    table, steps, branches, turn_row = REPORTED[system]
    page = (out / "report.html").read_text()
    assert table in page
    assert all(f"<td>{step}</td>" in page for step in steps)
    assert all(f'data-branch="{branch}"' in page for branch in branches)
    turn_pages = "".join(p.read_text() for p in (out / "report_turns").glob("*.html"))
    assert turn_row in turn_pages


# ---- the presets on any profile and stack ------------------------------------------------------------

SWITCHES = {"system", "preset", "use_router", "use_dual_path", "use_self_consistency", "use_cov", "use_crop_search",
            "use_entity_check"}


@pytest.mark.parametrize("profile", ["cpu", "l40s", "served"])
@pytest.mark.parametrize("system", ["qa_dragon", "sam_rag"])
def test_a_peer_preset_changes_switches_only_and_keeps_each_stacks_settings(profile, system):
    from agents.cruise.settings import CruiseSettings

    full = load_config(profile, "full").flat()
    peer = load_config(profile, system).flat()
    assert {k for k in peer if k in full and full[k] != peer[k]} <= SWITCHES
    cruise_own = {f.name for f in dataclasses.fields(CruiseSettings)}
    assert peer["system"] == system and cruise_own <= set(full) and not cruise_own & set(peer)


def test_a_peer_system_refuses_cruises_own_stages_and_an_unknown_system_in_one_line():
    with pytest.raises(ValueError, match="^use_cov is a setting of system cruise, not of system qa_dragon$"):
        load_config("cpu", "qa_dragon", use_cov=True)
    with pytest.raises(ValueError, match=r"^use_cov is a setting of system cruise, not of system sam_rag$"):
        load_config_from_settings("cpu", None, ["system=sam_rag", "use_cov=true"])
    with pytest.raises(ValueError, match=r"^unknown system 'dragon'; choose one of \['agentic', 'cruise', "):
        load_config("cpu", "full", system="dragon")


# ---- room for the answer -----------------------------------------------------------------------------


def test_qa_dragon_skips_an_optional_step_that_would_leave_no_time_for_the_answer():
    # two turns: 19 s of budget; the post-answer is expected at 8 s a turn, the fine reranker at 3
    agent = qa_dragon_agent(stage_cost_priors_s={"post_answer": 8.0, "fine_rerank": 3.0})
    answers, traces = ask(agent, CAR, CAFE)
    assert answers == ["1964", "James Freeman"]  # from the coarse reranker's context
    assert all(t["skipped_for_time"] == ["fine_rerank"] and not t["fine_rerank_ran"] for t in traces)
    assert "fine_rerank" not in stages(agent) and "post_answer" in stages(agent)


def test_without_time_for_the_tool_router_a_rag_turn_runs_every_search():
    agent = qa_dragon_agent(stage_cost_priors_s={"post_answer": 8.0, "tool_route": 2.0})
    _, (trace,) = ask(agent, CAFE)
    assert trace["branch"] == "rag" and trace["tool_search"] == "both" and "tool_route" in trace["skipped_for_time"]
    assert trace["tool_rule"].startswith("not asked (no time)")


def test_sam_rag_answers_without_relevance_rounds_when_they_would_leave_no_time_for_the_answer():
    # one turn: 9 s of budget; an isRel round is expected at 5 s, the answer at 5
    agent, vlm = sam_rag_agent(stage_cost_priors_s={"answer": 5.0, "is_rel": 5.0})
    _, (trace,) = ask(agent, CAFE)
    assert trace["skipped_for_time"] == ["is_rel"] and trace["relevance_rounds"] == 0
    assert "is_rel" not in stages(agent) and "answer" in stages(agent)


def test_two_systems_judged_by_the_same_offline_judge_are_not_flagged_as_judged_differently():
    """The scores' judge block also counts each run's own abstentions; two agents answer differently,
    so those counts differ while the judge is the same."""
    from types import SimpleNamespace

    from evaluator.report.paired import compare_pair

    def run(label, correct, abstained, judge_name="offline lexical judge (not the official judge)"):
        rows = [dict(interaction_id=f"t{i}", session_id=f"s{i}", turn_idx=0, is_correct=i < correct,
                     is_miss=i >= correct, is_hallucination=False, is_ego=False) for i in range(4)]
        judge = {"name": judge_name, "official": False,
                 "abstain_expected_turns": 1, "abstain_expected_abstained": abstained,
                 "abstain_expected_answered": 1 - abstained}
        return SimpleNamespace(label=label, rows=rows, summary={"judge": judge["name"]}, record=RunRecord(),
                               scores={"judge": judge})

    pair = compare_pair(run("full", 1, 1), run("qa_dragon", 2, 0))
    assert pair.refused is None and not any("judged differently" in f for f in pair.flags)
    assert [(r["a"], r["b"], r["turns"]) for r in pair.flip_rows() if r["a"] != r["b"] and r["turns"]] == \
        [("missed", "correct", 1)]  # t1: compared, and its flip counted
    other = compare_pair(run("full", 1, 1), run("qa_dragon", 2, 0, judge_name="another offline judge"))
    assert other.refused is None
    assert [f for f in other.flags if f.startswith("judged differently")] == [
        "judged differently (qa_dragon: another offline judge; full: offline lexical judge (not the official "
        "judge)): flips may be the judge's, not the agent's"]


@pytest.mark.parametrize("system", ["qa_dragon", "sam_rag"])
def test_a_yes_no_stack_reads_each_support_check_from_one_forward_pass(system):
    from math import log

    from agents.engines.base import ChatEngine
    from agents.peers.qa_dragon.types import PostAnswer, Reranked
    from agents.peers.qa_dragon.verifier import verify_batch
    from agents.peers.sam_rag.support import is_sup_batch
    from agents.stages.prompts import load_prompt
    from agents.stages.types import Evidence, Turn

    class OddsEngine(ChatEngine):  # the model is outside the unit: it answers with fixed odds
        def __init__(self):
            super().__init__("odds")
            self.seen = []

        def _generate(self, requests, sampling):
            self.seen.append((sampling.choices, sampling.max_tokens, requests))
            return [ChatResult(text="yes", choice_logprobs={"yes": log(0.6), "no": log(0.2)}) for _ in requests]

    engine, cfg = OddsEngine(), load_config("cpu", system, cov_mode="yes_no")
    turns = [Turn("what is this?", None, []), Turn("and this?", None, [])]
    evidence = [Evidence(context="[Info 1] A cat."), Evidence()]
    if system == "qa_dragon":  # an abstention is not checked
        posts = [PostAnswer(answer="A cat.", parsed=True), PostAnswer(answer=IDK_ANSWER, parsed=True)]
        out = verify_batch(turns, posts, [Reranked(evidence=e) for e in evidence], engine, cfg)
        prompt = "qa_dragon_verify_yes_no"
    else:
        out = is_sup_batch(turns, evidence, ["A cat.", IDK_ANSWER], engine, cfg)
        prompt = "sam_rag_is_sup_yes_no"
    (choices, max_tokens, requests), = engine.seen
    assert choices == ("yes", "no") and max_tokens == 1 and len(requests) == 1
    assert requests[0].messages[-1]["content"].startswith(load_prompt(prompt).user.template.split("$")[0])
    assert out[0].confidence == 0.75 and out[0].parsed
    assert out[1].confidence is None or not out[1].parsed


# ---- warm-up at load: each peer warms its own chain ----------------------------------------------


@pytest.mark.parametrize("system", ["qa_dragon", "sam_rag"])
def test_a_peer_system_warms_up_its_own_stages_and_learns_nothing_from_it(system, caplog):
    # Found on an H200 (benchmarks/gpu_bench.py --systems qa_dragon sam_rag): the warm-up ran
    # CRUISE's stages under a peer's config and three of them failed at load.
    build = {"qa_dragon": qa_dragon_agent, "sam_rag": lambda **o: sam_rag_agent(**o)[0]}[system]
    with caplog.at_level("WARNING"):
        agent = build(warmup_at_load=True, batch_size=2)
    assert not [r.getMessage() for r in caplog.records if "warm-up" in r.getMessage()]
    assert agent.warmup_s and set(agent.warmup_s) <= set(agent.system.stage_names())
    assert agent.costs.samples == {}  # nothing learned from the dummy batch
    cold = build(batch_size=2)
    assert ask(agent, CAFE)[0] == ask(cold, CAFE)[0]
    # the first scored batch's calls and what the deadline learned are its own, as without a warm-up
    assert stages(agent) == stages(cold)
    assert {k: len(v) for k, v in agent.costs.samples.items()} == {k: len(v) for k, v in cold.costs.samples.items()}

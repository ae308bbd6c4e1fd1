"""The peers' stages: tool and domain routing, decomposition, crop-then-search, entity
check and relevance filter. Parsers on what capable and careless models write; each stage over a
scripted engine inside the real chain (one engine call per batch, the retrieval obeying it, the
trace and the run summary saying what it did)."""
from __future__ import annotations

import pytest
from PIL import Image

from agents.base_agent import IDK_ANSWER
from agents.config.groups import PEER_SWITCHES
from agents.config.loading import load_config
from agents.cruise.system import CRUISE
from agents.cruise.trace import funnel_flags, parse_failure_counts, peer_stage_counts
from agents.cruise_agent import CruiseAgent
from agents.engines.base import Engines
from agents.run_stages import answer_batch
from agents.stages.s0_inputs import prepare_turns
from agents.stages.s1a_tool_route import read_search_route
from agents.stages.s1b_domain_route import DOMAINS, canonical_domain, read_domain
from agents.stages.s2a_decompose import read_question_type, read_sub_queries
from agents.stages.s2b_crop import read_box, tile_crops
from agents.stages.s3_retrieve import fuse_image_hits
from agents.stages.s5a_relevance import read_relevance
from testkit.fakes import FakePipeline, FunctionReranker, ScriptedEngine, WithoutWebFlag, last_user_text

# The scripted VLMs write the paper's "CONFIDENCE: x" CoV reply: every agent here runs the
# paper_finalizer preset over the cpu profile (agents/config/presets.py PRESETS).

# ---- parsers ------------------------------------------------------------------------------------


@pytest.mark.parametrize("reply, expected", [
    ("Needs External Info: yes\nIs Real-Time: no\nSearch: image", "image"),
    ("**Search:** Web search", "web"),
    ("search = image and web", "both"),
    ("Search: BOTH", "both"),
    ("Search:\nnone", "none"),
    ("Search: no search is needed", "none"),
    ("Search tool: neither", "none"),
    ("Needs External Info: yes\nIs Real-Time: no", None),  # today's two-label reply
    ("Search: maybe later", None),
    ("", None),
])
def test_search_route_reader(reply, expected):
    assert read_search_route(reply) == expected


@pytest.mark.parametrize("reply, expected", [
    ("Question Type: multi-hop", "multi-hop"),
    ("question_type = Multi hop", "multi-hop"),
    ("**Question Type:** comparison", "comparison"),
    ("Type: simple", "simple"),
    ("Question Type: ???", None),
    ("Domain: Food", None),
])
def test_question_type_reader(reply, expected):
    assert read_question_type(reply) == expected


@pytest.mark.parametrize("reply, expected", [
    ("Domain: Math and science", "Math and science"),
    ("domain = maths", "Math and science"),
    ("**Domain:** Plants", "Plants and Gardening"),
    ("Domain: general object recognition", "General object recognition"),
    ("Domain: vehicles.", "Vehicles"),
    ("Topic: shopping", "Shopping"),
    ("Domain: category unknown", None),  # "category" is not "cat" (Pets)
    ("Domain:", None),
    ("Is Real-Time: no", None),
])
def test_domain_reader(reply, expected):
    assert read_domain(reply) == expected


def test_every_dataset_domain_reads_as_itself():
    assert [canonical_domain(name.upper()) for name in DOMAINS] == list(DOMAINS)
    assert canonical_domain("math_and_science") == "Math and science"  # a harness's snake case


@pytest.mark.parametrize("reply, expected", [
    ("Object: red mug\nBox: 100, 200, 500, 800", [100, 100, 500, 400]),  # 0-1000 grid on 1000x500
    ("Object: mug\nBox: [0.1, 0.2, 0.5, 0.8]", [100, 100, 500, 400]),  # fractions
    ("Box: 100,200,500,800", [100, 100, 500, 400]),  # no spaces: still four numbers
    ("The mug sits at (100, 200, 500, 800).", [100, 100, 500, 400]),  # no label, a bracketed box
    ("Object: mug\nBox: left, top, right, bottom", None),  # the format echoed
    ("Box: 100, 200, 500", None),  # three numbers
    ("Box: 500, 200, 100, 800", None),  # inverted
    ("Box: 100, 200, 120, 800", None),  # a sliver
    ("Box: 0, 0, 1000, 1000", None),  # the whole photo
    ("Box: 100, 200, 500, 1800", None),  # off the grid
    ("Box: -5, 200, 500, 800", None),
    ("I cannot see an image.", None),
])
def test_box_reader_falls_back_to_the_whole_image(reply, expected):
    assert read_box(reply, 1000, 500, min_side=0.1) == expected


def test_tiles_are_the_centre_and_four_quadrants_inside_the_photo():
    crops = tile_crops(64, 48)
    assert [c["view"] for c in crops] == ["centre", "tile_NW", "tile_NE", "tile_SW", "tile_SE"]
    assert crops[0]["box"] == [16, 12, 48, 36]
    assert all(0 <= x0 < x1 <= 64 and 0 <= y0 < y1 <= 48 for x0, y0, x1, y1 in (c["box"] for c in crops))


def hit(index, score, *names):
    return {"index": index, "score": score, "url": f"https://upload.example/{index}.jpg",
            "entities": [{"entity_name": n, "entity_attributes": {"description": f"{n} facts."}} for n in names]}


def test_fusion_keeps_each_entity_at_its_best_score():
    whole = [hit(1, 0.70, "Espresso", "Cup"), hit(2, 0.60, "Saucer")]
    crop = [hit(7, 0.90, "Espresso"), hit(8, 0.50, "Cup")]
    fused = fuse_image_hits([("whole", whole), ("box", crop)], k=10)
    assert [(h["entities"][0]["entity_name"], h["score"], h["view"]) for h in fused] == [
        ("Espresso", 0.90, "box"), ("Cup", 0.70, "whole"), ("Saucer", 0.60, "whole")]
    assert set(fused[0]) >= {"index", "score", "url", "entities"} and fused[0]["index"] == 7
    assert len(fuse_image_hits([("whole", whole), ("box", crop)], k=2)) == 2


@pytest.mark.parametrize("reply, expected", [
    ("Query: Falcon 9 first launch year\nQuery: Atlas V first launch year",
     ["Falcon 9 first launch year", "Atlas V first launch year"]),
    ("1. Eileen Collins birthplace\n2. Eileen Collins first mission\n3) Space Shuttle Discovery crew\n4. extra one",
     ["Eileen Collins birthplace", "Eileen Collins first mission", "Space Shuttle Discovery crew"]),
    ("Here are the queries:\n- **Sub-query 1:** \"Moby-Dick author\"\n- Moby-Dick author\n- Herman Melville birth year",
     ["Moby-Dick author", "Herman Melville birth year"]),
    ("what year was this built?", []),  # the question itself
    ("Sure", []),
    ("", []),
])
def test_sub_query_reader(reply, expected):
    got = read_sub_queries(reply, "What year was this built?", limit=3)
    assert got.queries == expected and got.parsed is bool(expected)


@pytest.mark.parametrize("reply, expected", [
    ("Info 1: yes\nInfo 2: no\nInfo 3: yes", [True, False, True]),
    ("**Info 1:** Relevant\n**Info 2:** not relevant", [True, False]),
    ("[Info 2] irrelevant\n[Info 1] relevant", [True, False]),
    ("yes\nno", [True, False]),  # bare lines, in order
    ("Info 1: yes", [True, None]),  # the second unreadable: kept
    ("They all look useful to me.", [None, None]),
])
def test_relevance_reader(reply, expected):
    assert read_relevance(reply, len(expected)) == expected


# ---- the stages inside the chain ----------------------------------------------------------------

WHAT, RIVAL, PRICE = "What drink is this?", "Is this older than the Atlas V?", "What does this cost?"
IMAGE_HITS = [hit(0, 0.95, "Espresso"), hit(1, 0.93, "Ristretto")]
WEB_HITS = [{"index": "https://food.example/espresso_chunk_0", "score": 0.6, "page_name": "Espresso - Food",
             "page_snippet": "Espresso is brewed under pressure.", "page_url": "https://food.example/espresso"}]


def capable_route(req):
    """What a capable router writes: the five labels of the extended prompt."""
    text = last_user_text(req)
    assert "Domain:" in text, "the extended router prompt asks for the domain"
    if WHAT in text:
        return "Needs External Info: yes\nIs Real-Time: no\nSearch: image\nQuestion Type: simple\nDomain: Food"
    if RIVAL in text:
        return "Needs External Info: yes\nIs Real-Time: no\nSearch: both\nQuestion Type: comparison\nDomain: Vehicles"
    return "Needs External Info: yes\nIs Real-Time: no\nSearch: web\nQuestion Type: simple\nDomain: Shopping"


def plain_router(req):
    """Today's router reply: the two labels only."""
    return "Needs External Info: yes\nIs Real-Time: no"


def capable_vlm():
    return {
        "summarize": lambda r: "A small cup of coffee.",
        "decompose": lambda r: "Query: Falcon 9 first flight year\nQuery: Atlas V first flight year",
        "crop": lambda r: "Object: cup\nBox: 250, 250, 750, 750",
        "entity_check": lambda r: "yes" if '"Espresso"' in last_user_text(r) else "no",
        "relevance": lambda r: "Info 1: yes\nInfo 2: no\nInfo 3: no",
        "answer": lambda r: "Espresso",
        "consistency": lambda r: "yes",
        "verify": lambda r: "CONFIDENCE: 0.95",
    }


def score(query, chunk):
    return 0.9 if "Espresso" in chunk else 0.6 if "Ristretto" in chunk or "Falcon" in chunk else 0.3


def make_agent(router, vlm, pipeline=None, preset="extended", **overrides):
    engines = Engines(ScriptedEngine({"route": router}), ScriptedEngine(vlm), FunctionReranker(score))
    pipeline = pipeline or FakePipeline(IMAGE_HITS, WEB_HITS)
    return CruiseAgent(pipeline, engines=engines, profile="cpu", preset=f"{preset}+paper_finalizer", **overrides), pipeline


def ask(agent, queries):
    agent.batch_generate_response(queries, [Image.new("RGB", (64, 48), "brown") for _ in queries],
                                  [[] for _ in queries])
    return agent.last_batch_report


def test_extended_makes_one_engine_call_per_stage_per_batch():
    agent, _ = make_agent(capable_route, capable_vlm(), crop_mode="box")
    report = ask(agent, [WHAT, RIVAL, PRICE])
    stages = [c["stage"] for c in report["engine_calls"]]
    # (no consistency call: both answer paths say "Espresso", identical answers skip the VLM)
    assert stages == ["route", "summarize", "decompose", "crop", "entity_check", "rerank", "relevance", "answer",
                      "verify"]
    # decomposition only for the comparison; crops only where image search is routed
    calls = {c["stage"]: c["requests"] for c in report["engine_calls"]}
    assert calls["decompose"] == 1 and calls["crop"] == 2


def test_retrieval_obeys_the_tool_router():
    agent, pipeline = make_agent(capable_route, capable_vlm(), crop_mode="box")
    traces = ask(agent, [WHAT, RIVAL, PRICE])["traces"]
    what, rival, price = traces
    assert what["route_search"] == "image" and what["searches_run"] == ["image"]
    assert price["route_search"] == "web" and price["searches_run"] == ["web"] and price["crops_searched"] == []
    assert rival["searches_run"] == ["image", "web"]
    # the comparison's sub-queries ran as web searches, after its own web query
    assert rival["sub_queries"] == ["Falcon 9 first flight year", "Atlas V first flight year"]
    at = pipeline.text_queries.index(rival["sub_queries"][0])
    assert pipeline.text_queries[at - 1:at + 2] == [rival["web_query"], *rival["sub_queries"]]
    assert pipeline.calls.count("text") == 2 + 2  # PRICE, RIVAL and RIVAL's two sub-queries
    assert what["crop_object"] == "cup" and what["crops_searched"] == ["box"]
    assert what["crop_boxes"] == [{"view": "box", "box": [16, 12, 48, 36]}]


def test_entity_check_drops_the_rejected_entitys_chunks():
    agent, _ = make_agent(capable_route, capable_vlm())
    what = ask(agent, [WHAT])["traces"][0]
    assert what["entity_verdicts"] == {"Espresso": True, "Ristretto": False}
    assert what["entities_rejected"] == ["Ristretto"] and what["chunks_dropped_entity"] >= 1
    assert not any("Ristretto" in c["text"] for c in what["chunks"])
    assert any("Espresso" in c["text"] for c in what["chunks"])


def test_relevance_filter_removes_what_the_vlm_calls_irrelevant():
    vlm = capable_vlm()
    vlm["relevance"] = lambda r: "Info 1: no\nInfo 2: no\nInfo 3: no"
    agent, _ = make_agent(plain_router, vlm, preset="full", use_relevance_filter=True)
    trace = ask(agent, [WHAT])["traces"][0]
    assert trace["kept_chunks"] == [] and trace["context"] == ""  # all dropped: no context
    assert trace["chunks_dropped_irrelevant"] and trace["relevance"] == [False] * len(trace["relevance"])
    # Algorithm 1 then needs tau_high = 1.0, which 0.95 does not reach
    assert trace["branch"] == "not_verified" and trace["final_answer"] == IDK_ANSWER


def test_domain_notes_reach_both_answer_prompts_and_the_harness_label_wins():
    agent, _ = make_agent(capable_route, capable_vlm(), preset="full", use_domain_route=True)
    traces = ask(agent, [PRICE])["traces"]
    assert traces[0]["domain"] == "Shopping" and traces[0]["domain_source"] == "router" and traces[0]["domain_notes"]
    answers = [r for stage, r in agent.engines.vlm.requests if stage == "answer"]
    assert len(answers) == 2 and all("currency" in last_user_text(r) for r in answers)
    # the harness's label stands instead of the router's guess
    turns = prepare_turns([PRICE], [Image.new("RGB", (8, 8))], [[]], agent.config)
    turns[0].domain = "math_and_science"
    _, traces = answer_batch(CRUISE, turns, agent.engines, agent.search_pipeline, agent.config, agent.costs)
    assert traces[0]["domain"] == "Math and science" and traces[0]["domain_source"] == "harness"
    answers = [r for stage, r in agent.engines.vlm.requests if stage == "answer"][-2:]
    assert all("arithmetic" in last_user_text(r) and "currency" not in last_user_text(r) for r in answers)


def test_full_preset_is_untouched_by_the_peer_code():
    agent, pipeline = make_agent(plain_router, capable_vlm(), preset="full")
    trace = ask(agent, [WHAT])["traces"][0]
    assert [c["stage"] for c in agent.last_batch_report["engine_calls"]] == [
        "route", "summarize", "rerank", "answer", "verify"]
    router_prompt = agent.engines.router.requests[0][1].messages[-1]["content"]
    assert "Domain" not in router_prompt and "Search:" not in router_prompt
    assert trace["route_search"] is None and trace["entity_verdicts"] == {} and trace["relevance"] == []
    assert pipeline.calls == ["image", "text"]


MALFORMED = {
    "summarize": lambda r: "",
    "decompose": lambda r: "I think you should search.",
    "crop": lambda r: "Object: mug\nBox: left, top, right, bottom",
    "entity_check": lambda r: "Hmm.",
    "relevance": lambda r: "Looks fine.",
    "answer": lambda r: "Espresso",
    "consistency": lambda r: "yes",
    "verify": lambda r: "CONFIDENCE: 0.95",
}


def test_malformed_outputs_keep_todays_behaviour_and_are_counted():
    agent, pipeline = make_agent(plain_router, MALFORMED, crop_mode="box")
    traces = ask(agent, [WHAT, RIVAL])["traces"]
    for trace in traces:
        assert trace["route_search"] is None and trace["router_extras_parsed"] is False
        assert trace["searches_run"] == ["image", "web"]  # no Search line: every search runs
        assert trace["sub_queries"] == []  # no question type: no decomposition
        assert trace["crops_searched"] == []  # unreadable box: the whole image alone
        assert trace["entity_verdicts"] == {"Espresso": None, "Ristretto": None}
        assert trace["chunks_dropped_entity"] == 0 and trace["chunks_dropped_irrelevant"] == []
        assert trace["kept_chunks"]  # unreadable relevance keeps the chunks
        assert {"route_extras", "crop", "entity_check", "relevance"} <= set(trace["parse_failures"])
    counts = parse_failure_counts(traces)
    assert counts["parse_failures"]["crop"] == 2 and counts["parse_failures"]["route"] == 0
    assert [c["stage"] for c in agent.last_batch_report["engine_calls"]].count("decompose") == 0


def test_box_or_tiles_falls_back_to_tiles_and_tiles_need_no_model():
    agent, pipeline = make_agent(capable_route, MALFORMED, crop_mode="box_or_tiles")
    what = ask(agent, [WHAT])["traces"][0]
    assert what["crops_searched"] == ["centre", "tile_NW", "tile_NE", "tile_SW", "tile_SE"]
    assert pipeline.calls.count("image") == 6
    agent, _ = make_agent(capable_route, capable_vlm(), crop_mode="tiles")
    ask(agent, [WHAT])
    assert "crop" not in [c["stage"] for c in agent.last_batch_report["engine_calls"]]


def test_a_failing_peer_stage_costs_only_its_own_turns():
    vlm = capable_vlm()
    engines = Engines(ScriptedEngine({"route": capable_route}),
                      ScriptedEngine(vlm, fail={"entity_check": lambda r: WHAT in last_user_text(r)}),
                      FunctionReranker(score))
    agent = CruiseAgent(FakePipeline(IMAGE_HITS, WEB_HITS), engines=engines, profile="cpu", preset="extended+paper_finalizer")
    traces = ask(agent, [WHAT, RIVAL])["traces"]
    assert traces[0]["final_answer"] == IDK_ANSWER and "entity_check" in traces[0]["errors"][0]
    assert traces[1]["final_answer"] == "Espresso" and not traces[1]["errors"]


def test_deadline_guard_covers_the_peer_stages(fake_clock):
    """On the fake clock: the crop takes 0.3 s of the turn's 0.5 s, and the entity check, priced
    at 5 s, is not started."""
    engines = Engines(ScriptedEngine({"route": capable_route}), ScriptedEngine(capable_vlm(), sleep_s={"crop": 0.3}),
                      FunctionReranker(score))
    agent = CruiseAgent(FakePipeline(IMAGE_HITS, WEB_HITS), engines=engines, profile="cpu", preset="extended+paper_finalizer",
                        crop_mode="box", turn_budget_s=0.5, safety_margin_s=0.0, engine_margin_s=0.0,
                        stage_cost_priors_s={"entity_check": 5.0, "retrieve": 0.0})  # the fake search is instant
    trace = ask(agent, [WHAT])["traces"][0]
    assert trace["deadline_cut_before"] == "entity_check" and trace["final_answer"] == IDK_ANSWER
    assert 0.3 <= fake_clock.now < 0.5  # the crop's sleep moved the fake clock, nothing past the budget


def test_run_summary_counts_what_the_peer_stages_did():
    agent, _ = make_agent(capable_route, capable_vlm(), crop_mode="box")
    traces = ask(agent, [WHAT, RIVAL, PRICE])["traces"]
    counts = peer_stage_counts(traces)
    assert counts["route_search"] == {"image": 1, "both": 1, "web": 1}
    assert counts["question_type"] == {"simple": 2, "comparison": 1}
    assert counts["domain"] == {"Food": 1, "Vehicles": 1, "Shopping": 1}
    assert counts["turns_with_domain_notes"] == 2  # Vehicles and Shopping have notes, Food none
    assert (counts["turns_decomposed"], counts["sub_queries"]) == (1, 2)
    assert (counts["turns_cropped"], counts["crops_searched"]) == (2, 2)
    assert (counts["entities_checked"], counts["entities_rejected"]) == (4, 2)
    assert counts["chunks_dropped_irrelevant"] >= 1


def test_extended_preset_switches_on_all_six_and_full_none():
    extended, full = load_config("cpu", "extended"), load_config("cpu", "full")
    assert all(extended.value(name) for name in PEER_SWITCHES)
    assert not any(full.value(name) for name in PEER_SWITCHES)
    with pytest.raises(ValueError, match="crop_mode"):
        load_config("cpu", "extended", crop_mode="grid")
    with pytest.raises(ValueError, match="use_router"):
        load_config("cpu", "full", use_router=False, use_tool_route=True)


def test_the_reports_funnel_and_table_show_the_peer_stages():
    from agents.cruise.trace_view import peer_rows
    from evaluator.report.html import funnel_steps

    agent, _ = make_agent(capable_route, capable_vlm(), crop_mode="box")
    traces = ask(agent, [WHAT, RIVAL, PRICE])["traces"]
    none_router = {**traces[2], "route_search": "none", "retrieved": [], "chunks": [], "context": "", "kept_chunks": []}
    traces[2] = {**none_router, "funnel": funnel_flags(none_router, agent.config)}
    turns = [{"trace": t, "row": {"is_correct": False, "agent_response": t["final_answer"]}} for t in traces]
    steps = {s["label"]: s["count"] for s in funnel_steps(turns)}
    assert steps["tool router chose a search"] == 2
    assert steps["chunks left after the entity check"] == 2
    assert steps["context after the MAD filter"] == 2
    # the paper's chain, without the peer stages, has none of their steps
    plain, _ = make_agent(capable_route, capable_vlm(), preset="full")
    labels = [s["label"] for s in funnel_steps([{"trace": t, "row": {"is_correct": False, "agent_response": ""}}
                                                for t in ask(plain, [WHAT])["traces"]])]
    assert not any("tool router" in label or "entity check" in label for label in labels)
    rows = dict(peer_rows(peer_stage_counts(traces)))
    assert rows["turns cropped / crops searched"] == "2 / 2"
    assert rows["entities checked / rejected"] == "4 / 2"
    assert peer_rows(peer_stage_counts([])) == []


@pytest.mark.parametrize("pipeline, asked", [
    (FakePipeline(IMAGE_HITS, WEB_HITS), 1),
    (FakePipeline(IMAGE_HITS, None), 0),  # no web index: the sub-queries could never be searched
    (WithoutWebFlag(FakePipeline(IMAGE_HITS, WEB_HITS)), 1),
    (None, 0),  # no search at all (`--search none`)
])
def test_sub_queries_are_asked_for_only_where_the_pipeline_can_search_the_web(pipeline, asked):
    engines = Engines(ScriptedEngine({"route": capable_route}), ScriptedEngine(capable_vlm()), FunctionReranker(score))
    agent = CruiseAgent(pipeline, engines=engines, profile="cpu", preset="extended+paper_finalizer")
    report = ask(agent, [PRICE, RIVAL])  # the comparison, which alone wants sub-queries, is the second turn
    assert [c["requests"] for c in report["engine_calls"] if c["stage"] == "decompose"] == ([1] if asked else [])
    if asked:
        assert report["traces"][1]["sub_queries"] == ["Falcon 9 first flight year", "Atlas V first flight year"]

"""Hosted models (engine "hosted": OpenAI's reasoning models, Claude, Gemini) against stand-ins
that take or refuse each request as the provider's documentation says (testkit/hosted_standin.py,
written from that documentation, not from our requests), on 127.0.0.1 only.

Checked: every stage's request is taken (no 400), every stage gets text back (no reply emptied by
reasoning), 429s are waited out within the deadline, a refusal answers its own turn "I don't know"
and is counted, images are sent within each provider's limits the first time, the stages that
read token probabilities fall back to text (and say so), tokens are recorded per stage, and the
key is in no output file. The whole mini benchmark through the stand-in is tests/full/.
"""
from __future__ import annotations

import json
import math

import pytest
from PIL import Image

from agents.config.loading import load_config, load_config_from_settings
from agents.cruise.stages.s8_verify import COV_STOPS
from agents.engines.base import ChatRequest, Ledger, Sampling, time_limit
from agents.engines.hosted_engine import HostedChatEngine, fit_image, hosted_problem
from agents.engines.hosted_providers import ANTHROPIC, OPENAI
from agents.engines.hosted_rules import gemini_thinking, openai_reasoning_efforts
from agents.engines.served import API_KEY_ENV
from agents.factory import build_chat_engine
from agents.stacks import STACKS
from agents.stages.baseline_prompt import HISTORY_CLOSE, HISTORY_OPEN, baseline_messages
from agents.stages.types import Turn
from testkit.hosted_standin import (
    ANTHROPIC_RETIRED,
    GEMINI_MODELS,
    OPENAI_MODELS,
    STAND_IN_KEY,
    Faults,
    StandInProvider,
    decode_data_url,
)

SYSTEM = {"role": "system", "content": "You answer questions about photos."}
PHOTO = Image.new("RGB", (1120, 840), (180, 40, 40))
# The chain's calls as its stages make them (agents/cruise/stages): their budgets, stop strings,
# log-probabilities and one-word choices, which a reasoning model's API refuses outright.
STAGE_CALLS = {
    "route": (Sampling(max_tokens=24), "Needs External Info: yes or no\nIs Real-Time: yes or no", False),
    "summarize": (Sampling(max_tokens=64), "Write ONE sentence describing the photo for a search engine", True),
    "answer": (Sampling(max_tokens=64, logprobs=True), "Question about the photo: what is it?", True),
    "consistency": (Sampling(max_tokens=8, choices=("yes", "no")), "Do the two answers agree with each other?", True),
    "verify": (Sampling(max_tokens=64, stop=COV_STOPS), "Proposed answer: a bus\nCONFIDENCE: <a number>", True),
}


def engine_for(server: StandInProvider, model: str, ledger: Ledger | None = None, **kwargs) -> HostedChatEngine:
    return HostedChatEngine(model, ledger, provider=server.dialect, base_url=server.url, **kwargs)


def ask(engine, stage: str, turn: int | None = 0):
    sampling, text, with_image = STAGE_CALLS[stage]
    request = ChatRequest([SYSTEM, {"role": "user", "content": text}], image=PHOTO if with_image else None, turn=turn)
    return engine.generate([request], sampling, stage=stage)[0]


@pytest.fixture(autouse=True)
def keys(monkeypatch):
    for variable in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY"):
        monkeypatch.setenv(variable, STAND_IN_KEY)


# --------------------------------------------------------------------------- the documented rules
@pytest.mark.parametrize("dialect, model", [
    ("openai", "gpt-5-mini"), ("openai", "gpt-5"), ("openai", "gpt-5.1"), ("openai", "gpt-5.2"), ("openai", "o4-mini"),
    ("openai", "gpt-4o"),
    ("anthropic", "claude-sonnet-4-6"), ("anthropic", "claude-opus-4-7"), ("anthropic", "claude-haiku-4-5"),
    ("gemini", "gemini-2.5-flash"), ("gemini", "gemini-2.5-pro"), ("gemini", "gemini-2.5-flash-lite"),
    ("gemini", "gemini-3-pro-preview"), ("gemini", "gemini-3-flash-preview"), ("gemini", "gemini-2.0-flash"),
])
def test_every_stage_is_taken_and_gets_text_back(dialect, model):
    with StandInProvider(dialect) as server:
        ledger = Ledger()
        engine = engine_for(server, model, ledger, efforts={"default": "minimal", "answer": "low", "verify": "low"})
        results = {stage: ask(engine, stage) for stage in STAGE_CALLS}
    assert server.rejected() == [], [e.reason for e in server.rejected()]
    assert server.empty_replies() == []
    for stage, result in results.items():
        assert result.text and not result.budget_exhausted and not result.refusal, (stage, result)
    assert "REASONING" not in results["verify"].text  # the stop string cut here when not sent
    assert results["verify"].text.startswith("CONFIDENCE")
    assert all(r.token_logprobs is None for r in results.values())  # none asked for, none made up
    assert [r.stage for r in ledger.records] == list(STAGE_CALLS)
    assert all(r.prompt_tokens > 0 and r.output_tokens > 0 and r.empty_replies == 0 for r in ledger.records)
    if dialect == "openai" and OPENAI_MODELS[model] is not None:
        bodies = [e.body for e in server.posts()]
        assert all("max_tokens" not in b and "temperature" not in b and "stop" not in b and "logprobs" not in b
                   for b in bodies)
        assert [b["reasoning_effort"] for b in bodies] == (
            ["minimal", "minimal", "low", "minimal", "low"] if model in ("gpt-5-mini", "gpt-5")
            else ["none", "none", "low", "none", "low"] if model.startswith("gpt-5.") else ["low"] * 5)
        assert sum(r.reasoning_tokens for r in ledger.records) > 0
    if dialect == "anthropic":  # the current API version, which takes no sampling parameter
        assert {e.headers["anthropic-version"] for e in server.posts()} == {"2026-10-21"}
        assert not any({"temperature", "top_p", "top_k"} & set(e.body) for e in server.posts())


def test_a_served_reasoning_model_gets_openais_body_and_its_reply_is_read(monkeypatch):
    """`--set engine=openai` with the served name gpt-5-mini (the issue's run): what our engine
    sends and what it makes of the answer. The stand-in is only the server here; every expected
    value is worked out from OpenAI's rules and the reply below."""
    monkeypatch.setenv(API_KEY_ENV, STAND_IN_KEY)
    reply = "CONFIDENCE: 0.8\nREASONING: the sign says so"
    question = {"role": "user", "content": "Proposed answer: a bus"}
    with StandInProvider("openai", reply=lambda text: reply) as server:
        cfg = load_config_from_settings("cpu", None, ["engine=openai", "vlm_served_name=gpt-5-mini",
                                                     f"vlm_base_url={server.url}"])
        ledger = Ledger()
        engine = build_chat_engine(cfg, "vlm", ledger)
        sampling = Sampling(max_tokens=64, temperature=0.0, stop=COV_STOPS, logprobs=True, seed=7)
        result = engine.generate([ChatRequest([SYSTEM, question])], sampling, stage="verify")[0]
    # no effort configured: minimal, whose allowance is 1,024 tokens on top of the 64; nothing a
    # reasoning model refuses (max_tokens, temperature, top_p, stop, logprobs, seed)
    assert server.posts()[0].body == {"model": "gpt-5-mini", "messages": [SYSTEM, question],
                                      "max_completion_tokens": 64 + 1024, "reasoning_effort": "minimal"}
    # the stop string, not sent, is cut here
    assert result.text == "CONFIDENCE: 0.8" and result.token_logprobs is None
    # the stand-in spends 12 reasoning tokens at minimal and counts one token per word or mark:
    # completion_tokens 12 + 11 ("CONFIDENCE : 0 . 8 REASONING : the sign says so"), of which
    # the answer's own are 11; the prompt is 6 + 5 words and marks plus 4 per message
    assert (result.reasoning_tokens, result.output_tokens, result.prompt_tokens) == (12, 11, 6 + 5 + 8)
    record = ledger.records[0]
    assert (record.stage, record.reasoning_tokens, record.output_tokens, record.prompt_tokens) == ("verify", 12, 11, 19)


def test_a_small_budget_at_the_default_effort_comes_back_empty_and_is_counted():
    """What happens without the allowance: a 16-token stage at the API's default (medium) effort
    spends the budget on reasoning and gets "" with finish_reason "length"."""
    with StandInProvider("openai") as server:
        ledger = Ledger()
        engine = engine_for(server, "gpt-5-mini", ledger, efforts={"default": "medium"}, allowances={"medium": 0})
        result = engine.generate([ChatRequest([SYSTEM, {"role": "user", "content": "Is Real-Time: yes or no"}])],
                                 Sampling(max_tokens=16), stage="route")[0]
    assert result.text == "" and result.budget_exhausted and result.reasoning_tokens == 16
    assert ledger.records[0].empty_replies == 1
    assert server.rejected() == []


@pytest.fixture
def engine_clock(monkeypatch):
    """A FakeClock as the hosted engine's and its endpoint's clock, and its waits' sleep: a wait
    moves it by what the server asked for, a post not at all, so the deadline's arithmetic is
    exact however busy the machine is."""
    import functools

    from agents import transient_waits
    from agents.engines import hosted_engine, served
    from testkit.fakes import FakeClock

    clock = FakeClock()
    monkeypatch.setattr(served, "time", clock)
    monkeypatch.setattr(hosted_engine, "time", clock)
    monkeypatch.setattr(served, "TransientWaits",
                        functools.partial(transient_waits.TransientWaits, sleep=clock.sleep, clock=clock))
    return clock


def test_rate_limits_are_waited_out_inside_the_deadline(engine_clock):
    with StandInProvider("openai", faults=Faults(rate_limited=2, retry_after_s=0.05)) as server:
        engine = engine_for(server, "gpt-5-mini")
        with time_limit(lambda: 5.0):
            result = ask(engine, "route")
    assert result.text.startswith("Needs External Info")
    assert [e.status for e in server.posts()] == [429, 429, 200]
    assert 0.1 <= engine_clock.now <= 0.11  # two waits of 0.05 s, up to 10% jitter each
    # 3 s of deadline and 1.5 s asked (up to 1.65 s with the jitter): the first wait fits, the
    # second (ending past 3 s) cannot
    engine_clock.now = 0.0
    with StandInProvider("anthropic", faults=Faults(rate_limited=10, retry_after_s=1.5)) as server:
        engine = engine_for(server, "claude-sonnet-4-6")
        with time_limit(lambda: 3.0), pytest.raises(Exception, match="429"):
            ask(engine, "route")  # the waits the deadline cannot cover are not made
    assert [e.status for e in server.posts()] == [429, 429]


def test_a_provider_slower_than_the_deadline_is_cut_not_a_fault():
    with StandInProvider("gemini", faults=Faults(delay_s=2.0)) as server:
        ledger = Ledger()
        engine = engine_for(server, "gemini-2.5-flash", ledger)
        with time_limit(lambda: 0.3):
            result = ask(engine, "answer")
        assert result.cut_by_deadline and result.text == ""
        assert ledger.records[0].cut_by_deadline == 1 and ledger.records[0].empty_replies == 0
        # outside a batch (no deadline) the same wait is the per-request cap's: a failure
        slow = engine_for(server, "gemini-2.5-flash", timeout_s=0.3)
        with pytest.raises(Exception, match="(?i)time"):
            ask(slow, "answer")


def test_the_models_each_side_knows_agree():
    """Our rules and the stand-in's tables are written apart from the same documentation."""
    for model, efforts in OPENAI_MODELS.items():
        ours = openai_reasoning_efforts(model)
        assert (ours is None) == (efforts is None) and (efforts is None or set(ours) == set(efforts[0])), model
    for model, rule in GEMINI_MODELS.items():
        thinking = gemini_thinking(model)
        if rule is None:
            assert not thinking.levels and thinking.budget_range is None, model
        elif rule[0] == "level":
            assert set(thinking.levels) == set(rule[1]) and not thinking.takes_temperature, model
        else:
            assert thinking.budget_range == (rule[1], rule[2]) and thinking.can_disable == rule[3], model


@pytest.mark.parametrize("provider, size", [(OPENAI, (4000, 3000)), (ANTHROPIC, (4000, 3000)), (ANTHROPIC, (900, 9000))])
def test_images_are_sent_within_the_providers_limits(provider, size):
    noise = Image.effect_noise(size, 90).convert("RGB")  # the worst case for the encoder
    media_type, data, sent = fit_image(noise, provider.images)
    image = decode_data_url(f"data:{media_type};base64,{data}", provider.images.media_types, provider.images.max_bytes)
    assert not isinstance(image, str), image
    assert image.size == sent and max(sent) <= provider.images.max_long_side
    assert min(sent) <= provider.images.max_short_side and sent[0] * sent[1] <= provider.images.max_pixels
    assert len(data) <= provider.images.max_bytes
    assert abs(sent[0] / sent[1] - size[0] / size[1]) < 0.02  # shrunk, not distorted
    tight = provider.images.__class__(4000, 4000, 16_000_000, 150_000, provider.images.media_types)
    assert len(fit_image(noise, tight)[1]) <= 150_000  # a byte limit is met by stepping down


def test_a_refused_request_answers_its_turn_i_dont_know_and_is_counted():
    """A content-policy refusal on one turn's request: that turn only, "I don't know", branch
    "refused"; the batch's other turns are answered; nothing is retried."""
    from agents.cruise_agent import CruiseAgent
    from agents.engines.base import Engines
    from testkit.fakes import FakePipeline, FunctionReranker
    from testkit.scripted_chain import IMAGE_HITS, rerank_score

    for dialect, model, as_http in [("openai", "gpt-5-mini", False), ("anthropic", "claude-sonnet-4-6", False),
                                    ("anthropic", "claude-sonnet-4-6", True), ("gemini", "gemini-2.5-flash", False)]:
        faults = Faults(refuse_marker="FORBIDDEN", refuse_as_http=as_http)
        with StandInProvider(dialect, faults=faults) as server:
            cfg = load_config("cpu", model_name=model, vlm_base_url=server.url)
            ledger = Ledger()
            vlm = build_chat_engine(cfg, "vlm", ledger)
            agent = CruiseAgent(config=cfg, engines=Engines(router=vlm, vlm=vlm, reranker=FunctionReranker(rerank_score)))
            agent.search_pipeline = FakePipeline(IMAGE_HITS)
            questions = ["Where does this bus go?", "FORBIDDEN: where does this bus go?", "What colour is the bus?"]
            answers = agent.batch_generate_response(questions, [PHOTO] * 3, [[], [], []])
        traces = agent.last_batch_report["traces"]
        assert [t["branch"] == "refused" for t in traces] == [False, True, False], dialect
        assert answers[1] == "I don't know" and "refused" in traces[1]["errors"][0]
        assert server.rejected() == [], [e.reason for e in server.rejected()]
        refused = [e for e in server.posts() if e.injected == "refusal"]
        assert len(refused) == 1  # the route call: the turn goes no further, and is not asked again
        calls = agent.last_batch_report["engine_calls"]
        assert sum(len(c["refusals"]) for c in calls) == 1


def test_a_refusal_in_a_later_stage_fails_the_turn_it_belongs_to():
    """The answer stage sends the RAG answers first and the direct ones after: a refused RAG
    request of the second turn fails that turn, whatever its place in the call."""
    from agents.cruise_agent import CruiseAgent
    from agents.engines.base import Engines
    from testkit.fakes import FakePipeline, FunctionReranker
    from testkit.scripted_chain import IMAGE_HITS, rerank_score

    faults = Faults(refuse_marker="FORBIDDEN", refuse_also_needs="Reference notes")
    with StandInProvider("openai", faults=faults) as server:
        cfg = load_config("cpu", model_name="gpt-5-mini", vlm_base_url=server.url)
        vlm = build_chat_engine(cfg, "vlm", Ledger())
        agent = CruiseAgent(config=cfg, engines=Engines(router=vlm, vlm=vlm, reranker=FunctionReranker(rerank_score)))
        agent.search_pipeline = FakePipeline(IMAGE_HITS)
        questions = ["Where does this bus go?", "FORBIDDEN: where does this bus go?", "Where is it going?"]
        agent.batch_generate_response(questions, [PHOTO] * 3, [[], [], []])
    traces = agent.last_batch_report["traces"]
    assert [t["branch"] for t in traces][1] == "refused"
    assert all(t["branch"] != "refused" for i, t in enumerate(traces) if i != 1)
    assert traces[1]["errors"][0].startswith("answer: the provider refused")
    answer_call = next(c for c in agent.last_batch_report["engine_calls"] if c["stage"] == "answer")
    assert answer_call["refusals"] and answer_call["refusals"][0][0] == 1
    assert server.rejected() == []


# --------------------------------------------------------------------------- configuration
def test_a_hosted_name_picks_its_stack_engine_and_provider_url():
    for name, stack, url in [("gpt-5-mini", "gpt-5", "https://api.openai.com/v1"),
                             ("o4-mini", "gpt-5", "https://api.openai.com/v1"),
                             ("claude-sonnet-4-6", "claude", "https://api.anthropic.com/v1"),
                             ("gemini-2.5-flash", "gemini", "https://generativelanguage.googleapis.com/v1beta")]:
        cfg = load_config("cpu", model_name=name)
        assert (cfg.stack, cfg.models.engine, cfg.models.vlm_model, cfg.models.router_model) == \
            (stack, "hosted", name, name)
        # the stack names no URL: the provider's own is where the engine goes, and the key variable
        # the stack's description names is the provider's
        engine = build_chat_engine(cfg, "vlm", Ledger())
        assert (cfg.models.vlm_base_url, engine.endpoint.base_url) == ("", url)
        assert engine.provider.key_variable in STACKS[stack].description
        # the paper's stage modes (the cpu stack's 135M-model choices do not carry over)
        assert (cfg.own.router_mode, cfg.answer.consistency_mode, cfg.answer.cov_mode,
                cfg.answer.min_token_prob) == ("text", "text", "text", 0.0)
    assert load_config("cpu", model_name="gpt-5-mini").models.reasoning_effort["answer"] == "low"
    # on the served profile (its router has a server of its own) the router is still the VLM's provider
    served = load_config("served", model_name="claude-sonnet-4-6")
    assert (served.models.router_base_url, served.models.engine) == ("", "hosted")
    from agents.factory import build_engines

    engines = build_engines(served.replace(reranker_backend="minilm", reranker_model="minilm"), Ledger())
    assert engines.router is engines.vlm


def test_stages_that_read_probabilities_fall_back_to_text_and_say_so():
    # the issue's run: the cpu profile's stack (yes/no readings, the token gate) on a served gpt-5-mini
    cfg = load_config_from_settings("cpu", None, ["engine=openai", "vlm_served_name=gpt-5-mini"])
    assert (cfg.own.router_mode, cfg.answer.consistency_mode, cfg.answer.min_token_prob) == ("text", "text", 0.0)
    assert len(cfg.mode_fallbacks) == 3 and all("token probabilities" in line for line in cfg.mode_fallbacks)
    hosted = load_config_from_settings("cpu", None, ["router_mode=yes_no", "cov_mode=yes_no", "min_token_prob=0.2"],
                                       model_name="gemini-2.5-flash")
    assert (hosted.own.router_mode, hosted.answer.cov_mode, hosted.answer.min_token_prob) == ("text", "text", 0.0)
    from agents.cruise_agent import CruiseAgent

    assert tuple(CruiseAgent.describe(hosted)["config"]["mode_fallbacks"]) == hosted.mode_fallbacks  # run_config.json
    untouched = load_config("cpu")  # an engine with probabilities keeps its readings
    assert untouched.own.router_mode == "yes_no" and untouched.mode_fallbacks == ()
    with pytest.raises(ValueError, match="reasoning_effort"):
        load_config("cpu", model_name="gpt-5-mini", reasoning_effort={"answer": "lots"})
    with pytest.raises(ValueError, match="no provider is known"):
        load_config("cpu", engine="hosted", vlm_model="acme-vlm", router_model="acme-vlm")


def test_the_issues_served_run_now_speaks_openais_rules(monkeypatch):
    """`--set engine=openai` with the served name gpt-5-mini: the request follows the reasoning
    model rules (the served engine's URL and key variable)."""
    monkeypatch.setenv(API_KEY_ENV, STAND_IN_KEY)
    monkeypatch.delenv("OPENAI_API_KEY")
    with StandInProvider("openai") as server:
        cfg = load_config_from_settings("cpu", None, ["engine=openai", "vlm_served_name=gpt-5-mini",
                                                     f"vlm_base_url={server.url}"])
        engine = build_chat_engine(cfg, "vlm", Ledger())
        assert isinstance(engine, HostedChatEngine)
        results = {stage: ask(engine, stage) for stage in STAGE_CALLS}
    assert server.rejected() == [] and all(r.text for r in results.values())


def test_the_pre_run_check_names_the_key_variable_and_the_model(monkeypatch):
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    problem = hosted_problem("anthropic", "claude-sonnet-4-6")
    assert "ANTHROPIC_API_KEY is not set" in problem and STAND_IN_KEY not in problem
    with StandInProvider("gemini") as server:
        assert hosted_problem("gemini", "gemini-2.5-flash", server.url) is None
        assert "has no model gemini-9-ultra" in hosted_problem("gemini", "gemini-9-ultra", server.url)
    with StandInProvider("openai", key="sk-another-key-entirely") as server:
        problem = hosted_problem("openai", "gpt-5-mini", server.url)
    assert "OPENAI_API_KEY" in problem and STAND_IN_KEY not in problem


def test_a_retired_claude_model_stops_the_run_in_one_line_before_anything_loads():
    """Anthropic answers a retired model as one it never had: 404, a not_found_error naming it
    (the stand-in answers so). The pre-run check says so in one line, asking once."""
    from agents.preload import preload_problems

    retired = ANTHROPIC_RETIRED[0]
    with StandInProvider("anthropic") as server:
        problems = preload_problems(load_config("cpu", model_name=retired, vlm_base_url=server.url))
    assert len(problems) == 1 and "\n" not in problems[0], problems
    assert problems[0].startswith(f"cannot start: {server.url} has no model {retired} for this key (retired, ")
    assert "404" in problems[0] and "not_found_error" in problems[0] and STAND_IN_KEY not in problems[0]
    assert [(e.method, e.path, e.headers["anthropic-version"]) for e in server.exchanges] == [
        ("GET", f"/v1/models/{retired}", "2026-10-21")]


# --------------------------------------------------------------------------- the baseline's prompt
def test_the_baseline_prompt_keeps_the_relaunched_agents_order_per_family():
    history = [{"role": "user", "content": "What is this?"}, {"role": "assistant", "content": "A bus."}]
    turn = Turn(query="Where does it go?", image=PHOTO, history=history)
    roles = lambda messages: [m["role"] for m in messages]  # noqa: E731
    hosted = baseline_messages(turn, "[Info 1] Route 24 runs to Camden.", "hosted")
    # system, the search results, the conversation, the question alone
    assert roles(hosted) == ["system", "user", "user", "assistant", "user"]
    assert "Route 24" in hosted[1]["content"] and hosted[-1]["content"] == "Where does it go?"
    assert "several turns" in hosted[0]["content"]  # the conversation's own system text
    opened = baseline_messages(turn, "[Info 1] Route 24 runs to Camden.", "open")
    assert [m["content"] for m in opened[2:6:3]] == [HISTORY_OPEN, HISTORY_CLOSE]
    assert "search results" in opened[-2]["content"] and "earlier turns" in opened[-2]["content"]
    single = baseline_messages(Turn(query="Where?", image=PHOTO, history=[]), "", "gemini")
    assert roles(single) == ["system", "user"] and "copyrighted" in single[0]["content"]
    cfg = load_config("cpu", preset="rag_baseline", model_name="gemini-2.5-flash")
    assert (cfg.answer.answer_prompts, cfg.answer.baseline_style, cfg.answer.use_finalizer) == \
        ("baseline", "gemini", False)


# --------------------------------------------------------------------------- a run, in process
def test_a_hosted_run_completes_with_no_rejection_fault_or_empty_reply_and_writes_no_key(tmp_path, monkeypatch):
    """`--profile cpu --model-name gpt-5-mini --set vlm_base_url=URL` (the laptop's search and
    reranker, a hosted VLM) on four mini-benchmark conversations against OpenAI's rules. No turn
    budget: what is checked is what the provider was sent and answered, and a busy machine must not
    cut the turns before the answer stage (tests/test_deadline.py checks the deadline)."""
    import local_evaluation

    monkeypatch.setenv("HF_DATASETS_CACHE", str(tmp_path / "hf-datasets"))
    out = tmp_path / "run"
    with StandInProvider("openai") as server:
        local_evaluation.main(["--profile", "cpu", "--model-name", "gpt-5-mini", "--set", f"vlm_base_url={server.url}", "--set", "turn_budget_s=0",
                               "--num-conversations", "4", "--exact-conversations", "--eval-model", "None",
                               "--output-dir", str(out), "--no_progress", "--display-conversations", "0"])
    summary = json.loads((out / "run_summary.json").read_text())
    assert server.rejected() == [] and server.empty_replies() == []
    assert len(server.posts()) == summary["tokens"]["total"]["requests"] > 0
    assert summary["stage_fault_turns"] == 0 and summary["refused_turns"] == 0
    assert summary["tokens"]["empty_replies"] == 0 and summary["turns_answered"] == 4
    tokens = summary["tokens"]
    assert tokens["total"]["prompt"] == sum(e.reply["usage"]["prompt_tokens"] for e in server.posts())
    assert tokens["per_stage"]["answer"]["reasoning"] > 0 and not math.isnan(tokens["per_turn"]["prompt"])
    page = (out / "report.html").read_text()
    assert 'id="tokens"' in page and "none (turn_budget_s 0" in page
    for path in out.rglob("*"):
        if path.is_file():
            assert STAND_IN_KEY.encode() not in path.read_bytes(), path

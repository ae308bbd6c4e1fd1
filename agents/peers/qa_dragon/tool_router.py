"""The tool router (seed 001, 3.3 and its Appendix A prompt): which searches a turn runs.

RAG turns ask the VLM two yes/no questions over the photo, the question and the D-CoT's trace
(prompts/qa_dragon_tool_image.txt, qa_dragon_tool_text.txt: one engine call, two requests a
turn), the paper's two flags:
- image search: is the thing asked about still unnamed, so that look-alike photos must name it?
- text search: does the answer need facts the photo does not show?
Each is read as the stack reads a yes/no check (agents/stages/verdicts.py), the odds cut where the
stack cuts its router's "needs external information" (`router_external_min_p`: the same question,
asked of the same kind of model); an unreadable flag searches (retrieving rather than guessing). Two rules of the paper's decision logic are applied
after the model by the domain router's label: Math and science needs neither search, Book and
Plants and Gardening need no image search.

Search Verify runs the text toolchain alone (Table 1), Direct Output none. Where the pipeline has
no web search (Task 1), a text search cannot run and image search, the only source, runs instead.
"""
from __future__ import annotations

from agents.config.cruise_config import CruiseConfig
from agents.engines.base import ChatEngine, ChatRequest
from agents.peers.qa_dragon.types import DomainRoute, Draft, SearchRoute, ToolChoice, column
from agents.runtime.system import Stage
from agents.stages.prompts import load_prompt, vlm_image
from agents.stages.s3_retrieve import web_search_enabled
from agents.stages.types import Turn
from agents.stages.verdicts import check_sampling, read_check

NO_SEARCH_DOMAINS = ("Math and science",)  # calculations need neither search
NO_IMAGE_SEARCH_DOMAINS = ("Book", "Plants and Gardening")  # the paper's books and plants
TOOL_PROMPTS = ("qa_dragon_tool_image", "qa_dragon_tool_text")


def apply_rules(choice: ToolChoice, domain: DomainRoute, web: bool) -> ToolChoice:
    if domain.domain in NO_SEARCH_DOMAINS and (choice.image or choice.text):
        choice.image, choice.text, choice.rule = False, False, f"{domain.domain}: no search"
    elif domain.domain in NO_IMAGE_SEARCH_DOMAINS and choice.image:
        choice.image, choice.rule = False, f"{domain.domain}: no image search"
    return without_web(choice, web)


def without_web(choice: ToolChoice, web: bool) -> ToolChoice:
    if not web and choice.text:
        choice.text, choice.image = False, True
        choice.rule = (choice.rule + "; " if choice.rule else "") + "no web search: image search instead"
    return choice


def planned_tools(routes: list[SearchRoute], web: bool) -> list[ToolChoice]:
    """What each branch searches before the tool router is asked: Search Verify the text
    toolchain, Direct Output nothing, RAG nothing yet (tool_batch decides)."""
    return [without_web(ToolChoice(image=False, text=True), web) if r.branch == "search_verify" else ToolChoice()
            for r in routes]


def tool_batch(turns: list[Turn], drafts: list[Draft], routes: list[SearchRoute], domains: list[DomainRoute],
               planned: list[ToolChoice], engine: ChatEngine, cfg: CruiseConfig, web: bool) -> list[ToolChoice]:
    """`planned` with the RAG turns' choices: two yes/no requests a turn, one engine call."""
    out = list(planned)
    wanted = [i for i, r in enumerate(routes) if r.branch == "rag"]
    if not wanted:
        return out
    requests = [ChatRequest(load_prompt(name).messages(turns[i].history, turns[i].picture, query=turns[i].query,
                                                      reasoning=drafts[i].reasoning or "(none)"),
                            image=vlm_image(turns[i], engine))
                for i in wanted for name in TOOL_PROMPTS]
    results = engine.generate(requests, check_sampling(cfg, cfg.own.qa_dragon_tool_max_tokens),
                              stage="tool_route")
    for k, i in enumerate(wanted):
        image = read_check(results[2 * k], cfg.answer.router_external_min_p)
        text = read_check(results[2 * k + 1], cfg.answer.router_external_min_p)
        choice = ToolChoice(image=image.passed is not False, text=text.passed is not False, image_check=image.raw,
                            text_check=text.raw, parsed=image.passed is not None and text.passed is not None)
        out[i] = apply_rules(choice, domains[i], web)
    return out


def unasked_tools(routes: list[SearchRoute], domains: list[DomainRoute], planned: list[ToolChoice],
                  web: bool) -> list[ToolChoice]:
    """`planned` with the RAG turns' choices when there was no time to ask the tool router: every
    search, as for an unreadable reply, then the paper's domain rules."""
    out = list(planned)
    for i, route in enumerate(routes):
        if route.branch == "rag":
            choice = apply_rules(ToolChoice(image=True, text=True), domains[i], web)
            choice.rule = "; ".join(part for part in ("not asked (no time): every search", choice.rule) if part)
            out[i] = choice
    return out


def route_tools(batch) -> list[dict]:
    """The RAG turns' searches (`tool`: what was planned before), from their `draft`, `search_route`
    and `domain`."""
    web = web_search_enabled(batch.pipeline)
    tools = tool_batch(batch.turns, column(batch.reads, "draft"), [r["search_route"] for r in batch.reads],
                       column(batch.reads, "domain"), column(batch.reads, "tool"), batch.engines.vlm, batch.cfg, web)
    return [{"tool": t} for t in tools]


STAGE = Stage("tool_route", batch_fn=route_tools, reads=("draft", "search_route", "domain", "tool"), writes=("tool",),
              parsed="tool_route", prompts=("qa_dragon_tool_image", "qa_dragon_tool_text"))

"""The full-content web database (`local_evaluation.py --web-contents`): pages in the package's own
LMDB layout reach the chain through the package's own lookup, their bodies are chunked within the
chain's bounds, a fact only in a page's body reaches the answer prompt and the trace with the
page's date, and a partly downloaded database is refused with a message that says so.

The databases here are written with lmdb and `cragmm_search.utils.hash_key` / `shard_id` (the
package's functions, not copies), and read back by the package's `lookup_web_content` inside
its own `UnifiedSearchPipeline.postprocess`, so neither side can drift from the package. Through
local_evaluation.py over the mini benchmark's own indices: tests/full/test_web_contents.py.
"""
from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import lmdb
import pytest
from cragmm_search.utils import hash_key, lookup_web_content, shard_id
from PIL import Image

from agents.config.loading import load_config
from agents.cruise_agent import CruiseAgent
from agents.engines.base import Engines
from agents.stages.s4_chunk import chunks_from_web_hit
from evaluator.search.index_check import IndexSpec, SearchIndexError, check_contents
from testkit.fakes import FunctionReranker, ScriptedEngine, last_user_text

# The scripted VLMs write the paper's "CONFIDENCE: x" CoV reply: every agent here runs the
# paper_finalizer preset over the cpu profile (agents/config/presets.py PRESETS).

QUESTION = "When does the last Route 24 bus leave for Camden?"
FACT = "The last Route 24 bus to Camden leaves Pimlico at 23:40."  # only in the page's body
SNIPPET = "Route 24 timetable ... Route 24 runs between Pimlico and Camden every 8 minutes."
DATE = "2025-03-14 08:30:00"
SHARDS = 3


def page_html(body_paragraphs: list[str], filler: int = 40) -> str:
    """A page as crawled: head, script, a long menu, then the article, far below the fold."""
    menu = "".join(f"<li><a href='/l{i}'>Line {i}</a></li>" for i in range(filler))
    article = "".join(f"<p>{p}</p>" for p in body_paragraphs)
    return (f"<html><head><title>Route 24 - Buses</title><script>var fact = 'decoy 99:99';</script>"
            f"<style>p {{ color: red }}</style></head><body><nav><ul>{menu}</ul></nav>"
            f"<article><h1>Route 24</h1>{article}</article><footer>Contact us</footer></body></html>")


PAGES = [
    {"page_name": "Route 24 - Buses", "page_url": "https://buses.example/route-24", "page_snippet": SNIPPET,
     "page_result": page_html(["Route 24 runs between Pimlico and Camden every 8 minutes.",
                               "Night service: " + FACT, "Tickets are sold on board."]),
     "page_last_modified": DATE, "search_result_type": "web"},
    {"page_name": "Camden Town - Guide", "page_url": "https://guide.example/camden",
     "page_snippet": "Camden Town is a district of north-west London.",
     "page_result": page_html(["Camden Town is a district of north-west London.", "It is known for its markets."]),
     "page_last_modified": "", "search_result_type": "web"},
]


def write_db(path: Path, records: list[dict], shards: int = SHARDS) -> Path:
    """`records` in the package's layout: shard_<i>.mdb files, key hash_key(url) in shard shard_id(key)."""
    path.mkdir(parents=True, exist_ok=True)
    envs = {i: lmdb.open(str(path / f"shard_{i}.mdb"), map_size=64 << 20, subdir=False) for i in range(shards)}
    for record in records:
        key = hash_key(record["page_url"])
        with envs[shard_id(key, shards)].begin(write=True) as txn:
            txn.put(key.encode("utf-8"), json.dumps(record).encode("utf-8"))
    for env in envs.values():
        env.close()
    return path


class PackageWebSearch:
    """Web search whose hits are made by the package's own UnifiedSearchPipeline.postprocess over
    a contents database (the vector search is outside the unit: every query finds `urls` in order)."""

    web_search = True

    def __init__(self, db_dir: Path | None, urls: list[str], pages: list[dict] = ()):
        from cragmm_search.search import UnifiedSearchPipeline

        index = {p["page_url"]: p for p in pages}  # the snippet-only index's metadata
        self.postprocess = UnifiedSearchPipeline.postprocess
        self.state = SimpleNamespace(
            is_private=db_dir is not None, web_content_private=str(db_dir),
            text_web=SimpleNamespace(get_page_url=lambda i: urls[i],
                                     get_page_name=lambda i: index[urls[i]]["page_name"],
                                     get_page_snippet=lambda i: index[urls[i]]["page_snippet"]))
        self.urls = urls

    def __call__(self, query, k=5):
        if not isinstance(query, str):
            return []
        raw = [(i, 0.9 - 0.1 * i) for i in range(min(k, len(self.urls)))]
        return self.postprocess(self.state, {"raw_results": raw, "type": "text"})


def answer(request) -> str:
    text = last_user_text(request)
    return "23:40" if "23:40" in text else "I don't know."


def make_agent(pipeline, **overrides) -> tuple[CruiseAgent, ScriptedEngine]:
    vlm = ScriptedEngine({"summarize": lambda r: "A red bus.", "answer": answer,
                          "consistency": lambda r: "yes", "verify": lambda r: "CONFIDENCE: 0.95"})
    router = ScriptedEngine({"route": lambda r: "Needs External Info: yes\nIs Real-Time: no"})
    reranker = FunctionReranker(lambda query, chunk: 0.95 if "23:40" in chunk else 0.3)
    agent = CruiseAgent(pipeline, engines=Engines(router=router, vlm=vlm, reranker=reranker), profile="cpu",
                        preset="full+paper_finalizer", **overrides)
    return agent, vlm


def ask(agent) -> dict:
    agent.batch_generate_response([QUESTION], [Image.new("RGB", (32, 32), "red")], [[]])
    return agent.last_batch_report["traces"][0]


@pytest.fixture
def db(tmp_path) -> Path:
    return write_db(tmp_path / "contents", PAGES)


def test_the_fixture_is_read_by_the_package_itself(db):
    for page in PAGES:
        assert lookup_web_content(str(db), page["page_url"]) == page
    hits = PackageWebSearch(db, [p["page_url"] for p in PAGES])(QUESTION, k=2)
    assert set(hits[0]) == {"index", "score", "page_name", "page_url", "page_snippet", "page_result",
                            "page_last_modified", "search_result_type"}


def test_a_fact_only_in_the_page_body_reaches_the_answer_prompt_and_the_trace(db):
    agent, vlm = make_agent(PackageWebSearch(db, [p["page_url"] for p in PAGES]))
    trace = ask(agent)
    assert trace["final_answer"] == "23:40"
    prompt = next(last_user_text(r) for stage, r in vlm.requests if stage == "answer" and "<<<NOTES" in last_user_text(r))
    (line,) = [line for line in prompt.splitlines() if FACT in line]
    assert line.startswith(f"[Info 1] (page last modified: {DATE}) Route 24: ")  # dated, and names its page
    assert "Line 3" not in prompt  # the page's navigation is not text
    assert "decoy" not in prompt and "var fact" not in " ".join(c["text"] for c in trace["chunks"])
    body = [c for c in trace["chunks"] if FACT in c["text"]]
    assert body and body[0]["last_modified"] == DATE and body[0]["source"] == "web:https://buses.example/route-24"
    web = {item["id"]: item for item in trace["retrieved"] if item["source"] == "web"}
    assert web["web:https://buses.example/route-24"]["last_modified"] == DATE
    undated = [c for c in trace["chunks"] if c["source"] == "web:https://guide.example/camden"]
    assert undated and all("last_modified" not in c for c in undated)


def test_snippet_only_hits_behave_as_before(db):
    """Without the database (or with web_page_text off) the body's fact is nowhere: no answer. The
    snippet of a dated page still shows the page's date; a snippet-only hit has none."""
    urls = [p["page_url"] for p in PAGES]
    for pipeline, overrides, dated in ((PackageWebSearch(None, urls, PAGES), {}, False),
                                       (PackageWebSearch(db, urls), {"web_page_text": False}, True)):
        agent, vlm = make_agent(pipeline, **overrides)
        trace = ask(agent)
        assert not any("23:40" in c["text"] for c in trace["chunks"])
        assert trace["final_answer"] != "23:40"
        assert [c["text"] for c in trace["chunks"]] == ["Route 24: Route 24 timetable ... Route 24 runs between "
                                                         "Pimlico and Camden every 8 minutes.",
                                                         "Camden Town: Camden Town is a district of north-west London."]
        assert any("page last modified" in last_user_text(r) for _, r in vlm.requests) is dated


def test_a_2mb_page_stays_within_the_chain_bounds(tmp_path):
    cfg = load_config("cpu")
    filler = [f"Route 24 bus number {i} is painted red. It runs through central London on shift {i}. "
              f"Its driver of shift {i} changes at noon." for i in range(2_000_000 // 110)]
    late = "The depot of Route 24 is at Battersea."  # past the HTML the chain reads
    big = {"page_name": "Route 24 - Buses", "page_url": "https://buses.example/big", "page_snippet": SNIPPET,
           "page_result": page_html(filler + [late]), "page_last_modified": DATE, "search_result_type": "web"}
    assert len(big["page_result"]) > 2_000_000
    db = write_db(tmp_path / "big", [big], shards=1)
    (hit,) = PackageWebSearch(db, [big["page_url"]])(QUESTION, k=1)
    chunks = chunks_from_web_hit(hit, cfg, QUESTION)
    snippet_only = chunks_from_web_hit({**hit, "page_result": None}, cfg, QUESTION)
    assert len(chunks) - len(snippet_only) == cfg.retrieval.page_max_chunks
    assert all(len(c) <= cfg.retrieval.max_chunk_chars for c in chunks)
    assert not any("Battersea" in c for c in chunks)  # only page_max_html_chars of the page were read
    # Through the chain: ten such pages add at most page_max_chunks chunks each to the reranker.
    pages = [{**big, "page_url": f"https://buses.example/big-{i}", "page_snippet": f"{SNIPPET} (copy {i})"}
             for i in range(10)]
    db = write_db(tmp_path / "ten", pages)
    # no turn budget: a busy machine must not cut the turn before every page is read
    agent, _ = make_agent(PackageWebSearch(db, [p["page_url"] for p in pages], pages), turn_budget_s=0)
    trace = ask(agent)
    per_page = {}
    for chunk in trace["chunks"]:
        per_page[chunk["source"]] = per_page.get(chunk["source"], 0) + 1
    assert len(per_page) == 10  # every page was read
    assert max(per_page.values()) <= len(snippet_only) + cfg.retrieval.page_max_chunks
    assert all(len(c["text"]) <= cfg.retrieval.max_chunk_chars for c in trace["chunks"])


def test_a_head_full_of_script_does_not_use_up_what_is_read_of_a_page():
    """Crawled pages can carry hundreds of kilobytes of script and style before their body: the
    cap on the HTML read counts what a reader could see, so the body's text is still reached."""
    from agents.stages.pagetext import page_text

    cfg = load_config("cpu")
    code = "<script>" + "var x = 1;" * 30_000 + "</script><STYLE type='text/css'>" + "p{}" * 20_000 + "</style >"
    html = page_html(["Night service: " + FACT]).replace("<head>", "<head>" + code)
    assert len(html) > 1.5 * cfg.retrieval.page_max_html_chars
    text = page_text(html, cfg.retrieval.page_max_html_chars)
    assert FACT in text and "var x" not in text and "p{}" not in text
    unclosed = "<html><body><p>" + FACT + "</p><script>" + "y();" * 100_000
    assert FACT in page_text(unclosed, cfg.retrieval.page_max_html_chars)  # an unclosed script costs nothing before it


def test_page_chunks_prefer_the_question_words_and_keep_page_order():
    cfg = load_config("cpu", page_max_chunks=2)
    paragraphs = [f"Paragraph {i} is about tram line {i} in Leeds." for i in range(20)]
    paragraphs[15] = "Night service: " + FACT
    hit = {"page_name": "Trams - Leeds", "page_snippet": "", "page_result": page_html(paragraphs, filler=0)}
    chunks = chunks_from_web_hit(hit, cfg, QUESTION)
    assert len(chunks) == 2 and any(FACT in c for c in chunks)


def spec() -> IndexSpec:
    return IndexSpec("contents", "crag-mm-2025/web-search-contents-db-private-v0.1.2", None)


def test_index_check_accepts_a_whole_database(db):
    assert check_contents(spec(), db) == db


@pytest.mark.parametrize("missing, message", [
    ("shard_1.mdb", r"partly downloaded: 1 of 3 shard files are missing \(shard_1.mdb\)"),
    ("shard_2.mdb", r"another shard count than the 2 files found: its last shard files are missing"),
])
def test_index_check_names_a_partial_download(tmp_path, missing, message):
    records = [dict(PAGES[0], page_url=f"https://buses.example/{i}") for i in range(30)]  # every shard holds some
    db = write_db(tmp_path / "contents", records)
    (db / missing).unlink()
    with pytest.raises(SearchIndexError, match=message):
        check_contents(spec(), db)


def test_index_check_refuses_a_folder_without_shards(tmp_path):
    (tmp_path / "empty").mkdir()
    with pytest.raises(SearchIndexError, match="no shard_<i>.mdb files"):
        check_contents(spec(), tmp_path / "empty")


def test_the_mini_benchmark_database_is_read_by_the_package(tmp_path):
    from minibench import content
    from minibench.build_indices import CONTENTS_SHARDS, contents_records, write_contents_db

    write_contents_db(tmp_path, contents_records(), CONTENTS_SHARDS)
    assert check_contents(spec(), tmp_path) == tmp_path
    for page in content.WEB_PAGES:
        record = lookup_web_content(str(tmp_path), page["page_url"])
        assert record["page_snippet"] == page["page_snippet"]
        assert page["text"].split("\n\n")[-1][:60] in chunks_text(record)


def chunks_text(record: dict) -> str:
    from agents.stages.pagetext import page_text

    return " ".join(page_text(record["page_result"], 10**7).split())



"""Answer recall at a realistic index size (benchmarks/recall_at_size.py): the distractor pages'
shape and stability, the index ids that name them, the answer pages of the benchmark's turns,
and recall@K counted over a search stand-in whose hits are known."""
from __future__ import annotations

import html

import pytest

from benchmarks.recall_at_size import answer_pages, benchmark_pairs, recall_at_size
from minibench import content
from minibench.build_indices import MINI_WEB_INDEX, distractors_in, web_index_with_distractors, web_records
from minibench.distractor_pages import KINDS, distractor_pages


def test_distractor_pages_look_like_the_benchmarks_pages_and_never_change():
    pages = distractor_pages(3 * len(KINDS))
    assert distractor_pages(5)[:5] == pages[:5]  # page i does not depend on how many are asked for
    assert len({p["page_url"] for p in pages}) == len(pages)
    assert not {p["page_url"] for p in pages} & {p["page_url"] for p in content.WEB_PAGES}
    assert len({p["page_url"].split("//")[1].split(".")[0] for p in pages}) >= 8  # the benchmark's sites
    for page in pages:
        name, site = page["page_name"].rsplit(" - ", 1)
        assert site in content.SITES.values() and name
        lead, facts, *sections = page["text"].split("\n\n")
        assert facts.startswith("Quick facts: ") and len(sections) >= 2
        snippet = html.unescape(page["page_snippet"])
        assert snippet.split(" ...", 1)[0] in lead and lead in snippet  # extract, then the lead in full


def test_the_index_id_says_how_many_distractor_pages_it_holds():
    assert distractors_in(MINI_WEB_INDEX) == 0
    assert distractors_in(web_index_with_distractors(5000)) == 5000
    assert distractors_in("crag-mm-2025/web-search-index-public-test") == 0
    mini = web_records()
    grown = web_records(4)
    assert grown[:len(mini)] == mini  # the benchmark's chunks first, unchanged
    assert {meta["page_url"] for _, _, meta in grown[len(mini):]} == {p["page_url"] for p in distractor_pages(4)}


def test_every_web_turn_has_exactly_one_answer_page():
    groups = benchmark_pairs()
    assert len(groups["first turns"]) >= 10 and len(groups["follow-ups"]) >= 25
    for pairs in groups.values():
        assert all(len(urls) == 1 for _, urls in pairs)
    # "Discovery" is in the Hubble page too; only the STS-114 page names the referent
    assert answer_pages(["Discovery"], ("STS-114",)) == {"https://space.crag-mm-mini.example/missions/sts-114"}
    assert len(answer_pages(["Discovery"])) == 2


class Hits:
    """A search stand-in: query -> its chunk hits' page urls, best first."""

    def __init__(self, ranked: dict[str, list[str]]):
        self.ranked = ranked
        self.asked_k = []

    def __call__(self, query, k):
        self.asked_k.append(k)
        return [{"page_url": url, "score": 1.0 - i / 10} for i, url in enumerate(self.ranked[query][:k])]


def test_recall_at_k_counts_the_first_hit_on_an_answer_page():
    search = Hits({"q1": ["a", "x", "y"], "q2": ["x", "y", "b", "b2"], "q3": ["x", "y", "z"], "q4": []})
    pairs = [("q1", "a"), ("q2", {"b", "b2"}), ("q3", "c"), ("q4", "d")]
    got = recall_at_size(pairs, distractors=7, ks=(3, 1), pipeline=search)
    # q1 at rank 1, q2 at rank 3 (b), q3 and q4 never: @1 1/4, @3 2/4
    assert got["ranks"] == [1, 3, None, None]
    assert got["recall"] == {1: pytest.approx(0.25), 3: pytest.approx(0.5)}
    assert got["distractor_pages"] == 7 and got["queries"] == 4
    assert set(search.asked_k) == {3}  # one search per query, at the largest K

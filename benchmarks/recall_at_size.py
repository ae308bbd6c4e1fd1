"""Answer recall at a realistic index size: the mini benchmark's web pages among thousands of others.

    python -m benchmarks.recall_at_size [--distractors 0 1000 5000] [--k 1 5 10]

On the mini web index (about a hundred chunks) web search finds the page that holds a question's
answer whatever the query says. Here the same pages sit among `--distractors` pages about other
entities of the same kinds (astronauts, missions, rockets, telescopes, volcanoes, cities, drinks, plants,
breeds, authors, fabrics, games: minibench/distractor_pages.py), chunked and embedded as the mini
index is, with the cpu profile's text model, and searched through the real pipeline. A query
counts as found at K when one of the first K chunk hits belongs to a page that holds its answer.

`recall_at_size(pairs, distractors, ks)` measures any list of (query, answer page url or urls),
e.g. the standalone questions a conversation stage writes. `benchmark_pairs()` gives the mini
benchmark's web-answerable turns in groups: first turns (the single-turn split and each
conversation's first turn) and follow-ups, each as asked and with the picture's first KG entity
appended (as image search adds it to the chain's web query), and follow-ups with their
referent's first name (provenance `referent`) appended, an oracle for a stage that resolves it. The table printed has
one row per group and index size. The first build of an index size embeds its pages (minutes on
a 2-core CPU); it is cached in the Hugging Face cache under its own id.

Fills docs/benchmarks.md, "Answer recall at a realistic index size".
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import time

from benchmarks.machine import machine_header
from minibench import content

DEFAULT_DISTRACTORS = (0, 1000)  # 5000 builds in ~1.5 h on a loaded 2-core CPU
DEFAULT_KS = (1, 5, 10)  # 10: the chain's K_recall web hits


def answer_pages(keys: list[str], subject: tuple[str, ...] = ()) -> frozenset[str]:
    """The urls of the mini benchmark's pages whose text holds every answer key; where several
    do, those that also name the subject (any of `subject`), if any does ("1998" is in the
    DSCOVR page too, but only the Summer Palace page names the palace)."""
    from evaluator.scoring.coverage import answer_in_context, key_in_text

    texts = {p["page_url"]: "\n".join((p["page_name"], p["text"])) for p in content.WEB_PAGES}
    holding = [url for url, text in texts.items() if answer_in_context(keys, text)]
    naming = [url for url in holding if any(key_in_text(name, texts[url]) for name in subject)]
    return frozenset(naming or holding)


def _photo_entity(picture: str) -> str:
    """The first entity the image KG holds for the picture (what image search hands the chain's
    web query), or ""."""
    return next((name for pic, found in content.KG_ENTRIES if pic == picture for name in found), "")


def _subject(picture: str, query: str, index: int) -> tuple[str, ...]:
    """What a turn asks about: a follow-up's referent, else the picture's KG entities."""
    if index > 0 and content.REFERENTS[query].names:
        return content.REFERENTS[query].names
    return tuple(name for pic, found in content.KG_ENTRIES if pic == picture for name in found)


def benchmark_pairs() -> dict[str, list[tuple[str, frozenset[str]]]]:
    """group -> [(query, answer page urls)] for every web-answerable turn of the mini benchmark."""
    groups: dict[str, list] = {"first turns": [], "first turns + photo entity": [], "follow-ups": [],
                               "follow-ups + photo entity": [], "follow-ups + referent (oracle)": []}
    turns = [(picture, 0, turn) for picture, turn in content.SINGLE_TURN]
    turns += [(picture, i, turn) for picture, conversation in content.MULTI_TURN for i, turn in enumerate(conversation)]
    for picture, index, (_, _, _, query, _, where) in turns:
        if where != "web":
            continue
        urls = answer_pages(content.ANSWER_KEYS[query], _subject(picture, query, index))
        entity = _photo_entity(picture)
        with_entity = f"{query} {entity}" if entity else query
        if index == 0:
            groups["first turns"].append((query, urls))
            groups["first turns + photo entity"].append((with_entity, urls))
            continue
        groups["follow-ups"].append((query, urls))
        groups["follow-ups + photo entity"].append((with_entity, urls))
        referent = content.REFERENTS[query]
        named = f"{query} {referent.names[0]}" if referent.names and referent.source != "self" else query
        groups["follow-ups + referent (oracle)"].append((named, urls))
    return groups


def web_pipeline(distractors: int, profile: str = "cpu"):
    """The search pipeline of `profile` over the mini web index with `distractors` more pages
    (built on first use)."""
    from evaluator.harness.resolved import resolve_run
    from evaluator.search.pipeline import build_search_pipeline
    from minibench.build_indices import MINI_WEB_INDEX, web_index_with_distractors

    search = resolve_run(profile).search
    web_index = web_index_with_distractors(distractors) if distractors else MINI_WEB_INDEX
    return build_search_pipeline(dataclasses.replace(search, web_index=web_index), web=True)


def recall_at_size(pairs, distractors: int = 1000, ks=DEFAULT_KS, pipeline=None) -> dict:
    """Answer recall at each K of `ks` for `pairs` [(query, url or urls of the pages holding its
    answer)] on the mini web index with `distractors` distractor pages, searched with the cpu
    profile's text model. `pipeline`: one web_pipeline(distractors) already built.
    Returns {"distractor_pages", "queries", "recall": {K: share}, "ranks": [first hit rank or None]}."""
    from agents.stages.s3_retrieve import safe_text_query

    pipeline = pipeline or web_pipeline(distractors)
    ks = tuple(sorted(ks))
    ranks = []
    for query, urls in pairs:
        urls = {urls} if isinstance(urls, str) else set(urls)
        hits = [h for h in (pipeline(safe_text_query(query), k=ks[-1]) or []) if isinstance(h, dict)]
        ranks.append(next((rank for rank, hit in enumerate(hits, 1) if hit.get("page_url") in urls), None))
    n = len(ranks)
    recall = {k: round(sum(r is not None and r <= k for r in ranks) / n, 4) if n else 0.0 for k in ks}
    return {"distractor_pages": distractors, "queries": n, "recall": recall, "ranks": ranks}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--distractors", type=int, nargs="+", default=list(DEFAULT_DISTRACTORS))
    parser.add_argument("--k", type=int, nargs="+", default=list(DEFAULT_KS))
    parser.add_argument("--json", action="store_true", help="also print each result as JSON")
    args = parser.parse_args()
    print(machine_header())
    groups = benchmark_pairs()
    header = "| distractor pages | group | queries | " + " | ".join(f"recall@{k}" for k in sorted(args.k)) + " |"
    lines = [header, "|" + "---|" * (3 + len(args.k))]
    for distractors in args.distractors:
        start = time.perf_counter()
        pipeline = web_pipeline(distractors)
        print(f"index with {distractors} distractor pages ready in {time.perf_counter() - start:.0f} s", flush=True)
        for group, pairs in groups.items():
            result = recall_at_size(pairs, distractors, args.k, pipeline)
            if args.json:
                print(json.dumps({"group": group, **result}))
            lines.append(f"| {distractors} | {group} | {result['queries']} | "
                         + " | ".join(f"{result['recall'][k]:.2f}" for k in sorted(args.k)) + " |")
    print("\n".join(lines))


if __name__ == "__main__":
    main()

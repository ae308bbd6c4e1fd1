"""Answer recall at K_rerank of the retrieval stages alone, on the mini benchmark.

    python -m benchmarks.answer_recall [--chunker infobox paper_fields] [--set FIELD=VALUE ...]
        [--query-image photo crop rotate] [--image-model efficientnet-lite0|tiny-clip|...]
        [--web-contents]

For every KG- and web-answerable turn, runs stages 3-5 of the chain (search with the real
pipeline over the offline indices, chunking, the profile's reranker and the MAD filter) with
q' = the question alone (no summary: no language model runs here; the summary of a real run
can only add words), and checks whether the kept context holds the gold answer (its answer
keys, see evaluator/scoring/coverage.py). Prints one line per chunker; the end-to-end test holds the
infobox chunker to its measured figure.

`--query-image` searches with the benchmark photo itself ("photo", the default) or with a
photo the index does not hold: an off-centre crop ("crop") or a 20-degree tilt ("rotate").
Per variant it also prints the image search's top-1 entity hit rate: the share of benchmark
photos with a KG entry whose first hit names one of that entry's entities. `--image-model`
swaps the cpu profile's image search model (e.g. `tiny-clip`, the random-weight CLIP it
replaced); the index is rebuilt for it, as for any model change. `--web-contents`: web hits
carry their full pages from the mini benchmark's full-content database (built on first use),
as with local_evaluation.py --web-contents.

Fills docs/benchmarks.md, "Answer recall on the mini benchmark" (its first row and the
300-character figures), "With full pages (`--web-contents`)" and "Image search: random CLIP
against EfficientNet-Lite0".
"""
from __future__ import annotations

import argparse
import io
import json
from dataclasses import dataclass

from benchmarks.machine import machine_header
from minibench import content


def off_centre_crop(image):
    """75% of each side, off-centre (the KG's look-alike copies are centred crops)."""
    w, h = image.size
    return image.crop((int(w * 0.05), int(h * 0.15), int(w * 0.80), int(h * 0.90)))


def tilted(image):
    """A 20-degree tilt, the corners filled grey (the benchmark's own "rotated" photo tilts 12)."""
    return image.convert("RGB").rotate(20, expand=True, fillcolor="#808080")


QUERY_VARIANTS = {"photo": lambda image: image, "crop": off_centre_crop, "rotate": tilted}


def query_image(picture: str, variant: str = "photo"):
    """The picture as the search sees it, after the query variant."""
    from PIL import Image

    from minibench.build_benchmark import picture_bytes

    if variant not in QUERY_VARIANTS:
        raise ValueError(f"unknown query image variant {variant!r}; choose one of {sorted(QUERY_VARIANTS)}")
    return QUERY_VARIANTS[variant](Image.open(io.BytesIO(picture_bytes(picture))).convert("RGB"))


def image_top1_entity(pipeline, variant: str = "photo") -> dict:
    """Share of the benchmark photos with a KG entry whose first image hit names one of the
    entry's entities, the photo searched as `variant`."""
    hits, misses = [], []
    for picture, entities in content.KG_ENTRIES:
        if isinstance(picture, tuple) or picture not in content.PICTURES:
            continue  # look-alike copies and KG-only images are not benchmark photos
        top = (pipeline(query_image(picture, variant), k=1) or [{}])[0]
        names = {e.get("entity_name") for e in top.get("entities") or []}
        hits.append(bool(names & set(entities)))
        if not hits[-1]:
            misses.append({"picture": picture, "top": sorted(n for n in names if n), "score": top.get("score")})
    return {"query_image": variant, "pictures": len(hits),
            "image_top1_entity": round(sum(hits) / len(hits), 4) if hits else 0.0, "misses": misses}


@dataclass
class RecallTurn:
    picture: str
    query: str
    source: str  # "kg" | "web"
    keys: list[str]


def answerable_turns() -> list[RecallTurn]:
    turns = [(pic, turn) for pic, turn in content.SINGLE_TURN]
    turns += [(pic, turn) for pic, conversation in content.MULTI_TURN for turn in conversation]
    return [RecallTurn(pic, query, where, content.ANSWER_KEYS[query])
            for pic, (_, _, _, query, _, where) in turns if where in ("kg", "web")]


def measure(pipeline, reranker, cfg, turns: list[RecallTurn] | None = None, variant: str = "photo") -> dict:
    """{"kg": share, "web": share, "kg_web": share, "mean_chunks": n, "misses": [...]}"""
    from agents.stages.s3_retrieve import retrieve_one
    from agents.stages.s5_rerank import rerank_batch
    from agents.stages.types import Turn
    from evaluator.scoring.coverage import answer_in_context

    turns = answerable_turns() if turns is None else turns
    retrievals = [retrieve_one(Turn(t.query, query_image(t.picture, variant), []), "", pipeline, cfg)
                  for t in turns]
    evidence = rerank_batch(retrievals, reranker, cfg)
    found = {"kg": [], "web": []}
    misses = []
    for turn, ev in zip(turns, evidence):
        hit = answer_in_context(turn.keys, "\n".join(ev.kept))
        found[turn.source].append(hit)
        if not hit:
            misses.append({"query": turn.query, "keys": turn.keys, "kept": ev.kept})

    def share(values):
        return round(sum(values) / len(values), 4) if values else 0.0

    return {"chunker": cfg.retrieval.chunker, "query_image": variant, "kg_turns": len(found["kg"]),
            "web_turns": len(found["web"]),
            "answer_recall_kg": share(found["kg"]), "answer_recall_web": share(found["web"]),
            "answer_recall_kg_web": share(found["kg"] + found["web"]),
            "mean_chunks": round(sum(len(r.chunks) for r in retrievals) / max(1, len(retrievals)), 1),
            "mean_kept_chunks": round(sum(len(e.kept) for e in evidence) / max(1, len(evidence)), 2),
            "misses": misses}


def main() -> None:
    import dataclasses

    from agents.config.loading import load_config
    from agents.config.set_strings import parse_settings
    from agents.engines.reranker import MiniLMReranker
    from evaluator.harness.resolved import resolve_run
    from evaluator.search.pipeline import build_search_pipeline

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chunker", nargs="+", default=["infobox", "paper_fields"])
    parser.add_argument("--query-image", nargs="+", default=["photo"], choices=sorted(QUERY_VARIANTS))
    parser.add_argument("--image-model", help="the image search model (default: the cpu profile's)")
    parser.add_argument("--set", action="append", default=[], metavar="FIELD=VALUE")
    parser.add_argument("--misses", action="store_true", help="also print the turns whose answer was not kept")
    parser.add_argument("--web-contents", action="store_true",
                        help="web hits with their full pages (the mini benchmark's full-content database)")
    args = parser.parse_args()
    try:  # checked and typed like local_evaluation.py --set
        overrides = parse_settings(args.set)
    except ValueError as exc:
        raise SystemExit(str(exc)) from None
    search = resolve_run("cpu", web_contents="default" if args.web_contents else None).search
    if args.image_model:
        search = dataclasses.replace(search, image_model=args.image_model)
    pipeline = build_search_pipeline(search, web=True)  # builds the indices if needed
    reranker = MiniLMReranker()
    print(machine_header())
    print(json.dumps({"image_model": search.image_model, "web_contents": search.web_contents}))
    for variant in args.query_image:
        result = image_top1_entity(pipeline, variant)
        misses = result.pop("misses")
        print(json.dumps(result))
        if args.misses:
            for miss in misses:
                print("  miss:", json.dumps(miss, ensure_ascii=False))
        for chunker in args.chunker:
            cfg = load_config("cpu", "full", **{**overrides, "chunker": chunker})
            result = measure(pipeline, reranker, cfg, variant=variant)
            misses = result.pop("misses")
            print(json.dumps(result))
            if args.misses:
                for miss in misses:
                    print("  miss:", json.dumps(miss, ensure_ascii=False)[:600])


if __name__ == "__main__":
    main()

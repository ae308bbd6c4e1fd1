"""Answer recall at K_rerank of the retrieval stages alone, on the mini benchmark.

    python -m evaluation.answer_recall [--chunker infobox paper_fields] [--set FIELD=VALUE ...]

For every KG- and web-answerable turn, runs stages 3-5 of the chain (search with the real
pipeline over the offline indices, chunking, the profile's reranker and the MAD filter) with
q' = the question alone (no summary: no language model runs here; the summary of a real run
can only add words), and checks whether the kept context holds the gold answer (its answer
keys, see evaluation/scoring/coverage.py). Prints one line per chunker; the end-to-end test holds the
infobox chunker to its measured figure.
"""
from __future__ import annotations

import argparse
import io
import json
from dataclasses import dataclass

from minibench import content


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


def measure(pipeline, reranker, cfg, turns: list[RecallTurn] | None = None) -> dict:
    """{"kg": share, "web": share, "kg_web": share, "mean_chunks": n, "misses": [...]}"""
    from PIL import Image

    from agents.cruise.stages.s3_retrieve import retrieve_one
    from agents.cruise.stages.s5_rerank import rerank_batch
    from agents.cruise.types import Turn
    from evaluation.scoring.coverage import answer_in_context
    from minibench.build_benchmark import picture_bytes

    turns = answerable_turns() if turns is None else turns
    retrievals = [retrieve_one(Turn(t.query, Image.open(io.BytesIO(picture_bytes(t.picture))).convert("RGB"), []),
                               "", pipeline, cfg) for t in turns]
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

    return {"chunker": cfg.chunker, "kg_turns": len(found["kg"]), "web_turns": len(found["web"]),
            "answer_recall_kg": share(found["kg"]), "answer_recall_web": share(found["web"]),
            "answer_recall_kg_web": share(found["kg"] + found["web"]),
            "mean_chunks": round(sum(len(r.chunks) for r in retrievals) / max(1, len(retrievals)), 1),
            "mean_kept_chunks": round(sum(len(e.kept) for e in evidence) / max(1, len(evidence)), 2),
            "misses": misses}


def main() -> None:
    from agents.config import load_config, settings_to_env
    from agents.engines.reranker import MiniLMReranker
    from evaluation.harness.search import build_search_pipeline, search_config
    from minibench.build_indices import prepare_indices

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chunker", nargs="+", default=["infobox", "paper_fields"])
    parser.add_argument("--set", action="append", default=[], metavar="FIELD=VALUE")
    parser.add_argument("--misses", action="store_true", help="also print the turns whose answer was not kept")
    args = parser.parse_args()
    settings_to_env("cpu", "full", args.set)  # checked and typed like local_evaluation.py --set
    search = search_config("cpu")
    prepare_indices(search)
    pipeline = build_search_pipeline(search, web=True)
    reranker = MiniLMReranker()
    for chunker in args.chunker:
        cfg = load_config("cpu", "full", chunker=chunker)
        result = measure(pipeline, reranker, cfg)
        misses = result.pop("misses")
        print(json.dumps(result))
        if args.misses:
            for miss in misses:
                print("  miss:", json.dumps(miss, ensure_ascii=False)[:600])


if __name__ == "__main__":
    main()

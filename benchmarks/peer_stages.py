"""What each peer stage does to the evidence, on the mini benchmark.

    python -m benchmarks.peer_stages [--engine cpu|scripted] [--limit N] [--set FIELD=VALUE ...]

For every KG- and web-answerable turn, runs stages 1-5 of the chain (`gather_evidence`: router,
summary, the peer stages that are on, the real search pipeline over the offline indices, the
profile's reranker and the MAD filter) once with `full` and once per switch alone and with all
six (`extended`), and prints per setting: answer recall at K_rerank (the kept context holds the
gold answer's keys, evaluation/coverage.py), evidence coverage (turns with any hit / any
context, chunks reranked and kept per turn) and what the added stages cost per batch of 8
(engine calls, requests, prompt and output tokens, counted from the engine calls the stages
made; GPU seconds are not measured here).

`--engine cpu`: the cpu profile's SmolLM2, text-only (it never sees the photo) and rarely
following a format. `--engine scripted`: a stand-in that writes what a capable model would,
knowing the benchmark's answers (which entity each photo shows, which source holds the answer,
the question's category and domain): an upper bound on what the stages can do with these
search indices, not a model's result. Identical requests are answered once and reused across
settings (the cost columns still count every request a stage made).

Fills docs/benchmarks.md, "Peer stages on the mini benchmark".
"""
from __future__ import annotations

import argparse
import hashlib
import io
import json
import re
from collections import defaultdict

from benchmarks.answer_recall import RecallTurn, answerable_turns
from benchmarks.machine import machine_header
from minibench import content

SETTINGS = ("full", "use_tool_route", "use_domain_route", "use_decompose", "use_crop_search", "use_entity_check",
            "use_relevance_filter", "extended")


class CountingCache:
    """An engine that answers a repeated request from memory and tallies every request per stage."""

    def __init__(self, engine):
        self.engine = engine
        self.memory: dict[str, object] = {}
        self.tally: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0, 0])  # calls, requests, prompt, output

    @staticmethod
    def key(stage, request, sampling) -> str:
        image = hashlib.sha256(request.image.tobytes()).hexdigest() if request.image is not None else ""
        return json.dumps([stage, request.messages, image, repr(request.sampling_or(sampling))], sort_keys=True)

    def generate(self, requests, sampling, *, stage="chat"):
        keys = [self.key(stage, r, sampling) for r in requests]
        missing = [(k, r) for k, r in zip(keys, requests) if k not in self.memory]
        if missing:
            for (k, _), result in zip(missing, self.engine.generate([r for _, r in missing], sampling, stage=stage)):
                self.memory[k] = result
        results = [self.memory[k] for k in keys]
        counts = self.tally[stage]
        counts[0] += 1
        counts[1] += len(requests)
        counts[2] += sum(r.prompt_tokens for r in results)
        counts[3] += sum(r.output_tokens for r in results)
        return results


# --- the capable stand-in ----------------------------------------------------------------------

def _turn_facts() -> dict[str, dict]:
    """query -> its picture's true entities, answer source, category, domain and answer keys."""
    truth = {key: list(entities) for key, entities in content.KG_ENTRIES if isinstance(key, str)}
    facts = {}
    turns = [(pic, turn) for pic, turn in content.SINGLE_TURN]
    turns += [(pic, turn) for pic, conversation in content.MULTI_TURN for turn in conversation]
    for pic, (domain, category, _, query, _, where) in turns:
        facts[query] = {"entities": truth.get(pic, []), "where": where, "category": category, "domain": domain,
                        "keys": content.ANSWER_KEYS.get(query, [])}
    return facts


def last_user_text(request) -> str:
    return request.messages[-1]["content"]


def capable_engine():
    from agents.engines.base import ChatEngine, ChatResult

    facts = _turn_facts()
    by_length = sorted(facts, key=len, reverse=True)

    def fact(request) -> dict:
        text = last_user_text(request)
        return next((facts[q] for q in by_length if q in text), {"entities": [], "where": "none", "category": "",
                                                                  "domain": "", "keys": []})

    def route(r):
        f = fact(r)
        search = {"kg": "image", "web": "both", "image": "none"}.get(f["where"], "both")
        kind = f["category"] if f["category"] in ("multi-hop", "comparison") else "simple"
        return (f"Needs External Info: {'no' if f['where'] == 'image' else 'yes'}\nIs Real-Time: no\n"
                f"Search: {search}\nQuestion Type: {kind}\nDomain: {f['domain']}")

    def summarize(r):
        names = fact(r)["entities"]
        return f"A photo of {names[0]}." if names else "A photo."

    def decompose(r):
        f = fact(r)
        question = next(q for q in facts if facts[q] is f)
        return "\n".join(f"Query: {name} {question}" for name in f["entities"][:3])

    def entity_check(r):
        named = re.search(r'matched the user\'s photo to: "(.*)"', last_user_text(r))
        return "yes" if named and named.group(1) in fact(r)["entities"] else "no"

    def relevance(r):
        f = fact(r)
        notes = re.findall(r"^\[Info (\d+)\] (.*)$", last_user_text(r), re.M)
        words = [n.lower() for n in f["entities"]] + [k.split("|")[0].lower() for k in f["keys"]]
        return "\n".join(f"Info {m}: {'yes' if any(w in chunk.lower() for w in words) else 'no'}" for m, chunk in notes)

    script = {"route": route, "summarize": summarize, "decompose": decompose, "entity_check": entity_check,
              "relevance": relevance}

    class Capable(ChatEngine):
        """Writes the scripted reply; tokens are estimated at 4 characters each."""

        supports_images = True

        def generate(self, requests, sampling, *, stage="chat"):
            self.stage = stage
            return super().generate(requests, sampling, stage=stage)

        def _generate(self, requests, sampling):
            texts = [script[self.stage](r) for r in requests]
            return [ChatResult(text=t, prompt_tokens=len(str(r.messages)) // 4, output_tokens=len(t) // 4)
                    for t, r in zip(texts, requests)]

    return Capable("capable-stand-in")


# --- the measurement ---------------------------------------------------------------------------

def measure(setting: str, turns: list[RecallTurn], engines, pipeline, base_cfg) -> dict:
    from PIL import Image

    from agents.cruise.chain import gather_evidence
    from agents.cruise.system import CRUISE
    from agents.run_stages import open_batch
    from agents.runtime.deadline import StageCosts
    from agents.stages.types import Turn, column
    from evaluator.scoring.coverage import answer_in_context
    from minibench.build_benchmark import picture_bytes

    if setting == "extended":
        from agents.config.groups import PEER_SWITCHES

        cfg = base_cfg.replace(**dict.fromkeys(PEER_SWITCHES, True), preset="extended")
    else:
        cfg = base_cfg.replace(**({setting: True} if setting != "full" else {}))
    vlm = engines.vlm
    vlm.tally.clear()
    found, gathered = {"kg": [], "web": []}, []
    for start in range(0, len(turns), cfg.run.batch_size):
        group = turns[start:start + cfg.run.batch_size]
        batch = [Turn(t.query, Image.open(io.BytesIO(picture_bytes(t.picture))).convert("RGB"), []) for t in group]
        got = gather_evidence(open_batch(CRUISE, batch, engines, pipeline, cfg, StageCosts()))
        for turn, evidence, retrieval in zip(group, column(got.fields, "evidence"), column(got.fields, "retrieval")):
            found[turn.source].append(answer_in_context(turn.keys, "\n".join(evidence.kept)))
            gathered.append((retrieval, evidence))
    batches = -(-len(turns) // cfg.run.batch_size)

    def share(values):
        return round(sum(values) / len(values), 3) if values else 0.0

    cost = {stage: [round(v / batches, 1) for v in values] for stage, values in vlm.tally.items()}
    return {
        "setting": setting, "recall_kg": share(found["kg"]), "recall_web": share(found["web"]),
        "recall_kg_web": share(found["kg"] + found["web"]),
        "retrieved_share": share([bool(r.items) for r, _ in gathered]),
        "context_share": share([bool(e.kept) for _, e in gathered]),
        "mean_chunks": round(sum(len(r.chunks) for r, _ in gathered) / len(gathered), 1),
        "mean_kept": round(sum(len(e.kept) for _, e in gathered) / len(gathered), 2),
        "per_batch": cost,  # stage -> [calls, requests, prompt tokens, output tokens] per batch
    }


def main() -> None:
    from agents.config.loading import load_config_from_settings
    from agents.engines.base import Engines, Ledger
    from agents.factory import build_engines
    from evaluator.harness.resolved import resolve_run
    from evaluator.search.pipeline import build_search_pipeline
    from minibench.build_indices import prepare_indices

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--engine", choices=["cpu", "scripted"], default="cpu")
    parser.add_argument("--limit", type=int, default=0, help="only the first N answerable turns")
    parser.add_argument("--settings", nargs="+", default=list(SETTINGS), choices=SETTINGS)
    parser.add_argument("--set", action="append", default=[], metavar="FIELD=VALUE")
    parser.add_argument("--json", action="store_true", help="print JSON lines instead of a table")
    args = parser.parse_args()
    # No deadline here: this measures what the stages find, not whether they fit in time.
    try:
        cfg = load_config_from_settings("cpu", "full", args.set).replace(turn_budget_s=1e6)
    except ValueError as exc:
        raise SystemExit(str(exc)) from None
    real = build_engines(cfg, Ledger())
    model = {"cpu": lambda: real.vlm, "scripted": capable_engine}[args.engine]()
    cached = CountingCache(model)
    engines = Engines(cached, cached, real.reranker, real.coarse)  # one tally: the router's calls count as "route"
    search = resolve_run("cpu").search
    prepare_indices(search)
    pipeline = build_search_pipeline(search, web=True)
    turns = answerable_turns()
    turns = turns[: args.limit] if args.limit else turns
    print(machine_header())
    print(f"engine: {args.engine}; {len(turns)} KG/web-answerable turns; batch {cfg.run.batch_size}; "
          f"crop_mode {cfg.peer_stages.crop_mode}")
    header = ("setting", "recall kg+web", "kg", "web", "retrieved", "context", "chunks", "kept", "added per batch")
    if not args.json:
        print(" | ".join(header))
    base = None
    for setting in args.settings:
        row = measure(setting, turns, engines, pipeline, cfg)
        if setting == "full":
            base = row["per_batch"]
        added = {s: v for s, v in row["per_batch"].items() if base is None or s not in base or v != base[s]}
        if args.json:
            print(json.dumps({**row, "added_per_batch": added}))
            continue
        extra = "; ".join(f"{s}: {c[0]:g} calls, {c[1]:g} req, {c[2]:g} in / {c[3]:g} out tok" for s, c in added.items())
        print(" | ".join(str(x) for x in (setting, row["recall_kg_web"], row["recall_kg"], row["recall_web"],
                                           row["retrieved_share"], row["context_share"], row["mean_chunks"],
                                           row["mean_kept"], extra or "-")))


if __name__ == "__main__":
    main()

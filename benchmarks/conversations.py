"""Follow-up turns against first turns, from finished multi-turn runs of local_evaluation.py.

    python -m benchmarks.conversations AFTER_DIR [--before BEFORE_DIR] [--modes rule model both]
                                       [--rerank] [--reuse]

AFTER_DIR / BEFORE_DIR: output folders of `local_evaluation.py --dataset-type multi-turn` (with
and without the standalone question, e.g. `--set standalone_mode=off --set
conversation_cache_size=0` for "before"); the dataset's provenance.json (beside the split, as the
run recorded it) says each follow-up's referent and each KG / web turn's answer keys. Prints:

- referent: the share of follow-ups whose web query names their referent (any of its names,
  case-blind, whole words), overall, by where the name is found (an earlier question, an earlier
  gold answer, the photo) and for referents that are not the photo's own entity;
- tau_ret: the share of first turns and of follow-ups whose retrieval score S_ret passes the
  run's tau_ret;
- seconds per turn (its batch's wall time over the batch's turns), first turns against
  follow-ups, and the batches over budget;
- `--modes`: the standalone question written offline by each mode for every follow-up, with the
  history the evaluator handed over (the agent's own answers) and with the gold answers in their
  place (what the modes do when the earlier turns were answered), the first web page each earlier
  turn of the run found standing in for an "I don't know" (as the rule reads it), and the web
  query that would have run (the run's summary and image names added as s3_retrieve adds them):
  referent shares and the model's seconds per follow-up;
- `--rerank`: the reranker score of the best answer-holding chunk the run retrieved for each
  follow-up, scored against the plain q' and against the rule's standalone q' (written offline
  from the run's own answers, and from gold ones), paired, with a 95% bootstrap interval;
- `--recall-at-size N`: answer recall@1/5/10 of the web queries asked (and of those the modes
  wrote offline with gold-answer histories) among N distractor pages of the same kinds
  (benchmarks/recall_at_size.py), first turns against follow-ups, web-answerable turns only;
- `--scores`: both rule sets' multi-turn figures with 95% intervals (the offline lexical judge)
  and the paired comparison after - before over the turns both runs hold;
- `--reuse`: seconds per follow-up of perception and the whole photo's image search with the
  per-conversation reuse and without it (the turns in the run's order).

Fills docs/benchmarks.md, "Conversations".
"""
from __future__ import annotations

import argparse
import json
import re
import statistics
import time
from pathlib import Path

import numpy as np

from benchmarks.machine import machine_header
from evaluator.harness.run_record import read_run_record
from evaluator.scoring.coverage import answer_in_context, provenance_for


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def load_run(folder: Path) -> dict:
    """The run's turns (answers joined with traces), batches and config."""
    folder = Path(folder)
    traces = {t["interaction_id"]: t for t in read_jsonl(folder / "traces.jsonl")}
    rows = []
    for answer in read_jsonl(folder / "answers.jsonl"):
        rows.append({**answer, "trace": traces.get(answer["interaction_id"], {})})
    return {"rows": rows, "batches": read_jsonl(folder / "batches.jsonl"), "record": read_run_record(folder)}


def run_dataset(run: dict) -> str | None:
    return run["record"].dataset


def names_referent(text: str, names: list[str]) -> bool:
    folded = " ".join(str(text).lower().split())
    return any(re.search(r"(?<![a-z0-9])" + re.escape(" ".join(n.lower().split())) + r"(?![a-z0-9])", folded)
               for n in names if n.strip())


def share(flags: list[bool]) -> str:
    return f"{sum(flags)}/{len(flags)} ({100.0 * sum(flags) / len(flags):.0f}%)" if flags else "0/0"


def referent_groups(follow_ups: list[dict], notes: dict, named) -> dict[str, list[bool]]:
    """Share groups of `named(row, referent) -> bool` over the follow-ups that have a referent."""
    groups: dict[str, list[bool]] = {"all": [], "not the photo's entity": []}
    for row in follow_ups:
        referent = (notes.get(row["interaction_id"]) or {}).get("referent")
        if not referent:
            continue
        hit = named(row, referent)
        groups["all"].append(hit)
        groups.setdefault(f"named first by: {referent['source']}", []).append(hit)
        if not referent.get("photo_entity"):
            groups["not the photo's entity"].append(hit)
    return groups


def web_query_names(row: dict, referent: dict) -> bool:
    trace = row["trace"]
    return names_referent(trace.get("web_query") or trace.get("retrieval_query") or row["query"], referent["names"])


def seconds_per_turn(run: dict) -> dict:
    sizes = {b["batch"]: b["turns"] for b in run["batches"]}
    per = {"first turns": [], "follow-ups": []}
    for row in run["rows"]:
        turns = sizes.get(row.get("batch")) or 1
        per["first turns" if row["turn_idx"] == 0 else "follow-ups"].append(row["batch_wall_ms"] / 1000.0 / turns)
    over = sum(1 for b in run["batches"] if b.get("budget_ms") and b["wall_ms"] > b["budget_ms"])
    return {k: round(statistics.mean(v), 2) if v else None for k, v in per.items()} | {
        "batches": len(run["batches"]), "over budget": over}


def tau_ret_shares(run: dict, tau: float) -> dict[str, str]:
    out = {}
    for label, first in (("first turns", True), ("follow-ups", False)):
        flags = [float(r["trace"].get("retrieval_score") or 0.0) >= tau for r in run["rows"] if (r["turn_idx"] == 0) == first]
        out[label] = share(flags)
    return out


def histories(rows: list[dict], gold: bool) -> dict[str, list[dict]]:
    """interaction_id -> the message history the evaluator hands that turn: the earlier questions
    with the agent's own answers, or (gold) with the gold answers in their place."""
    by_session: dict[str, list[dict]] = {}
    for row in sorted(rows, key=lambda r: (r["session_id"], r["turn_idx"])):
        by_session.setdefault(row["session_id"], []).append(row)
    out = {}
    for turns in by_session.values():
        history: list[dict] = []
        for row in turns:
            out[row["interaction_id"]] = list(history)
            answer = row["ground_truth"] if gold else row["agent_response"]
            history += [{"role": "user", "content": row["query"]}, {"role": "assistant", "content": answer}]
    return out


def found_pages(rows: list[dict]) -> dict[str, dict[int, list[str]]]:
    """interaction_id -> {earlier turn number: the name of the first web page that turn's search
    found}, as s3_retrieve keeps them for the rule (`standalone_found_pages` = 1), from the run's
    traces: what the rule reads for an earlier turn answered "I don't know"."""
    by_session: dict[str, list[dict]] = {}
    for row in sorted(rows, key=lambda r: (r["session_id"], r["turn_idx"])):
        by_session.setdefault(row["session_id"], []).append(row)
    out = {}
    for turns in by_session.values():
        found: dict[int, list[str]] = {}
        for row in turns:
            out[row["interaction_id"]] = dict(found)
            web = [i.get("name") for i in row["trace"].get("retrieved") or [] if i.get("source") == "web" and i.get("name")]
            if web:
                found[row["turn_idx"]] = web[:1]
    return out


def fused_suffix(trace: dict) -> str:
    """What s3_retrieve added to q' for web search: the photo's confident image names."""
    web, query = trace.get("web_query") or "", trace.get("retrieval_query") or ""
    return web[len(query):].strip() if web.startswith(query) else ""


def offline_modes(run: dict, notes: dict, modes: list[str], cfg, limit: int | None = None,
                  histories_of: tuple[bool, ...] = (False, True)) -> dict[tuple[str, bool], dict[str, str]]:
    """Each mode's standalone question for every follow-up, with the agent's own and the gold
    answers as history; the web query it would give; referent shares. Returns (mode, gold) ->
    interaction id -> that web query."""
    from agents.stages.s1c_standalone import standalone_batch, with_standalone
    from agents.stages.s3_retrieve import expanded_query
    from agents.stages.types import Turn

    follow_ups = [r for r in run["rows"] if r["turn_idx"] > 0 and (notes.get(r["interaction_id"]) or {}).get("referent")]
    follow_ups = follow_ups[:limit] if limit else follow_ups
    engine = None
    if any(m in ("model", "both") for m in modes):
        from agents.engines.base import Ledger
        from agents.factory import build_engines

        engine = build_engines(cfg, Ledger()).vlm
    out = {}
    pages = found_pages(run["rows"])
    for gold in histories_of:
        history = histories(run["rows"], gold)
        turns = [Turn(r["query"], None, history[r["interaction_id"]]) for r in follow_ups]
        found = [pages[r["interaction_id"]] for r in follow_ups]
        summaries = [r["trace"].get("summary") or "" for r in follow_ups]
        for mode in modes:
            mcfg = cfg.replace(standalone_mode=mode)
            start = time.perf_counter()
            standalones = []
            for i in range(0, len(turns), cfg.run.batch_size):
                end = i + cfg.run.batch_size
                standalones += standalone_batch(turns[i:end], summaries[i:end], engine, mcfg, found[i:end])
            seconds = (time.perf_counter() - start) / max(len(turns), 1)
            shown = with_standalone(turns, standalones)
            queries = {r["interaction_id"]: f"{expanded_query(t, s)} {fused_suffix(r['trace'])}"
                       for r, t, s in zip(follow_ups, shown, summaries)}
            groups = referent_groups(follow_ups, notes,
                                     lambda row, ref: names_referent(queries[row["interaction_id"]], ref["names"]))
            fallbacks = sum(1 for s in standalones if s.fallback)
            print(f"  history with {'gold' if gold else 'own'} answers, mode {mode:<5} "
                  f"{seconds:5.2f} s/follow-up, {fallbacks} fell back: "
                  + "; ".join(f"{k} {share(v)}" for k, v in groups.items()))
            out[(mode, gold)] = queries
    return out


def recall_at_index_size(runs: dict, notes: dict, offline: dict, distractors: int) -> None:
    """Answer recall@10 of the web queries the runs asked (and those the offline modes wrote with
    gold-answer histories) among `distractors` pages about other entities of the same kinds
    (benchmarks/recall_at_size.py), first turns against follow-ups, for the web-answerable turns."""
    from benchmarks.recall_at_size import benchmark_pairs, recall_at_size, web_pipeline

    urls = {query: pages for group in ("first turns", "follow-ups") for query, pages in benchmark_pairs()[group]}
    pipeline = web_pipeline(distractors)

    def line(label: str, pairs: list) -> None:
        result = recall_at_size(pairs, distractors, (1, 5, 10), pipeline)
        print(f"  {label}: {result['queries']} turns, recall@1/5/10 "
              + " / ".join(f"{result['recall'][k]:.2f}" for k in (1, 5, 10)))

    for label, run in runs.items():
        web = [r for r in run["rows"] if (notes.get(r["interaction_id"]) or {}).get("answer_source") == "web"
               and r["query"] in urls]
        for group, first in (("first turns", True), ("follow-ups", False)):
            pairs = [(r["trace"].get("web_query") or r["query"], urls[r["query"]]) for r in web
                     if (r["turn_idx"] == 0) == first]
            line(f"{label} run, {group}, the web query it asked", pairs)
    after = runs["after"]
    for (mode, gold), queries in offline.items():
        if gold:
            pairs = [(queries[r["interaction_id"]], urls[r["query"]]) for r in after["rows"]
                     if r["interaction_id"] in queries and r["query"] in urls
                     and (notes.get(r["interaction_id"]) or {}).get("answer_source") == "web"]
            line(f"offline, mode {mode}, history with gold answers, follow-ups", pairs)


def verdict_rows(run: dict) -> list[dict]:
    """One row per turn with the flags BEFORE the multi-turn cut, as the official turn CSV holds
    them, decided by the offline lexical judge against the data's accepted forms (the mini
    benchmark has no LLM judge here)."""
    from evaluator.scoring.lexical_judge import lexical_verdict
    from evaluator.scoring.scores import is_exact_match, is_miss

    rows = []
    for r in sorted(run["rows"], key=lambda r: (r["session_id"], r["turn_idx"])):
        answer = r["agent_response"]
        miss = is_miss(answer)
        exact = not miss and is_exact_match(answer, r["ground_truth"])
        correct = exact or (not miss and lexical_verdict(answer, r.get("ans_accepted"), bool(r.get("abstain_expected")))[0])
        rows.append({"session_id": r["session_id"], "interaction_id": r["interaction_id"], "turn_idx": r["turn_idx"],
                     "is_correct": correct, "is_miss": miss, "is_exact_match": exact,
                     "is_semantically_correct": correct})
    return rows


def scores(runs: dict) -> None:
    """Both rule sets' figures with 95% intervals per run, and the paired differences (after -
    before) over the turns both runs answered."""
    from evaluator.scoring.intervals import paired_differences
    from evaluator.scoring.multi_turn import multi_turn_figures

    verdicts = {label: verdict_rows(run) for label, run in runs.items()}
    for label, rows in verdicts.items():
        figures = multi_turn_figures(rows) or {}
        print(f"  {label}: {len(rows)} turns, {sum(r['is_correct'] for r in rows)} correct, "
              f"{sum(not r['is_miss'] for r in rows)} answered")
        for rules, block in (figures.get("rule_sets") or {}).items():
            shown = ", ".join(f"{k} {block['scores'][k]:.3f} {[round(x, 3) for x in block['intervals'][k] or []]}"
                              for k in ("accuracy", "truthfulness_score", "mean_multi_turn_conversation_score"))
            print(f"    {rules} ({block['counts']}): {shown}")
        if figures:
            print(f"    early stop took {figures['early_stop']['turns']} turns")
    if "before" in verdicts:
        shared = {r["interaction_id"] for r in verdicts["before"]} & {r["interaction_id"] for r in verdicts["after"]}
        a, b = ([r for r in verdicts[k] if r["interaction_id"] in shared] for k in ("before", "after"))
        for key, d in paired_differences(a, b).items():
            print(f"    paired after - before, {key}: {d['difference']:+.3f} "
                  f"[{d['interval'][0]:+.3f}, {d['interval'][1]:+.3f}] over {len(shared)} turns")


def paired_interval(differences: list[float], seed: int = 0, resamples: int = 2000) -> tuple[float, float, float]:
    values = np.asarray(differences, dtype=float)
    rng = np.random.default_rng(seed)
    means = values[rng.integers(0, len(values), (resamples, len(values)))].mean(axis=1)
    return float(values.mean()), float(np.percentile(means, 2.5)), float(np.percentile(means, 97.5))


def rerank_paired(run: dict, notes: dict, cfg) -> None:
    """The best answer-holding chunk's reranker score against the plain q' and the standalone q'
    (the rule's, written offline from the history the evaluator hands over, with the run's own
    answers and with gold ones), over the chunks the run retrieved, paired per follow-up."""
    from agents.engines.base import Ledger
    from agents.factory import build_reranker
    from agents.stages.s1c_standalone import standalone_batch
    from agents.stages.types import Turn

    reranker = build_reranker(cfg, Ledger())
    rule = cfg.replace(standalone_mode="rule")
    for gold in (False, True):
        history = histories(run["rows"], gold)
        pairs, s_ret = [], []  # (plain, standalone): answer chunk's score; S_ret passing tau_ret
        for row in run["rows"]:
            trace, keys = row["trace"], (notes.get(row["interaction_id"]) or {}).get("answer_keys") or []
            chunks = [c["text"] for c in trace.get("chunks") or []]
            if row["turn_idx"] == 0 or not chunks:
                continue
            (written,) = standalone_batch([Turn(row["query"], None, history[row["interaction_id"]])], [""], None, rule)
            summary = trace.get("summary") or ""
            plain = f"{row['query']} {summary}".strip()
            standalone = f"{written.question or row['query']} {summary}".strip()
            before = reranker.score([(plain, c) for c in chunks], stage="rerank")
            after = reranker.score([(standalone, c) for c in chunks], stage="rerank")
            s_ret.append((max(before) >= cfg.own.tau_ret, max(after) >= cfg.own.tau_ret))
            holding = [i for i, c in enumerate(chunks) if keys and answer_in_context(keys, c)]
            if holding:
                pairs.append((max(before[i] for i in holding), max(after[i] for i in holding)))
        if not pairs:
            print("  no follow-up with an answer-holding chunk")
            return
        mean, low, high = paired_interval([a - b for b, a in pairs])
        print(f"  history with {'gold' if gold else 'own'} answers: {len(pairs)} follow-ups with an answer-holding "
              f"chunk: plain q' {statistics.mean(b for b, _ in pairs):.3f}, standalone q' "
              f"{statistics.mean(a for _, a in pairs):.3f}; difference {mean:+.3f} [{low:+.3f}, {high:+.3f}]; "
              f"higher on {sum(a > b for b, a in pairs)}, lower on {sum(a < b for b, a in pairs)}; S_ret >= tau_ret "
              f"{cfg.own.tau_ret} on {sum(b for b, _ in s_ret)} -> {sum(a for _, a in s_ret)} of {len(s_ret)} follow-ups "
              "with chunks")


def photos(dataset: str, max_side: int) -> dict:
    """session id -> its photo, as stage 0 prepares it, from the split's parquet file."""
    import io

    import pyarrow.parquet as pq
    from PIL import Image

    from agents.stages.s0_inputs import prepare_image

    out = {}
    for path in sorted(Path(dataset).glob("data/*.parquet")):
        for row in pq.read_table(path, columns=["session_id", "image"]).to_pylist():
            out[row["session_id"]] = prepare_image(Image.open(io.BytesIO(row["image"]["bytes"])), max_side)
    return out


def reuse_seconds(run: dict, cfg) -> None:
    """Perception and the whole photo's image search for each turn, in the run's order, with the
    per-conversation reuse (warmed by the first turns, as in the run) and without it."""
    from agents.runtime.conversation_cache import ConversationCache
    from agents.stages.s0a_perceive import PerceptionCache, perceive_batch, warm_up_perception
    from agents.stages.s3_retrieve import whole_photo_hits
    from agents.stages.types import Turn
    from evaluator.harness.resolved import resolve_run
    from evaluator.search.pipeline import build_search_pipeline

    images = photos(run_dataset(run), cfg.inputs.image_max_side)
    pipeline = build_search_pipeline(resolve_run("cpu").search, web=False)
    warm_up_perception(cfg)
    history = histories(run["rows"], gold=False)
    order = sorted(run["rows"], key=lambda r: (r["batch"], r["turn_idx"]))
    for reuse in (False, True):
        # the stages size their cache from the config: sizes 0 keep nothing
        rcfg = cfg if reuse else cfg.replace(perception_cache_size=0, conversation_cache_size=0)
        perception, conversations = PerceptionCache(), ConversationCache()
        spent = {"first turns": [], "follow-ups": []}
        for row in order:
            turn = Turn(row["query"], images[row["session_id"]], history[row["interaction_id"]])
            start = time.perf_counter()
            perceive_batch([turn], rcfg, perception)
            whole_photo_hits(turn, pipeline, rcfg, conversations)
            spent["first turns" if row["turn_idx"] == 0 else "follow-ups"].append(time.perf_counter() - start)
        print(f"  {'with' if reuse else 'without'} reuse: perception + image search "
              + ", ".join(f"{k} {statistics.mean(v):.2f} s/turn" for k, v in spent.items() if v))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("after", type=Path)
    parser.add_argument("--before", type=Path)
    parser.add_argument("--modes", nargs="*", default=[])
    parser.add_argument("--limit", type=int, help="--modes on the first N follow-ups only (the model's time)")
    parser.add_argument("--gold-only", action="store_true", help="--modes with gold-answer histories only")
    parser.add_argument("--rerank", action="store_true")
    parser.add_argument("--reuse", action="store_true")
    parser.add_argument("--scores", action="store_true",
                        help="also both rule sets' figures with intervals (lexical judge) and the paired comparison")
    parser.add_argument("--recall-at-size", type=int, metavar="DISTRACTORS",
                        help="also answer recall@10 among this many distractor pages (e.g. 5000)")
    args = parser.parse_args()
    from agents.config.loading import load_config

    cfg = load_config("cpu")
    print(machine_header())
    runs = {"after": load_run(args.after)}
    if args.before:
        runs = {"before": load_run(args.before), **runs}
    notes = provenance_for(run_dataset(runs["after"]))
    for label, run in runs.items():
        follow_ups = [r for r in run["rows"] if r["turn_idx"] > 0]
        print(f"{label}: {len(run['rows'])} turns, {len(follow_ups)} follow-ups")
        groups = referent_groups(follow_ups, notes, web_query_names)
        print("  web query names the referent: " + "; ".join(f"{k} {share(v)}" for k, v in groups.items()))
        print(f"  S_ret >= tau_ret {cfg.own.tau_ret}: " + "; ".join(f"{k} {v}" for k, v in tau_ret_shares(run, cfg.own.tau_ret).items()))
        print("  seconds per turn: " + ", ".join(f"{k} {v}" for k, v in seconds_per_turn(run).items()))
    offline = {}
    if args.modes:
        print("standalone modes, offline:")
        offline = offline_modes(runs["after"], notes, args.modes, cfg, args.limit,
                                (True,) if args.gold_only else (False, True))
    if args.recall_at_size:
        print(f"answer recall among {args.recall_at_size} distractor pages:")
        recall_at_index_size(runs, notes, offline, args.recall_at_size)
    if args.scores:
        print("multi-turn scores (offline lexical judge, flags before the cut):")
        scores(runs)
    if args.rerank:
        print("reranker score of the answer-holding chunk, plain q' against standalone q':")
        rerank_paired(runs["after"], notes, cfg)
    if args.reuse:
        print("per-conversation reuse:")
        reuse_seconds(runs["after"], cfg)


if __name__ == "__main__":
    main()

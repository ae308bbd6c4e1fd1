"""Calibrate the finalizer's thresholds offline from finished runs' traces; no model runs again.

    python -m tools.calibrate RUN_DIR [RUN_DIR ...] [--folds 5] [--output FILE]
                                   [--eval-model gpt-4o-mini] [--eval-base-url URL]

Every trace keeps what Algorithm 1 reads (the RAG answer a', the real-time label, the context,
the consistency verdict, the CoV confidence, S_ret, the RAG answer's token probabilities) and
every chunk with its reranker score. The judge (cached, as in the evaluation) decides whether each
a' is correct; with no LLM judge, the offline lexical judge does where the run's answers.jsonl
carries accepted answer forms (the mini benchmark), else only exact matches count. Each setting of a grid over tau_ret, tau_low, tau_high, min_token_prob and the MAD
lambda is then replayed through the run's own decision rule (`decide_from_trace` of its system: CRUISE's
Algorithm 1, or QA-Dragon's or SAM-RAG's verifiers: System.decide, agents/runtime/system.py); lambda re-runs
`select_chunks` on the traced scores, and a turn whose context the new lambda changes counts as
"I don't know" (the model never answered with that context, so no answer can be credited).
Scores are the single-turn truthfulness (2*correct + miss)/n - 1; multi-turn early stopping is
not replayed. In a peer system's traces `rag_answer` is the answer its verifiers judged (QA-Dragon's
post-answer or draft, SAM-RAG's answer after isUse); `tau_low` is their support cut and
`min_token_prob` QA-Dragon's white-box gate, while tau_ret, tau_high and lambda do not move them.

A setting chosen on the same turns it is scored on looks better than it is. So the turns are
split by conversation into k folds; for each fold the best setting on the other folds is scored on
the held-out fold, next to the defaults (the thresholds the runs' profile and preset set) on the
same fold, and the spread across folds is shown. With fewer than 30 judged answered turns the data
cannot move a threshold: calibration.json then keeps those thresholds and says so. `local_evaluation.py --calibration FILE` and
`CruiseAgent(..., calibration=FILE)` load the file's "settings".
"""
from __future__ import annotations

import argparse
import functools
import itertools
import json
import random
import statistics
from pathlib import Path

from agents.base_agent import IDK_ANSWER
from agents.calibration import CALIBRATED_FIELDS
from agents.config.cruise_config import CruiseConfig
from agents.config.loading import apply_held, config_from_record, default_config, load_config
from agents.config.presets import PRESETS
from agents.config.set_strings import parse_settings
from agents.engines.base import TOKEN_COUNT
from agents.engines.registry import CHAT_ENGINES
from agents.runtime.batch import decide_from_trace
from agents.runtime.system import system_for
from agents.settings import SettingError
from agents.stages import s5_rerank
from agents.stages.s5_rerank import select_chunks
from evaluator.harness.run_record import RunRecord, read_run_record
from evaluator.harness.runner import read_jsonl, saved_answers
from evaluator.scoring.judge import DEFAULT_EVAL_MODEL, Judge, JudgeItem, find_api_key
from evaluator.scoring.lexical_judge import ANSWER_FORM_KEYS, OFFLINE_JUDGE_LABEL, has_answer_forms, lexical_verdict
from evaluator.scoring.scores import is_exact_match, is_miss, needs_judge

GRID = {
    "tau_ret": [round(0.1 * i, 1) for i in range(11)],
    # below 0.5 for a CoV read as yes/no odds (cov_mode "yes_no"): a small model's P(yes) sits
    # between 0.3 and 0.5 on the mini benchmark, so only cuts there can tell its answers apart
    "tau_low": [0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0],
    "tau_high": [0.8, 0.9, 1.0, 1.01],  # 1.01: never accept an answer without context
    "min_token_prob": [0.0, 0.05, 0.1, 0.2, 0.3, 0.5],  # 0.0: the gate is off
    "mad_lambda": [0.5, 1.0, 1.5, 2.0, 3.0],
}
assert tuple(GRID) == CALIBRATED_FIELDS
DEFAULTS = {name: default_config().value(name) for name in GRID}
PAPER = {"tau_ret": DEFAULTS["tau_ret"], "tau_low": 0.9, "tau_high": 1.0, "min_token_prob": 0.0}  # no token gate
MIN_JUDGED_ANSWERED = 30  # fewer judged answered turns than this: the runs' own thresholds stand
FOLDS = 5


def recorded_config(run_dir: Path) -> CruiseConfig:
    """The configuration the run's agent had, as its record (run_config.json) says; a run recorded
    before agents described themselves is rebuilt from its profile, preset and --set."""
    saved = read_run_record(run_dir) or RunRecord()
    described = saved.agent_description or {}
    if described.get("config"):
        return config_from_record({**described["config"], **(described.get("where") or {})})
    profile = saved.profile if saved.profile in ("cpu", "l40s", "served") else "cpu"
    preset = saved.preset or "full"
    try:
        return load_config(profile, preset, **parse_settings(saved.args.get("set") or []))
    except SettingError:
        return load_config(profile, preset)


def run_config_for(run_dir: Path, preset: str | None) -> CruiseConfig:
    """The configuration a run's agent had, with the thresholds its profile, stack and preset set
    (not any --set of them): the replay starts there."""
    cfg = recorded_config(Path(run_dir))
    preset = preset if preset in PRESETS else cfg.preset
    base = load_config(cfg.profile or "cpu", preset, stack=cfg.stack)
    return apply_held(cfg.replace(preset=preset), {name: base.value(name) for name in GRID if base.has(name)})


def load_turns(run_dir: Path) -> list[dict]:
    """Traces joined with their questions and ground truths (from the run's results file)."""
    import pandas as pd

    run_dir = Path(run_dir)
    check_every_turn_answered(run_dir)
    truth = pd.read_csv(run_dir / "turn_evaluation_results_all.csv", dtype=str).set_index("interaction_id")
    # the accepted answer forms, where the run's data carried them (the offline judge's input)
    forms = {iid: {k: r.get(k) for k in ANSWER_FORM_KEYS} for iid, r in saved_answers(run_dir).items()}
    configs: dict[str, CruiseConfig] = {}
    engine = run_engine(run_dir)
    turns = []
    for trace in read_jsonl(run_dir / "traces.jsonl"):
        iid = trace.get("interaction_id")
        if iid in truth.index and trace.get("rag_answer") is not None:
            preset = trace.get("preset", "full")
            if preset not in configs:
                configs[preset] = run_config_for(run_dir, preset)
            check_token_count(trace, engine, run_dir)
            turns.append({**trace, "query": truth.at[iid, "query"], "ground_truth": truth.at[iid, "ground_truth"],
                          **forms.get(iid, {}), "run": str(run_dir), "config": configs[preset]})
    return turns


def run_engine(run_dir: Path) -> str:
    """The chat engine a run used."""
    return recorded_config(Path(run_dir)).models.engine


def counted_end_token(engine: str) -> bool:
    """Whether the engine's token probabilities, in traces written before they recorded
    `token_count`, included the end-of-sequence token (an engine no longer known: assume so)."""
    kind = CHAT_ENGINES.get(engine)
    return kind is None or kind.counted_end_token


def check_every_turn_answered(run_dir: Path) -> None:
    """Refuse a run whose agent skipped the turns its retrieval rules decided (`skip_decided_turns`):
    their traces hold no answer, so a lower tau_ret would replay them as "I don't know" where
    the chain would have answered."""
    saved = read_run_record(run_dir) or RunRecord()
    if ((saved.agent_description or {}).get("config") or {}).get("skip_decided_turns"):
        raise SystemExit(f"{run_dir}: the run skipped the turns tau_ret decided (skip_decided_turns), so their "
                         "traces hold no answer to replay; run the evaluation again with --set "
                         "skip_decided_turns=false and calibrate on that run.")


def check_token_count(trace: dict, engine: str, run_dir: Path) -> None:
    """Refuse a trace whose token probabilities may include the end-of-sequence token: one
    without "token_count" from a run on vLLM or a server (they listed it); transformers always
    left it out, so its runs' traces stand as they are. Their probabilities cannot be redone
    (the traces keep no per-token figures), and mixing the two would tune min_token_prob on
    numbers that mean different things."""
    counted = trace.get("token_count")
    if trace.get("rag_min_token_prob") is None or counted == TOKEN_COUNT:
        return
    if counted is None and not counted_end_token(engine):
        return
    raise SystemExit(
        f"{run_dir}: the traces' token probabilities were counted as "
        f"{counted or f'the {engine} engine gave them, end-of-sequence token included'}, not with the "
        f"{TOKEN_COUNT}; min_token_prob cannot be calibrated on them. Run the evaluation again with this "
        "version and calibrate on that run.")


def rag_verdicts(turns: list[dict], judge: Judge | None) -> dict[str, bool | None]:
    """interaction_id -> is the RAG answer correct: exact match, else the judge (with no LLM judge,
    the offline lexical judge where the turn carries accepted answer forms); None = unknown."""
    verdicts: dict[str, bool | None] = {}
    asking = []
    for t in turns:
        if is_miss(t["rag_answer"]) or is_exact_match(t["rag_answer"], t["ground_truth"]):
            verdicts[t["interaction_id"]] = is_exact_match(t["rag_answer"], t["ground_truth"])
        else:
            verdicts[t["interaction_id"]] = None
            if needs_judge(t["rag_answer"], t["ground_truth"]):
                if judge is None and has_answer_forms(t):
                    verdicts[t["interaction_id"]] = lexical_verdict(
                        t["rag_answer"], t.get("ans_accepted"), bool(t.get("abstain_expected")))[0]
                else:
                    asking.append(t)
    if judge is not None and asking:
        items = [JudgeItem(t["interaction_id"], t["query"], t["ground_truth"], t["rag_answer"]) for t in asking]
        for key, outcome in judge.judge_all(items).items():
            verdicts[key] = outcome.verdict
    return verdicts


def rag_correctness(turns: list[dict], judge: Judge | None) -> dict[str, bool]:
    """interaction_id -> correct; an unjudged answer counts as incorrect (as in the evaluation)."""
    return {key: bool(v) for key, v in rag_verdicts(turns, judge).items()}


def base_config(turn: dict) -> CruiseConfig:
    """The configuration the turn ran under (its run's, else its preset's on the cpu profile)."""
    if not isinstance(turn.get("config"), CruiseConfig):
        turn["config"] = preset_config(turn.get("preset") if turn.get("preset") in PRESETS else "full")
    return turn["config"]


@functools.cache
def preset_config(preset: str) -> CruiseConfig:
    return load_config("cpu", preset)


def mad_context(system) -> bool:
    """Whether the MAD filter chooses `system`'s context: its list holds the shared rerank stage
    (agents/stages/s5_rerank.py), whose threshold the MAD settings set."""
    return any(stage is s5_rerank.STAGE for stage in system.stages)


def context_changed(turn: dict, cfg: CruiseConfig) -> bool:
    """Would `select_chunks` with cfg's MAD settings keep another context than the traced one?
    Never for a system whose context the MAD filter does not choose (the peers')."""
    chunks = turn.get("chunks")
    if not chunks or not mad_context(system_for(cfg)):
        return False
    evidence = select_chunks([c["text"] for c in chunks], [None if c["score"] is None else float(c["score"]) for c in chunks], cfg,
                             [c.get("last_modified", "") for c in chunks])
    return evidence.context != (turn.get("context") or "")


def outcome(turn: dict, correct: dict[str, bool], cfg: CruiseConfig, moved: bool | None = None) -> int:
    """+1 correct, -1 hallucination, 0 miss for one turn replayed under cfg. `moved`: whether cfg's
    lambda changes the turn's context (computed when not given)."""
    if moved is None:
        moved = cfg.retrieval.mad_lambda != base_config(turn).retrieval.mad_lambda and context_changed(turn, cfg)
    if moved:
        return 0
    answer = decide_from_trace(turn, cfg).answer
    if answer == IDK_ANSWER or is_miss(answer):
        return 0
    return 1 if correct.get(turn["interaction_id"]) else -1


def score(outcomes: list[int]) -> dict:
    right, wrong = outcomes.count(1), outcomes.count(-1)
    missed = len(outcomes) - right - wrong
    return {"correct": right, "hallucination": wrong, "miss": missed,
            "truthfulness": (2 * right + missed) / max(len(outcomes), 1) - 1}


def replay(turns: list[dict], correct: dict[str, bool], tau_ret: float, tau_low: float, tau_high: float,
           min_token_prob: float | None = None, mad_lambda: float | None = None) -> dict:
    """One setting over all turns; fields left None keep each run's own value."""
    setting = {"tau_ret": tau_ret, "tau_low": tau_low, "tau_high": tau_high}
    if min_token_prob is not None:
        setting["min_token_prob"] = min_token_prob
    if mad_lambda is not None:
        setting["mad_lambda"] = mad_lambda
    outcomes = [outcome(t, correct, apply_held(base_config(t), setting)) for t in turns]
    return {**setting, **score(outcomes)}


def settings_grid() -> list[dict]:
    return [dict(zip(GRID, values)) for values in itertools.product(*GRID.values())]


def outcome_table(turns: list[dict], correct: dict[str, bool], settings: list[dict]) -> list[list[int]]:
    """outcomes[s][i]: turn i replayed under settings[s]. Configs are built once per (run config,
    setting), and the lambda check once per (turn, lambda)."""
    bases = {id(base_config(t)): base_config(t) for t in turns}
    changed = {(i, lam): context_changed(t, base_config(t).replace(mad_lambda=lam))
               for i, t in enumerate(turns) for lam in GRID["mad_lambda"]
               if lam != base_config(t).retrieval.mad_lambda}
    table = []
    for setting in settings:
        configs = {key: apply_held(base, setting) for key, base in bases.items()}
        table.append([outcome(t, correct, configs[id(base_config(t))], changed.get((i, setting["mad_lambda"]), False))
                      for i, t in enumerate(turns)])
    return table


def starting_thresholds(turns: list[dict]) -> dict:
    """The thresholds the runs' profile and preset set (the first turn's run): what calibration is
    measured against, and what stands when there are too few turns to move them."""
    cfg = base_config(turns[0])
    return {name: cfg.value(name) if cfg.has(name) else DEFAULTS[name] for name in GRID}


def preference(setting: dict, truthfulness: float, defaults: dict = DEFAULTS) -> tuple:
    """Sort key: best truthfulness; on a tie the defaults, then the stricter setting."""
    is_default = all(setting[k] == defaults[k] for k in GRID)
    return (-round(truthfulness, 12), not is_default, -setting["tau_low"], -setting["tau_high"],
            -setting["tau_ret"], -setting["min_token_prob"], abs(setting["mad_lambda"] - defaults["mad_lambda"]))


def mean_of(row: list[int], indices: list[int]) -> float:
    """Truthfulness of the turns `indices` under one setting's outcomes."""
    return score([row[i] for i in indices])["truthfulness"] if indices else 0.0


def calibrate(turns: list[dict], correct: dict[str, bool], table: list[list[int]] | None = None,
              defaults: dict = DEFAULTS) -> list[dict]:
    """Every setting of the grid scored on all turns, best first."""
    settings = settings_grid()
    table = table or outcome_table(turns, correct, settings)
    rows = [{**s, **score(row)} for s, row in zip(settings, table)]
    return sorted(rows, key=lambda r: preference(r, r["truthfulness"], defaults))


def conversation_folds(turns: list[dict], k: int, seed: int = 0) -> list[list[int]]:
    """Turn indices per fold; all turns of one conversation share a fold."""
    conversations = sorted({t.get("session_id") or t["interaction_id"] for t in turns})
    random.Random(seed).shuffle(conversations)
    k = max(2, min(k, len(conversations)))
    fold_of = {c: i % k for i, c in enumerate(conversations)}
    folds: list[list[int]] = [[] for _ in range(k)]
    for i, t in enumerate(turns):
        folds[fold_of[t.get("session_id") or t["interaction_id"]]].append(i)
    return folds


def cross_validate(turns: list[dict], correct: dict[str, bool], k: int = FOLDS,
                   table: list[list[int]] | None = None, defaults: dict = DEFAULTS) -> dict:
    """Per fold: the setting that is best on the other folds, and its held-out truthfulness next to
    the defaults' on the same held-out turns."""
    settings = settings_grid()
    table = table or outcome_table(turns, correct, settings)
    default_row = outcome_table(turns, correct, [defaults])[0]
    folds = conversation_folds(turns, k)
    rows = []
    for f, held_out in enumerate(folds):
        held = set(held_out)
        train = [i for i in range(len(turns)) if i not in held]
        chosen = min(range(len(settings)), key=lambda s: preference(settings[s], mean_of(table[s], train), defaults))
        rows.append({"fold": f + 1, "conversations": len({turns[i].get("session_id") for i in held_out}),
                     "turns": len(held_out), "chosen": settings[chosen],
                     "train_truthfulness": mean_of(table[chosen], train),
                     "held_out_chosen": mean_of(table[chosen], held_out),
                     "held_out_defaults": mean_of(default_row, held_out)})

    def spread(key):
        values = [r[key] for r in rows]
        return {"mean": statistics.fmean(values), "std": statistics.pstdev(values) if len(values) > 1 else 0.0}

    gains = [r["held_out_chosen"] - r["held_out_defaults"] for r in rows]
    return {"folds": rows, "held_out_chosen": spread("held_out_chosen"),
            "held_out_defaults": spread("held_out_defaults"),
            "gain": {"mean": statistics.fmean(gains), "std": statistics.pstdev(gains) if len(gains) > 1 else 0.0}}


def judged_answered(turns: list[dict], verdicts: dict[str, bool | None]) -> int:
    """RAG answers that are not "I don't know" and whose correctness is known."""
    return sum(1 for t in turns if not is_miss(t["rag_answer"]) and verdicts.get(t["interaction_id"]) is not None)


def fmt_setting(s: dict) -> str:
    return (f"{s['tau_ret']:7.1f} {s['tau_low']:7.2f} {s['tau_high']:8.2f} {s['min_token_prob']:6.2f} "
            f"{s['mad_lambda']:6.1f}")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.calibrate", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("run_dirs", type=Path, nargs="+", metavar="RUN_DIR",
                        help="output folders of local_evaluation.py runs")
    parser.add_argument("--eval-model", default=DEFAULT_EVAL_MODEL, help="'None': exact match only")
    parser.add_argument("--eval-base-url", default=None)
    parser.add_argument("--folds", type=int, default=FOLDS, help="cross-validation folds over conversations")
    parser.add_argument("--output", type=Path, default=None, help="default: RUN_DIR/calibration.json (the first)")
    parser.add_argument("--top", type=int, default=10)
    args = parser.parse_args(argv)

    turns = [t for run_dir in args.run_dirs for t in load_turns(run_dir)]
    if not turns:
        raise SystemExit(f"{', '.join(map(str, args.run_dirs))}: no traces with RAG answers to calibrate on")
    for t in turns:  # conversations of different runs never share a fold by accident
        t["session_id"] = f"{t['run']}::{t.get('session_id') or t['interaction_id']}"
    key = find_api_key()
    judge = None
    if args.eval_model.lower() != "none" and (key or args.eval_base_url):
        judge = Judge(args.eval_model, args.eval_base_url, key)
    elif any(has_answer_forms(t) for t in turns):
        print(f"no LLM judge: the {OFFLINE_JUDGE_LABEL} decides the RAG answers against the data's "
              "accepted answer forms")
    else:
        print("no judge: only exact matches count as correct RAG answers; other answers are unjudged "
              "(counted as incorrect, as the evaluation does)")
    verdicts = rag_verdicts(turns, judge)
    correct = {k: bool(v) for k, v in verdicts.items()}
    judged = judged_answered(turns, verdicts)
    table = outcome_table(turns, correct, settings_grid())
    own = starting_thresholds(turns)
    rows = calibrate(turns, correct, table, own)
    defaults = {**own, **score(outcome_table(turns, correct, [own])[0])}
    paper = replay(turns, correct, **PAPER)
    cv = cross_validate(turns, correct, args.folds, table, own)
    too_few = judged < MIN_JUDGED_ANSWERED

    header = "tau_ret tau_low tau_high min_tp lambda  correct halluc  miss  truthfulness"
    print(f"{len(turns)} turns from {len(args.run_dirs)} run(s), {len({t['session_id'] for t in turns})} "
          f"conversations; {judged} judged answered turns (RAG answer not 'I don't know', verdict known)")
    print(f"\nAll turns (in-sample): the defaults, then the best {args.top} of {len(rows)} settings")
    print(header)
    for r in [defaults] + rows[: args.top]:
        print(f"{fmt_setting(r)}  {r['correct']:7d} {r['hallucination']:6d} {r['miss']:5d}  {r['truthfulness']:+.4f}")
    print(f"\n{len(cv['folds'])}-fold cross-validation over conversations (held-out truthfulness)")
    print("fold convs turns  chosen: tau_ret tau_low tau_high min_tp lambda  chosen  defaults")
    for r in cv["folds"]:
        print(f"{r['fold']:4d} {r['conversations']:5d} {r['turns']:5d}  {' ' * 8}{fmt_setting(r['chosen'])}  "
              f"{r['held_out_chosen']:+.3f}  {r['held_out_defaults']:+.3f}")
    c, d, g = cv["held_out_chosen"], cv["held_out_defaults"], cv["gain"]
    print(f"mean +- std over folds: chosen {c['mean']:+.3f} +- {c['std']:.3f}, defaults {d['mean']:+.3f} +- "
          f"{d['std']:.3f}, gain {g['mean']:+.3f} +- {g['std']:.3f}")

    best = {k: rows[0][k] for k in GRID}
    if too_few:
        settings = dict(own)
        verdict = (f"only {judged} judged answered turns (< {MIN_JUDGED_ANSWERED}): too few to move a threshold; "
                   "the runs' own thresholds stand")
    else:
        settings = best
        verdict = "settings: the best on all turns" + (
            "" if g["mean"] > 0 else " (note: on held-out folds they did not beat the defaults)")
    print(f"\n{verdict}: " + ", ".join(f"{k}={v}" for k, v in settings.items()))
    output = args.output or (args.run_dirs[0] / "calibration.json")
    output.write_text(json.dumps({
        "settings": settings, "token_count": TOKEN_COUNT, "defaults": own, "too_few": too_few, "verdict": verdict,
        "judged_answered_turns": judged, "turns": len(turns), "runs": [str(d) for d in args.run_dirs],
        "judge": judge.label if judge else (
            OFFLINE_JUDGE_LABEL if any(has_answer_forms(t) for t in turns) else "exact match only"), "grid": GRID,
        "best": rows[0], "paper": paper, "top": rows[:50], "cross_validation": cv,
    }, indent=1))
    print(f"wrote {output}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

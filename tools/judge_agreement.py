"""How much does the judge matter? Two judges, or a judge and people, over one run's answers.

    python -m tools.judge_agreement RUN_DIR [--rules crag-mm]
        [--model-a M] [--base-url-a URL] [--prompt-from-a DIR|ours]  (A: default the run's judge)
        [--model-b M] [--base-url-b URL] [--prompt-from-b DIR|ours]  (B: another judge)
        | [--labels FILE.csv] [--partial incorrect|correct|skip]     (B: people's labels)

Side A is the judge the run recorded (run_config.json: model, endpoint, prompt) unless a flag
says otherwise; side B is another judge (any flag of B; what it does not name is A's) or a label
file (CSV: interaction_id or question, label; the mapping is in evaluator/scoring/agreement.py
and docs/evaluation.md). For example our wording against the official prompt:

    python -m tools.judge_agreement outputs/RUN --rules crag-mm --prompt-from-b ~/src/CRAG-MM

It prints the agreement rate and Cohen's kappa with 95% bootstrap intervals, the 2x2 table, the
turns where they disagree and how each score moves from A to B. Verdicts come from the run's
judgments.jsonl where they were given for exactly this request, else from the judge cache
(.cache/judge/verdicts.jsonl), else the judge is asked; so a second comparison costs no request.
`judge_agreement(...)` is the function this command calls. Exit code 1 with one line for a run,
checkout or label file that cannot be read.
"""
from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from evaluator.harness.judging import saved_verdicts
from evaluator.harness.run_record import RunRecord, read_run_record
from evaluator.harness.runner import saved_answers
from evaluator.scoring.agreement import PARTIAL_CHOICES, Agreement, AgreementError, compare, judge_side, label_side
from evaluator.scoring.judge import Judge, find_api_key
from evaluator.scoring.official_judge import JudgePromptError, load_judge_prompt
from evaluator.scoring.rules import rule_set

SCORES = (("accuracy", "accuracy"), ("hallucination_rate", "hallucination rate"),
          ("truthfulness_score", "truthfulness"), ("missing", "missing"),
          ("mean_multi_turn_conversation_score", "conversation score"))
DISAGREEMENTS_SHOWN = 20
OURS_FLAG = "ours"  # --prompt-from-X ours: this package's wording, whatever the run used


def build_judge(model, base_url, prompt_from, rules, num_workers: int) -> Judge:
    key = find_api_key()
    if not key and not base_url:
        raise AgreementError("no judge: set OPENAI_API_KEY (environment or .env) or pass a base URL")
    return Judge(model, base_url, key, rules=rules, num_workers=num_workers,
                 official=load_judge_prompt(None if prompt_from == OURS_FLAG else prompt_from, rules))


def judge_agreement(run_dir: Path, *, rules: str | None = None, model_a: str | None = None,
                    base_url_a: str | None = None, prompt_from_a: str | None = None, model_b: str | None = None,
                    base_url_b: str | None = None, prompt_from_b: str | None = None, labels: Path | None = None,
                    partial: str = "incorrect", num_workers: int = 8) -> Agreement:
    run_dir = Path(run_dir)
    records = list(saved_answers(run_dir).values())
    if not records:
        raise AgreementError(f"{run_dir} holds no saved answers (answers.jsonl)")
    run = read_run_record(run_dir) or RunRecord()
    rule = rule_set(rules or run.rules)
    summary_path = run_dir / "run_summary.json"
    summary = json.loads(summary_path.read_text()) if summary_path.exists() else {}
    recorded = summary.get("judge_prompt_origin") or run.judge_prompt or {}  # the latest judging
    a = {"model": model_a or run.judge_model, "base_url": base_url_a or run.judge_base_url,
         "prompt_from": prompt_from_a or (recorded.get("path") if recorded.get("official") else None)}
    saved = saved_verdicts(run_dir)
    side_a = judge_side(build_judge(a["model"], a["base_url"], a["prompt_from"], rule, num_workers), records, rule,
                        saved)
    if labels:
        side_b = label_side(Path(labels), records, rule, partial)
    else:
        b = {"model": model_b or a["model"], "base_url": base_url_b or a["base_url"],
             "prompt_from": prompt_from_b or a["prompt_from"]}
        side_b = judge_side(build_judge(b["model"], b["base_url"], b["prompt_from"], rule, num_workers), records,
                            rule, saved)
    result = compare(records, rule, side_a, side_b)
    result.notes.append(f"requests sent: A {side_a.asked}, B {side_b.asked} (the rest came from the run or the cache)")
    return result


def _rate(value: float) -> str:
    return "n/a" if value is None or (isinstance(value, float) and math.isnan(value)) else f"{value:.3f}"


def _interval(interval) -> str:
    return f"[{interval[0]:.3f}, {interval[1]:.3f}]" if interval else "(too few turns)"


def print_agreement(console: Console, result: Agreement) -> None:
    console.print(f"A: {escape(result.a)}\nB: {escape(result.b)}")
    console.print(f"turns both decided: {result.turns} (judged turns left undecided: A {result.undecided[0]}, "
                  f"B {result.undecided[1]})")
    console.print(f"agreement {_rate(result.agreement)} 95% {_interval(result.agreement_interval)}")
    console.print(f"Cohen's kappa {_rate(result.kappa)} 95% {_interval(result.kappa_interval)}")
    table = Table(title="verdicts (turns)")
    for name in ("", "B correct", "B not correct"):
        table.add_column(name, justify="right")
    for x, label in ((True, "A correct"), (False, "A not correct")):
        table.add_row(label, str(result.table[(x, True)]), str(result.table[(x, False)]))
    console.print(table)
    moved = Table(title="scores with A's verdicts and with B's (B - A: paired bootstrap over conversations, 95%)")
    for name in ("score", "A", "B", "B - A", "95% interval"):
        moved.add_column(name, justify="left" if name == "score" else "right")
    for key, label in SCORES:
        d = result.scores.get("all", {}).get(key)
        if d:
            moved.add_row(label, f"{d['a']:.3f}", f"{d['b']:.3f}", f"{d['difference']:+.3f}",
                          f"[{d['interval'][0]:+.3f}, {d['interval'][1]:+.3f}]")
    console.print(moved)
    shown = result.disagreements[:DISAGREEMENTS_SHOWN]
    console.print(f"{len(result.disagreements)} turns disagree" + (f" (the first {len(shown)}):" if shown else ""))
    for turn in shown:
        console.print(escape(f"  {turn['interaction_id']}: A {'correct' if turn['a'] else 'not correct'}, "
                             f"B {'correct' if turn['b'] else 'not correct'} | Q: {turn['query']} | "
                             f"truth: {turn['ground_truth']} | answer: {turn['answer']}"))
    for note in result.notes:
        console.print(f"note: {escape(note)}", style="yellow")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m tools.judge_agreement", description=__doc__.split("\n")[0])
    parser.add_argument("run_dir", type=Path, help="a run's output folder (answers.jsonl, run_config.json)")
    parser.add_argument("--rules", choices=["kddcup2025", "crag-mm"], default=None, help="default: the run's")
    for side in ("a", "b"):
        parser.add_argument(f"--model-{side}", default=None, help=f"judge model of side {side.upper()}")
        parser.add_argument(f"--base-url-{side}", default=None, help="its OpenAI-compatible endpoint")
        parser.add_argument(f"--prompt-from-{side}", default=None, metavar="DIR",
                            help="its prompt from a facebookresearch/CRAG-MM checkout (crag-mm rules); "
                                 f"'{OURS_FLAG}': this package's wording")
    parser.add_argument("--labels", type=Path, default=None, help="side B: a CSV of human labels")
    parser.add_argument("--partial", choices=PARTIAL_CHOICES, default="incorrect",
                        help="what a 'partial' label counts as (default incorrect; skip leaves the turn out)")
    parser.add_argument("--num-workers", type=int, default=8, help="judge threads")
    args = parser.parse_args(argv)
    try:
        result = judge_agreement(**{k: v for k, v in vars(args).items()})
    except (AgreementError, JudgePromptError) as exc:
        raise SystemExit(str(exc)) from None
    print_agreement(Console(width=200), result)


if __name__ == "__main__":
    main()

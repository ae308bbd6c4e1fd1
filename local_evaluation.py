#!/usr/bin/env python3
"""Evaluate an agent on CRAG-MM the way the competition's local evaluator scores it.

    python local_evaluation.py [--dataset-type single-turn|multi-turn] [options]
    python local_evaluation.py merge DIR1 DIR2 ... --output-dir OUT
    python local_evaluation.py from-lmms-eval LMMS_EVAL_OUTPUT_DIR --output-dir OUT

The official flags keep their names and meanings; the rest are ours (see --help). Every run
writes the official files turn_evaluation_results_all.csv, turn_evaluation_results_ego.csv and
scores_dictionary.json (exactly the official columns and keys; the dictionary also holds our
own "intervals_95" beside them), our own
turn_evaluation_results_all_extended.csv, turn_evaluation_results_ego_extended.csv,
run_summary.json and traces.jsonl into --output-dir, plus the working files that make
--resume, --rejudge and merge possible (answers.jsonl, batches.jsonl, judgments.jsonl,
run_config.json).
"""
from __future__ import annotations

import argparse
import os
import sys

from agents.profiles import PROFILES
from evaluator.settings import DATASET_TYPES, INDEX_CHOICES, ORACLE_STAGES, EvaluationSettings

DEFAULTS = EvaluationSettings()  # every option's default (evaluator/settings.py)
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

EPILOG = """\
modes:
  (default)  generate answers with --agent, judge them, score them.
  --resume   continue the run in --output-dir: saved answers are reused (and fed into later
             multi-turn histories); only unanswered turns reach the agent. Refused when the
             system differs from the saved run's (agent, profile, preset, every config field,
             --set values, prompt files, search models, search indices and their snapshot
             revisions, calibration file); the message names each difference. --resume --force continues anyway and run_summary.json says so.
  --generate-only  answers and traces only (what --workers gives each shard); score later with
             --rejudge (one folder) or merge (shards).
  --rejudge  no agent, no dataset: judge again every turn of --output-dir that has no saved
             verdict from the chosen judge (its judge failed, or the judge was off), then
             rescore. Without --eval-model/--eval-base-url the run's own judge is used.
  merge      python local_evaluation.py merge DIR1 DIR2 ... --output-dir OUT
             gathers the folders of a sharded run (--shard I/N: conversation index % N == I)
             and scores the merged turn rows as one run.
  from-lmms-eval  python local_evaluation.py from-lmms-eval DIR --output-dir OUT
             scores the answers of an lmms-eval run of a CRAG-MM task (integrations/lmms_eval;
             lmms-eval's --output_path DIR, with --log_samples) as a run of ours: the task's own
             dataset, rule set and judge unless the judge flags say otherwise; report.html included.

search (--search):
  default      evaluator.search.pipeline.build_search_pipeline(SEARCH, web=...), SEARCH the profile's
               search models and indices (the run's, resolved once: evaluator/harness/resolved.py)
  none         the agent gets search_pipeline=None
  MODULE:FUNC  FUNC(search_config, web=bool) builds the pipeline (tests pass a fake this way)
  --web-contents [HF_ID] goes into search_config (its web_contents) for either

exit codes: 0 scored; 1 refused or failed (one line says why); 2 a bad flag; 3 scored, but the
  LLM judge left turns without a verdict (counted as not correct, as officially; the console,
  run_summary.json and report.html say how many, the scores without them, and the --rejudge command);
  4 scored, but every turn faulted, or every turn that reached one stage (the console,
  run_summary.json's systemic_fault and report.html name the stage and the reason; wins over 3);
  5 (--strict only) scored, but a turn faulted (the faults table of the console, run_summary.json
  and report.html names the stage or rule, the turns, the exception and where; wins over 3)
"""


def add_judge_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--rules", default=DEFAULTS.rules, choices=["kddcup2025", "crag-mm"],
                        help="scoring rules: kddcup2025 (default; the 2025 starter kit: gpt-4o-mini judge, "
                             "structured verdict) or crag-mm (the published CRAG-MM evaluator: gpt-4o "
                             "judge, 'Result: CORRECT/WRONG' verdict); rejudge/merge default to the run's")
    parser.add_argument("--eval-model", default=DEFAULTS.eval_model,
                        help="judge model (default: the rule set's); 'None' disables the judge")
    parser.add_argument("--eval-base-url", default=DEFAULTS.eval_base_url, help="any OpenAI-compatible endpoint for the judge")
    parser.add_argument("--judge-prompt-from", default=DEFAULTS.judge_prompt_from, metavar="DIR",
                        help="judge with the official prompt, built by the code of DIR: a checkout of "
                             "facebookresearch/CRAG-MM (--rules crag-mm) or of the 2025 starter kit "
                             "(kddcup2025); rejudge/merge default to the run's")
    parser.add_argument("--num-workers", type=int, default=DEFAULTS.num_workers, help="judge threads (default 8; the starter kit's name: Ray shards are --workers)")
    parser.add_argument("--judge-timeout", type=float, default=DEFAULTS.judge_timeout, help="seconds per judge request")
    parser.add_argument("--judge-retry-wait", type=float, default=DEFAULTS.judge_retry_wait,
                        help="first back-off (seconds), doubled each time: between judge attempts, and "
                             "after a 429/5xx answer without Retry-After")
    parser.add_argument("--judge-max-wait", type=float, default=DEFAULTS.judge_max_wait,
                        help="seconds a turn may spend waiting out HTTP 429/5xx answers (Retry-After or "
                             "back-off) before they count as failed attempts (default 120)")
    parser.add_argument("--judge-give-up-after", type=int, default=DEFAULTS.judge_give_up_after, metavar="N",
                        help="stop asking the judge once N turns in a row failed every attempt (unreachable, "
                             "key refused); the rest stay unjudged for --rejudge (default 5; 0 = never)")
    parser.add_argument("--display-conversations", type=int, default=DEFAULTS.display_conversations, help="example turns to show")
    parser.add_argument("--no_progress", action="store_true", help="no progress bars")
    parser.add_argument("--strict", action="store_true",
                        help="exit 5 once everything is written if any turn faulted (a stage or the rule raised, "
                             "or the agent's batch call); without it a fault or two shows in the faults table only")


def add_run_args(p: argparse.ArgumentParser, *, profile: str = DEFAULTS.profile) -> None:
    """The flags that name the run: the agent, what it is told, the machine and its search. The
    pre-flight (tools/preflight.py) and tools.fetch take the same flags, and each resolves them as
    an evaluation does (`run_settings`, then evaluator/harness/resolved.py `resolve_settings`)."""
    p.add_argument("--agent", default=DEFAULTS.agent, help="MODULE:CLASS")
    p.add_argument("--profile", default=profile, choices=["auto", *sorted(PROFILES)],
                   help="the machine (agents/profiles.py; `python -m agents.config_cli show NAME`): auto = l40s "
                        "where its memory plan fits the GPU, else cpu (it says which and why); served = the "
                        "l40s models behind OpenAI-compatible servers (docs/serving.md)")
    p.add_argument("--preset", default=DEFAULTS.preset,
                   help="ablation preset (agents/config/presets.py PRESETS), or several joined by '+', e.g. "
                        "no_cov+paper_finalizer; handed to the agent")
    p.add_argument("--model-name", default=DEFAULTS.model_name, metavar="NAME",
                   help="the VLM (and router) by name, on its family's model stack (agents/stacks.py STACKS); "
                        "the relaunched facebookresearch/CRAG-MM evaluator's flag; `local_evaluation.py --list-models` "
                        "shows the families")
    p.add_argument("--set", action="append", default=[], metavar="FIELD=VALUE",
                   help="config override handed to the agent (a JSON object for a dict field); repeatable")
    p.add_argument("--calibration", default=DEFAULTS.calibration, metavar="FILE",
                   help="thresholds from `python -m tools.calibrate` (calibration.json), handed to the agent; "
                        "--set still wins")
    p.add_argument("--search", default=DEFAULTS.search,
                   help="default | none | MODULE:FUNC (`local_evaluation.py --help` says what each builds)")
    p.add_argument("--indices", default=DEFAULTS.indices, choices=list(INDEX_CHOICES),
                   help="which published search indices the l40s and served profiles search: public-test "
                        "(default; crag-mm-2025/{image,web}-search-index-public-test, what the relaunched "
                        "facebookresearch/CRAG-MM evaluator uses) or validation (the 2025 starter kit's "
                        "*-search-index-validation)")
    p.add_argument("--web-contents", nargs="?", const="default", default=DEFAULTS.web_contents, metavar="HF_ID",
                   help="web hits carry their full page (page_result, page_last_modified) from this "
                        "full-content database, which the search package reads as sharded LMDB files; "
                        "bare: the profile's (crag-mm-2025/web-search-contents-db-private-v0.1.2 on "
                        "l40s/served, the mini benchmark's own on cpu)")
    p.add_argument("--suppress-web-search-api", action="store_true", help="Task 1: image search only")


def run_settings(args: argparse.Namespace) -> EvaluationSettings:
    """The run that the flags of `add_run_args` in `args` name (every other option at its default)."""
    probe = argparse.ArgumentParser(add_help=False)
    add_run_args(probe)
    return EvaluationSettings(**{name: getattr(args, name) for name in vars(probe.parse_args([]))})


def evaluation_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0], epilog=EPILOG,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--dataset-type", default=DEFAULTS.dataset_type, choices=list(DATASET_TYPES))
    p.add_argument("--split", default=DEFAULTS.split, help="falls back to the first split, with a notice")
    p.add_argument("--num-conversations", type=int, default=DEFAULTS.num_conversations,
                   help="N conversations as the official loop counts them: whole batches until more "
                        "than N were served (it overshoots); -1 = all")
    p.add_argument("--exact-conversations", action="store_true",
                   help="with --num-conversations N: exactly the first N conversations, all their turns")
    p.add_argument("--suppress-image-search-api", action="store_true",
                   help="no image search: the agent's pipeline refuses image queries (the relaunched "
                        "facebookresearch/CRAG-MM evaluator's flag)")
    p.add_argument("--oracle", default=DEFAULTS.oracle, choices=list(ORACLE_STAGES),
                   help="give the agent one stage's human label on every labelled turn (a dataset with "
                        "CRAG-MM-Diagnostics' metadata): region = the target's box is the crop image search "
                        "runs on, entity = the target's name, question = the text-only question; "
                        "docs/diagnostics.md")
    p.add_argument("--output-dir", default=DEFAULTS.output_dir, help="default: outputs/<timestamp> in the repo")
    p.add_argument("--revision", default=DEFAULTS.revision, help="dataset revision for hub ids")
    p.add_argument("--dataset", default=DEFAULTS.dataset,
                   help="hub id or local folder (default: data/crag-mm-mini/<type> on cpu, "
                        "crag-mm-2025/crag-mm-<type>-public on l40s)")
    add_run_args(p)
    p.add_argument("--list-models", action="store_true", help="list the model families --model-name knows, and stop")
    p.add_argument("--resume", action="store_true")
    p.add_argument("--force", action="store_true",
                   help="with --resume: continue even though the system differs (recorded in run_summary.json); "
                        "with --rejudge: judge with another prompt than the run was judged with")
    p.add_argument("--rejudge", action="store_true")
    p.add_argument("--generate-only", action="store_true",
                   help="save the answers and traces only: no judge, no scores, no report (score them "
                        "later with --rejudge or merge)")
    p.add_argument("--shard", default=DEFAULTS.shard, metavar="I/N", help="only conversations with index %% N == I")
    p.add_argument("--workers", type=int, default=DEFAULTS.workers, metavar="N",
                   help="run the split as N shards on Ray, then merge, judge and score once "
                        "(requirements-scale.txt; docs/serving.md)")
    p.add_argument("--ray", default=DEFAULTS.ray, metavar="ADDRESS",
                   help="with --workers: join this Ray cluster ('auto' or HOST:PORT) instead of a local one")
    p.add_argument("--worker-retries", type=int, default=DEFAULTS.worker_retries,
                   help="with --workers: times Ray runs a failed or lost shard again, resumed (default 2)")
    p.add_argument("--gpus-per-worker", type=float, default=DEFAULTS.gpus_per_worker, metavar="G",
                   help="with --workers: GPUs Ray gives each shard (default: 1 on the l40s profile, "
                        "whose engines load in the shard; 0 on cpu and served)")
    add_judge_args(p)
    return p


def merge_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="local_evaluation.py merge",
                                description="Merge shard output folders and score them as one run.")
    p.add_argument("dirs", nargs="+", help="output folders of the shards")
    p.add_argument("--output-dir", required=True)
    add_judge_args(p)
    return p


def from_lmms_eval_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="local_evaluation.py from-lmms-eval",
                                description="Score an lmms-eval run of a CRAG-MM task as a run of ours.")
    p.add_argument("folder", help="lmms-eval's --output_path of a run with --log_samples")
    p.add_argument("--output-dir", required=True, help="one folder per task below it when the run holds several")
    p.add_argument("--run", default=None, help="the run to score where the folder holds several: its results file's "
                   "path below the folder without _results.json (<date>, or <model folder>/<date>)")
    add_judge_args(p)
    return p


def main(argv: list[str] | None = None) -> None:
    """The flags mapped onto evaluator.evaluate / evaluator.merge (evaluator/api.py), and
    from-lmms-eval onto evaluator.imported_runs.from_lmms_eval."""
    argv = list(sys.argv[1:] if argv is None else argv)
    from evaluator import api

    try:
        if argv and argv[0] == "merge":
            options = vars(merge_parser().parse_args(argv[1:]))
            result = api.merge(options.pop("dirs"), **options)
        elif argv and argv[0] == "from-lmms-eval":
            from rich.console import Console

            from evaluator.imported_runs import from_lmms_eval

            options = vars(from_lmms_eval_parser().parse_args(argv[1:]))
            results = from_lmms_eval(options.pop("folder"), options.pop("output_dir"), Console(), **options)
            result = max(results, key=lambda r: r.exit_status)
        else:
            options = vars(evaluation_parser().parse_args(argv))
            if options.pop("list_models"):
                from agents.stacks import families_listing

                print(families_listing())
                return
            result = api.evaluate(**options)
    except api.EvaluationRefused as exc:
        raise SystemExit(str(exc)) from None
    if result.exit_status:
        raise SystemExit(result.exit_status)


if __name__ == "__main__":
    main()

"""What `local_evaluation.py` does for each mode: run (or resume) an evaluation, rejudge, merge."""
from __future__ import annotations

import datetime
import importlib
import json
import os
from pathlib import Path

from rich.console import Console
from rich.markup import escape

from agents.config import REPO_ROOT, detect_profile, settings_to_env
from evaluation.batching import clip_batch_size
from evaluation.dataset import load_split, read_conversations
from evaluation.judge import DEFAULT_EVAL_MODEL, Judge, find_api_key
from evaluation.outputs import finalize, merge_runs
from evaluation.report import loud_notice, print_report
from evaluation.runner import ANSWERS, RUN_CONFIG, generate, saved_answers
from evaluation.truncate import load_truncator

# run_config.json fields a resumed run must share with the run it continues
RESUME_KEYS = ("dataset", "dataset_type", "split", "revision", "num_conversations", "shard")


def import_object(spec: str):
    """`package.module:Name` -> the object."""
    module_name, _, attr = spec.partition(":")
    if not module_name or not attr:
        raise ValueError(f"expected MODULE:NAME, got {spec!r}")
    return getattr(importlib.import_module(module_name), attr)


def parse_shard(text: str | None) -> tuple[int, int] | None:
    if not text:
        return None
    try:
        index, count = (int(x) for x in text.split("/"))
    except ValueError:
        raise ValueError(f"--shard expects I/N, got {text!r}") from None
    if count < 1 or not 0 <= index < count:
        raise ValueError(f"--shard {text}: need 0 <= I < N")
    return index, count


def build_judge(model: str | None, base_url: str | None, args, console: Console) -> Judge | None:
    if model is not None and model.strip().lower() == "none":
        loud_notice(console, "ATTENTION", "SEMANTIC EVALUATION IS DISABLED (--eval-model None).\n"
                    "No LLM judge will be asked: only exact string matches count as correct.")
        return None
    key = find_api_key()
    if not key and not base_url:
        loud_notice(console, "ATTENTION", "NO JUDGE: neither OPENAI_API_KEY (environment or .env) nor "
                    "--eval-base-url is set.\nSemantic evaluation is OFF: only exact string matches count "
                    "as correct, so accuracy is a lower bound.")
        return None
    return Judge(model or DEFAULT_EVAL_MODEL, base_url, key, num_workers=args.num_workers,
                 timeout_s=args.judge_timeout, backoff_s=args.judge_retry_wait)


def saved_judge_choice(args, run_config: dict) -> tuple[str | None, str | None]:
    """Judge for rejudge/merge: the flags if given, else the judge the run used (if any)."""
    if args.eval_model is not None or args.eval_base_url is not None:
        return args.eval_model, args.eval_base_url
    return run_config.get("judge_model"), run_config.get("judge_base_url")


def default_output_dir() -> Path:
    return REPO_ROOT / "outputs" / datetime.datetime.now().strftime("%Y%m%d-%H%M%S")


def default_dataset(profile: str, dataset_type: str) -> str:
    if profile == "cpu":
        return str(REPO_ROOT / "data" / "crag-mm-mini" / dataset_type)
    return f"crag-mm-2025/crag-mm-{dataset_type}-public"


def build_search(args, profile: str):
    if args.search == "none":
        return None
    from evaluation.search import build_search_pipeline, search_config  # loads cragmm_search

    search = search_config(profile)
    web = not args.suppress_web_search_api
    if args.search == "default":
        return build_search_pipeline(search, web=web)
    return import_object(args.search)(search, web=web)


def finish(args, output_dir: Path, judge: Judge | None, console: Console, notices: list[str]) -> None:
    results = finalize(output_dir, judge, progress=not args.no_progress, notices=notices)
    print_report(console, results, args.display_conversations)
    console.print(f"[bold green]outputs written to {escape(str(output_dir))}[/bold green]")
    try:  # the scores are already written: a report that cannot be built must not fail the run
        from evaluation.report_html import build_report

        console.print(f"[bold green]report: {escape(str(build_report(output_dir)))}[/bold green]")
    except Exception as exc:  # noqa: BLE001
        console.print(f"[yellow]report.html not written: {escape(f'{type(exc).__name__}: {exc}')}[/yellow]")


def run_evaluation(args) -> None:
    console = Console()
    if (args.resume or args.rejudge) and not args.output_dir:
        raise SystemExit("--resume and --rejudge need --output-dir (the folder of the earlier run)")
    output_dir = Path(args.output_dir) if args.output_dir else default_output_dir()
    output_dir.mkdir(parents=True, exist_ok=True)
    notices: list[str] = []

    if args.rejudge:
        if not (output_dir / ANSWERS).exists():
            raise SystemExit(f"{output_dir} holds no saved answers to rejudge")
        config_path = output_dir / RUN_CONFIG
        run_config = json.loads(config_path.read_text()) if config_path.exists() else {}
        judge = build_judge(*saved_judge_choice(args, run_config), args, console)
        finish(args, output_dir, judge, console, notices)
        return
    if (output_dir / ANSWERS).exists() and not args.resume:
        raise SystemExit(f"{output_dir} already holds answers: pass --resume to continue it, or pick a new folder")

    profile = detect_profile() if args.profile == "auto" else args.profile
    try:
        settings_to_env(profile, args.preset, args.set)
        shard = parse_shard(args.shard)
    except ValueError as exc:
        raise SystemExit(str(exc)) from None
    dataset = args.dataset or default_dataset(profile, args.dataset_type)
    console.print(f"[bold blue]Loading {escape(dataset)}[/bold blue] (revision {args.revision}, split {args.split})")
    try:
        ds, split, split_notice = load_split(dataset, args.revision, args.split)
        conversations = read_conversations(ds, args.num_conversations)
    except Exception as exc:
        raise SystemExit(f"cannot load the dataset {dataset!r} (revision {args.revision}): "
                         f"{type(exc).__name__}: {exc}") from exc
    if split_notice:
        console.print(f"[yellow]{escape(split_notice)}[/yellow]")
        notices.append(split_notice)
    if shard:
        conversations = [c for c in conversations if c.index % shard[1] == shard[0]]
    console.print(f"{len(conversations)} conversations, {sum(len(c.turns) for c in conversations)} turns")

    judge_model = args.eval_model or DEFAULT_EVAL_MODEL
    judge = build_judge(judge_model, args.eval_base_url, args, console)
    truncator = load_truncator()
    if not truncator.name.startswith("meta-llama"):
        console.print(f"[yellow]truncation tokenizer: {escape(truncator.name)}[/yellow]")
    run_config = {
        "args": {k: v for k, v in vars(args).items()},
        "dataset": dataset, "dataset_type": args.dataset_type, "split": split, "revision": args.revision,
        "num_conversations": args.num_conversations, "shard": args.shard, "agent": args.agent,
        "profile": profile, "preset": os.environ.get("CRUISE_PRESET", "full"), "tokenizer": truncator.name,
        "judge_model": judge.model if judge else None, "judge_base_url": judge.base_url if judge else None,
        "expected_turns": sum(len(c.turns) for c in conversations),
    }
    config_path = output_dir / RUN_CONFIG
    if args.resume and config_path.exists():
        earlier = json.loads(config_path.read_text())
        clashes = [k for k in RESUME_KEYS if earlier.get(k) != run_config[k]]
        if clashes:
            raise SystemExit(f"cannot resume {output_dir}: the earlier run differs on {clashes}")
    config_path.write_text(json.dumps(run_config, indent=2, default=str))

    done = saved_answers(output_dir) if args.resume else {}
    if args.resume and all(t.interaction_id in done for c in conversations for t in c.turns):
        console.print("every turn already has a saved answer: the agent is not loaded")
    else:
        pipeline = build_search(args, profile)
        agent = import_object(args.agent)(search_pipeline=pipeline)
        batch_size = clip_batch_size(agent.get_batch_size())
        console.print(f"agent {escape(args.agent)}, batch size {batch_size}, profile {profile}")
        stats = generate(agent, ds, conversations, batch_size, output_dir, truncator,
                         resume=args.resume, progress=not args.no_progress, shard=args.shard)
        if stats.turns_reused:
            notices.append(f"resumed: {stats.turns_reused} turns reused from saved answers")
    finish(args, output_dir, judge, console, notices)


def run_merge(args) -> None:
    console = Console()
    output_dir = Path(args.output_dir)
    sources = [Path(d) for d in args.dirs]
    notices = merge_runs(sources, output_dir)
    for notice in notices:
        console.print(f"[yellow]{escape(notice)}[/yellow]")
    run_config = json.loads((output_dir / RUN_CONFIG).read_text())
    model, base_url = saved_judge_choice(args, run_config)
    judge = build_judge(model, base_url, args, console)
    finish(args, output_dir, judge, console, notices)

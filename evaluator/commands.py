"""What `local_evaluation.py` does for each mode: run (or resume) an evaluation, rejudge, merge.

The top of the evaluator: it drives the harness (generation, outputs), the search layer, the
scoring and the report; none of those imports this module. The agent's settings (--profile,
--preset, --set, --calibration) are handed to the agent class explicitly (harness/agent_setup.py).
"""
from __future__ import annotations

import datetime
import json
from pathlib import Path

from rich.console import Console
from rich.markup import escape

from agents.hardware import describe_auto_profile
from agents.profiles import REPO_ROOT, default_dataset, resolve_profile
from evaluator.harness.agent_setup import AgentSetup, import_object, setup_agent
from evaluator.harness.batching import clip_batch_size, conversation_selection, planned_batches
from evaluator.harness.dataset import apply_image_url_updates, load_split, read_conversations
from evaluator.harness.fingerprint import differences, selection_refusal, system_fingerprint
from evaluator.harness.models import preload_problem
from evaluator.harness.outputs import finalize, merge_runs
from evaluator.harness.runner import ANSWERS, RUN_CONFIG, generate, saved_answers
from evaluator.harness.unjudged import exit_code
from evaluator.report.terminal import loud_notice, print_report
from evaluator.scoring.judge import DEFAULT_GIVE_UP_AFTER, Judge, find_api_key
from evaluator.scoring.rules import RuleSet, rule_set
from evaluator.scoring.truncate import load_truncator


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


def build_judge(model: str | None, base_url: str | None, args, console: Console, rules: RuleSet) -> Judge | None:
    if model is not None and model.strip().lower() == "none":
        loud_notice(console, "ATTENTION", "SEMANTIC EVALUATION IS DISABLED (--eval-model None).\n"
                    "No LLM judge will be asked: only exact string matches count as correct.")
        return None
    key = find_api_key()
    if not key and not base_url:
        loud_notice(console, "ATTENTION", "NO JUDGE: neither OPENAI_API_KEY (environment or .env) nor "
                    "--eval-base-url is set.\nSemantic evaluation is OFF: only exact string matches count "
                    "as correct, so accuracy is a lower bound.\nWhere the data carries accepted answer forms "
                    "(the mini benchmark), the offline lexical judge (not the official judge) decides instead.")
        return None
    return Judge(model or rules.judge_model, base_url, key, rules=rules, num_workers=args.num_workers,
                 timeout_s=args.judge_timeout, backoff_s=args.judge_retry_wait, max_wait_s=args.judge_max_wait,
                 give_up_after=getattr(args, "judge_give_up_after", DEFAULT_GIVE_UP_AFTER))


def saved_rules(args, run_config: dict) -> RuleSet:
    """Rule set for rejudge/merge: --rules if given, else the run's own (kddcup2025 if unrecorded)."""
    return rule_set(args.rules or run_config.get("rules"))


def saved_judge_choice(args, run_config: dict) -> tuple[str | None, str | None]:
    """Judge for rejudge/merge: the flags if given, else the judge the run used (if any); a
    different --rules than the run's brings that rule set's default judge model."""
    if args.eval_model is not None or args.eval_base_url is not None:
        return args.eval_model, args.eval_base_url
    if args.rules and args.rules != run_config.get("rules", "kddcup2025"):
        return None, run_config.get("judge_base_url")
    return run_config.get("judge_model"), run_config.get("judge_base_url")


def recorded_judge(args, judge: Judge | None) -> tuple[str | None, str | None]:
    """run_config.json's judge_model and judge_base_url: the judge of the run, or for --generate-only
    (which builds none) the judge flags it was given, for the step that scores; None, None where no
    judge is named ("--eval-model None" included)."""
    if judge is not None:
        return judge.model, judge.base_url
    if not args.generate_only or (args.eval_model or "").strip().lower() == "none":
        return None, None
    return args.eval_model, args.eval_base_url


def default_output_dir() -> Path:
    return REPO_ROOT / "outputs" / datetime.datetime.now().strftime("%Y%m%d-%H%M%S")


def build_search(args, profile: str):
    if args.search == "none":
        return None
    from evaluator.search.index_check import SearchIndexError
    from evaluator.search.pipeline import build_search_pipeline, search_config  # loads cragmm_search

    search = search_config(profile, getattr(args, "indices", None), web_contents=getattr(args, "web_contents", None))
    web = not args.suppress_web_search_api
    if args.search == "default":
        try:
            pipeline = build_search_pipeline(search, web=web)
        except SearchIndexError as exc:
            raise SystemExit(f"cannot search: {exc}") from None
    else:
        pipeline = import_object(args.search)(search, web=web)
    if getattr(args, "suppress_image_search_api", False):
        from evaluator.search.pipeline import WithoutImageSearch

        return WithoutImageSearch(pipeline)
    return pipeline


def web_contents_id(args, profile: str) -> str | None:
    """The full-content database the run's web hits are read from (None: snippets only)."""
    if args.search == "none" or args.suppress_web_search_api or not getattr(args, "web_contents", None):
        return None
    from evaluator.search.pipeline import search_config

    return search_config(profile, getattr(args, "indices", None), web_contents=args.web_contents).web_contents


def load_agent(args, profile: str, setup: AgentSetup, console: Console):
    pipeline = build_search(args, profile)
    try:
        agent = setup.build(pipeline)
    except OSError as exc:  # a model or file the agent names is not there: one line, not a loader's traceback
        first_line = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        raise SystemExit(f"cannot build the agent {args.agent}: {type(exc).__name__}: {first_line} "
                         f"(a model or file it loads is not there; the pre-flight, python -m tools.preflight "
                         f"--profile {profile}, lists what is missing)") from None
    console.print(f"agent {escape(args.agent)}, batch size {clip_batch_size(agent.get_batch_size())}, profile {profile}")
    return agent


def current_fingerprint(args, profile: str, setup: AgentSetup) -> dict:
    """The system this command would run."""
    calibration = getattr(args, "calibration", None)
    try:
        fingerprint = system_fingerprint(setup, profile, getattr(args, "preset", None), search=args.search,
                                         web=not args.suppress_web_search_api, indices=getattr(args, "indices", None),
                                         calibration=str(Path(calibration).resolve()) if calibration else None,
                                         web_contents=getattr(args, "web_contents", None))
    except OSError as exc:
        raise SystemExit(f"cannot read {exc.filename}: {exc.strerror}") from None
    if getattr(args, "suppress_image_search_api", False):  # only then: earlier runs' fingerprints lack the key
        fingerprint["image_search"] = False
    return fingerprint


def resume_differences(output_dir: Path, earlier: dict | None, fingerprint: dict) -> list[str]:
    """What differs between the system of the run in `output_dir` and this one."""
    if not (output_dir / ANSWERS).exists():
        return []  # nothing answered yet: nothing to mix
    if not earlier or "fingerprint" not in earlier:
        return ["the earlier run recorded no system fingerprint (it predates them)"]
    return differences(earlier["fingerprint"], fingerprint)


def refuse_mixed_resume(output_dir: Path, changed: list[str]) -> None:
    lines = "\n".join(f"  {line}" for line in changed)
    raise SystemExit(
        f"cannot resume {output_dir}: the earlier run used another system:\n{lines}\n"
        "Its saved answers and this system's would be scored as one run. Use a new --output-dir, "
        "or pass --force to resume anyway (run_summary.json then records it).")


def finish(args, output_dir: Path, judge: Judge | None, console: Console, notices: list[str],
           rules: RuleSet) -> None:
    results = finalize(output_dir, judge, rules=rules, progress=not args.no_progress, notices=notices)
    print_report(console, results, args.display_conversations)
    console.print(f"[bold green]outputs written to {escape(str(output_dir))}[/bold green]")
    try:  # the scores are already written: a report that cannot be built must not fail the run
        from evaluator.report.html import build_report

        console.print(f"[bold green]report: {escape(str(build_report(output_dir)))}[/bold green]")
    except Exception as exc:  # noqa: BLE001
        console.print(f"[yellow]report.html not written: {escape(f'{type(exc).__name__}: {exc}')}[/yellow]")
    if exit_code(results.summary):  # everything is written; a script must still notice the undecided turns
        raise SystemExit(exit_code(results.summary))


def run_evaluation(args) -> None:
    console = Console()
    if (args.resume or args.rejudge) and not args.output_dir:
        raise SystemExit("--resume and --rejudge need --output-dir (the folder of the earlier run)")
    if args.force and not args.resume:
        raise SystemExit("--force only applies to --resume")
    if args.generate_only and args.rejudge:
        raise SystemExit("--generate-only and --rejudge exclude each other: one generates, the other scores")
    output_dir = Path(args.output_dir) if args.output_dir else default_output_dir()
    notices: list[str] = []

    if args.rejudge:
        if not (output_dir / ANSWERS).exists():
            raise SystemExit(f"{output_dir} holds no saved answers to rejudge")
        config_path = output_dir / RUN_CONFIG
        run_config = json.loads(config_path.read_text()) if config_path.exists() else {}
        rules = saved_rules(args, run_config)
        judge = build_judge(*saved_judge_choice(args, run_config), args, console, rules)
        finish(args, output_dir, judge, console, notices, rules)
        return
    if (output_dir / ANSWERS).exists() and not args.resume:
        raise SystemExit(f"{output_dir} already holds answers: pass --resume to continue it, or pick a new folder")

    if args.profile == "auto":  # say which profile the GPU memory chose, and why
        console.print(f"--profile auto: {escape(describe_auto_profile())}")
    try:
        profile = resolve_profile(args.profile)
        # the agent's configuration, built here and handed to it: a bad --set, preset or
        # calibration file, or contradictory switches, fail now with one line
        setup = setup_agent(args.agent, profile=profile, preset=args.preset, settings=args.set,
                            calibration=str(Path(args.calibration).resolve()) if args.calibration else None,
                            model_name=getattr(args, "model_name", None))
        shard = parse_shard(args.shard)
        rules = rule_set(args.rules)
    except ValueError as exc:
        raise SystemExit(str(exc)) from None
    fingerprint = current_fingerprint(args, profile, setup)
    config_path = output_dir / RUN_CONFIG
    earlier = json.loads(config_path.read_text()) if args.resume and config_path.exists() else {}
    changed = resume_differences(output_dir, earlier, fingerprint) if args.resume else []
    if changed and not args.force:
        refuse_mixed_resume(output_dir, changed)
    forced_resumes = list(earlier.get("forced_resumes", []))
    if changed:
        forced_resumes.append({"at": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
                               "differences": changed})
        console.print("[bold yellow]resuming with --force from another system:[/bold yellow] " + escape("; ".join(changed)))
    dataset = args.dataset or default_dataset(profile, args.dataset_type)
    problem = preload_problem(profile, dataset, args.revision, agent=setup, search_spec=args.search,
                              web=not args.suppress_web_search_api, indices=args.indices,
                              web_contents=getattr(args, "web_contents", None))
    if problem:  # a missing model or dataset: one message, before anything loads
        raise SystemExit(problem)
    console.print(f"[bold blue]Loading {escape(dataset)}[/bold blue] (revision {args.revision}, split {args.split})")
    try:
        ds, split, split_notice = load_split(dataset, args.revision, args.split)
        # the official loop reads the whole split and stops in whole batches (see planned_batches)
        conversations = read_conversations(ds, args.num_conversations if args.exact_conversations else -1)
    except Exception as exc:
        raise SystemExit(f"cannot load the dataset {dataset!r} (revision {args.revision}): "
                         f"{type(exc).__name__}: {exc}") from exc
    if split_notice:
        console.print(f"[yellow]{escape(split_notice)}[/yellow]")
        notices.append(split_notice)
    updated = apply_image_url_updates(conversations, rules.image_url_updates.get(args.dataset_type, {}))
    if shard:
        conversations = [c for c in conversations if c.index % shard[1] == shard[0]]

    # --generate-only judges nothing: the judge is chosen (and its absence said) where the answers are scored
    judge = None if args.generate_only else build_judge(args.eval_model, args.eval_base_url, args, console, rules)
    truncator = load_truncator()
    if not truncator.official:
        console.print(f"[yellow]truncation tokenizer: {escape(truncator.name)}[/yellow]")
        notices.append(f"truncation tokenizer is not Llama 3.2: {truncator.name}")
    # The official stopping rule depends on the batch size, which only the agent knows; a resumed
    # run takes it from the run it continues, so a finished run is rescored without the agent.
    agent, batch_size = None, earlier.get("batch_size")
    if batch_size is None:
        agent = load_agent(args, profile, setup, console)
        batch_size = clip_batch_size(agent.get_batch_size())
    stop_after = None if args.exact_conversations else args.num_conversations
    batches = planned_batches(conversations, batch_size, stop_after)
    planned = [conversations[pos].turns[t].interaction_id for batch in batches for pos, t in batch]
    served = len({pos for batch in batches for pos, _ in batch})
    console.print(f"{served} conversations, {len(planned)} turns")
    run_config = {
        "args": {k: v for k, v in vars(args).items()},
        "dataset": dataset, "dataset_type": args.dataset_type, "split": split, "revision": args.revision,
        "num_conversations": args.num_conversations, "exact_conversations": bool(args.exact_conversations),
        "conversation_selection": conversation_selection(args.num_conversations, bool(args.exact_conversations),
                                                         served, len(planned)),
        "served_conversations": served,
        "shard": args.shard, "agent": args.agent, "rules": rules.name, "image_url_updates": updated,
        "profile": profile, "preset": args.preset or "full", "tokenizer": truncator.name,
        "judge_model": recorded_judge(args, judge)[0], "judge_base_url": recorded_judge(args, judge)[1],
        "batch_size": batch_size, "expected_turns": len(planned),
        "indices": fingerprint.get("indices"), "web_contents": web_contents_id(args, profile),
        "fingerprint": fingerprint, "forced_resumes": forced_resumes,
        # what the agent said decides its answers (agents/base_agent.py `describe`): the report
        # reads the agent's settings from here, as the run used them
        "agent_description": setup.description, "trace_view": setup.trace_view,
    }
    if earlier:
        refusal = selection_refusal(output_dir, earlier, run_config)
        if refusal:
            raise SystemExit(refusal)
    output_dir.mkdir(parents=True, exist_ok=True)  # only now: a refused start leaves no folder behind
    config_path.write_text(json.dumps(run_config, indent=2, default=str))

    done = saved_answers(output_dir) if args.resume else {}
    if args.resume and all(iid in done for iid in planned):
        console.print("every turn already has a saved answer: the agent is not loaded")
    else:
        agent = agent or load_agent(args, profile, setup, console)
        if clip_batch_size(agent.get_batch_size()) != batch_size:
            raise SystemExit(f"cannot resume {output_dir}: the agent's batch size is now "
                             f"{clip_batch_size(agent.get_batch_size())}, the run used {batch_size}")
        stats = generate(agent, ds, conversations, batch_size, output_dir, truncator, resume=args.resume,
                         progress=not args.no_progress, shard=args.shard, stop_after=stop_after)
        if stats.turns_reused:
            notices.append(f"resumed: {stats.turns_reused} turns reused from saved answers")
    if args.generate_only:
        console.print(f"[bold green]answers saved in {escape(str(output_dir))}[/bold green] (--generate-only: "
                      "score them with --rejudge or merge)")
        return
    finish(args, output_dir, judge, console, notices, rules)


def refuse_mixed_shards(sources: list[Path]) -> None:
    """Folders merged into one run must come from one system (folders without a fingerprint pass)."""
    configs = [src / RUN_CONFIG for src in sources]
    prints = [json.loads(c.read_text()).get("fingerprint") if c.exists() else None for c in configs]
    changed = [f"  {src}: {line}" for src, fingerprint in zip(sources[1:], prints[1:]) if prints[0] and fingerprint
               for line in differences(prints[0], fingerprint)]
    if changed:
        raise SystemExit(f"cannot merge: these folders used another system than {sources[0]}:\n" + "\n".join(changed))


def run_merge(args) -> None:
    console = Console()
    output_dir = Path(args.output_dir)
    sources = [Path(d) for d in args.dirs]
    refuse_mixed_shards(sources)
    notices = merge_runs(sources, output_dir)
    for notice in notices:
        console.print(f"[yellow]{escape(notice)}[/yellow]")
    run_config = json.loads((output_dir / RUN_CONFIG).read_text())
    rules = saved_rules(args, run_config)
    model, base_url = saved_judge_choice(args, run_config)
    judge = build_judge(model, base_url, args, console, rules)
    finish(args, output_dir, judge, console, notices, rules)

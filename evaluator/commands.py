"""What each mode does: run (or resume) an evaluation, rejudge, merge.

Each takes its settings record (evaluator/settings.py) and returns an EvaluationResult; a run
that cannot start or go on raises EvaluationRefused with one line. `evaluate` and `merge`
(evaluator/api.py) call these; `local_evaluation.py` calls those. The top of the evaluator: it
drives the harness (generation, outputs), the search layer, the scoring and the report; none of
those imports this module. The agent's settings (--profile, --preset, --set, --calibration,
--model-name) are handed to the agent class explicitly (harness/agent_setup.py).
"""
from __future__ import annotations

import dataclasses
import datetime
import json
from dataclasses import dataclass
from pathlib import Path

from rich.console import Console
from rich.markup import escape

from agents.hardware import describe_auto_profile
from agents.profiles import REPO_ROOT, default_dataset
from evaluator.harness.agent_setup import import_object
from evaluator.harness.batching import clip_batch_size, conversation_selection, planned_batches
from evaluator.harness.dataset import apply_image_url_updates, load_split, read_conversations
from evaluator.harness.faults import exit_code
from evaluator.harness.fingerprint import differences, selection_refusal, system_fingerprint
from evaluator.harness.models import preload_problem
from evaluator.harness.oracle import refusal as oracle_refusal
from evaluator.harness.outputs import finalize, merge_runs
from evaluator.harness.resolved import ResolvedRun, resolve_settings
from evaluator.harness.run_record import RunRecord, read_run_record, write_run_record
from evaluator.harness.runner import ANSWERS, generate, saved_answers
from evaluator.report.terminal import loud_notice, print_report
from evaluator.scoring.judge import Judge, find_api_key
from evaluator.scoring.official_judge import (
    JudgePromptError,
    OfficialJudge,
    judged_with,
    load_judge_prompt,
    origin_identity,
    prompt_change,
    saved_prompt_folder,
)
from evaluator.scoring.rules import RuleSet, rule_set
from evaluator.scoring.truncate import load_truncator
from evaluator.settings import EvaluationSettings, MergeSettings, ScoringSettings


class EvaluationRefused(Exception):
    """A run that cannot start or go on, in one line (the command line prints it and exits 1)."""


@dataclass
class EvaluationResult:
    """What a run, rejudge or merge wrote, as the files hold it."""

    output_dir: Path
    scores: dict  # scores_dictionary.json's "all" and "ego" (empty after --generate-only)
    rows: list[dict]  # one per turn: the official columns, the flags the scores count, our extras
    rows_ego: list[dict]  # the egocentric turns among them
    notices: list[str]  # what the run said a reader must know (run_summary.json "notices")
    # what local_evaluation.py exits with: 0; 3 when the judge left turns undecided; 4 when every
    # turn (or every turn of one stage) faulted (evaluator/harness/faults.py)
    exit_status: int
    summary: dict  # run_summary.json (empty after --generate-only)


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


def read_judge_prompt(folder: str | None, rules: RuleSet) -> OfficialJudge | None:
    """The checkout's judge (--judge-prompt-from), read before anything else: a bad folder stops
    with one line."""
    try:
        return load_judge_prompt(folder, rules)
    except JudgePromptError as exc:
        raise EvaluationRefused(str(exc)) from None


def build_judge(model: str | None, base_url: str | None, settings: ScoringSettings, console: Console,
                rules: RuleSet, official: OfficialJudge | None = None, *, announce: bool = True) -> Judge | None:
    """The LLM judge, or None with a panel that says so (`announce` False: a rejudge or merge,
    whose report says instead which saved verdicts stood in for it)."""
    if model is not None and model.strip().lower() == "none":
        if announce:
            loud_notice(console, "ATTENTION", "SEMANTIC EVALUATION IS DISABLED (--eval-model None).\n"
                        "No LLM judge will be asked: only exact string matches count as correct.")
        return None
    key = find_api_key()
    if not key and not base_url:
        if announce:
            loud_notice(console, "ATTENTION", "NO JUDGE: neither OPENAI_API_KEY (environment or .env) nor "
                        "--eval-base-url is set.\nSemantic evaluation is OFF: only exact string matches count "
                        "as correct, so accuracy is a lower bound.\nWhere the data carries accepted answer forms "
                        "(the mini benchmark), the offline lexical judge (not the official judge) decides instead.")
        return None
    # no --eval-model: the checkout's default judge, else the rule set's (Judge decides)
    return Judge(model, base_url, key, rules=rules, num_workers=settings.num_workers,
                 timeout_s=settings.judge_timeout, backoff_s=settings.judge_retry_wait, max_wait_s=settings.judge_max_wait,
                 give_up_after=settings.judge_give_up_after, official=official)


def refuse_prompt_change(output_dir: Path, judge: Judge | None, settings: EvaluationSettings) -> None:
    """A rejudged run whose verdicts came from one judge prompt is not judged with another unless
    --force (its run_summary.json says which prompt judged it; a resume compares the fingerprint's
    judge_prompt instead)."""
    summary_path = output_dir / "run_summary.json"
    if judge is None or not summary_path.exists():
        return
    summary = json.loads(summary_path.read_text())
    if summary.get("rules") != judge.rules.name:  # another rule set asks in other words anyway
        return
    judged, origin = judged_with(summary)
    line = judged and prompt_change(origin, judge.prompt_origin)
    if line and not settings.force:
        raise EvaluationRefused(f"cannot judge {output_dir} with another prompt ({line}); pass --force to do so anyway")


def saved_prompt(settings: ScoringSettings, output_dir: Path, record: RunRecord, rules: RuleSet) -> str | None:
    """The judge prompt's checkout for rejudge/merge: the flag, else the one the run was judged with."""
    summary_path = output_dir / "run_summary.json"
    summary = json.loads(summary_path.read_text()) if summary_path.exists() else {}
    origin = summary.get("judge_prompt_origin") or record.judge_prompt
    return saved_prompt_folder(settings.judge_prompt_from, origin, rules.name == record.rules)


def saved_rules(settings: ScoringSettings, record: RunRecord) -> RuleSet:
    """Rule set for rejudge/merge: --rules if given, else the run's own (kddcup2025 if unrecorded)."""
    return rule_set(settings.rules or record.rules)


def saved_judge_choice(settings: ScoringSettings, record: RunRecord) -> tuple[str | None, str | None]:
    """Judge for rejudge/merge: the flags if given, else the judge the run used (if any); a
    different --rules than the run's brings that rule set's default judge model."""
    if settings.eval_model is not None or settings.eval_base_url is not None:
        return settings.eval_model, settings.eval_base_url
    if settings.rules and settings.rules != record.rules:
        return None, record.judge_base_url
    return record.judge_model, record.judge_base_url


def recorded_judge(settings: EvaluationSettings, judge: Judge | None) -> tuple[str | None, str | None]:
    """run_config.json's judge_model and judge_base_url: the judge of the run, or for --generate-only
    (which builds none) the judge flags it was given, for the step that scores; None, None where no
    judge is named ("--eval-model None" included)."""
    if judge is not None:
        return judge.model, judge.base_url
    if not settings.generate_only or (settings.eval_model or "").strip().lower() == "none":
        return None, None
    return settings.eval_model, settings.eval_base_url


def default_output_dir() -> Path:
    return REPO_ROOT / "outputs" / datetime.datetime.now().strftime("%Y%m%d-%H%M%S")


def build_search(settings: EvaluationSettings, run: ResolvedRun):
    if run.search is None:
        return None
    from evaluator.search.index_check import SearchIndexError
    from evaluator.search.pipeline import build_search_pipeline  # loads cragmm_search

    if run.builds_default_search:
        try:
            pipeline = build_search_pipeline(run.search, web=run.web)
        except SearchIndexError as exc:
            raise EvaluationRefused(f"cannot search: {exc}") from None
    else:
        pipeline = import_object(run.search_spec)(run.search, web=run.web)
    if settings.suppress_image_search_api:
        from evaluator.search.pipeline import WithoutImageSearch

        return WithoutImageSearch(pipeline)
    return pipeline


def load_agent(settings: EvaluationSettings, run: ResolvedRun, console: Console):
    pipeline = build_search(settings, run)
    profile = run.profile
    try:
        agent = run.agent.build(pipeline)
    except OSError as exc:  # a model or file the agent names is not there: one line, not a loader's traceback
        first_line = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        raise EvaluationRefused(f"cannot build the agent {settings.agent}: {type(exc).__name__}: {first_line} "
                                f"(a model or file it loads is not there; the pre-flight, python -m tools.preflight "
                                f"--profile {profile}, lists what is missing)") from None
    config = run.agent.description.get("config") if isinstance(run.agent.description.get("config"), dict) else {}
    system = f"system {config['system']} (preset {run.agent.preset or 'full'}), " if config.get("system") else ""
    console.print(f"{escape(system)}agent {escape(settings.agent)}, batch size {clip_batch_size(agent.get_batch_size())}, "
                  f"profile {profile}")
    return agent


def current_fingerprint(settings: EvaluationSettings, run: ResolvedRun) -> dict:
    """The system this command would run."""
    calibration = settings.calibration
    try:
        fingerprint = system_fingerprint(run, settings.preset,
                                         calibration=str(Path(calibration).resolve()) if calibration else None)
    except OSError as exc:
        raise EvaluationRefused(f"cannot read {exc.filename}: {exc.strerror}") from None
    if settings.suppress_image_search_api:  # only then: earlier runs' fingerprints lack the key
        fingerprint["image_search"] = False
    if settings.oracle:  # an oracle run is another system (only then, as above)
        fingerprint["oracle"] = settings.oracle
    return fingerprint


def resume_differences(output_dir: Path, earlier: RunRecord | None, fingerprint: dict) -> list[str]:
    """What differs between the system of the run in `output_dir` and this one."""
    if not (output_dir / ANSWERS).exists():
        return []  # nothing answered yet: nothing to mix
    if earlier is None or earlier.fingerprint is None:
        return ["the earlier run recorded no system fingerprint (it predates them)"]
    return differences(earlier.fingerprint, fingerprint)


def refuse_mixed_resume(output_dir: Path, changed: list[str]) -> None:
    lines = "\n".join(f"  {line}" for line in changed)
    raise EvaluationRefused(
        f"cannot resume {output_dir}: the earlier run used another system:\n{lines}\n"
        "Its saved answers and this system's would be scored as one run. Use a new --output-dir, "
        "or pass --force to resume anyway (run_summary.json then records it).")


def finish(settings: ScoringSettings, output_dir: Path, judge: Judge | None, console: Console, notices: list[str],
           rules: RuleSet, official: OfficialJudge | None = None, *, judge_announced: bool = True) -> EvaluationResult:
    results = finalize(output_dir, judge, rules=rules, progress=not settings.no_progress, notices=notices,
                       official=official)
    print_report(console, results, settings.display_conversations, judge_announced=judge_announced)
    console.print(f"[bold green]outputs written to {escape(str(output_dir))}[/bold green]")
    try:  # the scores are already written: a report that cannot be built must not fail the run
        from evaluator.report.html import build_report

        console.print(f"[bold green]report: {escape(str(build_report(output_dir)))}[/bold green]")
    except Exception as exc:  # noqa: BLE001
        console.print(f"[yellow]report.html not written: {escape(f'{type(exc).__name__}: {exc}')}[/yellow]")
    # everything is written; a script must still notice a systemic fault or undecided turns (the exit status)
    return EvaluationResult(output_dir, results.scores, results.rows_all, results.rows_ego,
                            list(results.summary["notices"]), exit_code(results.summary), results.summary)


def run_evaluation(settings: EvaluationSettings, console: Console) -> EvaluationResult:
    """One run, resumed run, rejudge, generate-only run or shard (evaluator/api.py `evaluate`)."""
    refuse_contradicting_flags(settings)
    output_dir = Path(settings.output_dir) if settings.output_dir else default_output_dir()
    if settings.rejudge:
        return rejudge(settings, output_dir, console)
    if (output_dir / ANSWERS).exists() and not settings.resume:
        raise EvaluationRefused(f"{output_dir} already holds answers: pass --resume to continue it, or pick a new folder")
    start = start_of_run(settings, console)
    official = read_judge_prompt(settings.judge_prompt_from, start.rules)
    fingerprint = current_fingerprint(settings, start.run)
    fingerprint["judge_prompt"] = origin_identity(official.origin() if official else None)
    earlier = read_run_record(output_dir) if settings.resume else None
    forced_resumes = resume_or_refuse(settings, output_dir, earlier, fingerprint, console)
    notices: list[str] = []
    data = load_conversations(settings, start, console, notices)
    # --generate-only judges nothing: the judge is chosen (and its absence said) where the answers are scored
    judge = None if settings.generate_only else build_judge(settings.eval_model, settings.eval_base_url, settings,
                                                            console, start.rules, official)
    truncator = truncation_tokenizer(console, notices)
    agent, batch_size = agent_and_batch_size(settings, start.run, earlier, console)
    plan = plan_batches(settings, data.conversations, batch_size, console)
    record = run_record(settings, start, data, plan, batch_size, judge, official, truncator, fingerprint,
                        forced_resumes)
    write_run_config(output_dir, earlier, record)
    generate_answers(settings, output_dir, start, data, plan, batch_size, agent, truncator, console, notices)
    if settings.generate_only:
        console.print(f"[bold green]answers saved in {escape(str(output_dir))}[/bold green] (--generate-only: "
                      "score them with --rejudge or merge)")
        return EvaluationResult(output_dir, {}, [], [], notices, 0, {})
    return finish(settings, output_dir, judge, console, notices, start.rules, official)


def refuse_contradicting_flags(settings: EvaluationSettings) -> None:
    if (settings.resume or settings.rejudge) and not settings.output_dir:
        raise EvaluationRefused("--resume and --rejudge need --output-dir (the folder of the earlier run)")
    if settings.force and not (settings.resume or settings.rejudge):
        raise EvaluationRefused("--force only applies to --resume and --rejudge")
    if settings.generate_only and settings.rejudge:
        raise EvaluationRefused("--generate-only and --rejudge exclude each other: one generates, the other scores")


def rejudge(settings: EvaluationSettings, output_dir: Path, console: Console) -> EvaluationResult:
    """The saved answers of `output_dir` judged and scored again, by the run's judge and rules
    unless the flags name others."""
    if not (output_dir / ANSWERS).exists():
        raise EvaluationRefused(f"{output_dir} holds no saved answers to rejudge")
    record = read_run_record(output_dir) or RunRecord()
    rules = saved_rules(settings, record)
    official = read_judge_prompt(saved_prompt(settings, output_dir, record, rules), rules)
    judge = build_judge(*saved_judge_choice(settings, record), settings, console, rules, official, announce=False)
    refuse_prompt_change(output_dir, judge, settings)
    return finish(settings, output_dir, judge, console, [], rules, official, judge_announced=False)


@dataclass
class RunStart:
    """What a run's flags resolve to before anything loads: the resolved run everything below reads
    (its profile, its agent's setup), the shard and the rule set."""
    run: ResolvedRun
    shard: tuple[int, int] | None
    rules: RuleSet


def start_of_run(settings: EvaluationSettings, console: Console) -> RunStart:
    """The flags resolved; a bad --set, preset, calibration file, shard, rule set or oracle, or
    contradictory switches, fail now with one line."""
    if settings.profile == "auto":  # say which profile the GPU memory chose, and why
        console.print(f"--profile auto: {escape(describe_auto_profile())}")
    try:
        run = resolve_settings(settings)  # everything below reads this
        start = RunStart(run, parse_shard(settings.shard), rule_set(settings.rules))
        refused = oracle_refusal(settings.oracle, run.agent.cls)
        if refused:
            raise ValueError(refused)
    except ValueError as exc:
        raise EvaluationRefused(str(exc)) from None
    return start


def resume_or_refuse(settings: EvaluationSettings, output_dir: Path, earlier: RunRecord | None, fingerprint: dict,
                     console: Console) -> list[dict]:
    """The run's forced resumes: the earlier ones, and this one where it resumes another system
    with --force (without it, such a resume is refused)."""
    changed = resume_differences(output_dir, earlier, fingerprint) if settings.resume else []
    if changed and not settings.force:
        refuse_mixed_resume(output_dir, changed)
    forced_resumes = list(earlier.forced_resumes if earlier else [])
    if changed:
        forced_resumes.append({"at": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
                               "differences": changed})
        console.print("[bold yellow]resuming with --force from another system:[/bold yellow] " + escape("; ".join(changed)))
    return forced_resumes


@dataclass
class RunData:
    """The dataset of a run: its name, the loaded split and its name, the conversations this run
    (or shard) answers, and the image URLs the rule set updated."""
    dataset: str
    ds: object
    split: str
    conversations: list
    image_url_updates: list


def load_conversations(settings: EvaluationSettings, start: RunStart, console: Console,
                       notices: list[str]) -> RunData:
    """The dataset's conversations, after the pre-load check of every model and the dataset (a
    missing one: one message, before anything loads)."""
    dataset = settings.dataset or default_dataset(start.run.profile, settings.dataset_type)
    problem = preload_problem(start.run, dataset, settings.revision)
    if problem:
        raise EvaluationRefused(problem)
    console.print(f"[bold blue]Loading {escape(dataset)}[/bold blue] (revision {settings.revision}, split {settings.split})")
    try:
        ds, split, split_notice = load_split(dataset, settings.revision, settings.split)
        # the official loop reads the whole split and stops in whole batches (see planned_batches)
        conversations = read_conversations(ds, settings.num_conversations if settings.exact_conversations else -1)
    except Exception as exc:
        raise EvaluationRefused(f"cannot load the dataset {dataset!r} (revision {settings.revision}): "
                                f"{type(exc).__name__}: {exc}") from exc
    if split_notice:
        console.print(f"[yellow]{escape(split_notice)}[/yellow]")
        notices.append(split_notice)
    updated = apply_image_url_updates(conversations, start.rules.image_url_updates.get(settings.dataset_type, {}))
    if start.shard:
        conversations = [c for c in conversations if c.index % start.shard[1] == start.shard[0]]
    return RunData(dataset, ds, split, conversations, updated)


def truncation_tokenizer(console: Console, notices: list[str]):
    truncator = load_truncator()
    if not truncator.official:
        console.print(f"[yellow]truncation tokenizer: {escape(truncator.name)}[/yellow]")
        notices.append(f"truncation tokenizer is not Llama 3.2: {truncator.name}")
    return truncator


def agent_and_batch_size(settings: EvaluationSettings, run: ResolvedRun, earlier: RunRecord | None, console: Console):
    """(the agent or None, the batch size). The official stopping rule depends on the batch size,
    which only the agent knows; a resumed run takes it from the run it continues, so a finished
    run is rescored without loading the agent."""
    if earlier is not None and earlier.batch_size is not None:
        return None, earlier.batch_size
    agent = load_agent(settings, run, console)
    return agent, clip_batch_size(agent.get_batch_size())


@dataclass
class BatchPlan:
    """The batches the official loop would run (positions of conversation and turn), the turns
    they hold, how many conversations they serve, and where the loop stops (None: the whole split)."""
    batches: list
    planned: list[str]
    served: int
    stop_after: int | None


def plan_batches(settings: EvaluationSettings, conversations: list, batch_size: int, console: Console) -> BatchPlan:
    stop_after = None if settings.exact_conversations else settings.num_conversations
    batches = planned_batches(conversations, batch_size, stop_after)
    planned = [conversations[pos].turns[t].interaction_id for batch in batches for pos, t in batch]
    served = len({pos for batch in batches for pos, _ in batch})
    console.print(f"{served} conversations, {len(planned)} turns")
    return BatchPlan(batches, planned, served, stop_after)


def run_record(settings: EvaluationSettings, start: RunStart, data: RunData, plan: BatchPlan, batch_size: int,
               judge: Judge | None, official: OfficialJudge | None, truncator, fingerprint: dict,
               forced_resumes: list[dict]) -> RunRecord:
    """The record of a run or a resumed run (run_config.json): what a resume, a rejudge, a merge
    and the report read of it."""
    judge_model, judge_base_url = recorded_judge(settings, judge)
    return RunRecord(
        args=dataclasses.asdict(settings),
        dataset=data.dataset, dataset_type=settings.dataset_type, split=data.split, revision=settings.revision,
        num_conversations=settings.num_conversations, exact_conversations=bool(settings.exact_conversations),
        conversation_selection=conversation_selection(settings.num_conversations, bool(settings.exact_conversations),
                                                      plan.served, len(plan.planned)),
        served_conversations=plan.served, shard=settings.shard, agent=settings.agent, rules=start.rules.name,
        image_url_updates=data.image_url_updates,
        profile=start.run.profile, preset=settings.preset or "full", tokenizer=truncator.name,
        judge_model=judge_model, judge_base_url=judge_base_url,
        judge_prompt=judge.prompt_origin if judge else official.origin() if official else None,
        batch_size=batch_size, expected_turns=len(plan.planned),
        indices=fingerprint.get("indices"), web_contents=start.run.web_contents,
        fingerprint=fingerprint, forced_resumes=forced_resumes,
        # what the agent said decides its answers (agents/base_agent.py `describe`): the report
        # reads the agent's settings from here, as the run used them
        agent_description=start.run.agent.description, trace_view=start.run.agent.trace_view,
        oracle=settings.oracle,
    )


def write_run_config(output_dir: Path, earlier: RunRecord | None, record: RunRecord) -> None:
    """The run's record written, once a resume is found to select the same turns as the run it
    continues; the folder is made only now, so that a refused start leaves none behind."""
    if earlier is not None:
        refusal = selection_refusal(output_dir, earlier, record)
        if refusal:
            raise EvaluationRefused(refusal)
    write_run_record(output_dir, record)


def generate_answers(settings: EvaluationSettings, output_dir: Path, start: RunStart, data: RunData, plan: BatchPlan,
                     batch_size: int, agent, truncator, console: Console, notices: list[str]) -> None:
    """The planned turns answered by the agent (loaded now if it is not yet), each answer saved
    as it comes; a resume answers only the turns without a saved answer."""
    done = saved_answers(output_dir) if settings.resume else {}
    if settings.resume and all(iid in done for iid in plan.planned):
        console.print("every turn already has a saved answer: the agent is not loaded")
        return
    agent = agent or load_agent(settings, start.run, console)
    if clip_batch_size(agent.get_batch_size()) != batch_size:
        raise EvaluationRefused(f"cannot resume {output_dir}: the agent's batch size is now "
                                f"{clip_batch_size(agent.get_batch_size())}, the run used {batch_size}")
    stats = generate(agent, data.ds, data.conversations, batch_size, output_dir, truncator, resume=settings.resume,
                     progress=not settings.no_progress, shard=settings.shard, stop_after=plan.stop_after,
                     oracle=settings.oracle)
    if stats.turns_reused:
        notices.append(f"resumed: {stats.turns_reused} turns reused from saved answers")


def refuse_mixed_shards(sources: list[Path]) -> None:
    """Folders merged into one run must come from one system (folders without a fingerprint pass)."""
    prints = [(read_run_record(src) or RunRecord()).fingerprint for src in sources]
    changed = [f"  {src}: {line}" for src, fingerprint in zip(sources[1:], prints[1:]) if prints[0] and fingerprint
               for line in differences(prints[0], fingerprint)]
    if changed:
        raise EvaluationRefused(f"cannot merge: these folders used another system than {sources[0]}:\n" + "\n".join(changed))


def run_merge(settings: MergeSettings, console: Console) -> EvaluationResult:
    """The shard folders gathered into one and scored (evaluator/api.py `merge`)."""
    output_dir = Path(settings.output_dir)
    sources = [Path(d) for d in settings.dirs]
    refuse_mixed_shards(sources)
    try:
        notices = merge_runs(sources, output_dir)
    except ValueError as exc:
        raise EvaluationRefused(f"cannot merge: {exc}") from None
    for notice in notices:
        console.print(f"[yellow]{escape(notice)}[/yellow]")
    record = read_run_record(output_dir)
    rules = saved_rules(settings, record)
    model, base_url = saved_judge_choice(settings, record)
    official = read_judge_prompt(saved_prompt(settings, output_dir, record, rules), rules)
    judge = build_judge(model, base_url, settings, console, rules, official, announce=False)
    return finish(settings, output_dir, judge, console, notices, rules, official, judge_announced=False)

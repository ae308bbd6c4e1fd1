"""A run, a resumed run, a rejudge or a shard, from its settings to its result
(evaluator/api.py `evaluate`): the flags checked, the plan, the record, the answers, the scores.
"""
from __future__ import annotations

import datetime
from pathlib import Path

from rich.console import Console
from rich.markup import escape

from agents.profiles import REPO_ROOT
from evaluator.commands.agent import agent_and_batch_size, load_agent
from evaluator.commands.judging import build_judge, read_judge_prompt
from evaluator.commands.planning import (
    BatchPlan,
    RunData,
    RunStart,
    load_conversations,
    plan_batches,
    start_of_run,
    truncation_tokenizer,
)
from evaluator.commands.record import run_record, write_run_config
from evaluator.commands.rejudge import rejudge
from evaluator.commands.result import EvaluationRefused, EvaluationResult, finish
from evaluator.commands.resume import current_fingerprint, resume_or_refuse
from evaluator.harness.batching import clip_batch_size
from evaluator.harness.run_record import read_run_record
from evaluator.harness.runner import ANSWERS, generate, saved_answers
from evaluator.scoring.official_judge import origin_identity
from evaluator.settings import EvaluationSettings


def default_output_dir() -> Path:
    return REPO_ROOT / "outputs" / datetime.datetime.now().strftime("%Y%m%d-%H%M%S")


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

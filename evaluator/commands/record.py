"""The record of a run or a resumed run (harness/run_record.py), built from what the run resolved
and written once a resume is found to cover the same turns.
"""
from __future__ import annotations

import dataclasses
from pathlib import Path

from evaluator.commands.planning import BatchPlan, RunData, RunStart
from evaluator.commands.result import EvaluationRefused
from evaluator.harness.batching import conversation_selection
from evaluator.harness.fingerprint import selection_refusal
from evaluator.harness.run_record import RunRecord, write_run_record
from evaluator.scoring.judge import Judge
from evaluator.scoring.official_judge import OfficialJudge
from evaluator.settings import EvaluationSettings


def recorded_judge(settings: EvaluationSettings, judge: Judge | None) -> tuple[str | None, str | None]:
    """run_config.json's judge_model and judge_base_url: the judge of the run, or for --generate-only
    (which builds none) the judge flags it was given, for the step that scores; None, None where no
    judge is named ("--eval-model None" included)."""
    if judge is not None:
        return judge.model, judge.base_url
    if not settings.generate_only or (settings.eval_model or "").strip().lower() == "none":
        return None, None
    return settings.eval_model, settings.eval_base_url


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

"""What a run will answer, worked out before the agent loads: the flags resolved (`start_of_run`),
the dataset's conversations (`load_conversations`, after the pre-load check of every model), the
truncation tokenizer, and the batches the official loop runs (`plan_batches`).
"""
from __future__ import annotations

from dataclasses import dataclass

from rich.console import Console
from rich.markup import escape

from agents.hardware import describe_auto_profile
from agents.profiles import default_dataset
from evaluator.commands.result import EvaluationRefused
from evaluator.harness.batching import planned_batches
from evaluator.harness.dataset import apply_image_url_updates, load_split, read_conversations
from evaluator.harness.models import preload_problem
from evaluator.harness.oracle import refusal as oracle_refusal
from evaluator.harness.resolved import ResolvedRun, resolve_settings
from evaluator.scoring.rules import RuleSet, rule_set
from evaluator.scoring.truncate import load_truncator
from evaluator.settings import EvaluationSettings


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

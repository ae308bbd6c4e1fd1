"""Our agent answering the turns of lmms-eval's documents as local_evaluation.py answers them.

`AgentRun(settings)` builds the agent as a run of `local_evaluation.py` with the same settings
does (evaluator/commands/agent.py: the agent class and its configuration, the search pipeline of the
profile, the agent's own batch size), and `answer(ds, doc_ids, folder)` hands it the turns of
those documents of the split through the evaluator's own generation loop
(evaluator/harness/runner.py `generate`): the official iterator's batches over the conversations
in dataset order, the deadline the agent keeps, the image as the iterator hands it over, and a
conversation's earlier answers, cut to the judged length, as its history. The loop writes the
answers, traces and batch timings into `folder` as a `--generate-only` run leaves them.
Nothing here imports lmms-eval (cruise_lmms_eval/model.py is the lmms-eval side).
"""
from __future__ import annotations

from pathlib import Path

from rich.console import Console

from agents.base_agent import IDK_ANSWER
from evaluator.commands import EvaluationRefused, load_agent
from evaluator.harness.batching import SKIPPED_SESSIONS, clip_batch_size
from evaluator.harness.dataset import conversation_from_row, label_vocabularies
from evaluator.harness.resolved import resolve_settings
from evaluator.harness.run_record import RunRecord, write_run_record
from evaluator.harness.runner import ANSWERS, generate, saved_answers
from evaluator.scoring.truncate import load_truncator
from evaluator.settings import EvaluationSettings

SKIPPED = "the official iterator skips this session; answered \"I don't know\" without asking the agent"


class AgentRun:
    def __init__(self, settings: EvaluationSettings, console: Console | None = None):
        self.settings = settings
        self.console = console or Console(stderr=True)
        try:
            run = resolve_settings(settings)
        except ValueError as exc:
            raise EvaluationRefused(str(exc)) from None
        self.run = run
        self.agent = load_agent(settings, run, self.console)
        self.batch_size = clip_batch_size(self.agent.get_batch_size())
        self.truncator = load_truncator()

    def answer(self, ds, doc_ids: list[int], folder: Path) -> dict[int, tuple[str, ...]]:
        """doc_id -> the agent's replies to each turn of that document's conversation, as it gave
        them (the judged answer is the reply cut to 75 tokens: the task cuts it, as the evaluator
        does). `ds`: the split as lmms-eval holds it (one conversation per row, images included)."""
        folder = Path(folder)
        if (folder / ANSWERS).exists():
            raise EvaluationRefused(f"{folder} already holds answers: give cruise_agent another output_dir")
        meta = ds.remove_columns([c for c in ("image",) if c in ds.column_names])
        vocabularies = label_vocabularies(meta.features)
        conversations = [conversation_from_row(i, meta[i], vocabularies) for i in sorted(set(doc_ids))]
        write_run_record(folder, RunRecord(
            agent=self.settings.agent, profile=self.run.profile, preset=self.settings.preset or "full",
            batch_size=self.batch_size, tokenizer=self.truncator.name,
            expected_turns=sum(len(c.turns) for c in conversations),
            agent_description=self.run.agent.description, trace_view=self.run.agent.trace_view,
            lmms_eval_documents=sorted(set(doc_ids))))
        generate(self.agent, ds, conversations, self.batch_size, folder, self.truncator, resume=False, progress=True)
        saved = saved_answers(folder)
        replies = {}
        for conv in conversations:
            if conv.session_id in SKIPPED_SESSIONS:
                self.console.print(f"[yellow]{conv.session_id}: {SKIPPED}[/yellow]")
            replies[conv.index] = tuple(saved[t.interaction_id]["raw_answer"] if t.interaction_id in saved
                                        else IDK_ANSWER for t in conv.turns)
        return replies

"""Our systems as an lmms-eval model: `--model cruise_agent` (registered by manifest.py).

    --model_args system=cruise|qa_dragon|sam_rag|<plugin>,profile=...,preset=...,set=A=1;B=2,...

builds the agent as `local_evaluation.py --profile ... --preset ... --set ...` does
(model_args.py says how the arguments are read) and answers lmms-eval's requests with it as
local_evaluation.py answers the same turns (agent_run.py): for a task's documents, the
conversations they hold go through the evaluator's generation loop together, in the official
iterator's batches at the agent's own batch size (lmms-eval's --batch_size is not used), under
the agent's deadline. A single-turn request gets the reply to its turn; a multi-round request
(crag_mm_multi) the replies to every turn of its conversation, the agent having seen its own earlier
answers as history. The loop's files (answers, traces, batch timings) go to
`output_dir/<task>` (default: outputs/<timestamp>/ in the repository).
"""
from __future__ import annotations

from pathlib import Path

from lmms_eval.api.model import lmms

from cruise_lmms_eval.agent_run import AgentRun
from cruise_lmms_eval.model_args import LMMS_EVAL_EXTRAS, evaluation_settings, parse_model_args
from evaluator.commands import EvaluationRefused


class CruiseAgentModel(lmms):
    is_simple = True

    def __init__(self, arg_string: str = "", **lmms_eval_extras):
        super().__init__()
        from evaluator.commands import default_output_dir

        unknown = sorted(set(lmms_eval_extras) - set(LMMS_EVAL_EXTRAS))
        if unknown:
            raise TypeError(f"cruise_agent takes its settings as one model_args string, not {unknown}")
        settings = evaluation_settings(parse_model_args(arg_string))
        self.output_dir = Path(settings.output_dir) if settings.output_dir else default_output_dir()
        self.run = AgentRun(settings)
        self.answered: set[str] = set()  # the tasks whose documents the agent has answered
        self.run.console.print(f"cruise_agent: answers and traces go to {self.output_dir}/<task>")

    @classmethod
    def create_from_arg_string(cls, arg_string: str, additional_config: dict | None = None):
        """The argument string read by model_args.py (a repeated set= kept), not lmms-eval's dict."""
        return cls(arg_string, **{k: v for k, v in (additional_config or {}).items() if v is not None})

    def _replies(self, requests) -> list[tuple[str, ...]]:
        """Each request's replies: the requests of one task and split answered together."""
        wanted: dict[tuple[str, str], set[int]] = {}
        for request in requests:
            doc_id, task, split = request.args[-3:]
            wanted.setdefault((task, split), set()).add(doc_id)
        replies = {}
        for (task, split), doc_ids in wanted.items():
            if task in self.answered:
                # lmms-eval asks again within one task only when the task asks a document at a
                # time, as crag_mm_agentic's rounds do: our systems search for themselves
                raise EvaluationRefused(f"cruise_agent answers each task's documents in one go, and {task} asks "
                                        "them one round at a time (as crag_mm_agentic does): our systems search for "
                                        "themselves, so run them on crag_mm_single")
            self.answered.add(task)
            got = self.run.answer(self.task_dict[task][split], sorted(doc_ids), self.output_dir / task)
            replies.update({(task, split, doc_id): reply for doc_id, reply in got.items()})
        return [replies[(request.args[-2], request.args[-1], request.args[-3])] for request in requests]

    def generate_until(self, requests) -> list[str]:
        return [reply[0] for reply in self._replies(requests)]

    def generate_until_multi_round(self, requests) -> list[list[str]]:
        # a list: lmms-eval passes a list of replies through to the task, one per round, and
        # takes a tuple for (text, token counts) or turns it into its text
        return [list(reply) for reply in self._replies(requests)]

    def loglikelihood(self, requests):
        raise NotImplementedError("cruise_agent answers questions; it gives no log-likelihoods")

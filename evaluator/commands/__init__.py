"""What each mode does: run (or resume) an evaluation, rejudge, merge.

Each takes its settings record (evaluator/settings.py) and returns an EvaluationResult; a run
that cannot start or go on raises EvaluationRefused with one line. `evaluate` and `merge`
(evaluator/api.py) call these; `local_evaluation.py` calls those. The top of the evaluator: it
drives the harness (generation, outputs), the search layer, the scoring and the report; none of
those imports this package. The agent's settings (--profile, --preset, --set, --calibration,
--model-name) are handed to the agent class explicitly (harness/agent_setup.py).

One module a concern, each read alone:
- run.py: a run, resumed run or shard, step by step (`run_evaluation`);
- rejudge.py: `--rejudge`; merge.py: `merge` of shard folders (`run_merge`);
- planning.py: the flags resolved, the conversations loaded, the batches planned;
- agent.py: the search pipeline and the agent built over it;
- judging.py: which judge, prompt and rule set a command asks;
- resume.py: whether a resume continues the same system (the fingerprint, --force);
- record.py: the run's record (run_config.json) built and written;
- result.py: a scored folder reported and returned (`finish`, `EvaluationResult`).
The names below are what the rest of the repository imports from here.
"""
from evaluator.commands.agent import build_search, load_agent
from evaluator.commands.judging import build_judge, read_judge_prompt
from evaluator.commands.merge import run_merge
from evaluator.commands.result import EvaluationRefused, EvaluationResult, finish
from evaluator.commands.run import default_output_dir, run_evaluation

__all__ = ["EvaluationRefused", "EvaluationResult", "build_judge", "build_search", "default_output_dir", "finish",
           "load_agent", "read_judge_prompt", "run_evaluation", "run_merge"]

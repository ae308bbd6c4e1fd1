"""The interface the CRAG-MM evaluator calls (same contract as the official starter kit).

An agent receives a search pipeline at construction and answers a batch of turns at a time.
The evaluator asks `get_batch_size()` once and clips it to 1..16; every later call of
`batch_generate_response` carries at most that many queries and must return within
10 s x batch size on the competition machine.

Beyond the contract, a harness that passes settings explicitly (our local_evaluation.py) may
ask an agent class a few optional questions; the official evaluators ask none of them, and an
agent that answers none still runs (it takes no --preset/--set, and its report has no funnel):

- `configure(profile=..., preset=..., settings=[...], calibration=..., model_name=...)`: the
  configuration the agent will be built with (`model_name`, passed only when a run names one:
  the relaunched evaluator's `--model-name`), handed back as `AgentClass(search_pipeline, config=...)`; bad
  settings raise ValueError with one line, before anything loads;
- `describe(config)`: that configuration as a JSON object (run_config.json records it; a
  resumed run must have the same);
- `hub_models(config)`: the Hugging Face models the agent loads in this process (the pre-load
  check, aicrowd.json);
- `preload_problems(config)`: what would stop the agent once it loads (a server down, an
  engine that cannot serve the model), in one line each, found without loading anything;
- `TRACE_VIEW`: a module that shows the agent's traces in the report (`summarize(traces)` ->
  run_summary.json's "agent_summary"; `report_sections(agent_summary)`; `TURN_TEMPLATE`);
- `ORACLES`: the stages whose human labels the agent can be given (any of "region", "entity",
  "question"); an oracle run (`--oracle STAGE`) then calls `batch_generate_response(...,
  oracle=[...])` with one record per turn, None where the turn has no such label
  (evaluator/harness/oracle.py says what each record holds).

After each call an agent may leave `last_batch_report = {"traces": [...], "engine_calls": [...]}`,
one trace per turn (a JSON object) and one record per model call. The harness sums a call's
`stage`, `kind` ("chat" or "rerank"), `requests`, `prompt_tokens`, `output_tokens` (the answer
text), `reasoning_tokens` (hidden reasoning a hosted model bills as output), `wall_ms`,
`empty_replies` and `refusals` (one entry per request a provider refused) per stage: the report's
tokens and times. A call's `model` (the model that answered) is what the pre-flight's dry run
says it ran. It reads a few keys of a trace, each optional:
`branch` (what decided the turn; "error" a stage fault, "refused" a provider's refusal, both
answered "I don't know"), `deadline_cut` (bool), `turn_budget_s` (the per-turn budget the turn ran
under, 0 for none: the report and batches.jsonl set it beside the competition's), `errors` (list of str), `funnel`
(ordered {step: passed} of the agent's own checks, the report's funnel), and, for a
retrieval-augmented agent, `retrieved` (hits), `chunks` and `kept_chunks` (its context: the
evidence-coverage figures).
"""
from __future__ import annotations

from PIL import Image

# The contract, each fact defined once (the evaluator, the agent and preflight import these).
IDK_ANSWER = "I don't know"  # counts as a miss (0), not a hallucination (-1)
MIN_BATCH_SIZE = 1  # the evaluator clips get_batch_size() to MIN..MAX
MAX_BATCH_SIZE = 16
TURN_BUDGET_S = 10.0  # each batch_generate_response call gets TURN_BUDGET_S x batch size
JUDGED_ANSWER_TOKENS = 75  # answers are cut to this many Llama-3.2 tokens before judging


def budget_text(turn_budget_s: float) -> str:
    """A per-turn budget as a report names it, against the competition's."""
    if turn_budget_s <= 0:
        return ("none (turn_budget_s 0: the relaunched benchmark has no time limit; these timings are not "
                f"the competition's {TURN_BUDGET_S:g} s a turn)")
    if turn_budget_s == TURN_BUDGET_S:
        return f"{turn_budget_s:g} s a turn, the competition's"
    than = "tighter" if turn_budget_s < TURN_BUDGET_S else "wider"
    return f"{turn_budget_s:g} s a turn ({than} than the competition's {TURN_BUDGET_S:g} s)"


class BaseAgent:
    TRACE_VIEW: str | None = None  # module name; see the module's docstring
    ORACLES: tuple[str, ...] = ()  # oracle runs it takes; see the module's docstring

    def __init__(self, search_pipeline=None):
        # `search_pipeline` is a `cragmm_search.search.UnifiedSearchPipeline` (or anything
        # callable the same way): `pipeline(pil_image, k=K)` for image search and
        # `pipeline("text", k=K)` for web search (Tasks 2-3; Task 1 raises ValueError).
        self.search_pipeline = search_pipeline

    def get_batch_size(self) -> int:
        """How many turns the agent wants per call (the evaluator clips it to 1..16)."""
        return 1

    def batch_generate_response(
        self,
        queries: list[str],
        images: list[Image.Image],
        message_histories: list[list[dict]],
    ) -> list[str]:
        """One answer per query, in order.

        `message_histories[i]` is `[]` for a single-turn query; for a multi-turn one it holds
        the conversation's earlier turns as {"role": "user"|"assistant", "content": str},
        where the assistant contents are this agent's own earlier answers. All turns of a
        conversation share one image. Answers are cut to JUDGED_ANSWER_TOKENS tokens before
        judging; an answer containing IDK_ANSWER counts as a miss (0) rather than a
        hallucination (-1).
        """
        raise NotImplementedError

    # --- optional questions of a harness that passes settings (see the module's docstring) ---
    @classmethod
    def configure(cls, *, profile: str, preset: str | None = None, settings: list[str] | tuple[str, ...] = (),
                  calibration: str | None = None, model_name: str | None = None):
        """None: this agent takes no settings. A subclass that answers declares every parameter
        it takes; one without `model_name` is refused `--model-name` before anything loads."""
        return None

    @classmethod
    def describe(cls, config) -> dict:
        return {}

    @classmethod
    def hub_models(cls, config) -> list[str]:
        return []

    @classmethod
    def preload_problems(cls, config) -> list[str]:
        return []

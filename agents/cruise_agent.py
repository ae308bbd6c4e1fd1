"""CruiseAgent: the CRUISE verification-centric multi-modal RAG chain as a CRAG-MM agent.

    agent = CruiseAgent(search_pipeline, config=load_config("cpu", "no_cov"))   # settings passed
    agent = CruiseAgent(search_pipeline, profile="cpu", preset="no_cov", tau_ret=0.4)
    agent = CruiseAgent(search_pipeline)   # the AIcrowd boundary: CRUISE_* from the environment

Keyword overrides are `CruiseConfig` fields (agents/config/). Built with nothing but a search
pipeline (as AIcrowd builds `UserAgent`), the agent reads its settings from the environment
(`config_from_environment`); given a config, a profile, a preset or overrides it reads nothing
from there. `engines` replaces the model engines (tests pass scripted ones). After every call,
`last_batch_report` holds one trace per turn and the engine calls of that batch.
"""
from __future__ import annotations

import dataclasses
import time

from agents.base_agent import MAX_BATCH_SIZE, BaseAgent
from agents.config.cruise_config import CruiseConfig
from agents.config.loading import config_from_environment, load_config, load_config_from_settings
from agents.engines.base import Ledger
from agents.run_stages import answer_batch
from agents.runtime.cost_priors import stage_priors
from agents.runtime.deadline import StageCosts
from agents.runtime.package_files import own_files
from agents.runtime.system import system_for
from agents.stages.prompts import PromptNotFound, missing_prompts
from agents.stages.s0_inputs import prepare_turns
from agents.stages.s0a_perceive import perception_wanted, warm_up_perception

# Config fields that say where a served model runs and how it is reached, not which model it is.
SERVED_WHERE = ("vlm_base_url", "router_base_url", "reranker_base_url", "served_max_in_flight", "served_timeout_s")


class CruiseAgent(BaseAgent):
    TRACE_VIEW = "agents.runtime.trace_view"
    # every registered system searches through s3_retrieve and reads the turns s0_inputs prepares,
    # where each oracle acts (stages/s0_inputs.py `with_oracle`)
    ORACLES = ("region", "entity", "question")

    def __init__(self, search_pipeline=None, config: CruiseConfig | None = None, *, engines=None, profile=None,
                 preset=None, **overrides):
        super().__init__(search_pipeline)
        if config is None:
            explicit = profile is not None or preset is not None or overrides
            config = load_config(profile, preset, **overrides) if explicit else config_from_environment()
        elif profile is not None or preset is not None or overrides:
            raise ValueError("pass either a config or profile/preset/overrides, not both")
        self.config = config
        self.ledger = Ledger()
        if engines is None:
            from agents.factory import build_engines  # loads models: only when needed

            engines = build_engines(self.config, self.ledger)
        else:
            for engine in (engines.router, engines.vlm, engines.reranker, engines.coarse):
                if engine is not None:
                    engine.ledger = self.ledger
        self.engines = engines
        if perception_wanted(self.config, self.engines.vlm):
            warm_up_perception(self.config)  # seconds at load, not in the first scored batch's budget
        self.system = system_for(self.config)  # the registered chain that answers (CruiseConfig.system)
        # every prompt its stages may ask for, before any batch: one behind a gate that few turns
        # pass would otherwise fault only those turns, late in a run
        missing = missing_prompts(self.system)
        if missing:
            raise PromptNotFound(f"system {self.system.name!r} declares prompts that are not there: " + "; ".join(missing))
        self.costs = StageCosts(priors=stage_priors(self.system, self.config))
        self.last_batch_report: dict | None = None
        self.warmup_s: dict[str, float] | None = None  # seconds per stage of the warm-up batch
        if self.config.run.warmup_at_load:
            from agents.warmup import QUESTION, warm_up, warm_up_image

            n, side = self.config.run.batch_size, self.config.inputs.image_max_side
            turns = prepare_turns([QUESTION] * n, [warm_up_image(side)] * n, [[] for _ in range(n)], self.config)
            self.warmup_s = warm_up(self.system, self.engines, self.search_pipeline, self.config, turns)
            self.ledger.drain()  # its engine calls are no scored batch's

    # --- what a harness that passes settings asks (agents/base_agent.py) ------------------------
    @classmethod
    def configure(cls, *, profile: str, preset: str | None = None, settings=(), calibration=None,
                  model_name: str | None = None) -> CruiseConfig:
        return load_config_from_settings(profile, preset, settings, calibration, model_name=model_name)

    @classmethod
    def describe(cls, config: CruiseConfig) -> dict:
        """Every config field ("config"; "where" for the fields that say where a served model
        runs and how it is reached, not which model it is) and the hashes of the prompt files
        its system reads (its own package's too)."""
        from agents.stages.prompts import prompt_hashes

        fields = config.flat()
        return {"config": {k: v for k, v in fields.items() if k not in SERVED_WHERE},
                "where": {k: v for k, v in fields.items() if k in SERVED_WHERE},
                "prompts": prompt_hashes(system=system_for(config))}

    @classmethod
    def hub_models(cls, config: CruiseConfig) -> list[str]:
        from agents.preload import hub_models

        return hub_models(config)

    @classmethod
    def preload_problems(cls, config: CruiseConfig) -> list[str]:
        from agents.preload import preload_problems

        return preload_problems(config)

    # --- the contract ----------------------------------------------------------------------------
    def get_batch_size(self) -> int:
        return self.config.run.batch_size

    def batch_generate_response(self, queries, images, message_histories, rag_context_list=None,
                                domains=None, oracle=None) -> list[str]:
        """The starter kit calls this with the first three arguments. facebookresearch/CRAG-MM's
        harness also passes its own retrieval (`rag_context_list`: per turn a string, "" when it
        searched nothing; a list of strings or search-hit dicts works too) and each turn's domain
        name (`domains`: recorded in the trace, steers nothing). `harness_context` says how its
        retrieval meets ours. `oracle`: an oracle run's label per turn (agents/base_agent.py
        ORACLES; stages/s0_inputs.py `with_oracle` says what each does)."""
        started = time.monotonic()  # the evaluator's clock for this call starts now, not at the chain
        n = len(queries)
        if len(images) != n or len(message_histories) != n:
            raise ValueError(
                f"queries, images and message_histories must have one entry per turn "
                f"(got {n}, {len(images)}, {len(message_histories)})"
            )
        for name, values in (("rag_context_list", rag_context_list), ("domains", domains), ("oracle", oracle)):
            if values is not None and len(values) != n:
                raise ValueError(f"{name} must have one entry per turn (got {len(values)} for {n} queries)")
        if n > MAX_BATCH_SIZE:
            raise ValueError(f"a batch holds at most {MAX_BATCH_SIZE} turns, got {n}")
        self.ledger.drain()  # calls made outside a batch (warm-up) are not this batch's
        turns = prepare_turns(queries, images, message_histories, self.config, rag_context_list, domains, oracle)
        with own_files(self.system):  # its stages read its own package's prompts first
            answers, traces = answer_batch(self.system, turns, self.engines, self.search_pipeline, self.config, self.costs,
                                                 started=started)
        self.last_batch_report = {
            "traces": traces,
            "engine_calls": [dataclasses.asdict(r) for r in self.ledger.drain()],
        }
        return answers

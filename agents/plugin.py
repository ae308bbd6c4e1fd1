"""A system of your own, in one import (docs/add_a_system.md walks through a whole package):

    System      the record: its name, its stages in order, its rule, its settings
    Stage       one step: its name, its function over a batch, the fields it reads and writes,
                the prompts it may ask for
    Batch       what a stage's function is handed: the turns, their reads, the settings, `ask`
    Decision    a rule's answer with the name of its branch
    register    puts a System in the registry, from your package's module
    ranged, between   a numeric setting and the range it may take
    RETRIEVE    the shared retrieval stage (the search pipeline), for any system's list
    IDK_ANSWER  the answer that scores 0 where a wrong one scores -1

A run of your own (control flow of your own, docs/add_a_system.md "A run of your own") is
`run(batch)` over the batch the runtime opened (a BatchState): `batch.call(stage, only=...)` runs a
stage, `batch.fields` holds what each turn's stages wrote, `batch.finish()` decides and traces
every turn. View: how the report shows your system (its funnel, its branches, its turn page).
"""
from agents.base_agent import IDK_ANSWER
from agents.run_stages import Batch, BatchState
from agents.runtime.system import Decision, Stage, System, View, register
from agents.settings import between, ranged
from agents.stages.s3_retrieve import RETRIEVE

__all__ = ["IDK_ANSWER", "RETRIEVE", "Batch", "BatchState", "Decision", "Stage", "System", "View", "between",
           "ranged", "register"]


def __getattr__(name: str):
    # last release's `always` (Stage(calls_no_model=always)), accepted for one release
    if name == "always":
        import warnings

        warnings.warn("agents.plugin.always is deprecated: drop calls_no_model=always; whether a stage calls a "
                      "model comes from the engines' ledger (docs/changes.md)", DeprecationWarning, stacklevel=2)
        return lambda cfg: True
    raise AttributeError(f"module 'agents.plugin' has no attribute {name!r}")

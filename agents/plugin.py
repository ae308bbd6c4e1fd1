"""A system of your own, in one import (docs/add_a_system.md walks through a whole package):

    System      the record: its name, its stages in order, its rule, its settings
    Stage       one step: its name, its function over a batch, the fields it reads and writes
    Batch       what a stage's function is handed: the turns, their reads, the settings, `ask`
    register    puts a System in the registry, from your package's module
    ranged, between   a numeric setting and the range it may take
    RETRIEVE    the shared retrieval stage (the search pipeline), for any system's list
    IDK_ANSWER  the answer that scores 0 where a wrong one scores -1
    always      `calls_no_model=always`, for a stage that sends no model request
"""
from agents.base_agent import IDK_ANSWER
from agents.run_stages import Batch
from agents.runtime.system import Decision, Stage, System, View, always, register
from agents.settings import between, ranged
from agents.stages.s3_retrieve import STAGE as RETRIEVE

__all__ = ["IDK_ANSWER", "RETRIEVE", "Batch", "Decision", "Stage", "System", "View", "always", "between", "ranged",
           "register"]

"""What an evaluation is told: one record per mode, its fields the command line's options.

Each field is named as `local_evaluation.py`'s argparse destination and holds its default
(`local_evaluation.py` takes its defaults from here), so `evaluate(num_conversations=4)` means
`--num-conversations 4`. `ScoringSettings` holds what the judge, the scores and the report take
(`add_judge_args`: a run and a merge both have them); `EvaluationSettings` a run's own options
besides; `MergeSettings` the folders a merge gathers. `command_line` writes a record back as
the flags that give it (what a `--workers` shard is started with).

From Python a run may also be told in types rather than strings, each written into the record as
the command line would give it (so run_config.json and the resume fingerprint record what ran):
`agent` an agent class (its `MODULE:QUALNAME`, which must import back to that class), `set` a
dict or a settings dataclass instance (every field of it), or a list mixing those with
"FIELD=VALUE" strings; a value a class or a function (its `MODULE:QUALNAME`), or any other object
by its `str()` (a registered System record says `MODULE:NAME`, the module that registered it).
"""
from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass

from agents.registry import load_object

DATASET_TYPES = ("single-turn", "multi-turn")
INDEX_CHOICES = ("public-test", "validation")
ORACLE_STAGES = ("region", "entity", "question")  # --oracle (evaluator/harness/oracle.py)
# flags whose spelling is not the destination with dashes (the starter kit's own name)
FLAG_SPELLINGS = {"no_progress": "--no_progress"}


@dataclass(frozen=True)
class ScoringSettings:
    """The judge, the scores and the report (both a run and a merge take these)."""

    rules: str | None = None  # kddcup2025 | crag-mm; None: kddcup2025, or a saved run's own
    eval_model: str | None = None  # None: the rule set's judge model; "None": no LLM judge
    eval_base_url: str | None = None
    judge_prompt_from: str | None = None  # a checkout whose own code builds the judge's requests
    num_workers: int = 8  # judge threads
    judge_timeout: float = 30.0
    judge_retry_wait: float = 1.0
    judge_max_wait: float = 120.0
    judge_give_up_after: int = 5
    display_conversations: int = 10
    no_progress: bool = False
    strict: bool = False  # any faulted turn fails the run (exit 5, evaluator/harness/faults.py)


@dataclass(frozen=True)
class EvaluationSettings(ScoringSettings):
    """One evaluation: run, resume, rejudge, generate-only, one shard, or all shards on Ray."""

    dataset_type: str = "single-turn"
    split: str = "validation"
    num_conversations: int = -1
    exact_conversations: bool = False
    suppress_web_search_api: bool = False
    suppress_image_search_api: bool = False
    output_dir: str | None = None  # None: outputs/<timestamp> in the repository
    revision: str = "v0.1.2"
    dataset: str | None = None  # None: the profile's
    agent: str = "agents.user_config:UserAgent"
    profile: str = "auto"
    preset: str | None = None
    model_name: str | None = None
    set: tuple[str, ...] = ()  # FIELD=VALUE overrides handed to the agent
    calibration: str | None = None
    search: str = "default"  # default | none | MODULE:FUNC
    indices: str | None = None
    web_contents: str | None = None  # "default": the profile's full-content database
    resume: bool = False
    force: bool = False
    rejudge: bool = False
    generate_only: bool = False
    shard: str | None = None  # "I/N"
    workers: int | None = None
    ray: str | None = None
    worker_retries: int = 2
    gpus_per_worker: float | None = None
    oracle: str | None = None  # region | entity | question (evaluator/harness/oracle.py)

    def __post_init__(self):
        if isinstance(self.set, str):
            raise ValueError(f"set={self.set!r}: give a list of FIELD=VALUE strings")
        object.__setattr__(self, "agent", agent_spec(self.agent))
        object.__setattr__(self, "set", set_strings(self.set))
        if self.output_dir is not None:
            object.__setattr__(self, "output_dir", str(self.output_dir))
        if self.calibration is not None:
            object.__setattr__(self, "calibration", str(self.calibration))
        for name, value, choices in (("dataset_type", self.dataset_type, DATASET_TYPES),
                                     ("indices", self.indices, (None, *INDEX_CHOICES)),
                                     ("oracle", self.oracle, (None, *ORACLE_STAGES))):
            if value not in choices:
                raise ValueError(f"{name}={value!r}: choose one of {[c for c in choices if c]}")


@dataclass(frozen=True)
class MergeSettings(ScoringSettings):
    """The folders of a sharded run, gathered into `output_dir` and scored as one run."""

    dirs: tuple[str, ...] = ()
    output_dir: str = ""

    def __post_init__(self):
        object.__setattr__(self, "dirs", tuple(str(d) for d in self.dirs))
        object.__setattr__(self, "output_dir", str(self.output_dir))
        if not self.dirs or not self.output_dir:
            raise ValueError("merge needs the shard folders and an output_dir")


def named(obj) -> str:
    """`MODULE:NAME` of a class or a function, as `--agent` and agent_setup's import_object read
    it back; refused where that does not import back to it (a class defined inside a function or
    another class, or one replaced since)."""
    spec = f"{obj.__module__}:{obj.__qualname__}"
    try:
        found = load_object(spec)
    except (ImportError, ValueError):  # a qualname inside a function is no attribute of its module
        found = None
    if found is not obj:
        raise ValueError(f"{obj!r} cannot be named for the run: {spec} does not import back to it "
                         "(define it at the top level of a module)")
    return spec


def agent_spec(agent) -> str:
    """The agent as the command line names it: "MODULE:CLASS" as given, or a class's."""
    return agent if isinstance(agent, str) else named(agent)


def setting_text(value) -> str:
    """A typed setting's value as --set writes it."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, (tuple, list)):
        return ",".join(map(setting_text, value))
    if isinstance(value, dict):
        return json.dumps(value)
    if isinstance(value, type) or callable(value) and hasattr(value, "__qualname__"):
        return named(value)
    return str(value)


def set_strings(given) -> tuple[str, ...]:
    """--set's "FIELD=VALUE" strings of `set` as given: strings, a dict, a settings dataclass
    instance (every field of it), or a list of any of them."""
    items = [given] if isinstance(given, dict) or dataclasses.is_dataclass(given) else list(given)
    out: list[str] = []
    for item in items:
        if isinstance(item, str):
            out.append(item)
            continue
        if dataclasses.is_dataclass(item) and not isinstance(item, type):
            item = {f.name: getattr(item, f.name) for f in dataclasses.fields(item)}
        if not isinstance(item, dict):
            raise ValueError(f"set: {item!r} is neither a FIELD=VALUE string, a dict nor a settings dataclass")
        out += [f"{name}={setting_text(value)}" for name, value in item.items()]
    return tuple(out)


def scoring_of(settings: ScoringSettings) -> dict:
    """The ScoringSettings fields of any settings record, as keyword arguments."""
    return {f.name: getattr(settings, f.name) for f in dataclasses.fields(ScoringSettings)}


def command_line(settings: EvaluationSettings) -> list[str]:
    """The local_evaluation.py flags that give `settings`: each field that differs from its default."""
    argv: list[str] = []
    for f in dataclasses.fields(settings):
        value, default = getattr(settings, f.name), f.default
        if value == default:
            continue
        flag = FLAG_SPELLINGS.get(f.name, "--" + f.name.replace("_", "-"))
        if isinstance(value, bool):
            argv.append(flag)
        elif isinstance(value, tuple):
            for item in value:
                argv += [flag, str(item)]
        else:
            argv += [flag, str(value)]
    return argv

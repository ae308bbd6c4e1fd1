"""The agent a run evaluates, and the settings it is built with, passed explicitly.

`setup_agent(spec, profile=..., preset=..., settings=..., calibration=..., model_name=...)` imports the class
that `--agent MODULE:CLASS` names and asks it the optional questions of agents/base_agent.py:
its configuration for these settings (`configure`), that configuration as a JSON record
(`describe`: run_config.json and the resume fingerprint keep it), the hub models it loads
and what would stop it loading. An agent class that answers none of them is built as the
official evaluators build it, `AgentClass(search_pipeline=...)`, and is refused any --preset,
--set or --calibration (it would not receive them). `--model-name` reaches only a class whose
configure() declares `model_name` (read from its signature); any other is refused it in one
line. Nothing here knows which agent it is.
"""
from __future__ import annotations

import inspect
from dataclasses import dataclass, field

from agents.registry import load_object


def import_object(spec: str):
    """`package.module:Name` -> the object (agents/registry.py load_object, the one reader of
    MODULE:NAME)."""
    return load_object(spec, what="--agent")


@dataclass
class AgentSetup:
    spec: str  # MODULE:CLASS
    cls: type
    config: object | None = None  # what cls.configure returned; None: the agent takes no settings
    description: dict = field(default_factory=dict)  # cls.describe(config), JSON
    # what the command line told it, as it named them (a fetch command names them again)
    model_name: str | None = None  # --model-name: the checkpoint the agent's VLM is
    preset: str | None = None
    settings: tuple[str, ...] = ()  # --set FIELD=VALUE
    calibration: str | None = None

    @property
    def trace_view(self) -> str | None:
        """The module that shows this agent's traces in the report (agents/base_agent.py)."""
        return getattr(self.cls, "TRACE_VIEW", None)

    def hub_models(self) -> list[str]:
        ask = getattr(self.cls, "hub_models", None)
        return list(ask(self.config)) if ask and self.config is not None else []

    def preload_problems(self) -> list[str]:
        ask = getattr(self.cls, "preload_problems", None)
        return list(ask(self.config)) if ask and self.config is not None else []

    def build(self, search_pipeline):
        if self.config is None:
            return self.cls(search_pipeline=search_pipeline)
        return self.cls(search_pipeline=search_pipeline, config=self.config)


def takes_model_name(configure) -> bool:
    """Whether an agent's configure() declares `model_name` (or takes any keyword)."""
    if configure is None:
        return False
    parameters = inspect.signature(configure).parameters.values()
    return any(p.name == "model_name" or p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters)


def setup_agent(spec: str, *, profile: str, preset: str | None = None, settings: list[str] | tuple[str, ...] = (),
                calibration: str | None = None, model_name: str | None = None) -> AgentSetup:
    """ValueError (one line) for an agent that cannot be imported or settings it refuses."""
    try:
        cls = import_object(spec)
    except (ImportError, AttributeError, ValueError) as exc:
        raise ValueError(f"--agent {spec}: cannot import it ({type(exc).__name__}: {exc})") from None
    configure = getattr(cls, "configure", None)
    if model_name and not takes_model_name(configure):
        why = "its configure() declares no model_name" if configure else "it has no configure()"
        raise ValueError(f"--agent {spec} takes no --model-name ({why})")
    named = {"model_name": model_name} if model_name else {}  # an agent that declares none is asked without it
    config = configure(profile=profile, preset=preset, settings=list(settings or ()), calibration=calibration,
                       **named) if configure else None
    if config is None:
        given = [flag for flag, value in (("--preset", preset), ("--set", settings), ("--calibration", calibration),
                                          ("--model-name", model_name)) if value]
        if given:
            raise ValueError(f"--agent {spec} takes no settings (it has no configure()), so {', '.join(given)} "
                             "would not reach it")
        return AgentSetup(spec, cls)
    describe = getattr(cls, "describe", None)
    return AgentSetup(spec, cls, config, dict(describe(config)) if describe else {}, model_name, preset,
                      tuple(settings or ()), calibration)

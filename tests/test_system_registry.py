"""The registry of systems (agents/runtime/system.py) as tests and users rely on it: a record is
checked when it registers, and a bad one is refused in one line that names it (one case per
check); a scope's registrations end with it, so that what one test registers no other test sees,
in any order; and what the configuration reads off the registry follows it.
"""
from __future__ import annotations

import sys
from dataclasses import dataclass

import pytest

from agents.base_agent import IDK_ANSWER
from agents.config.fields import FIELD_GROUPS, field_names
from agents.config.loading import load_config_from_settings
from agents.config.set_strings import parse_settings
from agents.runtime.system import (
    Decision,
    Prior,
    Stage,
    System,
    SystemRefused,
    View,
    register,
    registered,
    scoped_registry,
)


def run_nothing(batch):
    return [IDK_ANSWER for _ in batch.turns], [{"system": batch.system.name} for _ in batch.turns]


def decide_nothing(trace, cfg) -> Decision:
    return Decision(IDK_ANSWER, "none")


def no_funnel(trace, cfg) -> dict[str, bool]:
    return {}


@dataclass
class ProbeSettings:
    probe_rounds: int = 1


def a_record(**changes) -> System:
    """A record the registry takes (a stage priced like a measured one, one branch, a settings
    class), with `changes`."""
    fields = dict(name="probe", stages=(Stage("probe_look"), Stage("probe_answer", prior=Prior("answer"))),
                  run=run_nothing, decide=decide_nothing, view=View(funnel=no_funnel, branches=("none", "kept")),
                  settings=ProbeSettings)
    return System(**{**fields, **changes})


def test_a_good_record_is_taken(registered_systems):
    record = registered_systems(a_record())
    assert registered()["probe"] is record


# what is wrong -> (the record's changes, the one line that refuses it)
BAD_RECORDS = {
    "a name with a colon": (
        dict(name="my:probe"), "its name must be a non-empty string without ':' (system=MODULE:NAME reads the part "
                               "after it)"),
    "no name": (dict(name=""), "its name must be a non-empty string without ':' (system=MODULE:NAME reads the part "
                               "after it)"),
    "a stage that is no Stage": (
        dict(stages=(Stage("probe_look"), "probe_answer")), "stage 1 is a str, not a Stage record"),
    "a stage without a name": (
        dict(stages=(Stage("probe_look"), Stage(""))),
        "stage 1 has no name (its batch guard, trace and prior are keyed by it)"),
    "a stage priced like no measured stage": (
        dict(stages=(Stage("probe_look", prior=Prior("anwser")),)),
        "stage 'probe_look' is priced like 'anwser', no measured stage ('route', 'summarize', 'retrieve', 'rerank', "
        "'answer', 'consistency', 'verify')"),
    "two stages of one name": (
        dict(stages=(Stage("probe_look"), Stage("probe_answer"), Stage("probe_look"))),
        "stages named twice: ['probe_look'] (the trace's stage_ms and the priors are keyed by the name)"),
    "an abstain_on that names no field": (dict(abstain_on=""), "its abstain_on must name a field (or be None), got ''"),
    "an abstain_on no stage writes": (
        dict(stages=(Stage("probe_answer", batch_fn=list, writes=("probe_reply",)),), abstain_on="probe_replly",
             run=None),
        "its abstain_on 'probe_replly' is a field none of its stages writes; written: ['perception', 'probe_reply']"),
    "a stage whose batch_fn cannot be called": (
        dict(stages=(Stage("probe_look", batch_fn="probe.stages:look"),)),
        "stage 'probe_look': its batch_fn is not callable"),
    "a stage whose reads are no names": (
        dict(stages=(Stage("probe_look", reads=(["chunks"],)),)),
        "stage 'probe_look': its reads must be names (strings), got (['chunks'],)"),
    "a run that cannot be called": (dict(run="probe.chain:run"),
        "its run is not callable (None: the runtime runs its stages in order)"),
    "a rule that cannot be called": (dict(decide=None), "its decide is not callable"),
    "a run written to release 0.1's signature": (
        dict(run=lambda system, turns, engines, pipeline, cfg, costs, started=None: None),
        "its run takes system, turns, engines, pipeline, cfg, costs, as release 0.1's did: a run now takes the opened "
        "batch, run(batch) -> batch.finish() (docs/changes.md)"),
    "a view that is no View": (
        dict(view={"funnel": no_funnel}), "its view must be a View whose funnel(trace, cfg) can be called"),
    "a funnel that cannot be called": (
        dict(view=View(funnel=("passed",))), "its view must be a View whose funnel(trace, cfg) can be called"),
    "a branch named twice": (
        dict(view=View(funnel=no_funnel, branches=("none", "kept", "none"))),
        "its view's branches must be distinct names, got ('none', 'kept', 'none')"),
    "an empty branch name": (
        dict(view=View(funnel=no_funnel, branches=("none", ""))),
        "its view's branches must be distinct names, got ('none', '')"),
    "settings given as an instance": (
        dict(settings=ProbeSettings()),
        "its settings must be a dataclass (the class, not an instance), got ProbeSettings(probe_rounds=1)"),
}


@pytest.mark.parametrize("changes, why", BAD_RECORDS.values(), ids=BAD_RECORDS)
def test_a_bad_record_is_refused_in_one_line_naming_it(registered_systems, changes, why):
    with pytest.raises(SystemRefused) as refused:
        registered_systems(a_record(**changes))
    name = changes.get("name", "probe")
    assert str(refused.value) == f"system {name!r} from {__name__} refused: {why}"
    assert name not in registered()


def test_what_is_not_a_system_record_is_named_by_its_type():
    from agents.runtime.system import record_fault

    assert record_fault({"name": "probe"}) == "a dict is not a System record"


USER_SYSTEM = '''
from dataclasses import dataclass

from agents.base_agent import IDK_ANSWER
from agents.runtime.system import Decision, Stage, System, View, register


@dataclass
class Settings:
    scoped_probe_rounds: int = 1


register(System(name="scoped_probe", stages=(Stage("scoped_probe_step"),),
                run=lambda batch: ([IDK_ANSWER] * len(batch.turns), [{} for _ in batch.turns]),
                decide=lambda trace, cfg: Decision(IDK_ANSWER, "none"), view=View(funnel=lambda t, c: {}),
                settings=Settings))
'''


def test_what_a_scope_registers_is_gone_after_it_and_registers_again_in_the_next(tmp_path, monkeypatch):
    (tmp_path / "probe_systems_in_scope.py").write_text(USER_SYSTEM)
    monkeypatch.syspath_prepend(str(tmp_path))
    before = registered()
    for rounds in (2, 3):  # the second scope imports the module again, which registers its system again
        with scoped_registry():
            cfg = load_config_from_settings("cpu", None, ["system=probe_systems_in_scope:scoped_probe",
                                                          f"scoped_probe_rounds={rounds}"])
            assert cfg.own.scoped_probe_rounds == rounds
            # the configuration's own fields do not change as a system loads
            assert "scoped_probe_rounds" not in FIELD_GROUPS and "scoped_probe_rounds" not in field_names()
        assert registered() == before
        assert "scoped_probe_rounds" not in FIELD_GROUPS and "probe_systems_in_scope" not in sys.modules


@dataclass
class CountedLimit:
    probe_limit: int = 1


@dataclass
class NamedLimit:
    probe_limit: str = "one"


def test_a_field_is_typed_by_the_system_registered_now():
    """Two scopes register a field of one name, typed apart: each --set is typed by its own."""
    with scoped_registry():
        register(a_record(settings=CountedLimit))
        assert parse_settings(["system=probe", "probe_limit=3"]) == {"system": "probe", "probe_limit": 3}
    with scoped_registry():
        register(a_record(settings=NamedLimit))
        assert parse_settings(["system=probe", "probe_limit=3"]) == {"system": "probe", "probe_limit": "3"}


def test_a_records_stages_open_with_the_shared_steps_once_and_a_name_given_bare_is_one_name():
    from agents.runtime.system import opening_stages

    (perceive,) = opening_stages()
    system = a_record(stages=(Stage("answer"), perceive, Stage("lookup", reads="chunks", prompts="look")))
    assert system.stage_names() == ("perceive", "answer", "lookup")
    lookup = system.stage("lookup")
    assert (lookup.reads, lookup.prompts) == (("chunks",), ("look",))  # not ("c", "h", ...)
    assert system.prompts() == ("look",)
    with pytest.raises(KeyError, match=r"system 'probe' has no stage 'lokup'; its stages: \['perceive', 'answer', 'lookup'\]"):
        system.stage("lokup")


def test_last_releases_keywords_are_taken_with_a_warning_naming_the_new_one():
    with pytest.warns(DeprecationWarning, match=r"Stage\(trace_fields=\.\.\.\) is deprecated: use Stage\(writes=\.\.\.\)"):
        old = Stage("probe_answer", trace_fields=("probe_reply",))
    assert old.writes == ("probe_reply",)
    with pytest.warns(DeprecationWarning, match=r"calls_no_model=\.\.\.\) is deprecated"):
        Stage("probe_tally", calls_no_model=lambda cfg: True)
    with pytest.warns(DeprecationWarning, match=r"use System\(abstain_on=FIELD\)"):
        assert a_record(answer_signal="probe_reply").abstain_on == "probe_reply"
    with pytest.warns(DeprecationWarning):
        assert a_record(abstains_first=True).abstain_on == "rag_answer"  # last release's default field
    with pytest.warns(DeprecationWarning):
        assert a_record(abstains_first=False, answer_signal="probe_reply").abstain_on is None
    with pytest.warns(DeprecationWarning, match="agents.plugin.always is deprecated"):
        from agents.plugin import always
    assert always(None) is True


def test_a_system_is_named_by_the_module_that_registered_it_and_a_run_traces_that_name(registered_systems):
    from types import SimpleNamespace

    from agents.runtime.system import find_system, recorded_name, system_named

    system = registered_systems(a_record(name="named_here"))
    assert str(system) == f"{__name__}:named_here" and str(a_record(name="never_registered")) == "never_registered"
    assert find_system("named_here") is system and find_system("nowhere_at_all") is None
    assert recorded_name(system, SimpleNamespace(system=f"{__name__}:named_here")) == f"{__name__}:named_here"
    assert recorded_name(system, SimpleNamespace(system="named_here")) == "named_here"
    assert recorded_name(system, SimpleNamespace(system=f"{__name__}:other")) == "named_here"
    with pytest.raises(ValueError, match="entry point of 'cruise_agent.systems'"):
        system_named("nowhere_at_all")

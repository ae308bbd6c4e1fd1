"""Which module shows an agent's traces (evaluator/harness/trace_view.py): the one the run record
(run_config.json) names, else the one its agent class names, else none; and the agent's own
summary from it. The agent's modules are stand-ins placed in sys.modules: what is outside the unit."""
from __future__ import annotations

import sys
from types import ModuleType

import pytest

from evaluator.harness.run_record import RunRecord
from evaluator.harness.trace_view import agent_summary, load_trace_view


@pytest.fixture
def modules(monkeypatch):
    """A view module that sums its traces' `n`, one without `summarize`, and an agent module whose
    class names the first as its TRACE_VIEW (another class in it names none)."""
    view = ModuleType("standin_view")
    view.summarize = lambda traces: {"turns": len(traces), "n": sum(t["n"] for t in traces)}
    bare = ModuleType("standin_bare_view")
    agent = ModuleType("standin_agent")
    agent.Agent = type("Agent", (), {"TRACE_VIEW": "standin_view"})
    agent.Plain = type("Plain", (), {})
    for module in (view, bare, agent):
        monkeypatch.setitem(sys.modules, module.__name__, module)
    return view, bare


def test_the_view_run_config_names_comes_first(modules):
    view, bare = modules
    assert load_trace_view(RunRecord.from_json({"trace_view": "standin_view"})) is view
    assert load_trace_view(RunRecord.from_json({"trace_view": "standin_bare_view", "agent": "standin_agent:Agent"})) is bare


def test_an_older_run_is_asked_through_its_agent_class(modules):
    view, _ = modules
    assert load_trace_view(RunRecord.from_json({"agent": "standin_agent:Agent"})) is view
    assert load_trace_view(RunRecord.from_json({"trace_view": None, "agent": "standin_agent:Agent"})) is view
    assert load_trace_view(RunRecord.from_json({"trace_view": "", "agent": "standin_agent:Agent"})) is view


def test_no_view_where_none_is_named_or_it_cannot_be_imported(modules):
    assert load_trace_view(RunRecord.from_json({})) is None
    assert load_trace_view(RunRecord.from_json({"agent": "standin_agent:Plain"})) is None  # the class names none
    assert load_trace_view(RunRecord.from_json({"agent": "standin_agent"})) is None  # no MODULE:NAME, nothing to ask
    assert load_trace_view(RunRecord.from_json({"agent": None})) is None
    assert load_trace_view(RunRecord.from_json({"agent": "no_such_module_here:Agent"})) is None
    assert load_trace_view(RunRecord.from_json({"agent": "standin_agent:Missing"})) is None
    assert load_trace_view(RunRecord.from_json({"trace_view": "no_such_module_here.view"})) is None


def test_the_agent_summary_is_its_views_figures_or_nothing(modules):
    traces = [{"n": 2}, {"n": 5}]
    assert agent_summary(RunRecord.from_json({"trace_view": "standin_view"}), traces) == {"turns": 2, "n": 7}
    assert agent_summary(RunRecord.from_json({"agent": "standin_agent:Agent"}), traces) == {"turns": 2, "n": 7}
    assert agent_summary(RunRecord.from_json({"trace_view": "standin_bare_view"}), traces) == {}
    assert agent_summary(RunRecord.from_json({}), traces) == {}

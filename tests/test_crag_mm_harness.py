"""The entry point for facebookresearch/CRAG-MM's harness: built from its constructor arguments,
our profile from the model name, our own search pipeline when none is passed (also when that
harness's own `evaluation` package is imported: ours is named `evaluator`)."""
from __future__ import annotations

import sys
import types

import pytest
from PIL import Image

from agents.engines.base import Engines
from crag_mm_harness import MODEL_KEYWORD, CragMMHarnessAgent, profile_from_model_name
from testkit.fakes import FunctionReranker, echo_engine

# The scripted VLMs write the paper's "CONFIDENCE: x" CoV reply: the agents here run the
# paper_finalizer preset over the cpu profile (agents/config/presets.py PRESETS).
PAPER = "full+paper_finalizer"

# The keywords facebookresearch/CRAG-MM's user_config maps to its example agents.
PUBLISHED_KEYWORDS = ("pixtral", "claude", "gpt", "gemini", "llama", "internvl", "qwen", "random")


def scripted_engines():
    engine = echo_engine()
    return Engines(engine, engine, FunctionReranker(lambda q, c: 0.9))


def test_the_model_name_picks_the_profile(monkeypatch):
    monkeypatch.delenv("CRUISE_PROFILE", raising=False)
    assert profile_from_model_name("cruise-cpu") == "cpu"
    assert profile_from_model_name("Cruise/L40S") == "l40s"
    assert profile_from_model_name("cruise") is None and profile_from_model_name(None) is None
    with pytest.raises(ValueError, match="cruise-<profile>"):
        profile_from_model_name("cruise-h100")
    for name in ("cruise", "cruise-cpu", "cruise-l40s"):  # no published keyword steals our names
        assert MODEL_KEYWORD in name and not any(k in name for k in PUBLISHED_KEYWORDS)


def test_built_with_the_published_constructor_arguments_and_its_call_shape():
    agent = CragMMHarnessAgent(model_name="cruise-cpu", is_multi_turn=True, engines=scripted_engines(),
                               harness_context="only", preset=PAPER)
    assert agent.config.profile == "cpu" and agent.is_multi_turn and agent.search_pipeline is None
    assert 1 <= agent.get_batch_size() <= 16
    answers = agent.batch_generate_response(
        ["What is this?", "And this?"], [Image.new("RGB", (32, 32)), Image.new("RGB", (32, 32))], [[], []],
        rag_context_list=["<search results>Nothing useful.</search results>", ""], domains=["Book", "Food"])
    assert answers == ["A short answer.", "A short answer."]
    assert [t["harness_domain"] for t in agent.last_batch_report["traces"]] == ["Book", "Food"]


@pytest.fixture
def shadowed_evaluation(monkeypatch, tmp_path):
    """Another project's `evaluation` package in sys.modules, as under facebookresearch/CRAG-MM."""
    (tmp_path / "evaluation").mkdir()
    (tmp_path / "evaluation" / "__init__.py").write_text("")
    other = types.ModuleType("evaluation")
    other.__file__ = str(tmp_path / "evaluation" / "__init__.py")
    other.__path__ = [str(tmp_path / "evaluation")]
    for name in [m for m in sys.modules if m == "evaluation" or m.startswith("evaluation.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "evaluation", other)
    return other


def test_our_search_layer_imports_beside_another_evaluation_package(shadowed_evaluation, monkeypatch):
    for name in [m for m in sys.modules if m == "evaluator" or m.startswith("evaluator.")]:
        monkeypatch.delitem(sys.modules, name)  # imported afresh, with the other package in place
    from evaluator.search.pipeline import search_config

    assert sys.modules["evaluation"] is shadowed_evaluation
    assert search_config("cpu").provider == "minibench.search_provider"


def test_without_a_pipeline_it_builds_its_own(shadowed_evaluation):
    agent = CragMMHarnessAgent(model_name="cruise-cpu", is_multi_turn=False, engines=scripted_engines(),
                               preset=PAPER)
    assert agent.search_error is None
    pipeline = agent.search_pipeline
    assert pipeline is not None and type(pipeline).__name__ == "UnifiedSearchPipeline"
    hits = pipeline(Image.new("RGB", (64, 64), "white"), k=3)
    assert len(hits) == 3 and all("entities" in h for h in hits)


def test_a_search_that_cannot_be_built_leaves_the_harness_retrieval(monkeypatch):
    import crag_mm_harness as entry

    def refuse(profile, web):
        raise OSError("index not in the cache")

    monkeypatch.setattr(entry, "build_own_pipeline", refuse)
    agent = CragMMHarnessAgent(model_name="cruise-cpu", engines=scripted_engines(), preset=PAPER)
    assert agent.search_pipeline is None and "index not in the cache" in agent.search_error
    answers = agent.batch_generate_response(["What is this?"], [Image.new("RGB", (32, 32))], [[]],
                                            rag_context_list=["It is the Eiffel Tower in Paris."], domains=["Sightseeing"])
    assert answers == ["A short answer."]
    assert [c["source"] for c in agent.last_batch_report["traces"][0]["chunks"]] == ["harness:0"]

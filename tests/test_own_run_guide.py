"""The guide's "A run of your own" (docs/add_a_system.md), run as it stands on the page: its package
is written out of the page's code blocks into a folder of its own and run through the agent, the
VLM scripted (outside the unit), the search a stand-in pipeline with hits in the official shape
(FORMATS.md). A change to agents.plugin that breaks the page fails here."""
from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest
from PIL import Image

from agents.base_agent import IDK_ANSWER
from agents.config.loading import load_config
from agents.cruise_agent import CruiseAgent
from agents.engines.base import Engines
from testkit.fakes import FakePipeline, FunctionReranker, ScriptedEngine

GUIDE = Path(__file__).resolve().parent.parent / "docs" / "add_a_system.md"


def block_after(text: str, caption: str) -> str:
    """The code block that follows the line naming `caption` on the page."""
    found = re.search(re.escape(f"`{caption}`:") + r"\n\n```\w*\n(.*?)\n```", text, re.S)
    assert found, f"no code block after {caption!r} in {GUIDE}"
    return found.group(1) + "\n"


@pytest.fixture
def second_look(tmp_path, registered_systems):
    """The guide's package, importable for one test, forgotten after it."""
    text = GUIDE.read_text(encoding="utf-8")
    package = tmp_path / "second_look"
    (package / "prompts").mkdir(parents=True)
    (package / "__init__.py").write_text(block_after(text, "second_look/second_look/__init__.py"))
    (package / "prompts" / "look_answer.txt").write_text(block_after(text, "second_look/second_look/prompts/look_answer.txt"))
    sys.path.insert(0, str(tmp_path))
    try:
        yield
    finally:
        sys.path.remove(str(tmp_path))
        for name in [m for m in sys.modules if m == "second_look" or m.startswith("second_look.")]:
            del sys.modules[name]


# The documented example hit (FORMATS.md): 8 Spruce Street, its infobox fields as raw wiki text.
SPRUCE = {"index": 17030, "score": 0.9064, "url": "https://upload.wikimedia.org/8_Spruce_Street.jpg",
          "entities": [{"entity_name": "8 Spruce Street", "entity_attributes": {
              "name": "8 Spruce Street<br />(New York by Gehry)", "status": "Complete", "opening": "February 2011",
              "floor_count": "76", "architect": "[[Frank Gehry]]", "owner": "8 Spruce (NY) Owner LLC"}}]}


def run(second_look_settings: dict, queries: list[str]):
    vlm = ScriptedEngine({"look_answer": lambda r: "Frank Gehry" if "Frank Gehry" in r.messages[-1]["content"]
                          else "A tall building"})
    engines = Engines(router=ScriptedEngine({}), vlm=vlm, reranker=FunctionReranker(lambda q, c: 0.0))
    config = load_config("cpu", "full", system="second_look:second_look", warmup_at_load=False, **second_look_settings)
    agent = CruiseAgent(FakePipeline([SPRUCE]), config=config, engines=engines)
    answers = agent.batch_generate_response(queries, [Image.new("RGB", (64, 48))] * len(queries),
                                            [[] for _ in queries])
    return answers, agent.last_batch_report["traces"], vlm


@pytest.mark.parametrize("max_looks", [1, 2, 4])
def test_the_guides_own_run_looks_at_one_chunk_after_another_until_its_answer_is_in_it(second_look, max_looks):
    answers, traces, vlm = run({"max_looks": max_looks}, ["", "Who designed this tower?", "Who owns it?"])
    chunks = traces[1]["chunks"]
    first = next(i for i, chunk in enumerate(chunks) if "Frank Gehry" in chunk)  # the chunk that holds the answer
    assert answers[0] == IDK_ANSWER and traces[0]["branch"] == "error"  # an empty question: failed first
    if first < max_looks:
        assert answers[1:] == ["Frank Gehry", "Frank Gehry"]
        assert [t["branch"] for t in traces[1:]] == ["grounded", "grounded"]
        assert [t["look"] for t in traces[1:]] == [first, first]
        assert vlm.calls == [("look_answer", 2)] * (first + 1)  # both live turns, each round
    else:
        assert answers[1:] == [IDK_ANSWER, IDK_ANSWER]
        assert [t["branch"] for t in traces[1:]] == ["not_grounded", "not_grounded"]
        assert [t["look"] for t in traces[1:]] == [max_looks - 1] * 2
        assert vlm.calls == [("look_answer", 2)] * max_looks
    assert list(traces[1]["stage_ms"]) == ["retrieve", "look_answer"]

"""The runs that tests/test_report.py and tests/full/test_report.py read: local_evaluation.py with
the real chain on scripted engines (testkit.fakes.SteeredCruiseAgent), in-process, over seven
conversations whose questions steer their own turns (see testkit.fakes.steered_engine), so every
outcome, branch and funnel count below is known by hand. The fixture `report_runs`
(tests/conftest.py) builds them once per test module.
"""
from __future__ import annotations

from pathlib import Path

from PIL import Image

from testkit.in_process import run_main
from testkit.scripted_agent import build_dataset

# session, ego?, [(interaction_id, question with directives, gold)]; outcome / branch of the full preset
CONVERSATIONS = [
    ("c1", True, [("c1-0", "Which landmark is this? #say=Big_Ben", "Big Ben")]),             # correct, context_verified
    ("c2", False, [("c2-0", "When did it open? #say=1850", "1859")]),                         # hallucinated, context_verified
    ("c3", True, [("c3-0", "Who built it? #say=Someone #conf=0.3", "Charles Barry")]),       # missed, not_verified
    ("c4", False, [("c4-0", "What colour is the sky here? #say=Blue #ext=no #conf=1.0", "blue")]),  # correct, no_context_verified
    ("c5", True, [("c5-0", "Is it open right now? #say=Yes #rt=yes #weak=1", "Yes")]),      # missed, real_time_weak_retrieval
    ("c6", False, [("c6-0", "What is the tower called? #say=Elizabeth_Tower #sc=no", "Elizabeth Tower")]),  # missed, inconsistent
    ("c7", True, [("c7-0", "What colour is the bus? #say=Red", "red"),                        # correct
                  ("c7-1", "And the door? #say=Green", "blue")]),                             # hallucinated
]
OUTCOMES = {"c1-0": "correct", "c2-0": "hallucinated", "c3-0": "missed", "c4-0": "correct", "c5-0": "missed",
            "c6-0": "missed", "c7-0": "correct", "c7-1": "hallucinated"}
BRANCHES = {"c1-0": "context_verified", "c2-0": "context_verified", "c3-0": "not_verified",
            "c4-0": "no_context_verified", "c5-0": "real_time_weak_retrieval", "c6-0": "context_inconsistent",
            "c7-0": "context_verified", "c7-1": "context_verified"}
# (label, passes alone, passes with every step above) for the full preset, by hand:
# routed: all but c4 (7). retrieved: the same 7. context: the same 7 (c5's chunks score 0.2, above tau
# 0.1, so they are kept). RAG answer not IDK: all 8. consistent: all but c6 (7); chained 6 (c4 is out).
# CoV >= threshold: c3 fails (0.3), c6 is not asked (inconsistent); c4 has no context and reaches
# tau_high with 1.0 -> 6 alone; chained 5.
# answered: c1 c2 c4 c7-0 c7-1 (5); chained (c4 left out at "routed") 4. correct: c1 c4 c7-0 (3); chained 2.
FUNNEL = [("all turns", 8, 8), ("routed to retrieval", 7, 7), ("retrieved", 7, 7), ("non-empty context", 7, 7),
          ("RAG answer not IDK", 8, 7), ("consistent", 7, 6), ("CoV >= 0.9 with context, >= 1 without", 6, 5),
          ("answered", 5, 4), ("correct", 3, 2)]


def build_report_runs(root: Path, main) -> dict[str, Path]:
    """The full preset's run (with the paper's finalizer) and rag_baseline's, over the same dataset;
    `main` is local_evaluation.main."""
    colours = ["red", "green", "blue", "orange", "purple", "teal", "gold"]
    convs = [dict(session_id=session, image=Image.new("RGB", (96, 64), colour),
                  image_url=None if ego else f"http://127.0.0.1:9/{session}.png",  # embedded: never fetched
                  image_quality="normal" if i % 2 else "low",
                  turns=[(iid, q, gold, "landmark" if i < 4 else "vehicle", "simple" if i % 3 else "reasoning",
                          "static" if i % 2 else "real-time") for iid, q, gold in turns])
             for i, ((session, ego, turns), colour) in enumerate(zip(CONVERSATIONS, colours))]
    dataset = build_dataset(root / "dataset", convs, form="list")
    out = {}
    for preset in ("full", "rag_baseline"):
        out[preset] = root / preset
        # the scripted engines write the paper's CoV reply: the paper's finalizer reads it; every
        # turn is answered and checked (the hand-worked funnel counts them), decided or not
        asked = ["--set", "skip_decided_turns=false"] if preset == "full" else []
        proc = run_main(main, ["--dataset", str(dataset), "--dataset-type", "multi-turn", "--profile", "cpu", *asked,
                               "--preset", f"{preset}+paper_finalizer" if preset == "full" else preset,
                               "--agent", "testkit.fakes:SteeredCruiseAgent", "--search", "none",
                               "--eval-model", "None", "--output-dir", str(out[preset]), "--no_progress"],
                        env=report_env(root))
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return out


def report_env(root: Path) -> dict[str, str]:
    """What the runs (and the report commands over them) add to the environment."""
    return dict(HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1", HF_DATASETS_CACHE=str(root / "hf-datasets"),
                CRUISE_CACHE=str(root / "cache"))

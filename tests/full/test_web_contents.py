"""`local_evaluation.py --web-contents` end to end: a fact only in a page's body reaches the answer
prompt and the trace through the search pipeline the evaluator builds over the mini benchmark's
indices and contents database (built per session: tests/conftest.py `mini_search_cache`). The
database's layout, chunking and checks on their own: tests/test_web_contents.py.
"""
from __future__ import annotations

import json

from PIL import Image

import local_evaluation
from testkit.fakes import BODY_FACT, BODY_QUESTION
from testkit.in_process import run_main


def test_local_evaluation_web_contents_brings_a_body_only_fact_to_the_prompt_and_the_trace(search_cache, tmp_path):
    """In this process (testkit/in_process.py), over the session's mini search cache (tests/conftest.py)."""
    import os

    from minibench import content
    from testkit.scripted_agent import build_dataset

    page = next(p for p in content.WEB_PAGES if p["page_url"].endswith("/summer-palace"))
    assert BODY_FACT in page["text"] and BODY_FACT not in page["page_snippet"]
    dataset = build_dataset(tmp_path / "dataset", [dict(
        session_id="body-fact", image=Image.new("RGB", (64, 48), "green"), image_url=None, image_quality="normal",
        turns=[("body-fact-0", BODY_QUESTION, f"{BODY_FACT} station", "travel", "simple", "static")])], form="dict")
    env = dict(HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1", CRUISE_CACHE=os.environ["CRUISE_CACHE"])
    runs = {}
    for name, extra in (("pages", ["--web-contents"]), ("snippets", [])):
        out = tmp_path / name
        proc = run_main(local_evaluation.main, [
            "--dataset", str(dataset), "--dataset-type", "single-turn", "--profile", "cpu",
            "--preset", "full+paper_finalizer", "--agent", "testkit.fakes:BodyFactAgent", "--output-dir", str(out),
            "--eval-model", "None", "--no_progress", *extra], env=env)
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
        (trace,) = [json.loads(line) for line in (out / "traces.jsonl").read_text().splitlines()]
        runs[name] = (json.loads((out / "run_config.json").read_text()), trace)
    config, trace = runs["pages"]
    assert config["web_contents"] == "crag-mm-mini/web-search-contents-db"
    assert trace["final_answer"] == f"{BODY_FACT} station."
    body = [c for c in trace["chunks"] if BODY_FACT in c["text"]]
    assert body and body[0]["source"] == f"web:{page['page_url']}"
    assert BODY_FACT in trace["context"]  # the notes the answer prompt was given
    config, trace = runs["snippets"]  # without the flag the body is never read: nothing to verify
    assert config["web_contents"] is None
    assert not any(BODY_FACT in c["text"] for c in trace["chunks"]) and trace["final_answer"] != f"{BODY_FACT} station."

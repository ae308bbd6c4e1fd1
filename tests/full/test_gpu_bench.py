"""benchmarks/gpu_bench.py on CPU with tiny models (what it runs on a GPU at real size): the same code
path (models built from the kept configs, loaded through the factory, the chain over the mini
benchmark and its search indices), and the JSON holds figures measured in the run. The kept
configs alone: tests/test_gpu_bench.py."""
from __future__ import annotations

import json
import math

from benchmarks import gpu_bench

MODEL_STAGES = ["route", "summarize", "rerank", "answer", "consistency", "verify"]


def test_tiny_run_writes_measured_figures(tmp_path):
    result = gpu_bench.main(["--tiny", "--batch-sizes", "2", "3", "--batches", "2", "--out", str(tmp_path)])
    saved = json.loads((tmp_path / "gpu_bench.json").read_text())
    assert saved["runs"] == json.loads(json.dumps(result["runs"]))
    machine = saved["machine"]
    assert machine["matmul_tflops"] > 0 and machine["copy_gbps"] > 0
    assert all(m["params"] > 1e6 for m in saved["models"].values())
    assert [(r["engine"], r["batch_size"]) for r in saved["runs"]] == [("transformers", 2), ("transformers", 3)]
    for run in saved["runs"]:
        assert set(run["warmup_s"]) == set(MODEL_STAGES) | {"retrieve"}
        assert run["load_s"] > 0 and run["peak_memory_gib"] > 0
        for batch in run["batches"]:
            # every model stage ran, timed inside the batch's wall time
            assert set(MODEL_STAGES) <= set(batch["stage_s"]) and all(batch["stage_s"][s] > 0 for s in MODEL_STAGES)
            assert sum(batch["stage_s"].values()) <= batch["wall_s"]
            assert batch["engine_calls"] == 6 and batch["requests"] > 5 * run["batch_size"]
            assert 0 < batch["output_tokens"] <= batch["requests"] * max(gpu_bench.TINY_TOKENS.values())
        summary = run["summary"]
        assert summary["first_batch_s"] == run["batches"][0]["wall_s"]
        for stage, figures in summary["stage_s"].items():
            assert math.isfinite(figures["median"]) and figures["min"] <= figures["median"]
            assert figures["median"] == run["batches"][1]["stage_s"][stage]  # the steady batch
    table = (tmp_path / "gpu_bench.md").read_text()
    assert "| transformers | 2 |" in table and "| transformers | 3 |" in table
    # transformers batches images of different sizes without changing their answers
    check = saved["runs"][0]["image_batch"]
    assert len({tuple(size) for size in check["images"]}) > 1
    assert check["batched_vs_alone"]["same_text"] and check["batched_vs_alone"]["max_logprob_diff"] < 1e-3
    # the transformers engine has no batch_images switch: no second way is timed (the same call was
    # timed twice, and reported as a second way, before the H200 run showed identical figures)
    assert check["separate_vs_alone"] is None and "image batch, transformers:" in table
    assert "no batch_images switch" in table


def test_a_peer_system_runs_with_its_own_stages_and_warm_up(tmp_path):
    gpu_bench.main(["--tiny", "--systems", "sam_rag", "--batch-sizes", "2", "--batches", "2", "--out", str(tmp_path)])
    saved = json.loads((tmp_path / "gpu_bench.json").read_text())
    (run,) = saved["runs"]
    assert run["system"] == "sam_rag" and run["warmup_s"]
    from agents.runtime.system import system_named

    own = system_named("sam_rag").stage_names()
    assert set(run["warmup_s"]) <= set(own) and set(run["summary"]["stage_s"]) <= set(own)
    assert "is_rel" in run["summary"]["stage_s"] and "sam_rag:" in (tmp_path / "gpu_bench.md").read_text()

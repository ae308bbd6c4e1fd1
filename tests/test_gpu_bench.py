"""benchmarks/gpu_bench.py's kept model configs: the real sizes, each citing its source. Its run on
CPU with tiny models built from them: tests/full/test_gpu_bench.py."""
from __future__ import annotations

import json

from benchmarks import gpu_bench


def test_the_kept_configs_are_the_real_sizes_and_cite_their_source():
    for role, name in gpu_bench.MODEL_FILES.items():
        doc = json.loads((gpu_bench.CONFIGS / name).read_text())
        assert doc["_source"].startswith("https://huggingface.co/")
    vlm = gpu_bench.model_config("vlm", tiny=False)
    assert vlm["text_config"]["hidden_size"] == 4096 and vlm["vision_config"]["num_hidden_layers"] == 32
    assert gpu_bench.model_config("router", tiny=False)["num_hidden_layers"] == 16
    assert gpu_bench.model_config("reranker", tiny=False)["hidden_size"] == 1024



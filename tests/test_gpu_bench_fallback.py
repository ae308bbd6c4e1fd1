"""benchmarks/gpu_bench.py without CUDA falls back to tiny models, and says so before anything else."""
from __future__ import annotations

import pytest

from benchmarks import gpu_bench


class Stop(Exception):
    pass


def stop_at_first_model(*args, **kwargs):
    raise Stop  # the decision is made before the first model is built: nothing more to run here


@pytest.mark.parametrize("argv, said", [([], True), (["--tiny"], False)])
def test_the_fallback_to_tiny_models_is_one_line(argv, said, monkeypatch, capsys, tmp_path):
    monkeypatch.setattr(gpu_bench.torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(gpu_bench, "build_model", stop_at_first_model)
    with pytest.raises(Stop):
        gpu_bench.main([*argv, "--out", str(tmp_path)])
    lines = capsys.readouterr().out.splitlines()
    expected = ["gpu_bench: no CUDA device, so tiny models on the CPU instead of the real sizes (as --tiny)"]
    assert lines == (expected if said else [])

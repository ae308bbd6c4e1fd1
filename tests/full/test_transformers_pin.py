"""The engines on the GPU set's transformers pin, not only on the CPU set's.

The venv holds the CPU set (requirements-cpu.txt: transformers 4.57.x); the GPU image pins
transformers 4.55.4 and tokenizers 0.21.4 (requirements.txt), and code written against the
newer version broke there unseen (`from_pretrained(dtype=...)`). So the pinned wheels
are installed once, with `pip install --no-deps --target`, into
.cache/pins/transformers-<ver>-tokenizers-<ver>/ (reused while the pins stay the same; measured
here: ~8-10 s and 122 MB the first time), and testkit/pin_check.py runs in a subprocess with that
folder first on PYTHONPATH: it builds the tiny models with the pinned version, loads them through
our engines and generates (~25 s on 2 cores).
"""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from agents.engines.base import ChatRequest, Sampling
from agents.engines.local_models import resolve_model
from agents.profiles import REPO_ROOT, cache_dir

PINNED = ("transformers", "tokenizers")


def gpu_pins() -> dict[str, str]:
    pins = {}
    for line in (REPO_ROOT / "requirements.txt").read_text().splitlines():
        match = re.match(r"^([A-Za-z0-9_.-]+)==([^\s#]+)", line.strip())
        if match and match.group(1).lower() in PINNED:
            pins[match.group(1).lower()] = match.group(2)
    assert set(pins) == set(PINNED), f"requirements.txt should pin {PINNED}, found {pins}"
    return pins


def pinned_site(pins: dict[str, str]) -> Path:
    """A folder holding exactly the pinned wheels (installed once per pair of versions)."""
    folder = cache_dir() / "pins" / "-".join(f"{name}-{pins[name]}" for name in PINNED)
    if (folder / "INSTALLED").exists():
        return folder
    tmp = folder.with_name(folder.name + f".tmp{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    proc = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--target", str(tmp),
                           *(f"{name}=={pins[name]}" for name in PINNED)],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, "could not install the GPU pins from PyPI:\n" + proc.stderr[-2000:]
    (tmp / "INSTALLED").write_text(json.dumps(pins))
    try:
        os.replace(tmp, folder)
    except OSError:  # another test process installed it first
        shutil.rmtree(tmp, ignore_errors=True)
    return folder


def run_pin_check(site: Path, smollm2: str) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CRUISE_")}
    env.update(PYTHONPATH=os.pathsep.join([str(site), str(REPO_ROOT)]), HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1",
               CRUISE_CACHE=str(site / "models-cache"))  # tiny models built by the pinned version
    proc = subprocess.run([sys.executable, "-m", "testkit.pin_check", smollm2], cwd=REPO_ROOT, env=env,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    line = next(line for line in proc.stdout.splitlines() if line.startswith("PIN-CHECK "))
    return json.loads(line[len("PIN-CHECK "):])


def test_the_engines_load_and_generate_on_the_gpu_transformers_pin():
    from agents.engines.transformers_engine import TransformersEngine

    pins = gpu_pins()
    smollm2 = resolve_model("smollm2")
    got = run_pin_check(pinned_site(pins), smollm2)
    # The subprocess really ran the pinned versions, not the venv's.
    assert got["transformers"] == pins["transformers"] and got["tokenizers"] == pins["tokenizers"]
    assert "/pins/" in got["transformers_file"]
    assert got["causal_dtype"] == got["vision_dtype"] == "torch.float32"
    assert got["vision_output_tokens"] and all(n > 0 for n in got["vision_output_tokens"])
    assert len(got["rerank"]) == 2 and all(0.0 <= s <= 1.0 for s in got["rerank"])
    # Same model, same greedy prompt: the pinned version writes what the venv's version writes.
    question = [{"role": "system", "content": "Answer briefly."},
                {"role": "user", "content": "What is the name of the river in this city?"}]
    here = TransformersEngine(smollm2, dtype="float32")
    assert got["causal"] == [r.text for r in here.generate([ChatRequest(question)] * 2,
                                                           Sampling(max_tokens=12), stage="pin")]
    assert got["causal"][0] and not any(s in got["causal_stop"][0] for s in ("\n", "."))

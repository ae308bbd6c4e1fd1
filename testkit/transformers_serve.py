"""A real OpenAI-compatible server on this machine: `transformers serve` (transformers 4.57.6,
with fastapi and uvicorn) serving the cpu profile's SmolLM2 on a free loopback port. The served
engine's tests (tests/full/test_served_engine.py) and benchmark (benchmarks/served.py) start it;
`python -m testkit.transformers_serve` starts one and prints the settings that point a run at it.

Two of its limits are worked around here, in a serving copy of the converted model (links to
its files, one edited file), never in the model the in-process engine loads:
- its chat handler passes every tokenizer output to `generate`, which rejects `token_type_ids`
  (our GGUF-derived tokenizer returns them): the copy's tokenizer_config.json names
  `model_input_names` = input_ids + attention_mask;
- it dies on `stop` (its generate gets no tokenizer for stop strings) and then never answers:
  the engine is run with `served_stop_strings = "client"`.
It also sends no log-probabilities, always answers as an event stream, and lists a fixed
catalogue of hub names on /v1/models, not the model it serves (`served_require_listed = False`).
"""
from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx

SERVED_NAME = "smollm2-served"
START_TIMEOUT_S = 180.0


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def serving_copy(model_dir: str | Path, folder: Path) -> Path:
    """`folder` with links to the model's files and a tokenizer config that names its inputs."""
    model_dir = Path(model_dir)
    folder.mkdir(parents=True, exist_ok=True)
    for item in model_dir.iterdir():
        if item.name != "tokenizer_config.json" and not (folder / item.name).exists():
            (folder / item.name).symlink_to(item.resolve())
    config = json.loads((model_dir / "tokenizer_config.json").read_text())
    config["model_input_names"] = ["input_ids", "attention_mask"]
    (folder / "tokenizer_config.json").write_text(json.dumps(config))
    return folder


class ServedModel:
    """`transformers serve --force_model DIR` on 127.0.0.1:PORT; `base_url` ends in /v1."""

    def __init__(self, model_dir: Path, log_path: Path):
        self.port = free_port()
        self.base_url = f"http://127.0.0.1:{self.port}/v1"
        env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
        self.log = open(log_path, "w")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "transformers.commands.transformers_cli", "serve", "--force_model", str(model_dir),
             "--device", "cpu", "--dtype", "float32", "--host", "127.0.0.1", "--port", str(self.port),
             "--log_level", "warning"],
            env=env, stdout=self.log, stderr=subprocess.STDOUT)
        self._wait_until_up(log_path)

    def _wait_until_up(self, log_path: Path) -> None:
        end = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < end:
            if self.process.poll() is not None:
                raise RuntimeError(f"transformers serve exited: {log_path.read_text()[-2000:]}")
            try:
                if httpx.get(self.base_url + "/models", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.5)
        else:
            self.stop()
            raise RuntimeError(f"transformers serve did not answer in {START_TIMEOUT_S:.0f} s")
        # The model loads on the first chat request: load it now, not inside a test's deadline.
        httpx.post(self.base_url + "/chat/completions", timeout=120, json={
            "model": SERVED_NAME, "messages": [{"role": "user", "content": "Hi"}], "max_tokens": 1})

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=30)
        self.log.close()


def evaluation_settings(server: ServedModel) -> list[str]:
    """The --set values that point the cpu profile's chain at this server."""
    return ["engine=openai", f"vlm_base_url={server.base_url}", f"vlm_served_name={SERVED_NAME}",
            "served_stop_strings=client", "served_require_listed=false"]


if __name__ == "__main__":
    import tempfile

    from agents.engines.local_models import resolve_model

    folder = Path(tempfile.mkdtemp(prefix="transformers-serve-"))
    served = ServedModel(serving_copy(resolve_model("smollm2"), folder / "model"), folder / "server.log")
    print("serving; point the evaluator at it with:")
    print("  python local_evaluation.py --profile cpu " + " ".join(f"--set {s}" for s in evaluation_settings(served)))
    try:
        served.process.wait()
    except KeyboardInterrupt:
        served.stop()

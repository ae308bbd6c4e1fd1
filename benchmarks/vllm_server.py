"""`vllm serve` for the checks against vLLM's own server (benchmarks/vllm_cpu_serve_run.py,
benchmarks/vllm_tools_run.py): on a free loopback port, in its own process group, its output in a
log; `stop()` ends it and every process it started, by PID (vLLM's engine process outlives a
killed server)."""
from __future__ import annotations

import signal
import subprocess
import time
from pathlib import Path


class VLLMServer:
    """`vllm serve MODEL --served-model-name NAME --host 127.0.0.1 --port PORT *args` with `vllm`
    the executable, started at once and waited for (`start_timeout_s`) until /models answers."""

    def __init__(self, vllm: str, model: str, served_name: str, *args: str, log_path: Path, env: dict | None = None,
                 start_timeout_s: float = 600.0, stop_timeout_s: float = 30.0):
        from testkit.transformers_serve import free_port

        self.port = free_port()
        self.base_url = f"http://127.0.0.1:{self.port}/v1"
        self.served_name = served_name
        self.log_path = log_path
        self.log = open(log_path, "w")
        self.stop_timeout_s = stop_timeout_s
        self.command = [vllm, "serve", str(model), "--served-model-name", served_name, "--host", "127.0.0.1",
                        "--port", str(self.port), *args]
        print("starting:", " ".join(self.command), flush=True)
        self.process = subprocess.Popen(self.command, stdout=self.log, stderr=subprocess.STDOUT, env=env,
                                        start_new_session=True)
        self.children: set[int] = set()
        self.wait_until_up(start_timeout_s)

    def wait_until_up(self, timeout_s: float) -> None:
        import httpx

        start = time.monotonic()
        while time.monotonic() - start < timeout_s:
            self.note_children()
            if self.process.poll() is not None:
                raise RuntimeError(f"vllm serve exited: {self.log_path.read_text()[-3000:]}")
            try:
                if httpx.get(self.base_url + "/models", timeout=2).status_code == 200:
                    print(f"  up in {time.monotonic() - start:.0f} s at {self.base_url}", flush=True)
                    return
            except httpx.HTTPError:
                pass
            time.sleep(1.0)
        self.stop()
        raise RuntimeError(f"vllm serve did not answer in {timeout_s:.0f} s: {self.log_path}")

    def note_children(self) -> None:
        import psutil

        try:
            self.children |= {c.pid for c in psutil.Process(self.process.pid).children(recursive=True)}
        except psutil.NoSuchProcess:
            pass

    def stop(self) -> list[int]:
        """Stop the server, then any process it started; the PIDs still alive afterwards."""
        import psutil

        self.note_children()
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=self.stop_timeout_s)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=30)
        left = []
        for pid in sorted(self.children):
            try:
                child = psutil.Process(pid)
                child.kill()
                child.wait(timeout=10)
            except psutil.NoSuchProcess:
                continue
            except psutil.TimeoutExpired:
                left.append(pid)
        self.log.close()
        return left

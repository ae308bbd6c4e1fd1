"""scripts/setup_gpu.sh in a temporary checkout that already has the CPU `.venv` (what
scripts/setup.sh leaves): the GPU set goes into its own `.venv-gpu`, and `.venv` is not touched,
not even when VENV points at it. pip is stubbed (CRUISE_PIP): it logs what it was asked and, for
the requirement file, leaves stand-ins of torch, transformers and vllm, so the script's own check
step runs; no GPU, network or real install is needed.
"""
from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from agents.profiles import REPO_ROOT

FAKE_PIP = textwrap.dedent('''\
    #!{python}
    """pip, stubbed: logs its arguments and the venv it was run for; `install -r FILE` leaves
    stand-ins of the GPU set's torch, transformers and vllm in that venv."""
    import json, os, subprocess, sys
    from pathlib import Path

    venv = os.environ["VIRTUAL_ENV"]
    with open(os.environ["FAKE_PIP_LOG"], "a") as log:
        log.write(json.dumps({{"venv": venv, "args": sys.argv[1:]}}) + "\\n")
    if "-r" in sys.argv:
        where = "import sysconfig; print(sysconfig.get_paths()['purelib'])"
        site = subprocess.run([f"{{venv}}/bin/python", "-c", where], capture_output=True, text=True,
                              check=True).stdout.strip()
        stubs = {{
            "torch": "__version__ = '2.7.1'\\n"
                     "class version:\\n    cuda = '12.6'\\n"
                     "class _Props:\\n    total_memory = 46068 * 2**20\\n"
                     "class cuda:\\n"
                     "    is_available = staticmethod(lambda: True)\\n"
                     "    get_device_name = staticmethod(lambda i: 'NVIDIA L40S')\\n"
                     "    get_device_properties = staticmethod(lambda i: _Props())\\n",
            "transformers": "__version__ = '4.55.4'\\n",
            "vllm": "__version__ = '0.10.1.1'\\n",
        }}
        for name, text in stubs.items():
            Path(site, name).mkdir(exist_ok=True)
            Path(site, name, "__init__.py").write_text(text)
''')


def snapshot(folder: Path) -> dict[str, str]:
    """Every file under `folder` (links as their target) and a hash of its bytes."""
    out = {}
    for path in sorted(folder.rglob("*")):
        if path.is_symlink():
            out[str(path.relative_to(folder))] = "-> " + os.readlink(path)
        elif path.is_file():
            out[str(path.relative_to(folder))] = hashlib.sha256(path.read_bytes()).hexdigest()
    return out


@pytest.fixture
def checkout(tmp_path):
    """A checkout with the script, requirements.txt and a CPU .venv made as scripts/setup.sh makes it."""
    root = tmp_path / "checkout"
    (root / "scripts").mkdir(parents=True)
    shutil.copy(REPO_ROOT / "scripts" / "setup_gpu.sh", root / "scripts" / "setup_gpu.sh")
    shutil.copy(REPO_ROOT / "requirements.txt", root / "requirements.txt")
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(root / ".venv")], check=True)
    (root / ".venv" / "cruise-requirements.sha256").write_text("0" * 64 + "\n")  # setup.sh's stamp
    pip = tmp_path / "fake-pip"
    pip.write_text(FAKE_PIP.format(python=sys.executable))
    pip.chmod(0o755)
    return dict(root=root, pip=pip, log=tmp_path / "pip.log")


def run_setup(checkout, **env) -> subprocess.CompletedProcess:
    environ = {k: v for k, v in os.environ.items() if k not in ("VENV", "VIRTUAL_ENV", "CRUISE_PIP")}
    environ.update(PYTHON=sys.executable, CRUISE_PIP=str(checkout["pip"]), FAKE_PIP_LOG=str(checkout["log"]), **env)
    return subprocess.run(["bash", "scripts/setup_gpu.sh"], cwd=checkout["root"], env=environ,
                          capture_output=True, text=True, timeout=300)


def pip_calls(checkout) -> list[dict]:
    import json

    log = checkout["log"]
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


def test_the_gpu_set_goes_into_its_own_venv_and_the_cpu_venv_is_untouched(checkout):
    root = checkout["root"]
    before = snapshot(root / ".venv")
    done = run_setup(checkout)
    assert done.returncode == 0, done.stdout + done.stderr
    assert snapshot(root / ".venv") == before
    calls = pip_calls(checkout)
    assert {c["venv"] for c in calls} == {".venv-gpu"}
    assert ["install", "-r", "requirements.txt"] in [c["args"] for c in calls]
    assert (root / ".venv-gpu" / "bin" / "python").exists()
    assert (root / ".venv-gpu" / "cruise-gpu-requirements.sha256").is_file()
    assert "==> install requirements.txt into .venv-gpu" in done.stdout
    assert "torch 2.7.1 (CUDA 12.6), transformers 4.55.4, vllm 0.10.1.1" in done.stdout
    assert ".venv-gpu/bin/python -m tools.fetch --profile l40s" in done.stdout
    # run again: nothing changed, so pip is not asked again
    again = run_setup(checkout)
    assert again.returncode == 0 and "pip skipped" in again.stdout
    assert len(pip_calls(checkout)) == len(calls)
    assert snapshot(root / ".venv") == before


@pytest.mark.parametrize("mark", ["stamp", "torch+cpu"])
def test_a_venv_that_holds_the_cpu_set_is_refused(checkout, mark):
    root = checkout["root"]
    if mark == "torch+cpu":  # no stamp, but a CPU build of torch installed (as pip leaves its metadata)
        (root / ".venv" / "cruise-requirements.sha256").unlink()
        site = subprocess.run([str(root / ".venv" / "bin" / "python"), "-c",
                               "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                              capture_output=True, text=True, check=True).stdout.strip()
        info = Path(site) / "torch-2.13.0+cpu.dist-info"
        info.mkdir(parents=True)
        (info / "METADATA").write_text("Metadata-Version: 2.1\nName: torch\nVersion: 2.13.0+cpu\n")
    before = snapshot(root / ".venv")
    done = run_setup(checkout, VENV=".venv")
    assert done.returncode == 2
    assert done.stderr.startswith("refused: .venv holds the CPU requirement set")
    assert pip_calls(checkout) == [] and snapshot(root / ".venv") == before
    assert not (root / ".venv-gpu").exists()

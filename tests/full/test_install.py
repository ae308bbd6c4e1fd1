"""The repository installed editable (as scripts/setup.sh installs it: `pip install --no-deps -e .`)
into a fresh virtual environment: from a folder outside the repository, with no PYTHONPATH,
`from evaluator import evaluate` imports the repository's evaluator, and `crag-mm-eval` is there."""
from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]


def test_an_editable_install_imports_the_evaluator_from_any_folder(tmp_path):
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    installed = subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet", "--no-deps", "-e",
                                str(REPO_ROOT)], capture_output=True, text=True, timeout=600)
    assert installed.returncode == 0, installed.stdout[-2000:] + installed.stderr[-2000:]
    assert "local_evaluation" in (venv / "bin" / "crag-mm-eval").read_text()
    # The fresh environment holds the project and no dependency. `-S`: no site folder but the one
    # named, read as the interpreter reads one at start-up (its .pth files run), so that only the
    # install can find the packages; then the project venv's own beside it for the dependencies.
    site_packages = Path(sysconfig.get_path("purelib", vars={"base": str(venv), "platbase": str(venv)}))
    with_deps = Path(sysconfig.get_path("purelib"))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}

    def run(sites: list[Path], code: str) -> subprocess.CompletedProcess:
        prelude = "import site; " + "".join(f"site.addsitedir({str(s)!r}); " for s in sites)
        return subprocess.run([sys.executable, "-S", "-c", prelude + code], cwd=elsewhere, env=env,
                              capture_output=True, text=True, timeout=300)

    assert "No module named 'agents'" in run([], "import agents.profiles").stderr
    alone = run([site_packages], "import agents.profiles, local_evaluation; print(agents.profiles.REPO_ROOT); "
                                 "print(local_evaluation.__file__)")
    assert alone.returncode == 0, alone.stderr[-2000:]
    root, entry = alone.stdout.split()
    assert Path(root) == REPO_ROOT and Path(entry) == REPO_ROOT / "local_evaluation.py"
    found = run([site_packages, with_deps], "from evaluator import evaluate; import evaluator; print(evaluator.__file__)")
    assert found.returncode == 0, found.stderr[-2000:]
    assert Path(found.stdout.strip()).is_relative_to(REPO_ROOT)

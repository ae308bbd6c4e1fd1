#!/usr/bin/env bash
# Create .venv in the repository root, install the CPU requirements and build what the CPU
# profile needs into .cache/ (SmolLM2 converted from its GGUF file, a tiny CLIP, the mini
# benchmark's search indices). Safe to run again: a step whose inputs have not changed is
# skipped. Each step prints a "==> " line (benchmarks/time_quickstart.sh times the steps by them).
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
# requirements-no-deps.txt: packages installed without their dependencies (why: in that file).

echo "==> install requirements"
if [ ! -x .venv/bin/python ]; then
  "$PYTHON" -m venv .venv
  .venv/bin/python -m pip install --quiet --upgrade pip
fi
# pip takes a while to decide that every pin is already installed. The stamp holds a hash of
# what was last installed into this venv; delete it to force a reinstall.
stamp=.venv/cruise-requirements.sha256
wanted=$( { cat requirements-cpu.txt requirements-no-deps.txt; .venv/bin/python --version; } | sha256sum | cut -d' ' -f1)
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$wanted" ]; then
  echo "requirements-cpu.txt unchanged since the last install: pip skipped"
else
  .venv/bin/python -m pip install --quiet -r requirements-cpu.txt
  .venv/bin/python -m pip install --quiet --no-deps -r requirements-no-deps.txt
  echo "$wanted" > "$stamp"
fi

echo "==> install the project (editable)"
# The repository itself as the package `cruise-agent` (pyproject.toml [project]), editable and
# without dependencies (the requirements above are its pins), so that `from evaluator import
# evaluate` and the `crag-mm-eval` command work from any folder. Its stamp holds a hash of
# pyproject.toml and of this folder's path: an unchanged project is not installed again.
project_stamp=.venv/cruise-project.sha256
project_wanted=$( { cat pyproject.toml; pwd; .venv/bin/python --version; } | sha256sum | cut -d' ' -f1)
if [ -f "$project_stamp" ] && [ "$(cat "$project_stamp")" = "$project_wanted" ]; then
  echo "pyproject.toml unchanged since the last install: pip skipped"
else
  .venv/bin/python -m pip install --quiet --no-deps -e .
  echo "$project_wanted" > "$project_stamp"
fi

bash scripts/build_cache.sh .venv/bin/python

#!/usr/bin/env bash
# Set up (idempotent), make sure headless Chromium is there for the report's browser tests,
# and run both test tiers offline: `pytest --full` (tests/ and tests/full/). This is what CI runs.
# The default tier alone, while working: .venv/bin/python -m pytest
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
# lmms-eval in .venv-lmms, for the full tier's lmms-eval runs (tests/full/test_lmms_eval.py)
bash scripts/setup_lmms.sh
# Ray, for the tests of `local_evaluation.py --workers` (an optional extra: quickstart needs none of it)
.venv/bin/pip install -q -r requirements-scale.txt
# The Debian package, installed here rather than by setup.sh so that quickstart does not pay
# for it. Where it cannot be installed (no root, no apt-get), those tests skip and say why.
if ! command -v chromium >/dev/null 2>&1; then
  sudo=""
  [ "$(id -u)" = 0 ] || sudo="sudo -n"
  if command -v apt-get >/dev/null 2>&1 && { [ -z "$sudo" ] || sudo -n true 2>/dev/null; }; then
    echo "==> install chromium (apt-get) for the browser tests"
    if ! { $sudo apt-get update -qq && $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium; } >/dev/null; then
      echo "chromium could not be installed: the browser tests will be skipped"
    fi
  else
    echo "chromium is missing and apt-get cannot run here: the browser tests will be skipped"
  fi
fi
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 HF_DATASETS_OFFLINE=1
.venv/bin/ruff check .
# pytest settings live in pyproject.toml, the tiers in tests/conftest.py
# the 30 slowest tests, so that CI's log shows where its time goes; one process per core
# (pyproject.toml), each test file whole in one of them (--dist loadfile): the full tier's files
# build their models, indices and servers once per file. xdist hands out the files with the most
# tests first, so the full tier's long files run beside the default tier's short ones and rarely
# beside each other: handed out in collection order instead (tests/full/ first), two full-tier runs
# at once overran their deadlines (a QA-Dragon batch over budget, a Gemma 3 chain cut).
.venv/bin/python -m pytest -q --full --dist loadfile --durations=30 "$@"

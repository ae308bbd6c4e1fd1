#!/usr/bin/env bash
# Set up (idempotent) and run the whole test suite offline.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 HF_DATASETS_OFFLINE=1
.venv/bin/ruff check .
# pytest settings live in pyproject.toml; `-m "not slow"` skips the real-model tests
.venv/bin/python -m pytest -q "$@"

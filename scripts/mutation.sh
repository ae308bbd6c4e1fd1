#!/usr/bin/env bash
# Mutation testing of what a change touched (tools/mutation.py; docs/testing.md):
#   bash scripts/mutation.sh BASE                 the functions changed since commit BASE
#   bash scripts/mutation.sh --files tools/preflight.py
# a timed-out mutant is counted apart; a file with 20% or more timeouts is unmeasured
set -euo pipefail
cd "$(dirname "$0")/.."
exec .venv/bin/python -m tools.mutation "$@"

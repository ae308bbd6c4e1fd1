#!/usr/bin/env bash
# Everything a new user needs on a CPU machine: set up, then evaluate CruiseAgent on the
# shipped mini benchmark (single-turn, then multi-turn). Extra arguments go to both runs.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 HF_DATASETS_OFFLINE=1
.venv/bin/python local_evaluation.py --dataset-type single-turn --output-dir outputs/single-turn "$@"
.venv/bin/python local_evaluation.py --dataset-type multi-turn --output-dir outputs/multi-turn "$@"

#!/usr/bin/env bash
# Everything a new user needs on a CPU machine: set up, then evaluate CruiseAgent on the
# shipped mini benchmark (single-turn, then multi-turn), then print where the reports are.
# Extra arguments go to both runs. An earlier quickstart's outputs are moved aside, not deleted.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 HF_DATASETS_OFFLINE=1
stamp=$(date +%Y%m%d-%H%M%S)
for kind in single-turn multi-turn; do
  echo "==> $kind evaluation"
  if [ -e "outputs/$kind" ]; then
    mv "outputs/$kind" "outputs/$kind.$stamp"
    echo "the earlier outputs/$kind is now outputs/$kind.$stamp"
  fi
  .venv/bin/python local_evaluation.py --dataset-type "$kind" --output-dir "outputs/$kind" "$@"
done
echo "==> reports (open in any browser; they work offline)"
for kind in single-turn multi-turn; do
  echo "$kind: $(pwd)/outputs/$kind/report.html"
done

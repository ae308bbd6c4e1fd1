#!/usr/bin/env bash
# Everything a new user needs on a CPU machine: set up, then evaluate CruiseAgent on the
# shipped mini benchmark (single-turn and multi-turn, full preset), then print where the
# reports are. Extra arguments go to both runs. An earlier quickstart's outputs are moved
# aside, not deleted.
#
# The two evaluations run side by side: on the cpu profile each process uses one torch thread
# (agents/engines/transformers_engine.py leaves the other core free), so on 2 cores they barely
# slow each other and the quickstart takes as long as the longer run, not both. The multi-turn
# run's console goes to outputs/multi-turn.log and is shown when the single-turn run is done.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 HF_DATASETS_OFFLINE=1
stamp=$(date +%Y%m%d-%H%M%S)
mkdir -p outputs
for kind in single-turn multi-turn; do
  if [ -e "outputs/$kind" ]; then
    mv "outputs/$kind" "outputs/$kind.$stamp"
    [ -e "outputs/$kind.log" ] && mv "outputs/$kind.log" "outputs/$kind.$stamp.log"
    echo "the earlier outputs/$kind is now outputs/$kind.$stamp"
  fi
done

echo "==> evaluations (single-turn here, multi-turn alongside into outputs/multi-turn.log)"
.venv/bin/python local_evaluation.py --dataset-type multi-turn --output-dir outputs/multi-turn \
  --no_progress "$@" > outputs/multi-turn.log 2>&1 &
multi=$!
trap 'kill "$multi" 2>/dev/null || true' EXIT  # Ctrl-C stops both runs
single_status=0
.venv/bin/python local_evaluation.py --dataset-type single-turn --output-dir outputs/single-turn "$@" \
  || single_status=$?
echo "==> waiting for the multi-turn evaluation"
multi_status=0
wait "$multi" || multi_status=$?
trap - EXIT
cat outputs/multi-turn.log
# exit 3: scored and written, but the LLM judge left turns without a verdict (docs/evaluation.md)
for status in "$single_status" "$multi_status"; do
  if [ "$status" -ne 0 ] && [ "$status" -ne 3 ]; then
    echo "quickstart: an evaluation failed (single-turn exit $single_status, multi-turn exit $multi_status)"
    exit 1
  fi
done
echo "==> reports (open in any browser; they work offline)"
for kind in single-turn multi-turn; do
  echo "$kind: $(pwd)/outputs/$kind/report.html"
done
if [ "$single_status" -eq 3 ] || [ "$multi_status" -eq 3 ]; then
  echo "quickstart: the judge left turns without a verdict (exit 3); each run printed how many and its --rejudge command"
  exit 3
fi

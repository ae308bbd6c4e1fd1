#!/usr/bin/env bash
# Everything a new user needs on a CPU machine: set up, then evaluate CruiseAgent on the
# shipped mini benchmark (single-turn and multi-turn, full preset), then print where the
# reports are. Extra arguments go to both runs. An earlier quickstart's outputs are moved
# aside, not deleted.
#
# The two evaluations share the two cores to the end: on the cpu profile each process uses one
# torch thread (agents/engines/transformers_engine.py), and the multi-turn split (about twice the
# single-turn one's work) runs as three shards of the evaluator's own `--shard I/3`. One lane runs
# the single-turn evaluation, then multi-turn shard 2/3; the other runs shards 0/3 and 1/3; then
# `local_evaluation.py merge` scores the three as one multi-turn run (outputs/multi-turn, whole).
# The second lane's console goes to outputs/multi-turn.log and is shown at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 HF_DATASETS_OFFLINE=1
stamp=$(date +%Y%m%d-%H%M%S)
mkdir -p outputs
for kind in single-turn multi-turn multi-turn.shards; do
  if [ -e "outputs/$kind" ]; then
    mv "outputs/$kind" "outputs/$kind.$stamp"
    [ -e "outputs/$kind.log" ] && mv "outputs/$kind.log" "outputs/$kind.$stamp.log"
    echo "the earlier outputs/$kind is now outputs/$kind.$stamp"
  fi
done

shard() {  # shard I [ARGS...]: multi-turn shard I of 3, judged here, scored as one run by the merge
  local i=$1
  shift
  .venv/bin/python local_evaluation.py --dataset-type multi-turn --shard "$i/3" \
    --output-dir "outputs/multi-turn.shards/$i" --no_progress "$@"
}
mkdir -p outputs/multi-turn.shards
echo "==> evaluations (single-turn here, the multi-turn shards alongside into outputs/multi-turn.log)"
( set +e; status=0
  shard 0 "$@" || status=$?
  shard 1 "$@" || status=$((status ? status : $?))
  exit "$status" ) > outputs/multi-turn.log 2>&1 &
other=$!
trap 'kill "$other" 2>/dev/null || true' EXIT  # Ctrl-C stops both lanes
single_status=0
.venv/bin/python local_evaluation.py --dataset-type single-turn --output-dir outputs/single-turn "$@" \
  || single_status=$?
multi_status=0
shard 2 "$@" > outputs/multi-turn.shards/2.log 2>&1 || multi_status=$?
echo "==> waiting for the other multi-turn shards"
wait "$other" || multi_status=$((multi_status ? multi_status : $?))
trap - EXIT
cat outputs/multi-turn.log outputs/multi-turn.shards/2.log
echo "==> merging the multi-turn shards"
.venv/bin/python local_evaluation.py merge outputs/multi-turn.shards/0 outputs/multi-turn.shards/1 \
  outputs/multi-turn.shards/2 --output-dir outputs/multi-turn || multi_status=$((multi_status ? multi_status : $?))
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

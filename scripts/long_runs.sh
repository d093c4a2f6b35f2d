#!/usr/bin/env bash
# The long conformance runs of issue 7, one after the other (never two at once), nice'd for the shared machine.
#   scripts/long_runs.sh hard [BASE] [CHUNKS]   hard-input suite: CHUNKS chunks of 2000 cases (250 chains); chunk k
#                                               uses AUTOFUSE_HARD_SEED=BASE+250*k, so every chain seed is distinct
#   scripts/long_runs.sh conformance            the full OpInfo suite (AUTOFUSE_CONFORMANCE=full)
#   scripts/long_runs.sh all [BASE] [CHUNKS]    both, the OpInfo suite first
# Logs go to $LOGDIR (default build/long_runs/): one pytest log per run, per-sample timings in conformance.jsonl.
# Workers: JOBS (default 2). Each run prints its command, seeds, counts and wall time (docs/conformance.md records them).
set -u
cd "$(dirname "$0")/.."
PY=${PY:-/work/main/.venv/bin/python}
[ -x "$PY" ] || PY=.venv/bin/python
JOBS=${JOBS:-2}
LOGDIR=${LOGDIR:-build/long_runs}
mkdir -p "$LOGDIR"
LOGDIR=$(cd "$LOGDIR" && pwd)
export PYTHONPATH="$PWD/python${PYTHONPATH:+:$PYTHONPATH}"

hard() {
  local base=${1:-30000000} chunks=${2:-5} k seed t0 rc=0
  for ((k = 0; k < chunks; k++)); do
    seed=$((base + 250 * k))
    t0=$(date +%s)
    echo "hard inputs chunk $k: AUTOFUSE_HARD_SEED=$seed AUTOFUSE_HARD_CASES=2000 (started $(date -u +%H:%M:%S))"
    AUTOFUSE_HARD_SEED=$seed AUTOFUSE_HARD_CASES=2000 nice -n 10 "$PY" -m pytest -q -p no:cacheprovider -n "$JOBS" \
      -p no:logging -rfE --tb=short tests/python/test_hard_inputs.py -k test_hard_chain > "$LOGDIR/hard_$seed.log" 2>&1 || rc=1
    echo "  $(tail -1 "$LOGDIR/hard_$seed.log") in $(( $(date +%s) - t0 )) s"
  done
  return $rc
}

conformance() {
  local t0 rc=0
  t0=$(date +%s)
  rm -f "$LOGDIR/conformance.jsonl"
  echo "conformance full: AUTOFUSE_CONFORMANCE=full pytest -n $JOBS tests/conformance (started $(date -u +%H:%M:%S))"
  AUTOFUSE_CONFORMANCE=full AUTOFUSE_CONFORMANCE_LOG="$LOGDIR/conformance.jsonl" nice -n 10 "$PY" -m pytest -v \
    -p no:cacheprovider -p no:logging -n "$JOBS" -rfE --tb=short tests/conformance > "$LOGDIR/conformance.log" 2>&1 || rc=1
  grep "conformance counts" "$LOGDIR/conformance.log"
  echo "  $(tail -1 "$LOGDIR/conformance.log") in $(( $(date +%s) - t0 )) s"
  return $rc
}

case "${1:-all}" in
  hard) shift; hard "$@" ;;
  conformance) conformance ;;
  all) shift; r=0; conformance || r=1; hard "$@" || r=1; exit $r ;;
  *) echo "usage: $0 hard [BASE] [CHUNKS] | conformance | all [BASE] [CHUNKS]" >&2; exit 2 ;;
esac

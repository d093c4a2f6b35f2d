#!/usr/bin/env bash
# `make fuzz-kernels`: the long differential run of generated kernels against the reference interpreter.
# Default: 700 random graphs x 3 size/layout cases = 2100 cases. Override with AUTOFUSE_FUZZ_GRAPHS,
# AUTOFUSE_FUZZ_CASES_PER_GRAPH and AUTOFUSE_FUZZ_SEED (a failure prints the seed to replay with GRAPHS=1).
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${AUTOFUSE_TESTS_BIN:-build/release/autofuse_tests}
export AUTOFUSE_FUZZ_GRAPHS=${AUTOFUSE_FUZZ_GRAPHS:-700}
export AUTOFUSE_FUZZ_CASES_PER_GRAPH=${AUTOFUSE_FUZZ_CASES_PER_GRAPH:-3}
export AUTOFUSE_FUZZ_SEED=${AUTOFUSE_FUZZ_SEED:-$(date +%s)}
echo "fuzz-kernels: $AUTOFUSE_FUZZ_GRAPHS graphs x $AUTOFUSE_FUZZ_CASES_PER_GRAPH cases from seed $AUTOFUSE_FUZZ_SEED"
exec "$BIN" --gtest_filter='KernelFuzz.*'

#!/usr/bin/env bash
# ThreadSanitizer run of the tests that put a training thread beside the GUI thread: the worker
# on its own (tst_training_worker), the window driving runs (tst_main_window), the run controls
# (tst_controller) and the start/stop lifecycle (tst_lifecycle). Configures the `tsan` preset
# (build/tsan), builds only those targets, runs each with halt_on_error, and exits nonzero on the
# first report or test failure.
#
# Qt, oneDNN and libgomp are not instrumented: the synchronisation inside them (QMutex's futex,
# the event queue behind queued signals, QThread::wait, OpenMP barriers) is invisible to TSan.
# tests/sanitize/tsan.supp holds the narrow entries for reports that arise only from that; our
# own data (app/gui_training_worker.*, gui_metrics_buffer.*, gui_run_controller.*) is never
# suppressed. OMP_NUM_THREADS=1: see below.
#
# Cost on the 2-core CI machine: a cold build of these targets takes ~11 min of CPU (677 s user
# at -j2); the run about 1.5 min.
#
# Usage: tests/sanitize/run_tsan.sh [test-name ...]   (default: all four)
# Env:   JOBS (ninja -j, default 2), TSAN_EXTRA (appended to TSAN_OPTIONS).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$root"
build=build/tsan
tests=("$@")
[ ${#tests[@]} -gt 0 ] || tests=(tst_training_worker tst_controller tst_main_window tst_lifecycle)

export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$root}
cmake --preset tsan >/dev/null
ninja -C "$build" -j"${JOBS:-2}" "${tests[@]}"

# halt_on_error: a report fails the run at once (exit 66, which no test uses).
# second_deadlock_stack: a lock-order report shows where both locks were taken.
export TSAN_OPTIONS="halt_on_error=1 exitcode=66 second_deadlock_stack=1 suppressions=$root/tests/sanitize/tsan.supp ${TSAN_EXTRA:-}"
export QT_QPA_PLATFORM=offscreen
export CUDA_VISIBLE_DEVICES=  # the CPU backend, as in the other UI tests
# The engine's OpenMP regions hand data between a team's threads at libgomp's barriers, which
# TSan cannot see: a region run by two threads reads as races (a 512-wide MLP with
# train.threads=2 gave 132 reports, in histogram, biasGrad and the elementwise kernels). These
# tests' runs set train.threads=1; this covers any run left at the default (0: OpenMP's own
# count), so every report is about our threads, the GUI's and the workers'.
export OMP_NUM_THREADS=1

# GCC 12's TSan runtime maps its shadow at fixed addresses and aborts ("unexpected memory
# mapping") on kernels that randomise mmap with more bits than it expects; without address
# randomisation the layout always fits. setarch -R only affects the test process.
runner=()
if setarch "$(uname -m)" -R true 2>/dev/null; then runner=(setarch "$(uname -m)" -R); fi

passed=0
failed=0
for t in "${tests[@]}"; do
  exe=$(find "$build/tests" -name "$t" -type f -perm -u+x | head -n1)
  log="$build/$t.tsan.log"
  echo "== $t (log: $log)"
  start=$(date +%s)
  set +e
  # A hang fails the run too (exit 124) instead of stalling CI; the four take ~1 min together.
  timeout 600 "${runner[@]}" "$exe" >"$log" 2>&1
  rc=$?
  set -e
  secs=$(( $(date +%s) - start ))
  if grep -q "WARNING: ThreadSanitizer" "$log" || [ $rc -eq 66 ]; then
    echo "FAIL $t: ThreadSanitizer report (${secs} s):"
    sed -n '/WARNING: ThreadSanitizer/,/^SUMMARY: ThreadSanitizer/p' "$log" | head -n 120
    failed=$((failed + 1))
  elif [ $rc -ne 0 ]; then
    echo "FAIL $t: exit $rc (${secs} s):"
    grep -E "^(FAIL|QFATAL|Totals)|Loc:" "$log" | head -n 40 || tail -n 40 "$log"
    failed=$((failed + 1))
  else
    echo "ok   $t (${secs} s): $(grep -E '^Totals' "$log" || true)"
    passed=$((passed + 1))
  fi
done
echo "tsan: $passed passed, $failed failed"
[ "$failed" -eq 0 ]

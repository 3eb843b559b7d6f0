#!/usr/bin/env bash
# Builds the fuzz targets (the `fuzz` preset: clang, ASan + UBSan, libFuzzer) and runs each one
# over its seed corpus for a fixed time, under the caps the parsers are held to: 2 GB of memory
# (RSS and any single allocation), 10 s per input. Fails on any crash, sanitizer report, leak,
# timeout or out-of-memory, and prints one line per target.
#
#   tests/fuzz/run_fuzzers.sh [seconds-per-target]      (default 20)
#   FUZZ_TARGETS="csv idx" tests/fuzz/run_fuzzers.sh 60  (only these targets)
#   FUZZ_RUNS=1000000 tests/fuzz/run_fuzzers.sh 3600     (stop each at 1M executions or the time)
#   FUZZ_TIMEOUT=60 ...   (seconds one input may take, default 10: libFuzzer measures wall-clock
#                          time, so a niced run beside a build needs more; an input that really
#                          hangs still fails it)
#
# Everything a run writes (new corpus entries, crashing inputs, logs) goes to a temporary
# folder, never into the repository; a failing target's folder is kept and named. To keep a
# finding: copy the crash-* file into tests/fuzz/corpus/<target>/ once the bug is fixed.
set -euo pipefail
cd "$(dirname "$0")/../.."
SECONDS_PER_TARGET="${1:-20}"
export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$PWD}"

cmake --preset fuzz > /dev/null
cmake --build --preset fuzz -j2

# The dictionaries each target gets (tests/fuzz/dict/, concatenated).
declare -A DICTS=(
  [config_json]="config json" [config_set]="config" [csv]="csv" [idx]="idx"
  [safetensors]="checkpoint json" [checkpoint_manifest]="checkpoint config json"
  [zip_entries]="zip checkpoint" [checkpoint]="checkpoint zip json" [metrics_jsonl]="metrics json"
  [run_folder]="run metrics config json" [experiment]="run zip metrics json"
  [run_bundle]="run zip metrics json" [image_decode]="image"
)
ALL_TARGETS=$(cd tests/fuzz && ls fuzz_*.cpp | sed 's/^fuzz_//; s/\.cpp$//')
TARGETS="${FUZZ_TARGETS:-$ALL_TARGETS}"

WORK=$(mktemp -d "${TMPDIR:-/tmp}/ampstudio-fuzz.XXXXXX")
failed=0
passed_count=0
failed_count=0
for t in $TARGETS; do
  bin="build/fuzz/tests/fuzz/fuzz_$t"
  seeds="tests/fuzz/corpus/$t"
  [ -x "$bin" ] || { echo "fuzz_$t: not built"; failed=1; failed_count=$((failed_count + 1)); continue; }
  [ -d "$seeds" ] || { echo "fuzz_$t: no seed corpus in $seeds"; failed=1; failed_count=$((failed_count + 1)); continue; }
  dir="$WORK/$t"
  mkdir -p "$dir/corpus"
  dict_args=()
  if [ -n "${DICTS[$t]:-}" ]; then
    for d in ${DICTS[$t]}; do cat "tests/fuzz/dict/$d.dict"; done > "$dir/dict"
    dict_args=(-dict="$dir/dict")
  fi
  runs_args=()
  [ -n "${FUZZ_RUNS:-}" ] && runs_args=(-runs="$FUZZ_RUNS")
  start=$(date +%s)
  rc=0
  # New inputs go to the first folder ($dir/corpus); the repository's seeds are only read.
  UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1" \
    "$bin" -max_total_time="$SECONDS_PER_TARGET" "${runs_args[@]}" -rss_limit_mb=2048 -malloc_limit_mb=2048 \
    -timeout="${FUZZ_TIMEOUT:-10}" -print_final_stats=1 -artifact_prefix="$dir/" "${dict_args[@]}" \
    "$dir/corpus" "$seeds" > "$dir/log" 2>&1 || rc=$?
  secs=$(( $(date +%s) - start ))
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$dir/log" | tail -1)
  cov=$(grep -o 'cov: [0-9]*' "$dir/log" | tail -1 | cut -d' ' -f2)
  findings=$(cd "$dir" && ls crash-* leak-* timeout-* oom-* slow-unit-* 2>/dev/null | grep -v '^slow-unit' || true)
  if [ "$rc" -eq 0 ] && [ -z "$findings" ]; then
    echo "fuzz_$t: ${execs:-0} execs in ${secs} s ($(( ${execs:-0} / (secs > 0 ? secs : 1) ))/s), cov ${cov:-?}: ok"
    rm -rf "$dir"
    passed_count=$((passed_count + 1))
  else
    echo "fuzz_$t: ${execs:-?} execs in ${secs} s, cov ${cov:-?}: FAILED (exit $rc) ${findings//$'\n'/ }; log and inputs in $dir"
    grep -m1 -A30 -E '^==[0-9]+==ERROR|runtime error|FUZZ PROPERTY BROKEN|ERROR: libFuzzer' "$dir/log" || tail -30 "$dir/log"
    failed=1
    failed_count=$((failed_count + 1))
  fi
done
echo "fuzz targets: $passed_count passed, $failed_count failed"
[ "$failed" -eq 0 ] && rm -rf "$WORK"
exit "$failed"

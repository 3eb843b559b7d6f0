#!/bin/sh
# Every lesson's wall time to its conclusion, run headless through the app (`ampstudio --lesson
# NAME --screenshot`, offscreen: the runs train, the lesson concludes, the window is drawn),
# on a quiet machine and beside a busy process (issue 38: within 60 s quiet and 90 s busy on 2
# cores). Prints one line per lesson and condition with the seconds and the verdict, then the
# conclusion line itself, so a change to a lesson can be checked to keep its verdict.
#
#   tests/bench/lesson_times.sh [APP] [LESSON...]
#     APP      the ampstudio binary (default build/h40/app/ampstudio)
#     LESSON   lessons to time (default all but two-workers, which needs mpirun)
#   BUSY=spin (default): one shell loop spinning per CPU beside the busy runs; BUSY=none: quiet
#   only. BUDGET_QUIET / BUDGET_BUSY: the budgets in seconds (60 / 90); exit 1 when one is missed.
set -eu
APP=${1:-build/h40/app/ampstudio}
[ $# -gt 0 ] && shift
[ -x "$APP" ] || { echo "lesson_times.sh: $APP: not an executable (build ampstudio first)" >&2; exit 2; }
LESSONS=${*:-"recipe tensor-cores underflow overflow bf16-no-scaler pure-fp16 fmnist-mlp fmnist-cnn resnet gpt gpt-scaling gpt-fp32-ops spirals fp8-needs-a-scale fp8-outlier fp8-delayed-lag fp8-gradients-e5m2 fp4 fp8-accumulator"}
BUSY=${BUSY:-spin}
BUDGET_QUIET=${BUDGET_QUIET:-60}
BUDGET_BUSY=${BUDGET_BUSY:-90}
WORK=$(mktemp -d)
BUSY_PIDS=""
stop_busy() {
  for p in $BUSY_PIDS; do kill "$p" 2>/dev/null || true; done
  for p in $BUSY_PIDS; do wait "$p" 2>/dev/null || true; done
  BUSY_PIDS=""
}
trap 'stop_busy; rm -rf "$WORK"' EXIT
trap 'exit 130' INT TERM  # the EXIT trap then cleans up
start_busy() {
  n=$(getconf _NPROCESSORS_ONLN)
  i=0
  while [ "$i" -lt "$n" ]; do
    sh -c 'while :; do :; done' &
    BUSY_PIDS="$BUSY_PIDS $!"
    i=$((i + 1))
  done
}

echo "CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(getconf _NPROCESSORS_ONLN) CPUs; $(date -u +%FT%TZ)"
printf '%-19s %-6s %8s  %s\n' lesson load seconds verdict
missed=0
for lesson in $LESSONS; do
  conditions="quiet"
  [ "$BUSY" != none ] && conditions="quiet busy"
  for cond in $conditions; do
    [ "$cond" = busy ] && start_busy
    log="$WORK/$lesson-$cond.log"
    start=$(date +%s.%N)
    # No display and no settings of the user's: a screenshot run starts clean.
    status=0
    HOME="$WORK/home" QT_QPA_PLATFORM=offscreen "$APP" --lesson "$lesson" \
      --screenshot "$WORK/$lesson-$cond.png" --timeout 900 >"$log" 2>&1 || status=$?
    end=$(date +%s.%N)
    stop_busy
    secs=$(python3 -c "import sys; print(f'{float(sys.argv[2]) - float(sys.argv[1]):.1f}')" "$start" "$end")
    verdict=$(sed -n 's/^conclusion: .* — \([a-z ]*\): .*/\1/p' "$log" | head -1)
    [ -n "$verdict" ] || verdict="(no conclusion; exit $status)"
    budget=$BUDGET_QUIET
    [ "$cond" = busy ] && budget=$BUDGET_BUSY
    over=""
    if python3 -c "import sys; sys.exit(0 if float(sys.argv[1]) > float(sys.argv[2]) else 1)" "$secs" "$budget"; then
      over="  OVER ${budget} s"
      missed=1
    fi
    printf '%-19s %-6s %8s  %s%s\n' "$lesson" "$cond" "$secs" "$verdict" "$over"
    sed -n 's/^conclusion: /    /p' "$log" | head -1
  done
done
exit $missed

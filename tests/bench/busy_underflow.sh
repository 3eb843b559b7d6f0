#!/bin/sh
# The underflow preset's fp32 and fp16 step times on a quiet machine and beside a busy process
# (issue 38): with OpenMP threads spinning while they wait, a busy neighbour made the fp32 run
# 300-660x slower and a lesson called fp16 "421x fp32". Prints the median ms/step of each run,
# quiet and busy, in interleaved rounds (quiet, busy, quiet, busy, ...: a change of load between
# them cannot pass for a speed-up), and whether the busy ordering of fp32 and fp16 is the quiet
# one. Exit 1 when it is not.
#
#   tests/bench/busy_underflow.sh [CLI] [ROUNDS]
#     CLI     ampstudio-cli to time (default build/h40/app/ampstudio-cli)
#     ROUNDS  interleaved quiet/busy rounds (default 3)
#   BUSY=spin (default): one shell loop spinning per CPU beside the runs;
#   BUSY=cli: a second `ampstudio-cli run` (the recipe preset, as long as the measurement) instead.
#   STEPS=N: the runs' train.steps (default the preset's).
set -eu
CLI=${1:-build/h40/app/ampstudio-cli}
ROUNDS=${2:-3}
BUSY=${BUSY:-spin}
STEPS=${STEPS:-}
[ -x "$CLI" ] || { echo "busy_underflow.sh: $CLI: not an executable (build ampstudio-cli first)" >&2; exit 2; }
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
  if [ "$BUSY" = cli ]; then
    "$CLI" run --preset recipe --set train.steps=1000000 --out "$WORK/busy-$$-$1" >/dev/null 2>&1 &
    BUSY_PIDS="$!"
  else
    n=$(getconf _NPROCESSORS_ONLN)
    i=0
    while [ "$i" -lt "$n" ]; do
      sh -c 'while :; do :; done' &
      BUSY_PIDS="$BUSY_PIDS $!"
      i=$((i + 1))
    done
  fi
  sleep 1  # the neighbour is up to speed before the timing starts
}

# One run of the preset; appends "condition mode median_ms" lines to $WORK/times.
run_once() {  # $1 condition (quiet|busy), $2 round
  out="$WORK/$1-$2"
  set -- "$1" "$2"
  if [ -n "$STEPS" ]; then
    "$CLI" run --preset underflow --set "train.steps=$STEPS" --out "$out" >/dev/null 2>&1
  else
    "$CLI" run --preset underflow --out "$out" >/dev/null 2>&1
  fi
  for mode in fp32 fp16_noscale fp16_dynamic; do
    ms=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['median_step_ms'])" "$out/$mode/summary.json")
    echo "$1 $mode $ms" >>"$WORK/times"
  done
  # The variants train in turns (engine/train/speed_turns.h): fp16_dynamic's speed against fp32's
  # round by round, and whether those rounds agreed ("noisy" when they did not).
  python3 -c "
import json, sys
for r in json.load(open(sys.argv[1]))['runs']:
    p = r.get('paired_speed_vs_fp32')
    if r['label'] == 'fp16_dynamic' and p:
        print(sys.argv[2], p['speedup'], p['low'], p['high'], int(p['too_noisy']))" "$out/summary.json" "$1" >>"$WORK/paired"
}

r=1
while [ "$r" -le "$ROUNDS" ]; do
  run_once quiet "$r"
  start_busy "$r"
  run_once busy "$r"
  stop_busy
  r=$((r + 1))
done

echo "CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(getconf _NPROCESSORS_ONLN) CPUs;" \
     "busy: $BUSY; OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-unset}; $ROUNDS interleaved rounds"
rc=0
python3 - "$WORK/times" <<'PY' || rc=$?
import statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
t = {}
for cond, mode, ms in rows:
    t.setdefault((cond, mode), []).append(float(ms))
med = {k: statistics.median(v) for k, v in t.items()}
print(f"{'run':14} {'quiet ms/step':>14} {'busy ms/step':>14} {'busy/quiet':>11}  (median of rounds; each round's in brackets)")
for mode in ("fp32", "fp16_noscale", "fp16_dynamic"):
    q, b = med[("quiet", mode)], med[("busy", mode)]
    qs = " ".join(f"{x:.3g}" for x in t[("quiet", mode)])
    bs = " ".join(f"{x:.3g}" for x in t[("busy", mode)])
    print(f"{mode:14} {q:14.3f} {b:14.3f} {b / q:10.1f}x  [{qs}] [{bs}]")
ok = True
for cond in ("quiet", "busy"):
    r = med[(cond, "fp16_dynamic")] / med[(cond, "fp32")]
    order = "fp32 faster" if r > 1 else "fp16 faster"
    print(f"{cond}: fp16_dynamic / fp32 = {r:.2f}x ({order})")
q = med[("quiet", "fp16_dynamic")] > med[("quiet", "fp32")]
b = med[("busy", "fp16_dynamic")] > med[("busy", "fp32")]
print("ordering busy = quiet: " + ("yes" if q == b else "NO"))
sys.exit(0 if q == b else 1)
PY
# Round by round within each run (the variants in turns): fp16_dynamic's speed against fp32's.
if [ -s "$WORK/paired" ]; then python3 - "$WORK/paired" <<'PY'
import sys
for line in open(sys.argv[1]):
    cond, q, lo, hi, noisy = line.split()
    print(f"{cond}: fp16_dynamic at {float(q):.2f}x fp32's speed, rounds {float(lo):.2f}x-{float(hi):.2f}x"
          + (": too noisy to conclude" if noisy == "1" else ""))
PY
fi
exit $rc

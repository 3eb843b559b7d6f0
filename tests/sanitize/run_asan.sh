#!/usr/bin/env bash
# The ASan + UBSan run (a CI step; also by hand). Configures the asan preset (build/asan: g++, our
# code at -O1 with line tables, no GUI, benchmarks or CUDA), builds what it configures (the engine,
# ampstudio-cli and the unit tests: nothing else), and runs the unit and integration tests with the
# asan test preset's options (CMakePresets.json): leaks are detected, and suppressed only by
# tests/sanitize/lsan.supp; any ASan or UBSan report ends the program with a failure, so its test
# fails. Then the conversion tests once more on the converters' other paths, which this machine's
# CPU would otherwise not take. Exits nonzero on a build failure or any failing test.
#
#   tests/sanitize/run_asan.sh [extra ctest arguments for the main pass, e.g. -R Float16]
#
# The preset lists the GoogleTest cases when ctest runs (discovery mode PRE_TEST), not as the build
# links each program, so the listing runs with the same sanitizer options as the tests.
set -euo pipefail
cd "$(dirname "$0")/../.."
export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$PWD}"
cmake --preset asan
cmake --build --preset asan -j2
# --timeout: a hang fails its test instead of holding CI (the slowest test takes about 1.5 minutes
# under the sanitizers on a busy 2-core machine).
ctest --preset asan -j2 --timeout 600 --no-tests=error "$@"
# The converters' other paths: scalar always; AVX2 where the CPU has AVX-512 (which the main
# pass then took), as CI's release pass does.
isas=scalar
if grep -qw avx512f /proc/cpuinfo; then isas="scalar avx2"; fi
for isa in $isas; do
  echo "== conversions on the $isa path (AMP_CONVERT_ISA=$isa) =="
  AMP_CONVERT_ISA=$isa ctest --preset asan -j2 --timeout 600 --no-tests=error -R '^(Float16|ConvertArrays)\.'
done

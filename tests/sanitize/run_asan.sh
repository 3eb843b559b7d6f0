#!/usr/bin/env bash
# The ASan + UBSan run (a CI step; also by hand). Configures the asan preset (build/asan: g++, our
# code at -O1 with line tables, no GUI, benchmarks or CUDA), builds what it configures (the engine,
# ampstudio-cli and the unit tests: nothing else), and runs the unit and integration tests with the
# asan test preset's options (CMakePresets.json): leaks are detected, and suppressed only by
# tests/sanitize/lsan.supp; any ASan or UBSan report ends the program with a failure, so its test
# fails. Then the conversion tests once more on the converters' scalar path, which this machine's
# CPU would otherwise not take (CI's release pass does the same). Exits nonzero on a build failure
# or any failing test.
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
echo "== conversions on the scalar path (AMP_CONVERT_ISA=scalar) =="
AMP_CONVERT_ISA=scalar ctest --preset asan -j2 --timeout 600 --no-tests=error \
  -R '^(Float16|ConvertArrays)\.'

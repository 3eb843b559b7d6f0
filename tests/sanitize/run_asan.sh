#!/usr/bin/env bash
# The ASan + UBSan run (a CI step; also by hand). Configures the asan preset (build/asan: g++, our
# code at -O1 with line tables, no GUI, benchmarks or CUDA), builds what it configures (the engine,
# ampstudio-cli and the unit tests: nothing else), and runs the unit and integration tests with the
# asan test preset's options (CMakePresets.json): leaks are detected, and suppressed only by
# tests/sanitize/lsan.supp; any ASan or UBSan report ends the program with a failure, so its test
# fails. Exits nonzero on a build failure or any failing test.
#
# No second pass with AMP_CONVERT_ISA (as CI's release pass has): the converter tests already run
# every path the CPU has, scalar included, in one process (ConvertArrays' forEachIsa, odd lengths
# and offsets too), and the Float16 tests are the scalar header functions whatever the setting.
#
#   tests/sanitize/run_asan.sh [extra ctest arguments, e.g. -R Float16]
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

#!/usr/bin/env bash
# Installs what is needed, builds everything (benchmarks included, not timed) and runs the
# whole test suite. The README's test command and CI's .ci/run both call this.
set -euo pipefail
cd "$(dirname "$0")/.."
bash installer/install-deps.sh
cmake --preset release
cmake --build --preset release
ctest --preset release -j2 --timeout 900

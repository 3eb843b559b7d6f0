#!/usr/bin/env bash
# Installs what is needed, builds, and starts AMP Studio: the desktop app when a display is
# available (or Xvfb is asked for), otherwise the headless CLI demo.
set -euo pipefail
cd "$(dirname "$0")/.."
bash installer/install-deps.sh
cmake --preset release >/dev/null
cmake --build --preset release --target ampstudio ampstudio-cli
if [ -n "${DISPLAY:-}${WAYLAND_DISPLAY:-}" ] || [ "${QT_QPA_PLATFORM:-}" = "offscreen" ]; then
  exec build/release/app/ampstudio "$@"
fi
echo "No display found: running the CLI demo instead (the 'underflow' lesson, side by side)."
echo "For the app without a display: xvfb-run -a build/release/app/ampstudio"
build/release/app/ampstudio-cli run --preset underflow --out ampstudio-demo
build/release/app/ampstudio-cli run --preset overflow --set train.steps=120 --out ampstudio-demo/overflow

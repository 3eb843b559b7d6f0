#!/usr/bin/env bash
# Installs what is needed, builds, and starts AMP Studio: the desktop app when a display is
# available, otherwise the headless CLI demo (two lessons, with their outputs and charts).
set -euo pipefail
cd "$(dirname "$0")/.."
bash installer/install-deps.sh
cmake --preset release >/dev/null
cmake --build --preset release --target ampstudio ampstudio-cli
if [ -n "${DISPLAY:-}${WAYLAND_DISPLAY:-}" ]; then
  exec build/release/app/ampstudio "$@"
fi
echo "No display found: running the CLI demo instead (the 'underflow' lesson, side by side)."
echo "For the app without a display: xvfb-run -a build/release/app/ampstudio"
build/release/app/ampstudio-cli run --preset underflow --out ampstudio-demo/underflow --overwrite
build/release/app/ampstudio-cli run --preset overflow --set train.steps=120 --out ampstudio-demo/overflow --overwrite
build/release/app/ampstudio-cli export --run ampstudio-demo/underflow --format png --output ampstudio-demo/underflow.png
build/release/app/ampstudio-cli export --run ampstudio-demo/overflow --format png --output ampstudio-demo/overflow.png
echo "Charts of both lessons: ampstudio-demo/underflow.png and ampstudio-demo/overflow.png"

#!/usr/bin/env bash
# Installs every Debian 12 package AMP Studio needs to build, test and run. Idempotent.
set -euo pipefail
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
PKGS=(
  build-essential cmake ninja-build ccache pkg-config
  qt6-base-dev qt6-charts-dev qt6-svg-dev libqt6opengl6-dev libquazip1-qt6-dev
  libdnnl-dev ocl-icd-opencl-dev zlib1g-dev libpng-dev libjpeg62-turbo-dev libgtest-dev libgmock-dev libbenchmark-dev
  dataset-fashion-mnist fortunes fonts-dejavu-core xvfb xauth x11-apps
  python3-numpy xz-utils
  protobuf-compiler libprotobuf-dev
  python3-torch python3-venv
  libopenmpi-dev openmpi-bin
  clang clang-14 libclang-rt-14-dev libomp-14-dev
  help2man dpkg-dev lintian desktop-file-utils appstream shared-mime-info
)
missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "Installing: ${missing[*]}"
  $SUDO apt-get update -q
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y \
    --no-install-recommends "${missing[@]}"
fi

#!/usr/bin/env bash
# Makes a Python venv with a current PyTorch from PyPI (the reference for what Debian's 1.13
# cannot check: fp8 casts, torch.amp.GradScaler("cpu"), CPU fp16 autocast), for the tests that
# need one. Debian's python3-torch stays for everything else.
#
#   bash installer/torch-venv.sh DIR        # e.g. build/release/torch-venv
#
# PyPI's Linux wheel is built for CUDA and loads its libraries at import even on a CPU: the
# machine's /usr/local/cuda has most of them; the four it lacks (cuFile, cuSPARSELt, NVSHMEM and
# the NCCL release the wheel was linked against) come from their own PyPI wheels, installed
# without their dependency trees (about 1.1 GB in all instead of 4). DIR/bin/torch-python runs
# Python with the library path set. Idempotent: a venv that already imports torch is kept. Exits
# 1 (and removes DIR) where PyPI cannot be reached; the tests that need it then skip, saying so.
set -euo pipefail
DIR=$(realpath -m "${1:?usage: torch-venv.sh DIR}")
TORCH_VERSION=${AMP_TORCH_VERSION:-2.15.0}
if [ -x "$DIR/bin/torch-python" ] && "$DIR/bin/torch-python" -c 'import torch' 2>/dev/null; then
  exit 0
fi
rm -rf "$DIR"
/usr/bin/python3 -m venv "$DIR"
pip() { timeout 900 "$DIR/bin/pip" install -q --disable-pip-version-check "$@"; }
if ! pip --no-deps "torch==$TORCH_VERSION" "nvidia-cufile==1.17.1.22.*" nvidia-cusparselt-cu13==0.8.1 \
       nvidia-nvshmem-cu13==3.7.2 nvidia-nccl-cu13==2.30.7 ||
   ! pip filelock typing_extensions sympy networkx jinja2 fsspec numpy; then
  echo "torch-venv.sh: could not install torch $TORCH_VERSION from PyPI" >&2
  rm -rf "$DIR"
  exit 1
fi
SITE=$("$DIR/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
LIBS=/usr/local/cuda/lib64
for sub in cu13 cusparselt nvshmem nccl; do LIBS=$LIBS:$SITE/nvidia/$sub/lib; done
cat > "$DIR/bin/torch-python" <<EOF
#!/bin/sh
# Python with PyTorch's CUDA libraries on the path (installer/torch-venv.sh).
LD_LIBRARY_PATH="$LIBS\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}" exec "$DIR/bin/python" "\$@"
EOF
chmod +x "$DIR/bin/torch-python"
if ! "$DIR/bin/torch-python" -c 'import torch' 2> "$DIR/import-error.txt"; then
  echo "torch-venv.sh: torch $TORCH_VERSION installed but does not import:" >&2
  tail -n 3 "$DIR/import-error.txt" >&2
  rm -rf "$DIR"
  exit 1
fi
echo "torch-venv.sh: $("$DIR/bin/torch-python" -c 'import torch; print(torch.__version__)') in $DIR"

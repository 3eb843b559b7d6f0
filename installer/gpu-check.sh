#!/usr/bin/env bash
# Builds AMP Studio's Qt-free GPU programs (the GPU suite and the recipe benchmark) for one
# architecture and packs them into one folder that runs as it is on a CUDA machine without Qt,
# oneDNN or GoogleTest: the programs and the libraries such a machine lacks (oneDNN and what it
# needs), xz-compressed; the four Fashion-MNIST files; the GPT's text corpus (Debian's fortunes
# file); the PyTorch peers; and `run`, which prints the device, the suite's result, the benchmarks
# (the recipe, the CNN, the GPT) interleaved with the peers (with ratios) and, where ncu is
# installed, kernel times per step (tests/gpu/check/run says more).
#
#   bash installer/gpu-check.sh [--arch 90] [--build-dir DIR] [--no-build] [--out DIR]
#                               [--peers DIR] [--run] [--fresh-copy DIR]
#
# --arch: CMAKE_CUDA_ARCHITECTURES of the build (default 90: H100/H200; 80 for an A100;
#   "default": the project's own list, as the release preset builds it).
# --build-dir: where to build (default build/gpu-check); --no-build packs what is there (CI
#   packs its release build's programs, built for every architecture).
# --out: the folder to write (default build/gpu-check/amp-gpu-check; replaced if it exists).
# --peers: the PyTorch peer scripts (default ../shared/peers beside the checkout, if there).
# --run: run the packed folder here too (without a GPU the suite skips: CI's half).
# --fresh-copy: first copy the checkout's last commit (as a fresh clone has it: no build/, no
#   uncommitted edits) into DIR (replaced), then run this script from there with the other options, building in
#   DIR/build/gpu-check unless --build-dir says otherwise. CI's test of the fresh-clone path
#   (installer/test.sh). With ccache, CCACHE_BASEDIR (default: this checkout, when DIR is inside
#   it) makes the copy's compiles hit the cache of this checkout's builds of the same flags.
# ccache is used where it is installed, and skipped (the build is just slower) where it is not.
# AMP_GPT_CORPUS=FILE packs another text file as the GPT's corpus.
# The last line printed is the folder's path. On the device machine: `bash FOLDER/run`.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
ARCH=90 BUILD=$ROOT/build/gpu-check OUTDIR="" PEERS=$ROOT/../shared/peers BUILD_IT=1 RUN_IT=0
FRESH="" BUILD_SET=0 ARGS=("$@")
while [ $# -gt 0 ]; do
  case "$1" in
    --fresh-copy) FRESH=$(realpath -m "$2"); shift 2 ;;
    --arch) ARCH=$2; shift 2 ;;
    --build-dir) BUILD=$(realpath -m "$2"); BUILD_SET=1; shift 2 ;;
    --no-build) BUILD_IT=0; shift ;;
    --out) OUTDIR=$(realpath -m "$2"); shift 2 ;;
    --peers) PEERS=$2; shift 2 ;;
    --run) RUN_IT=1; shift ;;
    -h|--help) sed -n 2,27p "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "gpu-check.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
  esac
done

if [ -n "$FRESH" ]; then
  # DIR is replaced: only a folder outside the checkout or under its build/, and only one this
  # option made (its marker) or an empty one, so a mistyped path never deletes anything else.
  case "$ROOT/" in "$FRESH/"*) echo "gpu-check.sh: --fresh-copy $FRESH holds the checkout itself" >&2; exit 2 ;; esac
  case "$FRESH/" in
    "$ROOT/build/"?*) ;;
    "$ROOT/"*) echo "gpu-check.sh: --fresh-copy $FRESH is inside the checkout's sources (use build/...)" >&2; exit 2 ;;
  esac
  if [ -d "$FRESH" ] && [ -n "$(ls -A "$FRESH")" ] && [ ! -f "$FRESH/.amp-fresh-copy" ]; then
    echo "gpu-check.sh: --fresh-copy $FRESH exists and is not an earlier fresh copy: not replacing it" >&2
    exit 2
  fi
  git -C "$ROOT" rev-parse --verify -q HEAD > /dev/null ||
    { echo "gpu-check.sh: --fresh-copy needs a git checkout with a commit ($ROOT has none)" >&2; exit 2; }
  echo "== a fresh copy of the last commit in $FRESH"
  rm -rf "$FRESH"
  mkdir -p "$FRESH"
  touch "$FRESH/.amp-fresh-copy"
  # The last commit's tree, as a clone of it has it: no uncommitted edits (a tracked file edited
  # to use a file not yet added would not build there either), nothing git ignores, no build/.
  git -C "$ROOT" archive --format=tar HEAD | tar -xf - -C "$FRESH"
  [ -f "$FRESH/installer/gpu-check.sh" ] || { echo "gpu-check.sh: copying the tracked tree to $FRESH failed" >&2; exit 1; }
  # Compiles hit the cache of this checkout's builds only when their paths are relative to a
  # common base: the copy's build folder sits as deep below it as build/<preset> below $ROOT.
  case "$FRESH/" in "$ROOT"/*) export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$ROOT} ;; esac
  rest=() skip=0
  for a in "${ARGS[@]}"; do
    if [ "$skip" = 1 ]; then skip=0; continue; fi
    [ "$a" = --fresh-copy ] && { skip=1; continue; }
    rest+=("$a")
  done
  [ "$BUILD_SET" = 1 ] || rest+=(--build-dir "$FRESH/build/gpu-check")
  rest+=(--peers "$PEERS")  # beside this checkout, not the copy
  exec bash "$FRESH/installer/gpu-check.sh" "${rest[@]}"
fi

OUTDIR=${OUTDIR:-$BUILD/amp-gpu-check}
PROGRAMS=(ampstudio-gpu-tests ampstudio-gpu-bench)

if [ "$BUILD_IT" = 1 ]; then
  echo "== building the GPU programs for sm_$ARCH in $BUILD"
  # A fresh clone has no build/ yet: the configure log sits beside the build folder.
  mkdir -p "$BUILD"
  LAUNCHER=()
  if command -v ccache > /dev/null; then
    LAUNCHER=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache)
  else
    echo "(no ccache here: building without a compiler cache)"
  fi
  ARCHS=(-DCMAKE_CUDA_ARCHITECTURES="$ARCH")
  [ "$ARCH" = default ] && ARCHS=()
  cmake -S "$ROOT" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DAMP_ENABLE_CUDA=ON \
    "${ARCHS[@]}" -DAMP_BUILD_GUI=OFF -DAMP_BUILD_BENCH=OFF \
    -DAMP_BUILD_TESTS=ON "${LAUNCHER[@]}" > "$BUILD.configure.log" 2>&1 ||
    { tail -n 30 "$BUILD.configure.log"; echo "gpu-check.sh: configuring failed ($BUILD.configure.log)" >&2; exit 1; }
  cmake --build "$BUILD" --target "${PROGRAMS[@]}"
fi
for p in "${PROGRAMS[@]}"; do
  [ -x "$BUILD/tests/gpu/$p" ] ||
    { echo "gpu-check.sh: $BUILD/tests/gpu/$p not built (a CUDA build with tests is needed)" >&2; exit 1; }
done

echo "== packing $OUTDIR"
rm -rf "$OUTDIR"
mkdir -p "$OUTDIR/bin" "$OUTDIR/lib" "$OUTDIR/peers"
for p in "${PROGRAMS[@]}"; do xz -T0 -6 -c "$BUILD/tests/gpu/$p" > "$OUTDIR/bin/$p.xz"; done
# Every library the programs load except the C/C++ runtime (every Linux has it) and CUDA's own
# (the GPU machine's driver, toolkit and PyTorch packages provide those, matched to the driver).
ldd "${PROGRAMS[@]/#/$BUILD/tests/gpu/}" | awk '/=> \//{print $1, $3}' | sort -u |
  grep -Ev '^(linux-vdso|ld-linux|libc\.|libm\.|libdl\.|librt\.|libpthread\.|libstdc\+\+|libgcc_s|libcuda|libcudart|libcublas|libcudnn|libnvrtc|libnvJitLink)' |
  while read -r name path; do xz -T0 -6 -c "$path" > "$OUTDIR/lib/$name.xz"; done
# Fashion-MNIST, for the CNN timing (Debian's dataset-fashion-mnist).
for d in "${AMP_FASHION_MNIST_DIR:-}" /usr/share/datasets/fashion-mnist; do
  if [ -n "$d" ] && [ -f "$d/train-images-idx3-ubyte.gz" ]; then
    mkdir -p "$OUTDIR/fm" && cp "$d"/*-ubyte.gz "$OUTDIR/fm/" && break
  fi
done
[ -d "$OUTDIR/fm" ] || echo "(no Fashion-MNIST found: the CNN timing will be skipped)"
# The GPT's corpus, the one pytorch_gpt.py reads by default (Debian's fortunes package).
CORPUS=${AMP_GPT_CORPUS:-/usr/share/games/fortunes/fortunes}
if [ -f "$CORPUS" ]; then
  mkdir -p "$OUTDIR/corpus" && cp "$CORPUS" "$OUTDIR/corpus/fortunes"
else
  echo "(no text corpus at $CORPUS (apt install fortunes): the GPT timing will be skipped)"
fi
cp "$ROOT/tests/gpu/check/run" "$ROOT/tests/gpu/check/summarize.py" "$OUTDIR/"
cp "$ROOT/tests/gpu/check/pytorch_recipe_graph.py" "$ROOT/tests/gpu/check/pytorch_gpt_fp8.py" "$OUTDIR/peers/"
# The PyTorch probe (pure Python) and its check: fp16 with a real GradScaler needs CUDA.
mkdir -p "$OUTDIR/probe"
cp -r "$ROOT/app/probe/ampstudio_probe" "$ROOT/app/probe/examples" "$OUTDIR/probe/"
cp "$ROOT/tests/gpu/check/probe_check.py" "$OUTDIR/"
if [ -d "$PEERS" ]; then
  cp "$PEERS"/pytorch_*.py "$OUTDIR/peers/"
else
  echo "(no peers folder at $PEERS: the benchmark will run without PyTorch's figures)"
fi
chmod +x "$OUTDIR/run"
size=$(du -sm "$OUTDIR" | cut -f1)
echo "packed: $(ls "$OUTDIR/lib" | wc -l) libraries, $(ls "$OUTDIR/peers" | wc -l) peers, $size MiB"
if [ "$size" -ge 60 ]; then
  echo "gpu-check.sh: the folder is $size MiB, over the 60 MiB a device call carries" >&2
  exit 1
fi
rc=0
if [ "$RUN_IT" = 1 ]; then
  echo "== running it here"
  RESULTS=$OUTDIR.results bash "$OUTDIR/run" || rc=$?
  [ "$rc" = 0 ] || echo "gpu-check.sh: the packed run failed (exit $rc)" >&2
fi
echo "$OUTDIR"
exit "$rc"

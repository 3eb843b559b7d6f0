"""The PyTorch probe's own tests (app/probe/tests: binning against hand-computed bins, skipped
steps against hand-computed scale sequences, the files against the C++ schema, a killed script's
whole lines, and a run against AMP Studio's engine through AMPSTUDIO_CLI), under Debian's
PyTorch. Exits 77 (ctest: skipped, saying why) where python3-torch is not installed.

    probe_tests.py PYTHON CLI
"""
import os
import subprocess
import sys


def main():
    py, cli = sys.argv[1], sys.argv[2]
    if subprocess.call([py, "-c", "import torch, numpy"], stderr=subprocess.DEVNULL) != 0:
        print(f"skipped: {py} has no torch/numpy (apt-get install python3-torch)")
        return 77
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "app", "probe")
    env = dict(os.environ, AMPSTUDIO_CLI=cli, OMP_NUM_THREADS=os.environ.get("OMP_NUM_THREADS", "1"))
    return subprocess.call([py, "-m", "unittest", "discover", "-s", os.path.join(root, "tests"), "-v"],
                           env=env, cwd=root)


if __name__ == "__main__":
    sys.exit(main())

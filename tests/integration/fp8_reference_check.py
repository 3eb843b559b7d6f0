#!/usr/bin/env python3
"""Re-makes tests/unit/data/fp8_reference.txt with the current PyTorch from PyPI and compares it
with the committed file (the unit test test_minifloat reads the committed one). A new PyTorch
release that changes a cast shows up here as a failure naming the first differing lines.

    fp8_reference_check.py TORCH_PYTHON SOURCE_DIR WORK_DIR
Exits 77 (skipped) where TORCH_PYTHON does not exist (no PyPI: installer/torch-venv.sh failed).
"""
import os
import subprocess
import sys

torch_python, source, work = sys.argv[1:4]
if not os.path.exists(torch_python):
    print(f"skipped: no current PyTorch at {torch_python} (installer/torch-venv.sh makes it from PyPI)")
    sys.exit(77)
os.makedirs(work, exist_ok=True)
made = os.path.join(work, "fp8_reference.txt")
subprocess.run([torch_python, os.path.join(source, "tests/unit/data/make_fp8_reference.py"), made], check=True)
committed = open(os.path.join(source, "tests/unit/data/fp8_reference.txt")).read().splitlines()[1:]
fresh = open(made).read().splitlines()
print(fresh[0])
fresh = fresh[1:]
diff = [(i, a, b) for i, (a, b) in enumerate(zip(committed, fresh)) if a != b]
if len(committed) != len(fresh) or diff:
    print(f"fp8 reference vectors differ from the committed ones: {len(committed)} vs {len(fresh)} lines, "
          f"{len(diff)} differ")
    for i, a, b in diff[:10]:
        print(f"  line {i + 2}: committed '{a}'\n            now       '{b}'")
    sys.exit(1)
print(f"{len(fresh)} reference lines: the same as the committed file")

"""The probe under a current PyTorch from PyPI and Lightning 2.x (app/probe/tests/test_current_torch.py:
fused Adam, a disabled scaler, Lightning bf16/fp16/fp32, float64/complex/sparse parameters, an lr
schedule, each step checked against PyTorch's own figures in the same run), and the README's
probe and TensorBoard commands as written (tests/integration/readme_probe_commands.py, when present).

    probe_torch2_tests.py TORCH_PYTHON CLI

TORCH_PYTHON is the build folder's torch-venv/bin/torch-python (installer/torch-venv.sh). Exits 77
(ctest: skipped, saying why) where it does not exist. Lightning and tensorboard come from PyPI into
that venv when missing; where that fails, the tests that need them are skipped, saying so.
"""
import os
import subprocess
import sys


def ensure(py, module, package, *extra):
    if subprocess.call([py, "-c", f"import {module}"], stderr=subprocess.DEVNULL, stdout=subprocess.DEVNULL) == 0:
        return True
    pip = os.path.join(os.path.dirname(py), "pip")
    print(f"installing {package} from PyPI into {os.path.dirname(os.path.dirname(py))} ...", flush=True)
    ok = subprocess.call(["timeout", "600", pip, "install", "-q", "--disable-pip-version-check", *extra, package]) == 0
    if not ok:
        print(f"note: could not install {package}; the tests that need it are skipped")
    return ok


def main():
    py, cli = sys.argv[1], sys.argv[2]
    if not os.path.exists(py) or subprocess.call([py, "-c", "import torch"], stderr=subprocess.DEVNULL) != 0:
        print(f"skipped: {py} has no torch (bash installer/torch-venv.sh BUILD/torch-venv makes it)")
        return 77
    # Lightning without its dependency tree: pip would otherwise fetch every CUDA wheel torch lists
    # (about 3.5 GB; installer/torch-venv.sh installs torch without them), only its own small ones.
    ensure(py, "lightning.pytorch", "lightning", "--no-deps", "torchmetrics", "lightning-utilities", "pyyaml",
           "tqdm", "packaging")
    ensure(py, "tensorboard", "tensorboard")
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "app", "probe")
    env = dict(os.environ, AMPSTUDIO_CLI=cli, OMP_NUM_THREADS=os.environ.get("OMP_NUM_THREADS", "1"),
               PYTHONWARNINGS="ignore")
    rc = subprocess.call([py, "-m", "unittest", "-v", "tests.test_current_torch"], env=env, cwd=root)
    readme = os.path.join(os.path.dirname(os.path.abspath(__file__)), "readme_probe_commands.py")
    if rc == 0 and os.path.exists(readme):
        rc = subprocess.call([py, readme, cli], env=env)
    return rc


if __name__ == "__main__":
    sys.exit(main())

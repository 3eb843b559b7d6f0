"""The README's probe and TensorBoard commands, run as written (issue 40): every fenced block
that follows a `<!-- readme-test: python -->` or `<!-- readme-test: sh -->` line in README.md
and app/probe/README.md, in order, in a fresh folder that looks like a checkout with a release
build (the repository's sources linked in, `build/release/app/ampstudio-cli` the CLI under test), with
`python3`/`pip` those of the current-PyTorch venv (PyTorch 2.x and Lightning 2.x from PyPI).
A `tensorboard --logdir` line starts the server and must answer on its port within 60 s.
Also: installing the probe leaves nothing in app/probe (setuptools' build/ and egg-info).

    readme_probe_commands.py CLI          (run by probe_torch2_tests.py under torch-python)
"""
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
MARK = re.compile(r"<!-- readme-test: (python|sh) -->\s*\n```\w*\n(.*?)\n```", re.S)


def blocks():
    # The probe's README first: its blocks install the package the main README's use.
    for readme in (os.path.join("app", "probe", "README.md"), "README.md"):
        with open(os.path.join(ROOT, readme)) as f:
            for kind, body in MARK.findall(f.read()):
                yield readme, kind, body


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def serve_tensorboard(line, env, cwd):
    """`tensorboard --logdir DIR`: started, asked for its runs over HTTP on localhost, stopped."""
    port = free_port()
    args = line.split("#")[0].split() + ["--port", str(port), "--host", "127.0.0.1"]
    p = subprocess.Popen(args, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        for _ in range(120):
            time.sleep(0.5)
            if p.poll() is not None:
                return f"exited {p.returncode}: {p.stdout.read()[-500:]}"
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/data/runs", timeout=5) as r:
                    body = r.read().decode()
                return None if body.strip() not in ("", "[]") else f"no runs served: {body}"
            except OSError:
                continue
        return "did not answer within 60 s"
    finally:
        p.terminate()
        p.wait(timeout=30)


def checkout(cli):
    """A fresh folder that looks like a checkout with a release build."""
    work = tempfile.mkdtemp(prefix="readme-probe-")
    # The sources as they are (the probe's tests read engine/ and kernels/ beside app/), no runs.
    for name in os.listdir(ROOT):
        if not name.startswith(".") and name not in ("build", "runs", "tb"):
            os.symlink(os.path.join(ROOT, name), os.path.join(work, name))
    os.makedirs(os.path.join(work, "build", "release", "app"))
    os.symlink(os.path.abspath(cli), os.path.join(work, "build", "release", "app", "ampstudio-cli"))
    # python3/pip of the venv this script runs under (torch-python sets the library path).
    bindir = os.path.join(work, ".bin")
    os.makedirs(bindir)
    venv_bin = os.path.dirname(sys.executable)
    torch_python = os.path.join(venv_bin, "torch-python")
    for name in ("python3", "python"):
        with open(os.path.join(bindir, name), "w") as f:
            f.write(f'#!/bin/sh\nexec "{torch_python if os.path.exists(torch_python) else sys.executable}" "$@"\n')
        os.chmod(os.path.join(bindir, name), 0o755)
    env = dict(os.environ, PATH=bindir + os.pathsep + venv_bin + os.pathsep + os.environ.get("PATH", ""),
               PIP_DISABLE_PIP_VERSION_CHECK="1")
    env.pop("PYTHONPATH", None)
    return work, env


def main():
    cli = sys.argv[1]
    venv_bin = os.path.dirname(sys.executable)
    works, current = [], None
    probe_dir = os.path.join(ROOT, "app", "probe")
    before = sorted(os.listdir(probe_dir))
    failures, ran = [], 0
    pip = os.path.join(venv_bin, "pip")
    try:
        for readme, kind, body in blocks():
            ran += 1
            if readme != current:  # each README in its own fresh folder
                current = readme
                work, env = checkout(cli)
                works.append(work)
            if kind == "python":
                path = os.path.join(work, f"block{ran}.py")
                with open(path, "w") as f:
                    f.write(body + "\n")
                cmds = [(["python3", path], body.splitlines()[0])]
            else:
                cmds = []
                for line in body.splitlines():
                    if line.strip() and not line.lstrip().startswith("#"):
                        cmds.append((line, line))
            for cmd, shown in cmds:
                if isinstance(cmd, str) and cmd.split()[0] == "tensorboard":
                    err = serve_tensorboard(cmd, env, work)
                    rc, out = (0, "") if err is None else (1, err)
                else:
                    p = subprocess.run(cmd if isinstance(cmd, list) else ["bash", "-c", cmd], cwd=work, env=env,
                                       capture_output=True, text=True, timeout=900)
                    rc, out = p.returncode, (p.stdout + p.stderr)[-1500:]
                print(f"{readme}: {'ok  ' if rc == 0 else 'FAIL'} {shown[:100]}", flush=True)
                if rc != 0:
                    failures.append(f"{readme}: `{shown}` exited {rc}:\n{out}")
        after = sorted(os.listdir(probe_dir))
        if after != before:
            failures.append(f"app/probe changed by the commands: {sorted(set(after) - set(before))}")
    finally:
        subprocess.call([pip, "uninstall", "-q", "-y", "ampstudio-probe"], stdout=subprocess.DEVNULL,
                        stderr=subprocess.DEVNULL)
        for w in works:
            shutil.rmtree(w, ignore_errors=True)
    for f in failures:
        print("FAIL", f)
    if ran < 5:
        failures.append(f"only {ran} marked blocks found")
        print(f"FAIL only {ran} marked blocks found")
    print(f"README commands: {ran} blocks, {len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

"""The CLI's contract (one line on bad input, exit 0/1/2/3, nothing written lost) for data-parallel
runs and resumes (issue 40, "Ranks and runs"):
- a bad input under --ranks N is one line and exit 2 (not one per rank and mpirun's banner);
- dist.inject_rank / dist.kill_rank outside the run's ranks are refused in one line naming the key;
- `--ranks 2` (and mpirun -np 2 by hand) records dist.ranks=2 in config.json;
- a rank that is killed ends the run with exit 3 and one line naming the rank, no mpirun banner;
- the two-workers preset's 1_rank variant injects on its one rank whatever dist.inject_rank the
  base config carries (the app's lesson applies the variant over the panel's settings);
- --resume into a folder whose config.json has a newer format_version is refused, the folder
  byte for byte as it was (runs without mpirun).

    dist_ranks_contract.py CLI WORK     (the mpirun checks say "skipped" where mpirun is missing)
"""
import json
import os
import shutil
import signal
import subprocess
import sys
import time


def main():
    cli, work = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    failures = []

    def check(ok, what, detail=""):
        print(("ok    " if ok else "FAIL  ") + what)
        if not ok:
            if detail:
                print("      " + detail.replace("\n", "\n      "))
            failures.append(what)

    def run(*args, timeout=300):
        return subprocess.run([cli, "run", *args], capture_output=True, text=True, timeout=timeout, cwd=work)

    def lines(text):
        return [l for l in text.split("\n") if l]

    small = ["--set", "model.width=16", "--set", "train.batch_size=16", "--set", "train.histogram_every=0",
             "--quiet"]

    def snapshot(d):
        out = {}
        for root, _, files in os.walk(d):
            for f in files:
                p = os.path.join(root, f)
                out[os.path.relpath(p, d)] = open(p, "rb").read()
        return out

    # --resume into a folder of a newer format: refused, untouched (no mpirun needed).
    r = run("--out", "newer", "--set", "train.steps=4", "--set", "checkpoint.every=2", *small)
    check(r.returncode == 0, "a 4-step run with checkpoints", r.stderr)
    cfg_path = os.path.join(work, "newer", "config.json")
    cfg = json.load(open(cfg_path))
    cfg["format_version"] = 2
    open(cfg_path, "w").write(json.dumps(cfg, indent=1))
    # Without a lock left over and with the folder exactly as it is now.
    before = snapshot(os.path.join(work, "newer"))
    r = run("--resume", os.path.join(work, "newer", "checkpoints", "step-2.zip"), "--quiet")
    err = lines(r.stderr)
    check(r.returncode == 2 and len(err) == 1 and "config.json" in err[0] and "format_version 2" in err[0],
          "--resume into a folder whose config.json has format_version 2: exit 2, one line naming the file",
          f"exit {r.returncode}: {r.stderr}")
    after = snapshot(os.path.join(work, "newer"))
    check(before == after, "... and the folder is byte for byte as it was",
          f"changed: {sorted(k for k in set(before) | set(after) if before.get(k) != after.get(k))}")

    # dist.inject_rank outside a one-process run: refused (it injected nothing, silently).
    r = run("--out", "inject1", "--set", "train.steps=3", "--set", "amp.mode=fp16", "--set",
            "train.inject_nonfinite=2", "--set", "dist.inject_rank=1", *small)
    err = lines(r.stderr)
    check(r.returncode == 2 and len(err) == 1 and "dist.inject_rank=1" in err[0] and
          not os.path.exists(os.path.join(work, "inject1")),
          "dist.inject_rank=1 on one rank: exit 2, one line naming the key, no folder left",
          f"exit {r.returncode}: {r.stderr}")
    r = run("--out", "kill1", "--set", "train.steps=3", "--set", "dist.kill_rank=1", "--set", "dist.kill_step=2",
            *small)
    err = lines(r.stderr)
    check(r.returncode == 2 and len(err) == 1 and "dist.kill_rank=1" in err[0],
          "dist.kill_rank=1 on one rank: exit 2, one line naming the key", f"exit {r.returncode}: {r.stderr}")
    # The preset keeps its word: --set dist.inject_rank=1 on the two-workers lesson is one run
    # (a key its variants vary), on one rank: refused, not a lesson without its overflow.
    r = run("--preset", "two-workers", "--out", "tw_inject", "--set", "dist.inject_rank=1", "--set",
            "train.steps=3", "--quiet")
    check(r.returncode == 2 and "dist.inject_rank=1" in r.stderr,
          "--preset two-workers --set dist.inject_rank=1 (one rank): refused naming the key",
          f"exit {r.returncode}: {r.stderr}")

    # --ranks N on a preset whose variants choose their own ranks (1 rank beside 2): refused, not
    # its "1_rank" variant run on 2 ranks.
    r = run("--preset", "two-workers", "--ranks", "2", "--out", "tw_ranks", "--quiet", timeout=600)
    err = lines(r.stderr)
    check(r.returncode == 2 and len(err) == 1 and "--ranks" in err[0] and "two-workers" in err[0] and
          not os.path.exists(os.path.join(work, "tw_ranks")),
          "--preset two-workers --ranks 2: exit 2, one line (its variants choose their ranks)",
          f"exit {r.returncode}: {r.stderr}")

    if shutil.which("mpirun") is None:
        print("skipped: the checks with ranks: mpirun (openmpi-bin) is not installed")
        print(f"{len(failures)} failed")
        return 1 if failures else 0

    # A bad input under --ranks 2: one line, exit 2, no mpirun banner.
    r = run("--ranks", "2", "--out", "bad", "--set", "model.width=abc", timeout=60)
    err = lines(r.stderr)
    check(r.returncode == 2 and len(err) == 1 and "model.width" in err[0],
          "--ranks 2 with a bad value: exit 2 and exactly one line naming the key", f"exit {r.returncode}: {r.stderr}")
    r = run("--ranks", "2", "--out", "bad2", "--set", "dist.inject_rank=2", "--set", "train.steps=3", *small,
            timeout=60)
    err = lines(r.stderr)
    check(r.returncode == 2 and len(err) == 1 and "dist.inject_rank=2" in err[0] and "2 ranks" in err[0],
          "--ranks 2 with dist.inject_rank=2: exit 2, one line naming the key", f"exit {r.returncode}: {r.stderr}")

    # A note the input gives (a --set of what the preset's variants vary) is said once, not once
    # by this command and once per rank.
    r = run("--ranks", "2", "--out", "note", "--preset", "recipe", "--set", "amp.mode=fp16", "--set",
            "train.steps=3", *small)
    err = lines(r.stderr)
    check(r.returncode == 0 and len(err) == 1 and "--set amp.mode chooses" in err[0],
          "--ranks 2 with a note on the preset: the note once", f"exit {r.returncode}: {r.stderr}")

    # The real number of ranks is recorded, by --ranks and by mpirun by hand.
    r = run("--ranks", "2", "--out", "two", "--set", "train.steps=3", *small)
    check(r.returncode == 0, "--ranks 2: a 3-step run", r.stderr)
    if r.returncode == 0:
        ranks = json.load(open(os.path.join(work, "two", "config.json")))["dist"]["ranks"]
        check(ranks == 2, f"--ranks 2: config.json records dist.ranks=2 (got {ranks})")
    mpirun = ["mpirun", "-np", "2", "--oversubscribe"] + (["--allow-run-as-root"] if os.geteuid() == 0 else [])
    r = subprocess.run(mpirun + [cli, "run", "--out", "byhand", "--set", "train.steps=3", *small],
                       capture_output=True, text=True, timeout=300, cwd=work)
    check(r.returncode == 0, "mpirun -np 2 ampstudio-cli run: a 3-step run", r.stderr)
    if r.returncode == 0:
        ranks = json.load(open(os.path.join(work, "byhand", "config.json")))["dist"]["ranks"]
        check(ranks == 2, f"mpirun -np 2 by hand: config.json records dist.ranks=2 (got {ranks})")

    # A rank killed (SIGKILL): exit 3 (documented), one line naming the rank, no mpirun banner.
    out = os.path.join(work, "killed")
    job = subprocess.Popen([cli, "run", "--ranks", "2", "--out", out, "--set", "train.steps=1000000", *small],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=work)
    victim = None
    t0 = time.time()
    while victim is None and time.time() - t0 < 60 and job.poll() is None:
        time.sleep(0.5)
        m = os.path.join(out, "metrics.jsonl")
        if not (os.path.exists(m) and os.path.getsize(m) > 0):
            continue
        for pid in os.listdir("/proc"):
            if not pid.isdigit():
                continue
            try:
                env = open(f"/proc/{pid}/environ", "rb").read().split(b"\0")
                cmd = open(f"/proc/{pid}/cmdline", "rb").read()
            except OSError:
                continue
            if b"OMPI_COMM_WORLD_RANK=1" in env and out.encode() in cmd:
                victim = int(pid)
        if victim:
            os.kill(victim, signal.SIGKILL)
    try:
        _, stderr = job.communicate(timeout=60)
        err = lines(stderr)
        check(victim is not None and job.returncode == 3 and len(err) == 1 and "rank 1" in err[0] and
              "signal 9" in err[0],
              "a rank killed with SIGKILL: exit 3 and one line naming rank 1 and the signal",
              f"exit {job.returncode}: {stderr}")
    except subprocess.TimeoutExpired:
        job.kill()
        check(False, "a rank killed with SIGKILL: the run hung")

    print(f"{len(failures)} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

"""Data-parallel runs (engine/dist, Open MPI): `ampstudio-cli run --ranks N` against the same run
on one rank, as PyTorch's DDP + GradScaler promise it:
- fp32, SGD and Adam: the 2-rank losses equal the 1-rank losses to summation-order bounds, and the
  replicas' weights are bit-identical at the end (summary.json ranks_identical);
- fp16 with overflows injected on every rank, and on rank 1 only: the skipped steps, the scales and
  the growth tracker are those of the 1-rank run, step for step;
- a last batch that does not split evenly (3 ranks, 80 training rows, batches of 32): each rank's
  loss weighs by its rows, so the run still follows the 1-rank one;
- a checkpoint of a 2-rank run resumes on 1 rank and continues the 2-rank run;
- a rank that dies (dist.kill_rank) ends the run at once with a message, and rank 0's
  metrics.jsonl keeps whole lines; a rank that hangs (SIGSTOP) makes the other's collective time
  out (dist.timeout_s) and end the run with a message.

    dist_ranks_check.py CLI WORK        (exit 77: no mpirun, ctest reports it skipped)
"""
import json
import os
import shutil
import subprocess
import sys
import time


def metrics(d):
    return [json.loads(line) for line in open(os.path.join(d, "metrics.jsonl"))]


def summary(d):
    return json.load(open(os.path.join(d, "summary.json")))


def main():
    cli, work = sys.argv[1], sys.argv[2]
    if shutil.which("mpirun") is None:
        print("skipped: mpirun (openmpi-bin) is not installed")
        return 77
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    failures = []

    def check(ok, what):
        print(("ok    " if ok else "FAIL  ") + what)
        if not ok:
            failures.append(what)

    def run(name, sets, ranks=1, extra=(), expect=0):
        out = os.path.join(work, name)
        args = [cli, "run", "--out", out, "--quiet"] + [a for s in sets for a in ("--set", s)] + list(extra)
        if ranks > 1:
            args += ["--ranks", str(ranks)]
        t0 = time.time()
        p = subprocess.run(args, capture_output=True, text=True, timeout=300)
        if p.returncode != expect:
            print(p.stdout[-2000:], p.stderr[-2000:])
            raise SystemExit(f"{name}: exit {p.returncode}, expected {expect}")
        return out, p, time.time() - t0

    def max_rel(a, b, key="loss"):
        return max(abs(x[key] - y[key]) / max(abs(x[key]), 1e-30) for x, y in zip(a, b))

    recipe = ["model.width=64", "train.batch_size=32", "train.steps=30", "train.histogram_every=0"]
    for opt, bound in (("sgd", 1e-6), ("adam", 1e-4)):
        sets = recipe + [f"optimizer.name={opt}"] + (["optimizer.lr=0.001"] if opt == "adam" else [])
        one, _, _ = run(f"{opt}_1", sets)
        two, _, _ = run(f"{opt}_2", sets, ranks=2)
        a, b = metrics(one), metrics(two)
        d = max_rel(a, b)
        check(len(a) == len(b) == 30 and d <= bound, f"fp32 {opt}: 2 ranks follow 1 rank (max rel. loss difference {d:.2e} <= {bound:g})")
        s = summary(two)
        check(s.get("ranks") == 2 and s.get("ranks_identical") is True, f"fp32 {opt}: the two replicas are bit-identical at the end")
        check(all(m.get("ranks") == 2 and len(m.get("rank_samples_per_s", [])) == 2 and m.get("allreduce_ms", -1) >= 0 for m in b),
              f"fp32 {opt}: every step records the ranks, the all-reduce time and each rank's throughput")

    fp16 = recipe + ["train.steps=40", "amp.mode=fp16", "scaler.growth_interval=5", "train.inject_nonfinite=3,4,12"]
    one, _, _ = run("fp16_1", fp16)
    a = metrics(one)
    seq = lambda ms: [(m["skipped"], m["scale"], m["scale_after"], m["growth_tracker"]) for m in ms]
    check([m["step"] for m in a if m["skipped"]] == [3, 4, 12], "fp16 1 rank: the injected steps 3, 4, 12 are skipped")
    for name, extra in (("fp16_2_all", []), ("fp16_2_rank1", ["dist.inject_rank=1"])):
        two, _, _ = run(name, fp16 + extra, ranks=2)
        b = metrics(two)
        check(seq(a) == seq(b), f"{name}: skipped steps, scale and growth tracker identical to 1 rank's, step for step")
        d = max_rel(a, b)
        check(d <= 1e-3, f"{name}: losses follow 1 rank's (max rel. difference {d:.2e} <= 1e-3)")
        check(summary(two).get("ranks_identical") is True, f"{name}: replicas bit-identical at the end")

    spirals = ["data.name=spirals", "data.samples=101", "model.name=mlp", "model.hidden=16", "train.batch_size=32",
               "train.steps=0", "train.epochs=3", "train.histogram_every=0", "train.eval_every=0"]
    one, _, _ = run("partial_1", spirals)
    three, _, _ = run("partial_3", spirals, ranks=3)
    a, b = metrics(one), metrics(three)
    d = max_rel(a, b)
    # 80 training rows (the rest is the test split): batches of 32, 32, 16; 16 rows on 3 ranks is
    # 6 + 5 + 5, so each rank's mean must weigh by its rows for the average to be the batch's.
    check(len(a) == len(b) == 9 and d <= 1e-5, f"3 ranks, a last batch of 16 rows (6+5+5): losses follow 1 rank's (max rel. {d:.2e} <= 1e-5)")

    ck = recipe + ["train.steps=20", "checkpoint.every=10"]
    two, _, _ = run("ckpt_2", ck, ranks=2)
    # The checkpoint records dist.ranks=2 (a plain --resume runs on 2 ranks again): --ranks 1 here.
    resumed, _, _ = run("ckpt_resumed_1", [], extra=["--resume", os.path.join(two, "checkpoints", "step-10.zip"), "--ranks", "1"])
    a, b = metrics(two)[10:], metrics(resumed)[10:]
    d = max_rel(a, b) if len(a) == len(b) == 10 else float("inf")
    check(d <= 1e-6, f"a 2-rank checkpoint resumed on 1 rank continues the 2-rank run (max rel. {d:.2e})")

    dead, p, secs = run("kill", recipe + ["train.steps=200", "dist.kill_rank=1", "dist.kill_step=5"], ranks=2, expect=3)
    check(secs < 60 and "rank 1: dist.kill_step: exiting at step 5" in p.stderr,
          f"a rank that dies ends the run in {secs:.1f} s with a message")
    raw = open(os.path.join(dead, "metrics.jsonl"), "rb").read()
    lines = raw.split(b"\n")
    check(raw.endswith(b"\n") and all(json.loads(l) for l in lines if l), "rank 0's metrics.jsonl keeps whole lines only")

    # A rank that hangs (stopped with SIGSTOP): the other's collective times out (dist.timeout_s)
    # and ends the run with a message instead of waiting for ever.
    hung = os.path.join(work, "hang")
    args = [cli, "run", "--out", hung, "--quiet", "--ranks", "2"] + [a for s in recipe + ["train.steps=100000", "dist.timeout_s=3"] for a in ("--set", s)]
    t0 = time.time()
    job = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    stopped = None
    while time.time() - t0 < 30 and stopped is None:
        time.sleep(0.5)
        if os.path.exists(os.path.join(hung, "metrics.jsonl")) and os.path.getsize(os.path.join(hung, "metrics.jsonl")) > 0:
            pids = subprocess.run(["pgrep", "-f", "--", "--out " + hung], capture_output=True, text=True).stdout.split()
            # The ranks (mpirun's children), not mpirun nor the command that started it.
            ranks_pids = [int(p) for p in pids if b"OMPI_COMM_WORLD_RANK=" in open(f"/proc/{p}/environ", "rb").read()] if pids else []
            if ranks_pids:
                stopped = max(ranks_pids)
                os.kill(stopped, 19)  # SIGSTOP
    try:
        out, err = job.communicate(timeout=60)
        secs = time.time() - t0
        check(job.returncode != 0 and "did not complete within 3 s (dist.timeout_s)" in err,
              f"a rank that hangs: the other ends the run after dist.timeout_s with a message ({secs:.1f} s)")
    except subprocess.TimeoutExpired:
        job.kill()
        check(False, "a rank that hangs: the run hung")
    finally:
        if stopped:
            try:
                os.kill(stopped, 18)  # SIGCONT, so that mpirun can end it
                os.kill(stopped, 9)
            except ProcessLookupError:
                pass

    p = subprocess.run([cli, "run", "--ranks", "0"], capture_output=True, text=True)
    check(p.returncode == 2 and "--ranks" in p.stderr and p.stderr.count("\n") == 1, "--ranks 0 is refused in one line")

    print(f"{len(failures)} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

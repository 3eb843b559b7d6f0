#!/usr/bin/env python3
"""AMP Studio's CPU step time beside PyTorch 2.x's (eager and torch.compile) for the presets
recipe, fmnist-cnn, resnet (ResNet-20) and gpt, in fp32, bf16 and fp16 (ours emulated; PyTorch's
CPU fp16 autocast with torch.amp.GradScaler("cpu")). Issue 38. A benchmark, never run by ctest.

  python3 tests/bench/pytorch_cpu_compare.py [--rounds 2] [--models recipe,cnn,gpt,resnet]
      [--modes fp32,bf16,fp16] [--sides ours,eager,compiled] [--out DIR]
  python3 tests/bench/pytorch_cpu_compare.py --table DIR/results.jsonl   # the table again

Both sides on 2 threads (OMP_NUM_THREADS=2, ours train.threads=2, torch.set_num_threads(2)).
Ours: `ampstudio-cli run --preset P --set amp.mode=M --set train.threads=2` with histograms,
evaluation and checkpoints off; the median of metrics.jsonl's step_ms after the first 3 steps
(a step there is the batch, forward, backward, the scaler and the optimizer step).
PyTorch: tests/bench/pytorch_cpu_peers.py (the shared peers' models, the same timed work),
the median after its warm-up (eager 1 step, compiled 2: the compilation is in the first).
The sides of one (model, mode) cell run one after another, A B C, and the cell again, A B C,
for --rounds rounds, so the ratios compare runs seconds apart; `uptime`'s 1-minute load average
is recorded with every run. The table gives each side's median over its runs, and the ratios
ours / PyTorch (above 1: ours slower) of each PyTorch run against the run of ours just before it,
their median first. Raw results: DIR/results.jsonl (default /tmp/pytorch-cpu-compare).
"""
import argparse, json, os, statistics, subprocess, sys, time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PRESET = {"recipe": "recipe", "cnn": "fmnist-cnn", "resnet": "resnet", "gpt": "gpt"}
OURS_STEPS = {"recipe": 12, "cnn": 12, "resnet": 9, "gpt": 9}
OURS_WARMUP = 3

p = argparse.ArgumentParser()
p.add_argument("--rounds", type=int, default=2)
p.add_argument("--models", default="recipe,cnn,gpt,resnet")
p.add_argument("--modes", default="fp32,bf16,fp16")
p.add_argument("--sides", default="ours,eager,compiled",
               help="ours, eager, compiled, eager-spin10k (eager with GOMP_SPINCOUNT=10000, ours' setting)")
p.add_argument("--cli", default=os.path.join(ROOT, "build/release/app/ampstudio-cli"))
p.add_argument("--python", default=os.path.join(ROOT, "build/release/torch-venv/bin/python"))
p.add_argument("--max-seconds", type=float, default=40, help="PyTorch: stop timing after this (min. warm-up + 3 steps)")
p.add_argument("--out", default="/tmp/pytorch-cpu-compare")
p.add_argument("--table", help="only print the table of this results.jsonl")
a = p.parse_args()


def load1():
    return float(open("/proc/loadavg").read().split()[0])


def run_ours(model, mode, out):
    d = os.path.join(out, f"ours-{model}-{mode}")
    cmd = [a.cli, "run", "--preset", PRESET[model], "--set", f"amp.mode={mode}",
           "--set", f"train.steps={OURS_STEPS[model]}", "--set", "train.threads=2",
           "--set", "train.histogram_every=0", "--set", "train.eval_every=1000000",
           "--out", d, "--overwrite", "--quiet"]
    if model in ("cnn", "resnet"):
        cmd += ["--set", "data.test_subset=100"]
    if model == "resnet":  # the peer's recipe: the lesson's preset trains at half width, batch 64, with Adam
        cmd += ["--set", "checkpoint.at_end=false", "--set", "model.base_width=16", "--set", "train.batch_size=128",
                "--set", "optimizer.name=sgd", "--set", "optimizer.lr=0.1", "--set", "optimizer.momentum=0.9",
                "--set", "optimizer.weight_decay=0.0005", "--set", "data.subset=0"]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        return {"error": (r.stderr or r.stdout).strip()[-400:]}
    steps = [json.loads(l) for l in open(os.path.join(d, "metrics.jsonl"))]
    ms = [s["step_ms"] for s in steps if "step_ms" in s]
    return {"median_ms": statistics.median(ms[OURS_WARMUP:]), "step_ms": [round(x, 2) for x in ms],
            "warmup": OURS_WARMUP, "threads": sorted({s.get("threads") for s in steps if "threads" in s})}


def run_torch(model, mode, compiled, out, extra_env=None):
    cmd = [a.python, os.path.join(ROOT, "tests/bench/pytorch_cpu_peers.py"), "--model", model, "--mode", mode,
           "--threads", "2", "--steps", "10", "--warmup", "2" if compiled else "1",
           "--max-seconds", str(a.max_seconds)]
    if compiled:
        cmd.append("--compile")
    env = dict(os.environ, TORCHINDUCTOR_CACHE_DIR=os.path.join(out, "inductor-cache"), **(extra_env or {}))
    t0 = time.time()
    r = subprocess.run(cmd, capture_output=True, text=True, env=env)
    lines = [l for l in r.stdout.splitlines() if l.startswith("{")]
    if r.returncode != 0 or not lines:
        return {"error": ("rc %d: " % r.returncode) + (r.stderr or r.stdout).strip()[-600:]}
    res = json.loads(lines[-1])
    res["wall_s"] = round(time.time() - t0, 1)
    return res


def table(path):
    rows = [json.loads(l) for l in open(path)]
    cells = {}
    for r in rows:
        cells.setdefault((r["model"], r["mode"]), []).append(r)
    order_m = ["recipe", "cnn", "gpt", "resnet"]
    order_p = ["fp32", "bf16", "fp16"]
    print("| model | mode | ours ms | PyTorch eager ms | compiled ms | ours / eager (rounds) | ours / compiled (rounds) | load (1 min) |")
    print("|---|---|---|---|---|---|---|---|")
    for (m, md) in sorted(cells, key=lambda k: (order_m.index(k[0]) if k[0] in order_m else 9, order_p.index(k[1]))):
        rs = cells[(m, md)]  # in the order they ran

        def med(side):
            v = [r["median_ms"] for r in rs if r["side"] == side and "median_ms" in r]
            if not v:
                return "failed" if any(r["side"] == side for r in rs) else "-"
            x = statistics.median(v)
            return "%.0f" % x if x >= 100 else "%.1f" % x

        def ratio(side):  # each PyTorch run against the run of ours just before it (same cell)
            rr, last = [], None
            for r in rs:
                if r["side"] == "ours":
                    last = r if "median_ms" in r else None
                elif r["side"] == side and last and "median_ms" in r:
                    rr.append(last["median_ms"] / r["median_ms"])
            if not rr:
                return "-"
            return "**%.2fx** (%s)" % (statistics.median(rr), " / ".join("%.2f" % x for x in rr))
        loads = [r["load1"] for r in rs]
        print(f"| {m} | {md} | {med('ours')} | {med('pytorch-eager')} | {med('pytorch-compiled')} | "
              f"{ratio('pytorch-eager')} | {ratio('pytorch-compiled')} | {min(loads):.1f}-{max(loads):.1f} |")
    spin = [k for k in cells if any(r["side"] == "pytorch-eager-spin10k" for r in cells[k])]
    if spin:
        print("\nPyTorch eager with GOMP_SPINCOUNT=10000 (as ours), same rounds:\n")
        print("| model | mode | PyTorch eager ms | with GOMP_SPINCOUNT=10000 ms | ours ms |")
        print("|---|---|---|---|---|")
        for k in spin:
            v = lambda side: [r["median_ms"] for r in cells[k] if r["side"] == side and "median_ms" in r]
            f = lambda x: " / ".join("%.0f" % y for y in x) or "-"
            print(f"| {k[0]} | {k[1]} | {f(v('pytorch-eager'))} | {f(v('pytorch-eager-spin10k'))} | {f(v('ours'))} |")
    errs = [r for r in rows if "error" in r]
    for r in errs:
        print(f"\n{r['side']} {r['model']} {r['mode']} round {r['round']}: {r['error']}")


if a.table:
    table(a.table)
    sys.exit(0)

os.makedirs(a.out, exist_ok=True)
path = os.path.join(a.out, "results.jsonl")
os.environ["OMP_NUM_THREADS"] = "2"
cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
print(f"# {cpu}, {os.cpu_count()} CPUs, {time.strftime('%Y-%m-%d %H:%M %Z')}, results in {path}", flush=True)
sides = a.sides.split(",")
for model in a.models.split(","):
    for mode in a.modes.split(","):
        for rnd in range(1, a.rounds + 1):
            for side in sides:
                l0 = load1()
                t0 = time.time()
                if side == "ours":
                    res = run_ours(model, mode, a.out)
                    res["side"] = "ours"
                elif side == "eager-spin10k":  # PyTorch's libgomp told to spin as briefly as ours
                    res = run_torch(model, mode, False, a.out, {"GOMP_SPINCOUNT": "10000"})
                    res["side"] = "pytorch-eager-spin10k"
                else:
                    res = run_torch(model, mode, side == "compiled", a.out)
                    res["side"] = "pytorch-" + ("compiled" if side == "compiled" else "eager")
                res.update(model=model, mode=mode, round=rnd, load1=l0, load1_after=load1(),
                           started=time.strftime("%H:%M:%S", time.localtime(t0)), wall_s=round(time.time() - t0, 1))
                with open(path, "a") as f:
                    f.write(json.dumps(res) + "\n")
                print(f"{res['started']} {model:6} {mode} r{rnd} {res['side']:17} "
                      f"{res.get('median_ms', 'ERR')} ms/step  load {l0:.2f}  ({res['wall_s']} s)"
                      + ("  " + res["error"].splitlines()[-1] if "error" in res else ""), flush=True)
table(path)

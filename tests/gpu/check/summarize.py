#!/usr/bin/env python3
"""Tables for the GPU check (tests/gpu/check/run): `summarize.py bench DIR` reads our benchmark
JSON and the peers' JSON lines from DIR and prints medians side by side with ratios, targets and
the floor; `summarize.py fp8 DIR` the GPT large in bf16 and fp8 beside the torch._scaled_mm peer;
`summarize.py ncu FILE MODE STEPS` sums ncu's per-launch times by kernel."""
import collections, csv, glob, json, os, statistics, sys

# The targets of issue 23 on an H200 (ms per step) and the 4096/512 floor's inputs: the GEMMs at
# their measured 540 TFLOP/s in the step, and ~18 bytes of optimizer traffic per parameter at
# 4.3 TB/s (read fp32 weight and grad, write the weight and its 16-bit copy).
TARGETS = {(4096, "fp32"): 3.0, (4096, "fp16"): 0.85, (4096, "bf16"): 0.75}
GEMM_TFLOPS, BYTES_PER_PARAM, BANDWIDTH = 540e12, 18, 4.3e12
# The GPT's target: at most this fraction of PyTorch's eager step, in every mode.
GPT_TARGET_VS_EAGER = 0.8
GPT_SIZES = {"default": "4 layers/128 wide/context 128", "large": "12 layers/768 wide/context 256"}
# Issue 41's fp8 target: the GPT large's fp8 step at most this fraction of our bf16 step.
FP8_TARGET_VS_BF16 = 0.8


def floor_ms(width, batch, layers):
    flops = layers * 3 * 2.0 * batch * width * width
    return 1e3 * (flops / GEMM_TFLOPS + BYTES_PER_PARAM * layers * width * width / BANDWIDTH)


def ours(pattern):
    got = collections.defaultdict(list)
    for path in sorted(glob.glob(pattern)):
        try:
            doc = json.load(open(path))
        except (OSError, ValueError):
            continue
        for r in doc.get("runs", []):
            got[r["mode"]].append(r["median_ms_per_step"])
    return got


def peers(path, key="median_ms_per_step"):
    got = collections.defaultdict(list)
    if os.path.exists(path):
        for line in open(path):
            try:
                r = json.loads(line)
            except ValueError:
                continue
            if key in r:
                got[r["mode"]].append(r[key])
    return got


def med(xs):
    return statistics.median(xs) if xs else None


def fmt(x, digits=3):
    return "-" if x is None else f"{x:.{digits}f}"


def ratio(a, b):
    return "-" if a is None or b is None or b == 0 else f"{a / b:.2f}x"


def bench(d):
    for width, batch in ((4096, 512), (1024, 256)):
        o = ours(f"{d}/ours_{width}_*.json")
        e = peers(f"{d}/peer_{width}.jsonl")
        g = peers(f"{d}/graph_{width}.jsonl")
        if not o:
            continue
        print(f"recipe {width}/{batch}/3, median ms per step (runs: ours {len(o.get('fp32', []))}, "
              f"eager {len(e.get('fp32', []))}, graph {len(g.get('fp32', []))})")
        print(f"  {'mode':5} {'ours':>7} {'eager':>7} {'graph':>7} {'ours/eager':>11} "
              f"{'ours/graph':>11} {'target':>7} {'floor':>7}")
        fl = floor_ms(width, batch, 3)
        for m in ("fp32", "fp16", "bf16"):
            a, b, c = med(o.get(m, [])), med(e.get(m, [])), med(g.get(m, []))
            t = TARGETS.get((width, m))
            print(f"  {m:5} {fmt(a):>7} {fmt(b):>7} {fmt(c):>7} {ratio(a, b):>11} {ratio(a, c):>11} "
                  f"{fmt(t, 2) if t else '-':>7} {fmt(fl) if m != 'fp32' and width == 4096 else '-':>7}")
        eager = ours(f"{d}/eager_{width}.json")
        if eager:
            print("  ours without step graphs (AMP_CUDA_DISABLE=cuda-graphs): " +
                  ", ".join(f"{m} {fmt(med(eager.get(m, [])))}" for m in ("fp32", "fp16", "bf16")))
        plain = ours(f"{d}/plain_{width}.json")
        if plain:
            print("  ours with AMP_CUDA_DISABLE=all: " +
                  ", ".join(f"{m} {fmt(med(plain.get(m, [])))}" for m in ("fp32", "fp16", "bf16")))
        a16, a32 = med(o.get("fp16", [])), med(o.get("fp32", []))
        if a16 and a32:
            print(f"  fp16 vs fp32 (ours): {a32 / a16:.2f}x speed-up")
    for size, shape in GPT_SIZES.items():
        o = ours(f"{d}/gpt_{size}_*.json")
        e = peers(f"{d}/gpt_peer_{size}.jsonl")
        if not o:
            continue
        print(f"GPT {shape}, batch 32, median ms per step (runs: ours {len(o.get('fp32', []))}, "
              f"eager {len(e.get('fp32', []))}; target ours/eager <= {GPT_TARGET_VS_EAGER})")
        print(f"  {'mode':5} {'ours':>8} {'eager':>8} {'ours/eager':>11} {'met':>4}")
        for m in ("fp32", "fp16", "bf16"):
            a, b = med(o.get(m, [])), med(e.get(m, []))
            met = "-" if a is None or not b else ("yes" if a / b <= GPT_TARGET_VS_EAGER else "no")
            print(f"  {m:5} {fmt(a):>8} {fmt(b):>8} {ratio(a, b):>11} {met:>4}")
    cnn_txt = f"{d}/ours_cnn.txt"
    if os.path.exists(cnn_txt):
        print("Fashion-MNIST CNN, 2 epochs (ours: the bench's table; PyTorch: s per epoch)")
        lines = open(cnn_txt).read().splitlines()
        for i, line in enumerate(lines):
            if "CNN" in line:
                print("\n".join("  " + x for x in lines[i:i + 5]))
                break
        p = peers(f"{d}/peer_cnn.jsonl", "median_epoch_s")
        for m in ("fp32", "fp16", "bf16"):
            if p.get(m):
                print(f"  PyTorch {m}: {fmt(med(p[m]))} s/epoch")


def fp8_gpt(d):
    """The GPT large in bf16 and fp8 (tests/gpu/check/run, part 5): ours per recipe, each run's
    bf16 and fp8 from the same process, beside pytorch_gpt_fp8.py's torch._scaled_mm step."""
    peer = med(peers(f"{d}/fp8_gpt_peer_large.jsonl").get("fp8", []))
    rows = [(r, ours(f"{d}/fp8_gpt_large_{r}_*.json")) for r in ("delayed", "current")]
    if not any(o for _, o in rows) and peer is None:
        return
    print(f"GPT {GPT_SIZES['large']} in fp8, batch 32, median ms per step "
          f"(target ours fp8 / ours bf16 <= {FP8_TARGET_VS_BF16}; PyTorch: torch._scaled_mm, current scaling)")
    print(f"  {'recipe':8} {'bf16':>8} {'fp8':>8} {'fp8/bf16':>9} {'met':>4} {'PyTorch fp8':>12} {'ours/PyTorch':>13}")
    for recipe, o in rows:
        bf, f8 = med(o.get("bf16", [])), med(o.get("fp8", []))
        met = "-" if bf is None or f8 is None else ("yes" if f8 / bf <= FP8_TARGET_VS_BF16 else "no")
        print(f"  {recipe:8} {fmt(bf):>8} {fmt(f8):>8} {ratio(f8, bf):>9} {met:>4} {fmt(peer):>12} {ratio(f8, peer):>13}")


def ncu(path, mode, steps):
    rows = [r for r in csv.reader(open(path)) if len(r) > 10]
    if not rows:
        print(f"  {mode}: no ncu rows (see {path[:-4]}.err)")
        return
    h = rows[0]
    ki, vi, ui = h.index("Kernel Name"), h.index("Metric Value"), h.index("Metric Unit")
    total, count = collections.defaultdict(float), collections.Counter()
    for r in rows[1:]:
        v = float(r[vi].replace(",", ""))
        v = {"nsecond": v / 1e3, "usecond": v, "msecond": v * 1e3}.get(r[ui], v)
        k = r[ki].split("(")[0][:70]
        total[k] += v
        count[k] += 1
    print(f"{mode}: us per step (over {steps} steps; the bench's standalone GEMM timing included)")
    for k, v in sorted(total.items(), key=lambda x: -x[1])[:12]:
        print(f"  {v / steps:8.1f} us {count[k] / steps:5.1f} launches  {k}")
    print(f"  {sum(total.values()) / steps:8.1f} us in all, {sum(count.values()) / steps:.1f} launches")


if __name__ == "__main__":
    if sys.argv[1] == "bench":
        bench(sys.argv[2])
    elif sys.argv[1] == "fp8":
        fp8_gpt(sys.argv[2])
    else:
        ncu(sys.argv[2], sys.argv[3], int(sys.argv[4]))

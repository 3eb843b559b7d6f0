#!/usr/bin/python3
"""What the probe costs: the recipe trained with and without it, interleaved, median of repeats.

    /usr/bin/python3 app/probe/examples/overhead.py            # width 512, batch 256, 3 layers, bf16
    /usr/bin/python3 app/probe/examples/overhead.py --device cuda --mode fp16 --width 4096

Each repeat builds two copies of the recipe (same seed, same batches): one recorded by a Probe
(histograms every --histogram-every steps), one not. They train in alternating blocks of
--block steps (default: --histogram-every, so every recorded block holds one histogram step)
until each has done --steps steps; a block's time is its loop's wall time (the probe's
construction and close() are outside). A shared machine has slow phases that come and go over
seconds, so besides the ratio of the totals per repeat it prints two figures such a phase
shifts little: the median over all repeats of the ratio of two adjacent blocks' times (recorded
/ plain: histogram steps included), and the ratio of the median step times (the typical step,
histogram steps excluded). Prints one JSON line.
"""
import argparse
import contextlib
import json
import os
import platform
import statistics
import sys
import tempfile
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import ampstudio_probe  # noqa: E402


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            return next((l.split(":", 1)[1].strip() for l in f if l.startswith("model name")), "")
    except OSError:
        return platform.processor()


class Recipe:
    """The recipe's model, optimizer, scaler and batches, stepping one step at a time."""

    def __init__(self, a, out=None):
        torch.manual_seed(0)
        layers = []
        for _ in range(a.layers - 1):
            layers += [torch.nn.Linear(a.width, a.width), torch.nn.ReLU()]
        self.net = torch.nn.Sequential(*layers, torch.nn.Linear(a.width, a.width)).to(a.device)
        self.opt = torch.optim.SGD(self.net.parameters(), lr=1e-3)
        self.xs = [torch.randn(a.batch, a.width, device=a.device) for _ in range(20)]
        self.ys = [torch.randn(a.batch, a.width, device=a.device) for _ in range(20)]
        self.scaler = torch.cuda.amp.GradScaler() if a.mode == "fp16" else None
        self.a, self.i = a, 0
        self.probe = None if out is None else ampstudio_probe.Probe(
            self.net, self.scaler, out=out, optimizer=self.opt, batch_size=a.batch,
            histogram_every=a.histogram_every, activations=a.activations)

    def step(self):
        a, x, y = self.a, self.xs[self.i % 20], self.ys[self.i % 20]
        self.i += 1
        dtype = torch.bfloat16 if a.mode == "bf16" else torch.float16
        with torch.autocast(a.device, dtype=dtype) if a.mode != "fp32" else contextlib.nullcontext():
            loss = torch.nn.functional.mse_loss(self.net(x), y)
        if self.scaler:
            self.scaler.scale(loss).backward()
            self.scaler.step(self.opt)
            self.scaler.update()
        else:
            loss.backward()
            self.opt.step()
        if self.probe:
            self.probe.step(loss)
        self.opt.zero_grad()

    def block(self, n, step_ms=None):
        cuda = self.a.device == "cuda"
        if cuda:
            torch.cuda.synchronize()
        start = t = time.perf_counter()
        for _ in range(n):
            self.step()
            if step_ms is not None:
                if cuda:
                    torch.cuda.synchronize()
                t, t0 = time.perf_counter(), t
                step_ms.append((t - t0) * 1e3)
        if cuda:
            torch.cuda.synchronize()
        return time.perf_counter() - start


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--steps", type=int, default=200)
    p.add_argument("--block", type=int, default=0, help="steps per block (0: --histogram-every, else 10)")
    p.add_argument("--width", type=int, default=512)
    p.add_argument("--batch", type=int, default=256)
    p.add_argument("--layers", type=int, default=3)
    p.add_argument("--mode", choices=["fp32", "fp16", "bf16"], default="bf16")
    p.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    p.add_argument("--histogram-every", type=int, default=50)
    p.add_argument("--activations", action="store_true")
    a = p.parse_args()
    a.block = a.block or a.histogram_every or 10
    ratios, pairs, with_ms, without_ms, own = [], [], [], [], []
    steps_with, steps_without = [], []  # every step's time, all repeats
    with tempfile.TemporaryDirectory() as tmp:
        Recipe(a).block(10)  # warm-up: allocator, kernels, thread pool
        for r in range(a.repeats):
            probed = Recipe(a, out=os.path.join(tmp, f"run{r}"))
            plain = Recipe(a)
            t_with = t_without = 0.0
            for b in range(0, a.steps, a.block):
                n = min(a.block, a.steps - b)
                order = (probed, plain) if (b // a.block) % 2 == 0 else (plain, probed)
                times = {}
                for rec in order:
                    times[rec is probed] = rec.block(n, steps_with if rec is probed else steps_without)
                t_with += times[True]
                t_without += times[False]
                pairs.append(times[True] / times[False])
            probed.probe.close()
            ratios.append(t_with / t_without)
            with_ms.append(t_with / a.steps * 1e3)
            without_ms.append(t_without / a.steps * 1e3)
            own.append(probed.probe.overhead_ms_per_step())
    print(json.dumps({"cpu": cpu_model(), "threads": torch.get_num_threads(), "torch": torch.__version__,
                      "device": a.device if a.device == "cpu" else torch.cuda.get_device_name(),
                      "mode": a.mode, "width": a.width, "batch": a.batch, "layers": a.layers,
                      "steps": a.steps, "block": a.block, "histogram_every": a.histogram_every,
                      "activations": a.activations, "repeats": a.repeats,
                      "ms_per_step_with_probe": [round(x, 3) for x in with_ms],
                      "ms_per_step_without": [round(x, 3) for x in without_ms],
                      "overhead_pct_of_totals_per_repeat": [round((x - 1) * 100, 2) for x in ratios],
                      "overhead_pct_median_of_block_pairs": round((statistics.median(pairs) - 1) * 100, 2),
                      "block_pairs": len(pairs),
                      "median_step_ms_with": round(statistics.median(steps_with), 3),
                      "median_step_ms_without": round(statistics.median(steps_without), 3),
                      "overhead_pct_of_median_steps": round(
                          (statistics.median(steps_with) / statistics.median(steps_without) - 1) * 100, 2),
                      "probe_own_ms_per_step": round(statistics.median(own), 3)}))


if __name__ == "__main__":
    main()

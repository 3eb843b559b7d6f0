#!/usr/bin/python3
"""PyTorch's AMP recipe MLP trained with torch.autocast and recorded by ampstudio_probe.

The model and loop are the recipe's (https://pytorch.org/tutorials/recipes/recipes/amp_recipe.html,
as /work/shared/peers/pytorch_recipe*.py run it): `layers` Linear(width, width) with ReLU between,
MSE against random targets, SGD lr 1e-3, a fixed set of random batches cycled.

    /usr/bin/python3 app/probe/examples/recipe_amp.py --out runs/recipe-bf16 --mode bf16 --steps 200
    ampstudio-cli export --run runs/recipe-bf16 --format csv     # or open the folder in AMP Studio

--mode fp16 is autocast(float16) + GradScaler and needs CUDA with PyTorch 1.13: its CPU autocast
takes only bfloat16 (it raises for float16) and GradScaler disables itself without CUDA. Newer
PyTorch (2.3+) has both on the CPU (torch.amp.GradScaler("cpu")), which this script then uses.
--inject-nonfinite 30,31 sets element 0 of the last Linear's weight gradient to +inf after
backward at those 1-based steps, like AMP Studio's train.inject_nonfinite: with a GradScaler the
step is skipped and the scale backs off; without one (fp32, bf16) the inf reaches the weights.
"""
import argparse
import contextlib
import os
import sys
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import ampstudio_probe  # noqa: E402  (after the path: runs from a checkout without installing)


def steps_list(text):
    return sorted({int(s) for s in text.split(",") if s.strip()}) if text else []


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", default="runs/recipe-probe", help="run folder to write")
    p.add_argument("--steps", type=int, default=100)
    p.add_argument("--width", type=int, default=512)
    p.add_argument("--batch", type=int, default=256)
    p.add_argument("--layers", type=int, default=3)
    p.add_argument("--batches", type=int, default=20, help="distinct random batches, cycled")
    p.add_argument("--mode", choices=["fp32", "fp16", "bf16"], default="bf16")
    p.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    p.add_argument("--inject-nonfinite", type=steps_list, default=[], metavar="30,31")
    p.add_argument("--histogram-every", type=int, default=50)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--threads", type=int, default=0, help="CPU threads (0: PyTorch's default)")
    p.add_argument("--activations", action="store_true", help="also activation histograms")
    p.add_argument("--overwrite", action="store_true", help="replace a run already in --out")
    p.add_argument("--no-probe", action="store_true", help="train without recording (timing)")
    return p.parse_args(argv)


def make_scaler(mode, device):
    """GradScaler for fp16, None for fp32/bf16 (the recipe's GradScaler(enabled=use_fp16))."""
    if mode != "fp16":
        return None
    if device == "cuda":
        return torch.cuda.amp.GradScaler()
    if hasattr(torch, "amp") and hasattr(torch.amp, "GradScaler"):
        return torch.amp.GradScaler("cpu")
    sys.exit("recipe_amp.py: --mode fp16 on the CPU needs PyTorch 2.3+ (this is "
             f"{torch.__version__}: CPU autocast takes only bfloat16 and GradScaler needs CUDA); "
             "use --device cuda or --mode bf16")


def build(args):
    torch.manual_seed(args.seed)
    layers = []
    for _ in range(args.layers - 1):
        layers += [torch.nn.Linear(args.width, args.width), torch.nn.ReLU()]
    net = torch.nn.Sequential(*layers, torch.nn.Linear(args.width, args.width)).to(args.device)
    opt = torch.optim.SGD(net.parameters(), lr=args.lr)
    xs = [torch.randn(args.batch, args.width, device=args.device) for _ in range(args.batches)]
    ys = [torch.randn(args.batch, args.width, device=args.device) for _ in range(args.batches)]
    return net, opt, xs, ys


def train(args, probe_factory=None):
    """Runs the loop; returns (the probe or None, seconds for the steps)."""
    if args.threads:
        torch.set_num_threads(args.threads)
    if args.device == "cuda" and not torch.cuda.is_available():
        sys.exit("recipe_amp.py: --device cuda, but PyTorch sees no CUDA GPU")
    scaler = make_scaler(args.mode, args.device)
    net, opt, xs, ys = build(args)
    dtype = torch.bfloat16 if args.mode == "bf16" else torch.float16
    last_weight = net[-1].weight
    probe = None
    if not args.no_probe:
        probe = (probe_factory or ampstudio_probe.Probe)(
            net, scaler, out=args.out, optimizer=opt, batch_size=args.batch,
            histogram_every=args.histogram_every, seed=args.seed, mode=args.mode,
            activations=args.activations, overwrite=args.overwrite, name=os.path.basename(os.path.normpath(args.out)),
            config={"model.name": "recipe_mlp", "model.width": args.width, "model.layers": args.layers,
                    "train.loss": "mse",
                    "train.steps": args.steps,
                    **({"train.inject_nonfinite": args.inject_nonfinite} if args.inject_nonfinite else {})})
    t0 = time.perf_counter()
    try:
        for i in range(args.steps):
            step = i + 1
            x, y = xs[i % len(xs)], ys[i % len(ys)]
            # fp32: no autocast at all (1.13's CPU autocast refuses float16 even when disabled).
            with torch.autocast(args.device, dtype=dtype) if args.mode != "fp32" else contextlib.nullcontext():
                loss = torch.nn.functional.mse_loss(net(x), y)
            (scaler.scale(loss) if scaler else loss).backward()
            injected = step in args.inject_nonfinite
            if injected:
                with torch.no_grad():
                    last_weight.grad.view(-1)[0] = float("inf")
            if scaler:
                scaler.step(opt)
                scaler.update()
            else:
                opt.step()
            if probe:
                probe.step(loss, injected=injected)
            opt.zero_grad()
        if args.device == "cuda":
            torch.cuda.synchronize()
        seconds = time.perf_counter() - t0
    except BaseException as e:
        if probe:
            probe.close("stopped" if isinstance(e, KeyboardInterrupt) else "failed")
        raise
    if probe:
        probe.close()
    return probe, seconds


def main(argv=None):
    args = parse_args(argv)
    probe, seconds = train(args)
    print(f"{args.steps} steps in {seconds:.3f} s ({seconds / max(args.steps, 1) * 1e3:.2f} ms/step)"
          + (f"; probe {probe.overhead_ms_per_step():.3f} ms/step; run folder {args.out}" if probe else ""))


if __name__ == "__main__":
    main()

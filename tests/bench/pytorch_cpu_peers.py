#!/usr/bin/env python3
"""PyTorch step times on the CPU for the presets recipe, fmnist-cnn, resnet and gpt, in the modes
the shared peers lack: CPU fp16 autocast with torch.amp.GradScaler("cpu"), and torch.compile.

A benchmark (not run by ctest), driven by tests/bench/pytorch_cpu_compare.py. The models, data
and optimizers are copied from the shared peer scripts, unchanged (../shared/peers/:
pytorch_recipe.py, pytorch_fmnist.py --model cnn, pytorch_resnet.py, pytorch_gpt.py), which
stay as they are; only the timing loop is new, so that every model is timed the way
`ampstudio-cli run` times a step (metrics.jsonl `step_ms`): the batch (with the resnet's
crop and flip), forward, loss, backward, the scaler and the optimizer step; no evaluation.

Usage (PyTorch 2.x, e.g. installer/torch-venv.sh's venv):
  build/release/torch-venv/bin/python tests/bench/pytorch_cpu_peers.py \
      --model gpt --mode bf16 [--compile] --steps 12 --warmup 3 --threads 2
Prints one JSON line: the median ms/step of the steps after the warm-up (compilation, if
any, falls in the warm-up), every step's time, and the compile seconds.
--max-seconds stops early (after at least warm-up + 3 timed steps) where a mode is very slow.
"""
import argparse, gzip, json, math, os, statistics, sys, time

p = argparse.ArgumentParser()
p.add_argument("--model", choices=["recipe", "cnn", "resnet", "gpt"], required=True)
p.add_argument("--mode", choices=["fp32", "bf16", "fp16"], default="fp32")
p.add_argument("--compile", action="store_true", help="torch.compile the model (default backend, inductor)")
p.add_argument("--steps", type=int, default=12)
p.add_argument("--warmup", type=int, default=3, help="steps left out of the median (first ones)")
p.add_argument("--max-seconds", type=float, default=0, help="stop after this long (0: never), once warm-up + 3 steps ran")
p.add_argument("--threads", type=int, default=2)
p.add_argument("--seed", type=int, default=1)
p.add_argument("--fmnist", default="/usr/share/datasets/fashion-mnist")
p.add_argument("--text", default="/usr/share/games/fortunes/fortunes")
a = p.parse_args()

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.set_num_threads(a.threads)
torch.manual_seed(a.seed)
low = {"bf16": torch.bfloat16, "fp16": torch.float16}.get(a.mode)
use_amp = low is not None
scaler = torch.amp.GradScaler("cpu", enabled=a.mode == "fp16")


def idx(name):
    raw = gzip.open(f"{a.fmnist}/{name}.gz").read()
    ndim = raw[3]
    dims = [int.from_bytes(raw[4 + 4 * i: 8 + 4 * i], "big") for i in range(ndim)]
    return np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * ndim).reshape(dims)


sched = None
if a.model == "recipe":  # pytorch_recipe.py: 3 Linear 1024, batch 256, SGD 1e-3, MSE, 50 batches
    W, B, NB = 1024, 256, 50
    net = nn.Sequential(nn.Linear(W, W), nn.ReLU(), nn.Linear(W, W), nn.ReLU(), nn.Linear(W, W))
    opt = torch.optim.SGD(net.parameters(), lr=1e-3)
    xs = [torch.randn(B, W) for _ in range(NB)]
    ys = [torch.randn(B, W) for _ in range(NB)]
    def get_batch(i):
        return xs[i % NB], ys[i % NB]
    def loss_of(model, x, y):
        return F.mse_loss(model(x), y)
elif a.model == "cnn":  # pytorch_fmnist.py --model cnn: Adam 1e-3, batch 128
    xtr = torch.tensor(idx("train-images-idx3-ubyte"), dtype=torch.float32).div_(255).unsqueeze(1)
    ytr = torch.tensor(idx("train-labels-idx1-ubyte"), dtype=torch.long)
    net = nn.Sequential(nn.Conv2d(1, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                        nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                        nn.Flatten(), nn.Linear(64 * 7 * 7, 128), nn.ReLU(), nn.Linear(128, 10))
    opt = torch.optim.Adam(net.parameters(), lr=1e-3)
    perm = torch.randperm(len(xtr))
    def get_batch(i):
        j = perm[(i * 128) % len(xtr):][:128]
        return xtr[j], ytr[j]
    def loss_of(model, x, y):
        return F.cross_entropy(model(x), y)
elif a.model == "resnet":  # pytorch_resnet.py: ResNet-20, SGD momentum, cosine, batch 128, crop + flip
    def images(name):
        x = torch.tensor(idx(name), dtype=torch.float32).div_(255).unsqueeze(1)
        x = F.pad(x, (2, 2, 2, 2))
        return (x - 0.2860) / 0.3530
    xtr, ytr = images("train-images-idx3-ubyte"), torch.tensor(idx("train-labels-idx1-ubyte"), dtype=torch.long)

    class Block(nn.Module):
        def __init__(self, cin, cout, stride):
            super().__init__()
            self.c1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False); self.b1 = nn.BatchNorm2d(cout)
            self.c2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False); self.b2 = nn.BatchNorm2d(cout)
            self.short = None
            if stride != 1 or cin != cout:
                self.short = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))
        def forward(self, x):
            y = F.relu(self.b1(self.c1(x)))
            y = self.b2(self.c2(y))
            return F.relu(y + (x if self.short is None else self.short(x)))

    class ResNet20(nn.Module):
        def __init__(self, cin=1, classes=10):
            super().__init__()
            self.stem = nn.Sequential(nn.Conv2d(cin, 16, 3, 1, 1, bias=False), nn.BatchNorm2d(16), nn.ReLU())
            layers, c = [], 16
            for cout, stride in ((16, 1), (32, 2), (64, 2)):
                for i in range(3):
                    layers.append(Block(c, cout, stride if i == 0 else 1)); c = cout
            self.layers = nn.Sequential(*layers)
            self.fc = nn.Linear(64, classes)
        def forward(self, x):
            x = self.layers(self.stem(x))
            return self.fc(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))

    def augment(x):
        n = x.shape[0]
        padded = F.pad(x, (4, 4, 4, 4))
        i = torch.randint(0, 9, (n,)); j = torch.randint(0, 9, (n,))
        rows = (i[:, None] + torch.arange(32)[None, :])
        cols = (j[:, None] + torch.arange(32)[None, :])
        out = padded[torch.arange(n)[:, None, None, None], torch.arange(x.shape[1])[None, :, None, None],
                     rows[:, None, :, None], cols[:, None, None, :]]
        flip = torch.rand(n) < 0.5
        out[flip] = out[flip].flip(3)
        return out

    net = ResNet20()
    opt = torch.optim.SGD(net.parameters(), lr=0.1, momentum=0.9, weight_decay=5e-4)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=2 * ((len(xtr) + 127) // 128))
    perm = torch.randperm(len(xtr))
    def get_batch(i):
        j = perm[(i * 128) % len(xtr):][:128]
        return augment(xtr[j]), ytr[j]
    def loss_of(model, x, y):
        return F.cross_entropy(model(x), y)
else:  # pytorch_gpt.py at the default size: 4 blocks, 4 heads, 128 wide, context 128, batch 32, AdamW
    L, H, D, T, B = 4, 4, 128, 128, 32
    raw = open(a.text, "rb").read()
    data = torch.tensor(list(raw), dtype=torch.long)
    train = data[:int(len(data) * 0.9)]

    class GBlock(nn.Module):
        def __init__(self, d, h):
            super().__init__()
            self.ln_1 = nn.LayerNorm(d)
            self.attn = nn.Module()
            self.attn.c_attn = nn.Linear(d, 3 * d)
            self.attn.c_proj = nn.Linear(d, d)
            self.ln_2 = nn.LayerNorm(d)
            self.mlp = nn.Module()
            self.mlp.c_fc = nn.Linear(d, 4 * d)
            self.mlp.c_proj = nn.Linear(4 * d, d)
            self.h = h
        def forward(self, x):
            Bx, Tx, C = x.shape
            q, k, v = self.attn.c_attn(self.ln_1(x)).split(C, dim=2)
            q, k, v = (t.view(Bx, Tx, self.h, C // self.h).transpose(1, 2) for t in (q, k, v))
            att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(C // self.h))
            mask = torch.ones(Tx, Tx, dtype=torch.bool, device=x.device).tril()
            att = att.masked_fill(~mask, float("-inf"))
            att = F.softmax(att, dim=-1)
            y = (att @ v).transpose(1, 2).contiguous().view(Bx, Tx, C)
            x = x + self.attn.c_proj(y)
            return x + self.mlp.c_proj(F.gelu(self.mlp.c_fc(self.ln_2(x))))

    class GPT(nn.Module):
        def __init__(self):
            super().__init__()
            self.transformer = nn.Module()
            self.transformer.wte = nn.Embedding(256, D)
            self.transformer.wpe = nn.Embedding(T, D)
            self.transformer.h = nn.ModuleList([GBlock(D, H) for _ in range(L)])
            self.transformer.ln_f = nn.LayerNorm(D)
            self.lm_head = nn.Linear(D, 256, bias=False)
            self.lm_head.weight = self.transformer.wte.weight
            for n, m in self.named_modules():
                if isinstance(m, (nn.Linear, nn.Embedding)):
                    std = 0.02 / math.sqrt(2 * L) if n.endswith("c_proj") else 0.02
                    nn.init.normal_(m.weight, 0.0, std)
                    if isinstance(m, nn.Linear) and m.bias is not None:
                        nn.init.zeros_(m.bias)
        def forward(self, idx_, targets):
            Tx = idx_.shape[1]
            x = self.transformer.wte(idx_) + self.transformer.wpe(torch.arange(Tx, device=idx_.device))
            for b in self.transformer.h:
                x = b(x)
            logits = self.lm_head(self.transformer.ln_f(x))
            return F.cross_entropy(logits.view(-1, 256), targets.view(-1))

    net = GPT()
    opt = torch.optim.AdamW(net.parameters(), lr=1e-3, betas=(0.9, 0.99), weight_decay=0.0)
    g = torch.Generator().manual_seed(a.seed)
    def get_batch(i):
        ix = torch.randint(len(train) - T - 1, (B,), generator=g)
        return (torch.stack([train[k:k + T] for k in ix]), torch.stack([train[k + 1:k + T + 1] for k in ix]))
    def loss_of(model, x, y):
        return model(x, y)

model = torch.compile(net) if a.compile else net
times, first_s = [], None
t_start = time.perf_counter()
for i in range(a.steps):
    t0 = time.perf_counter()
    x, y = get_batch(i)
    with torch.autocast("cpu", dtype=low or torch.bfloat16, enabled=use_amp):
        loss = loss_of(model, x, y)
    opt.zero_grad(set_to_none=True)
    scaler.scale(loss).backward()
    scaler.step(opt)
    scaler.update()
    if sched is not None:
        sched.step()
    times.append((time.perf_counter() - t0) * 1e3)
    if not math.isfinite(loss.item()):
        print(f"pytorch_cpu_peers: non-finite loss at step {i + 1}", file=sys.stderr)
    if a.max_seconds and time.perf_counter() - t_start > a.max_seconds and len(times) >= a.warmup + 3:
        break
timed = times[a.warmup:] or times
print(json.dumps({"side": "pytorch-compiled" if a.compile else "pytorch-eager", "torch": torch.__version__,
                  "model": a.model, "mode": a.mode, "threads": torch.get_num_threads(),
                  "steps": len(times), "warmup": a.warmup,
                  "median_ms": round(statistics.median(timed), 3),
                  "first_step_s": round(times[0] / 1e3, 2),
                  "step_ms": [round(t, 2) for t in times],
                  "scale": scaler.get_scale() if scaler.is_enabled() else None,
                  "loss": round(loss.item(), 4)}), flush=True)

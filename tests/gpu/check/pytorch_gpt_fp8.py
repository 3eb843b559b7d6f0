#!/usr/bin/env python3
"""The fp8 peer of AMP Studio's GPT (issue 41): ../shared/peers/pytorch_gpt.py's model, data,
optimizer, sizes and flags, with its Linear layers' three GEMMs on the fp8 tensor cores through
torch._scaled_mm, as torchao's float8 training does with per-tensor dynamic ("current") scaling:
  forward   y  = x(E4M3) . W(E4M3)^T     scale = 448 / amax of this step's tensor, fast accumulation
  backward  dx = dy(E5M2) . W(E4M3)      dy's scale = 57344 / amax
            dW = dy(E5M2)^T . x(E4M3)
The rest runs under bf16 autocast (layer norm, softmax and the loss in fp32, attention's matmuls in
bf16), as AMP Studio's amp.mode=fp8 does. The first and last Linear layers stay bf16 (--keep-bf16
first,last: AMP Studio's fp8.keep_bf16 default; "none" converts every one).

Usage: python3 pytorch_gpt_fp8.py --data FILE --layers 12 --heads 12 --embd 768 --block 256
Prints one JSON line per evaluation and a final summary line with "mode": "fp8" (losses, ms/step,
peak memory), like pytorch_gpt.py. --device cpu runs the same code where this PyTorch has a CPU
_scaled_mm (a smoke test of the script; its timing means nothing).
"""
import argparse, json, math, statistics, time
import torch
import torch.nn as nn
import torch.nn.functional as F

p = argparse.ArgumentParser()
p.add_argument("--data", default="/usr/share/games/fortunes/fortunes")
p.add_argument("--device", choices=["cpu", "cuda"], default="cuda" if torch.cuda.is_available() else "cpu")
p.add_argument("--layers", type=int, default=4)
p.add_argument("--heads", type=int, default=4)
p.add_argument("--embd", type=int, default=128)
p.add_argument("--block", type=int, default=128)
p.add_argument("--batch", type=int, default=32)
p.add_argument("--steps", type=int, default=300)
p.add_argument("--lr", type=float, default=1e-3)
p.add_argument("--eval-every", type=int, default=100)
p.add_argument("--seed", type=int, default=1)
p.add_argument("--threads", type=int, default=2)
p.add_argument("--keep-bf16", default="first,last", help="first,last | none")
a = p.parse_args()
torch.set_num_threads(a.threads)
torch.manual_seed(a.seed)
dev = torch.device(a.device)
if a.device == "cuda":
    torch.backends.cuda.matmul.allow_tf32 = False

E4M3, E5M2 = torch.float8_e4m3fn, torch.float8_e5m2


def to_fp8(t, dtype):
    """t (2-D) cast to fp8 with its current per-tensor scale: (codes, 1 / scale as _scaled_mm wants)."""
    fmax = torch.finfo(dtype).max
    amax = t.detach().abs().max().float()
    scale = fmax / torch.clamp(amax, min=1e-12)  # torchao's EPS keeps an all-zero tensor finite
    codes = (t.float() * scale).clamp(-fmax, fmax).to(dtype)  # saturated, as torchao's cast
    return codes, scale.reciprocal()


def col_major(t):
    """The same matrix laid out column-major (what _scaled_mm wants for its second operand)."""
    return t.t().contiguous().t()


class Fp8Matmul(torch.autograd.Function):
    """y = x . W^T + b with the three GEMMs in fp8 (the module docstring)."""

    @staticmethod
    def forward(ctx, x, w, b):
        lead = x.shape[:-1]
        x2 = x.reshape(-1, x.shape[-1])
        xq, xs = to_fp8(x2, E4M3)
        wq, ws = to_fp8(w, E4M3)
        bias = b.to(torch.bfloat16) if b is not None else None
        # wq (N, K) row-major: its transpose is the column-major (K, N) operand, no copy.
        y = torch._scaled_mm(xq, wq.t(), scale_a=xs, scale_b=ws, bias=bias, out_dtype=torch.bfloat16,
                             use_fast_accum=True)
        ctx.save_for_backward(xq, xs, wq, ws)
        ctx.lead, ctx.x_dtype, ctx.w_dtype, ctx.has_bias = lead, x.dtype, w.dtype, b is not None
        return y.view(*lead, -1)

    @staticmethod
    def backward(ctx, gy):
        xq, xs, wq, ws = ctx.saved_tensors
        g2 = gy.reshape(-1, gy.shape[-1])
        gq, gs = to_fp8(g2, E5M2)
        # dx (M, K) = dy (M, N) . W (N, K); dW (N, K) = dy^T (N, M) . x (M, K); full accumulation.
        dx = torch._scaled_mm(gq, col_major(wq), scale_a=gs, scale_b=ws, out_dtype=torch.bfloat16)
        dw = torch._scaled_mm(gq.t().contiguous(), col_major(xq), scale_a=gs, scale_b=xs, out_dtype=torch.float32)
        db = g2.float().sum(0) if ctx.has_bias else None
        return dx.view(*ctx.lead, -1).to(ctx.x_dtype), dw.to(ctx.w_dtype), db


class Fp8Linear(nn.Linear):
    def forward(self, x):
        return Fp8Matmul.apply(x, self.weight, self.bias)


raw = open(a.data, "rb").read()
data = torch.tensor(list(raw), dtype=torch.long)
split = int(len(data) * 0.9)
train, val = data[:split], data[split:]


class Block(nn.Module):
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
        B, T, C = x.shape
        q, k, v = self.attn.c_attn(self.ln_1(x)).split(C, dim=2)
        q, k, v = (t.view(B, T, self.h, C // self.h).transpose(1, 2) for t in (q, k, v))
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(C // self.h))
        mask = torch.ones(T, T, dtype=torch.bool, device=x.device).tril()
        att = att.masked_fill(~mask, float("-inf"))
        att = F.softmax(att, dim=-1)
        y = (att @ v).transpose(1, 2).contiguous().view(B, T, C)
        x = x + self.attn.c_proj(y)
        return x + self.mlp.c_proj(F.gelu(self.mlp.c_fc(self.ln_2(x))))


class GPT(nn.Module):
    def __init__(self):
        super().__init__()
        self.transformer = nn.Module()
        self.transformer.wte = nn.Embedding(256, a.embd)
        self.transformer.wpe = nn.Embedding(a.block, a.embd)
        self.transformer.h = nn.ModuleList([Block(a.embd, a.heads) for _ in range(a.layers)])
        self.transformer.ln_f = nn.LayerNorm(a.embd)
        self.lm_head = nn.Linear(a.embd, 256, bias=False)
        self.lm_head.weight = self.transformer.wte.weight
        for n, m in self.named_modules():
            if isinstance(m, (nn.Linear, nn.Embedding)):
                std = 0.02 / math.sqrt(2 * a.layers) if n.endswith("c_proj") else 0.02
                nn.init.normal_(m.weight, 0.0, std)
                if isinstance(m, nn.Linear) and m.bias is not None:
                    nn.init.zeros_(m.bias)

    def forward(self, idx, targets):
        T = idx.shape[1]
        x = self.transformer.wte(idx) + self.transformer.wpe(torch.arange(T, device=idx.device))
        for b in self.transformer.h:
            x = b(x)
        logits = self.lm_head(self.transformer.ln_f(x))
        return F.cross_entropy(logits.view(-1, 256), targets.view(-1))


def convert_to_fp8(model, keep):
    """Swaps nn.Linear for Fp8Linear in place (same parameters, so lm_head stays tied), except the
    kept ones: their positions in definition order, "first" and "last" (torchao's
    convert_to_float8_training with a module filter)."""
    linears = [(n, m) for n, m in model.named_modules() if type(m) is nn.Linear]
    named = {"first": 0, "last": len(linears) - 1}
    kept = {named[item] if item in named else int(item) for item in keep.split(",") if item and item != "none"}
    for i, (n, m) in enumerate(linears):
        if i not in kept:
            m.__class__ = Fp8Linear
    return [n for i, (n, _) in enumerate(linears) if i not in kept]


model = GPT().to(dev)
converted = convert_to_fp8(model, a.keep_bf16)
opt = torch.optim.AdamW(model.parameters(), lr=a.lr, betas=(0.9, 0.99), weight_decay=0.0)
g = torch.Generator().manual_seed(a.seed)


def batch(src, n, gen=None, offsets=None):
    ix = offsets if offsets is not None else torch.randint(len(src) - a.block - 1, (n,), generator=gen)
    x = torch.stack([src[i:i + a.block] for i in ix]).to(dev)
    y = torch.stack([src[i + 1:i + a.block + 1] for i in ix]).to(dev)
    return x, y


val_offsets = torch.linspace(0, len(val) - a.block - 2, 64).long()


def evaluate():
    model.eval()
    with torch.no_grad(), torch.autocast(a.device, dtype=torch.bfloat16):
        x, y = batch(val, 0, offsets=val_offsets)
        loss = model(x, y).item()
    model.train()
    return loss


def sync():
    if a.device == "cuda":
        torch.cuda.synchronize()


times, losses = [], []
if a.device == "cuda":
    torch.cuda.reset_peak_memory_stats()
t_start = time.time()
for step in range(1, a.steps + 1):
    x, y = batch(train, a.batch, gen=g)
    sync(); t0 = time.perf_counter()
    with torch.autocast(a.device, dtype=torch.bfloat16):
        loss = model(x, y)
    loss.backward()
    opt.step()
    opt.zero_grad(set_to_none=True)
    sync(); times.append((time.perf_counter() - t0) * 1e3)
    losses.append(loss.item())
    if step % a.eval_every == 0 or step == a.steps:
        print(json.dumps({"step": step, "train_loss": round(statistics.mean(losses[-a.eval_every:]), 4),
                          "val_loss": round(evaluate(), 4)}), flush=True)
if a.steps > 0:
    print(json.dumps({"peer": "pytorch-" + torch.__version__ + "-scaled_mm", "device": a.device, "model": "gpt",
                      "mode": "fp8", "recipe": "current (per-tensor dynamic, torchao-style)",
                      "fp8_linears": len(converted), "layers": a.layers, "heads": a.heads, "embd": a.embd,
                      "block": a.block, "batch": a.batch, "steps": a.steps,
                      "params": sum(p.numel() for p in model.parameters()),
                      "final_val_loss": round(evaluate(), 4),
                      "median_ms_per_step": round(statistics.median(times[5:] or times), 3),
                      "total_s": round(time.time() - t_start, 2),
                      "max_memory_allocated_bytes": torch.cuda.max_memory_allocated() if a.device == "cuda" else None}))

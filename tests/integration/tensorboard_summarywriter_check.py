"""A real PyTorch training loop logged with torch.utils.tensorboard.SummaryWriter the ordinary way,
imported by `ampstudio-cli export`, and compared with what the loop knew (issue 40):

* the scale logged after scaler.update() every step: each skipped step (found by checking the
  gradients for inf/nan before scaler.step) is the imported run's skipped step, and the scale
  before each step is the one backward used;
* a second run logging the scale every 5 steps: no phantom skips, no scale of 1 between values;
* an evaluation logged at its own step counter: no training step with a loss of 0;
* add_histogram of a gradient with exact zeros and of weights that are exactly 1.0: the zeros are
  zeros (not fp16 underflow) and the ones at exponent 0, against torch.frexp of the logged
  values; at most 1% of the others in a neighbouring binade (SummaryWriter's 1.1x buckets cross
  binades: split by log width where they do, not put whole at the centre's binade);
* add_text kept as text, add_hparams' sub-folder not a reason to refuse the log;
* our TensorBoard export of it read by TensorBoard's own EventAccumulator: `num` counts the zeros;
* `export --output` into the log itself refused (exit 2) with the log unchanged.

    tensorboard_summarywriter_check.py TORCH_PYTHON CLI WORK
Exits 77 (ctest: skipped, saying why) when TORCH_PYTHON does not exist or lacks tensorboard.
"""
import hashlib
import json
import math
import os
import shutil
import subprocess
import sys


def main():
    py, cli, work = sys.argv[1:4]
    if os.environ.get("AMP_SW_CHILD") != "1":
        if not os.path.exists(py) or subprocess.call(
                [py, "-c", "import torch, tensorboard; from torch.utils.tensorboard import SummaryWriter"],
                stderr=subprocess.DEVNULL) != 0:
            print(f"skipped: {py} has no torch with tensorboard (installer/torch-venv.sh, then pip install tensorboard)")
            return 77
        return subprocess.call([py, __file__] + sys.argv[1:], env=dict(os.environ, AMP_SW_CHILD="1"))

    import torch
    import torch.nn.functional as F
    from tensorboard.backend.event_processing import event_accumulator as ea
    from torch.utils.tensorboard import SummaryWriter

    shutil.rmtree(work, ignore_errors=True)
    logs = os.path.join(work, "logs")
    truth = {}

    def train(name, scale_every, loss_every, eval_at):
        torch.manual_seed(0)
        model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.LayerNorm(64), torch.nn.ReLU(), torch.nn.Linear(64, 4))
        model[1].weight.requires_grad_(False)  # stays exactly 1.0
        opt = torch.optim.SGD(model.parameters(), lr=0.05)
        scaler = torch.amp.GradScaler("cpu", init_scale=2.0 ** 16, growth_interval=5)
        w = SummaryWriter(os.path.join(logs, name))
        skipped, scales = [], {}
        for step in range(1, 21):
            g = torch.Generator().manual_seed(step)
            x, y = torch.randn(16, 32, generator=g), torch.randn(16, 4, generator=g)
            x[:, :8] = 0  # fc weight gradients of these inputs are exactly 0
            with torch.autocast("cpu", dtype=torch.float16):
                loss = F.mse_loss(model(x).float(), y)
            out = loss * float("inf") if step in (4, 9, 15) else loss
            scales[step] = scaler.get_scale()
            scaler.scale(out).backward()
            if not all(bool(torch.isfinite(p.grad).all()) for p in model.parameters() if p.grad is not None):
                skipped.append(step)
            if step in (10, 20):
                grad = model[0].weight.grad.detach() / scales[step]
                w.add_histogram("0.weight.grad", grad, step)
                w.add_histogram("1.weight", model[1].weight.detach(), step)  # LayerNorm: all 1.0
                truth[(name, step)] = grad.double().clone()
            scaler.step(opt)
            scaler.update()
            if step % loss_every == 0:
                w.add_scalar("Loss/train", loss.item(), step)
            if step % scale_every == 0:
                w.add_scalar("scale", scaler.get_scale(), step)  # after update(): the usual place
            if step % 10 == 0:
                w.add_scalar("Loss/val", 0.5, step + eval_at)
            opt.zero_grad()
        w.add_text("notes", "fp16 on the CPU", 0)
        w.add_hparams({"lr": 0.05}, {"hparam/loss": loss.item()})
        w.close()
        return skipped, scales

    # "every": loss and scale every step, the evaluation at the step it followed; "sparse": the
    # loss every 2 steps, the scale every 5, the evaluation at the next (odd) step, which has no
    # training loss.
    skipped, scales = train("every", 1, 1, 0)
    train("sparse", 5, 2, 1)

    bad = []
    # Outputs never alter inputs: an export into the log itself is refused and changes nothing.
    def digest():
        h = hashlib.sha256()
        for root, dirs, files in sorted(os.walk(logs)):
            dirs.sort()
            for f in sorted(files):
                h.update(f.encode())
                h.update(open(os.path.join(root, f), "rb").read())
        return h.hexdigest()
    before = digest()
    rc = subprocess.call([cli, "export", "--run", logs, "--format", "tensorboard", "--output", logs],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    if rc != 2 or digest() != before:
        bad.append(f"export into the log itself: exit {rc} (want 2), log {'un' if digest() == before else ''}changed")

    out = os.path.join(work, "export")
    p = subprocess.run([cli, "export", "--run", logs, "--format", "tensorboard", "--output", out],
                       capture_output=True, text=True)
    if p.returncode != 0:
        print(p.stderr)
        print(f"FAIL: export of a SummaryWriter log with add_hparams exited {p.returncode}")
        return 1
    runs = {}
    for sub in sorted(os.listdir(out)):
        acc = ea.EventAccumulator(os.path.join(out, sub), size_guidance={ea.SCALARS: 0, ea.HISTOGRAMS: 0, ea.TENSORS: 0})
        acc.Reload()
        runs[sub.split("-", 1)[1]] = acc
    if sorted(runs) != ["every", "sparse"]:
        bad.append(f"runs {sorted(runs)}, expected every and sparse (the hparams sub-folders left out)")
        runs = {}

    def metrics(acc):
        return [json.loads(t.tensor_proto.string_val[0]) for t in acc.Tensors("ampstudio/metrics")]

    def f32(v):
        return float(torch.tensor(float(v), dtype=torch.float32))

    if "every" in runs:
        m = metrics(runs["every"])
        if [s["step"] for s in m] != list(range(1, 21)):
            bad.append(f"every: steps {[s['step'] for s in m]}, expected 1..20 (no step of its own for the evaluation)")
        got = [s["step"] for s in m if s["skipped"]]
        if got != skipped:
            bad.append(f"every: skipped steps {got}, the loop's {skipped}")
        for s in m:
            if s["step"] in scales and float(s["scale"]) != scales[s["step"]]:
                bad.append(f"every: step {s['step']}: scale {s['scale']}, backward used {scales[s['step']]}")
            if float(s["loss"]) == 0:
                bad.append(f"every: step {s['step']} has a loss of 0")
        if [s["step"] for s in m if "test_loss" in s] != [10, 20]:
            bad.append("every: the evaluations are not at the training steps before them (10, 20)")
        summary = json.loads(runs["every"].Tensors("ampstudio/summary")[0].tensor_proto.string_val[0])
        if "notes/text_summary" not in summary.get("imported_text", {}):
            bad.append("every: add_text not kept as imported_text")
        if "notes/text_summary" in summary.get("imported_scalars", {}):
            bad.append("every: add_text listed as a scalar")
        # Histograms against torch.frexp of the values that were logged.
        for step in (10, 20):
            ref = truth[("every", step)].flatten()
            nz = ref[ref != 0]
            _, e = torch.frexp(nz.abs())
            want = torch.bincount(torch.clamp(e.long() - 1, -40, 17) + 40, minlength=58).tolist()
            zeros = int((ref == 0).sum())
            h = [json.loads(t.tensor_proto.string_val[0]) for t in runs["every"].Tensors("ampstudio/histogram/weight_grad/0.weight.grad")
                 if t.step == step]
            if len(h) != 1:
                bad.append(f"every: step {step}: {len(h)} imported gradient histograms")
                continue
            got = h[0]["unscaled"]
            if got[58] != zeros:
                bad.append(f"every: step {step}: {got[58]} zeros, the gradient has {zeros}")
            under = h[0]["unscaled_fractions"]["underflow"]
            want_under = sum(want[:16]) / ref.numel()  # exponents below -24
            if abs(under - want_under) > 0.01:
                bad.append(f"every: step {step}: fp16 underflow {under:.3f}, the values' {want_under:.3f}")
            moved = sum(abs(a - b) for a, b in zip(got[:58], want)) / 2 / max(1, nz.numel())
            print(f"step {step}: {zeros} zeros of {ref.numel()}; {moved:.1%} of the non-zero values in a neighbouring binade "
                  "(SummaryWriter's buckets span powers of two)")
            # Each bucket whole at its centre's binade moved 3.5% and 3.1% here (issue 40's "~3%");
            # split by log width at the powers of two it spans, 0.2% and 0.5% (the README's figure).
            if moved > 0.01:
                bad.append(f"every: step {step}: {moved:.1%} of the values re-binned away from their binade (at most 1%)")
            ones = [json.loads(t.tensor_proto.string_val[0]) for t in runs["every"].Tensors("ampstudio/histogram/weight/1.weight")
                    if t.step == step]
            if not ones or ones[0]["unscaled"][40] != 64:
                bad.append(f"every: step {step}: LayerNorm's 64 weights of 1.0 not at exponent 0: "
                           f"{[(k - 40, c) for k, c in enumerate(ones[0]['unscaled']) if c] if ones else 'missing'}")
            # The export's exponent histogram, as TensorBoard reads it: num counts the zeros.
            ex = [x for x in runs["every"].Histograms("exponents_unscaled/weight_grad/0.weight.grad") if x.step == step]
            if not ex or ex[0].histogram_value.num != ref.numel():
                bad.append(f"every: step {step}: TensorBoard's num {ex[0].histogram_value.num if ex else None}, values {ref.numel()}")
    if "sparse" in runs:
        m = metrics(runs["sparse"])
        if any(s["skipped"] for s in m):
            bad.append(f"sparse: phantom skips at {[s['step'] for s in m if s['skipped']]}")
        if [s["step"] for s in m] != list(range(2, 21, 2)) or any(float(s["loss"]) == 0 for s in m):
            bad.append(f"sparse: steps {[(s['step'], s['loss']) for s in m]}, expected 2, 4, .. 20 with their losses")
        if [s["step"] for s in m if "test_loss" in s] != [10, 20]:
            bad.append("sparse: the evaluations at steps 11 and 21 are not at the training steps before them")
        if any(f32(s["scale"]) < 1024 for s in m):
            bad.append(f"sparse: a scale fell to {min(float(s['scale']) for s in m)} between logged values")
    for b in bad:
        print("MISMATCH", b)
    print(f"SummaryWriter log: skipped {skipped}; {len(bad)} mismatches")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

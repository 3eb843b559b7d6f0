"""The probe under a current PyTorch (2.3+: torch.amp.GradScaler("cpu"), CPU fp16 autocast, fused
Adam on the CPU) and Lightning 2.x, checked step by step against values read from PyTorch itself
in the same run: the scale before each step, whether the gradients were finite (the skip), the
gradient norm accumulated in float64 at the moment the script's own code sees the gradients
(after unscaling, before clipping), and torch.frexp exponent histograms of the unscaled
gradients. The set-ups are those that recorded wrong numbers: a fused optimizer with GradScaler
and no unscale_, a disabled scaler with clipping, Lightning in bf16, fp16 and fp32, float64,
complex and sparse parameters, an lr schedule; and the old torch.cuda.amp.GradScaler() spelling
on a CPU (disabled: said in events.log).

Skipped under an older PyTorch (Debian's 1.13: tests/test_probe.py covers it); the Lightning
tests are skipped where Lightning is not installed. ctest runs this file under the build
folder's torch-venv (tests/integration/probe_torch2_tests.py).
"""
import json
import math
import os
import shutil
import sys
import tempfile
import unittest
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
# AMPSTUDIO_PROBE_PATH: another copy of the package (e.g. an older commit's, to see these fail).
sys.path.insert(0, os.environ.get("AMPSTUDIO_PROBE_PATH") or os.path.dirname(HERE))

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import ampstudio_probe  # noqa: E402

TORCH_VERSION = tuple(int(x) for x in torch.__version__.split("+")[0].split(".")[:2])
CURRENT = TORCH_VERSION >= (2, 3)
MIN_EXP, MAX_EXP = -40, 17
REL = 1e-12  # float64 accumulation on both sides: they agree to rounding, not to fp32's 1e-7


def f64_norm(tensors, divide=1.0):
    """PyTorch's own float64 norm of the gradients (divided by the scale when still scaled)."""
    total = 0.0
    for g in tensors:
        g = g.coalesce().values() if g.is_sparse else g
        g = g.to(torch.complex128) if g.is_complex() else g.double()
        total += float((g / divide).abs().pow(2).sum())
    return math.sqrt(total)


def frexp_histogram(g, divide=1.0):
    """AMP Studio's 61 bins from torch.frexp of the float64 values: exponent e-1 clamped to
    -40..17, then zeros, infinities, NaNs."""
    v = (g.double() / divide).flatten()
    counts = [0] * 61
    finite = v[torch.isfinite(v)]
    counts[59] = int(torch.isinf(v).sum())
    counts[60] = int(torch.isnan(v).sum())
    counts[58] = int((finite == 0).sum())
    nz = finite[finite != 0]
    if nz.numel():
        _, e = torch.frexp(nz.abs())
        b = torch.clamp(e.long() - 1, MIN_EXP, MAX_EXP) - MIN_EXP
        for k, c in enumerate(torch.bincount(b, minlength=58).tolist()):
            counts[k] += c
    return counts


def lines(path):
    with open(path) as f:
        return [json.loads(s) for s in f if s.strip()]


def num(v):
    return float(v) if not isinstance(v, str) else float(v.replace("inf", "inf"))


class Case(unittest.TestCase):
    def setUp(self):
        if not CURRENT:
            self.skipTest(f"needs PyTorch 2.3+ (CPU GradScaler, fp16 autocast); this is {torch.__version__}")
        self.tmp = tempfile.mkdtemp(prefix="probe-torch2-")

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def out(self, name):
        return os.path.join(self.tmp, name)

    def assertClose(self, got, want, what):
        got = num(got)
        if not math.isfinite(want):
            self.assertFalse(math.isfinite(got), f"{what}: {got}, PyTorch says {want}")
            return
        self.assertLessEqual(abs(got - want), REL * abs(want), f"{what}: probe {got!r}, PyTorch {want!r}")


def make_model(seed=0, width=256):
    torch.manual_seed(seed)
    # Wide enough that fp32 per-tensor norms summed differ from the float64 norm.
    return torch.nn.Sequential(torch.nn.Linear(64, width), torch.nn.ReLU(), torch.nn.Linear(width, 512),
                               torch.nn.ReLU(), torch.nn.Linear(512, 8))


def batch(n):
    g = torch.Generator().manual_seed(1000 + n)
    return torch.randn(32, 64, generator=g), torch.randn(32, 8, generator=g)


class TestLoops(Case):
    def run_loop(self, name, *, fused=False, enabled=True, unscale=False, clip=None, dtype=torch.float16,
                 steps=12, inject=(6,), hist_every=4, **probe_kw):
        """A plain torch.amp loop; returns (metrics lines, histogram lines, PyTorch's figures per step)."""
        model = make_model()
        opt = torch.optim.Adam(model.parameters(), lr=1e-3, fused=fused, foreach=None if fused else True)
        scaler = torch.amp.GradScaler("cpu", enabled=enabled, init_scale=2.0 ** 16, growth_interval=4)
        probe = ampstudio_probe.Probe(model, scaler, out=self.out(name), optimizer=opt, histogram_every=hist_every,
                                      **probe_kw)
        refs = {}
        for n in range(1, steps + 1):
            x, y = batch(n)
            with torch.autocast("cpu", dtype=dtype):
                loss = F.mse_loss(model(x).float(), y)
            if n in inject:
                loss = loss * float("inf")  # every gradient inf/nan: GradScaler must skip
            scaler.scale(loss).backward()
            scale = scaler.get_scale() if scaler.is_enabled() else 1.0
            if unscale:
                scaler.unscale_(opt)
            divide = 1.0 if unscale else scale
            grads = [p.grad for p in model.parameters()]
            ref = {"scale": scale, "norm": f64_norm(grads, divide),
                   "finite": all(bool(torch.isfinite(g).all()) for g in grads)}
            if hist_every and (n == 1 or n % hist_every == 0):
                ref["hists"] = {nm: frexp_histogram(p.grad, divide) for nm, p in model.named_parameters()}
            refs[n] = ref
            if clip is not None:
                torch.nn.utils.clip_grad_norm_(model.parameters(), clip)
            scaler.step(opt)
            scaler.update()
            probe.step(loss)
            opt.zero_grad()
        probe.close()
        return lines(os.path.join(self.out(name), "metrics.jsonl")), \
            lines(os.path.join(self.out(name), "histograms.jsonl")), refs

    def check(self, metrics, hists, refs, scaled=True):
        self.assertEqual(len(metrics), len(refs))
        for m in metrics:
            r = refs[m["step"]]
            self.assertEqual(num(m["scale"]), r["scale"], f"step {m['step']}: scale")
            self.assertEqual(m["skipped"], scaled and not r["finite"], f"step {m['step']}: skipped")
            self.assertClose(m["grad_norm"], r["norm"], f"step {m['step']}: grad_norm")
        seen = 0
        for h in hists:
            if h["kind"] != "weight_grad":
                continue
            want = refs[h["step"]]["hists"][h["tensor"]]
            self.assertEqual(h["unscaled"], want, f"step {h['step']} {h['tensor']}: unscaled histogram")
            seen += 1
        self.assertEqual(seen, 6 * 4)  # steps 1, 4, 8, 12; six tensors

    def test_fused_adam_with_gradscaler_and_no_unscale(self):
        # GradScaler hands the scale to the fused kernel: the gradients are still scaled when
        # optimizer.step begins (today's code took them as unscaled: norm 65536x too large).
        metrics, hists, refs = self.run_loop("fused", fused=True)
        self.check(metrics, hists, refs)
        self.assertEqual([m["step"] for m in metrics if m["skipped"]], [6])
        overflow = [h for h in hists if h["kind"] == "weight_grad" and h["step"] != 6
                    and h["unscaled_fractions"]["overflow"] > 0]
        self.assertEqual(overflow, [], "no unscaled gradient of this run exceeds fp16's range")

    def test_plain_gradscaler_with_unscale_and_clipping(self):
        # Also the "exact" norm: float64 throughout (per-tensor fp32 norms were ~1e-7 off).
        metrics, hists, refs = self.run_loop("plain", unscale=True, clip=1e-3)
        self.check(metrics, hists, refs)

    def test_plain_gradscaler_without_unscale(self):
        metrics, hists, refs = self.run_loop("plain-no-unscale")
        self.check(metrics, hists, refs)

    def test_the_cheaper_fp32_norm_is_within_its_stated_error(self):
        metrics, _, refs = self.run_loop("fp32-norm", exact_norm=False, hist_every=0, inject=())
        worst = max(abs(num(m["grad_norm"]) - refs[m["step"]]["norm"]) / refs[m["step"]]["norm"] for m in metrics)
        self.assertLess(worst, 1e-5)
        summary = json.loads(open(os.path.join(self.out("fp32-norm"), "summary.json")).read())
        self.assertIn("fp32 per tensor", summary["source"]["grad_norm"])

    def test_disabled_scaler_reads_before_clipping_as_fp16_does(self):
        metrics, hists, refs = self.run_loop("disabled", enabled=False, unscale=True, clip=1e-3,
                                             dtype=torch.bfloat16, inject=())
        self.check(metrics, hists, refs, scaled=False)
        cfg = json.load(open(os.path.join(self.out("disabled"), "config.json")))
        self.assertEqual(cfg["amp"]["mode"], "bf16")


class TestOldSpelling(Case):
    def test_a_gradscaler_that_disabled_itself_is_said_in_events(self):
        # torch.cuda.amp.GradScaler() (the old spelling, in many scripts) disables itself without
        # CUDA: the run is fp16 without loss scaling, and the probe says so instead of recording
        # an fp16 run at scale 1 as if it were scaled.
        model = make_model(width=32)
        opt = torch.optim.SGD(model.parameters(), lr=1e-2)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # "CUDA is not available. Disabling." / deprecated
            scaler = torch.cuda.amp.GradScaler()
        self.assertFalse(scaler.is_enabled())
        with ampstudio_probe.Probe(model, scaler, out=self.out("old"), optimizer=opt, histogram_every=0) as probe:
            for n in range(1, 4):
                x, y = batch(n)
                with torch.autocast("cpu", dtype=torch.float16):
                    loss = F.mse_loss(model(x).float(), y)
                scaler.scale(loss).backward()
                scaler.step(opt)
                scaler.update()
                probe.step(loss)
                opt.zero_grad()
        cfg = json.load(open(os.path.join(self.out("old"), "config.json")))
        self.assertEqual((cfg["amp"]["mode"], cfg["scaler"]["enabled"]), ("fp16", "false"))
        self.assertEqual({m["scale"] for m in lines(os.path.join(self.out("old"), "metrics.jsonl"))}, {1.0})
        events = open(os.path.join(self.out("old"), "events.log")).read()
        self.assertIn("fp16 autocast without an enabled GradScaler", events)
        self.assertIn("use torch.amp.GradScaler(device)", events)


class TestParameters(Case):
    def test_float64_complex_and_sparse_parameters(self):
        torch.manual_seed(0)

        class M(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.emb = torch.nn.Embedding(50, 16, sparse=True)
                self.lin = torch.nn.Linear(16, 4).double()
                self.c = torch.nn.Parameter(torch.randn(4, dtype=torch.complex64))

            def forward(self, idx):
                h = self.lin(self.emb(idx).double())
                return (h * self.c.abs().double()).pow(2).mean()

        model = M()
        dense = [p for n, p in model.named_parameters() if n != "emb.weight"]
        opts = [torch.optim.SparseAdam([model.emb.weight], lr=1e-2), torch.optim.SGD(dense, lr=1e-2)]
        probe = ampstudio_probe.Probe(model, None, out=self.out("mixed"), optimizer=opts[1], histogram_every=1)
        refs = []
        for n in range(1, 5):
            idx = torch.randint(0, 50, (8, 3), generator=torch.Generator().manual_seed(n))
            loss = model(idx)
            loss.backward()  # the user's loop must not die of the probe (float64/complex raised)
            refs.append(f64_norm([p.grad for p in model.parameters()]))
            probe.read_gradients()  # all parameters: the second optimizer has the sparse one
            for o in opts:
                o.step()
                o.zero_grad()
            probe.step(loss)
        probe.close()
        metrics = lines(os.path.join(self.out("mixed"), "metrics.jsonl"))
        for m, want in zip(metrics, refs):
            self.assertClose(m["grad_norm"], want, f"step {m['step']}: grad_norm with sparse, float64, complex")
        hist_tensors = {h["tensor"] for h in lines(os.path.join(self.out("mixed"), "histograms.jsonl"))
                        if h["kind"] == "weight_grad"}
        self.assertIn("emb.weight", hist_tensors)  # the sparse gradient, densified
        # Memory: the sparse gradient by what it holds (at most 24 rows of 16), not 50 x 16 dense.
        grads = metrics[-1]["memory"]["gradients"]
        dense_others = sum(p.numel() * p.element_size() for n, p in model.named_parameters() if n != "emb.weight")
        self.assertLess(grads - dense_others, 50 * 16 * 4)
        events = open(os.path.join(self.out("mixed"), "events.log")).read()
        self.assertIn("torch.float64 gradients (lin.weight)", events)
        self.assertIn("sparse gradient", events)


class TestSchedule(Case):
    def test_lr_scheduler_warns_nothing_and_each_step_has_its_lr(self):
        model = make_model(width=32)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda k: 0.5 ** k)  # before the probe
        probe = ampstudio_probe.Probe(model, None, out=self.out("sched"), optimizer=opt)
        used = []
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            for n in range(1, 5):
                x, y = batch(n)
                loss = F.mse_loss(model(x), y)
                loss.backward()
                used.append(opt.param_groups[0]["lr"])
                opt.step()
                sched.step()  # before probe.step: param_groups already holds the next lr
                probe.step(loss, test_loss=0.5 * n, test_accuracy=0.25)
                opt.zero_grad()
        probe.close()
        self.assertEqual([str(w.message) for w in caught if "lr_scheduler" in str(w.message)
                          or "optimizer.step()" in str(w.message)], [])
        metrics = lines(os.path.join(self.out("sched"), "metrics.jsonl"))
        self.assertEqual([m["lr"] for m in metrics], used)
        self.assertEqual([m["test_loss"] for m in metrics], [0.5, 1.0, 1.5, 2.0])
        self.assertEqual({m["test_acc"] for m in metrics}, {0.25})
        cfg = json.load(open(os.path.join(self.out("sched"), "config.json")))
        self.assertEqual(cfg["optimizer"]["lr"], 0.1)  # the schedule's start, not where it ended


def _lightning():
    try:
        import lightning.pytorch as pl
        return pl
    except Exception:  # noqa: BLE001
        return None


class TestLightning(Case):
    def run_trainer(self, name, precision=None, plugins=None, steps=8):
        pl = _lightning()
        if pl is None:
            self.skipTest("lightning is not installed (tests/integration/probe_torch2_tests.py installs it)")
        refs = {}

        class Net(pl.LightningModule):
            def __init__(self):
                super().__init__()
                self.model = make_model(width=64)  # training_step calls it, never self.forward

            def training_step(self, b, i):
                x, y = b
                return F.mse_loss(self.model(x).float(), y)

            def on_before_optimizer_step(self, optimizer):
                # After backward (and unscale_ in fp16), before Lightning clips: PyTorch's figures.
                grads = [p.grad for p in self.parameters()]
                n = self.trainer.global_step + 1
                refs[n] = (f64_norm(grads), all(bool(torch.isfinite(g).all()) for g in grads))

            def configure_optimizers(self):
                return torch.optim.SGD(self.parameters(), lr=1e-2)

        data = [batch(n) for n in range(1, steps + 1)]
        loader = torch.utils.data.DataLoader(data, batch_size=None)
        cb = ampstudio_probe.ProbeCallback(out=self.out(name), histogram_every=0)
        kw = dict(max_epochs=2, accelerator="cpu", devices=1, logger=False, enable_checkpointing=False,
                  enable_progress_bar=False, enable_model_summary=False, gradient_clip_val=1e-3,
                  callbacks=[cb])
        if plugins is not None:
            kw["plugins"] = plugins
        else:
            kw["precision"] = precision
        torch.manual_seed(0)
        pl.Trainer(**kw).fit(Net(), loader)
        metrics = lines(os.path.join(self.out(name), "metrics.jsonl"))
        self.assertEqual(len(metrics), 2 * steps)
        for m in metrics:
            want, finite = refs[m["step"]]
            self.assertClose(m["grad_norm"], want, f"{name} step {m['step']}: grad_norm")
            self.assertEqual(m["skipped"], not finite)
        return json.load(open(os.path.join(self.out(name), "config.json")))["amp"]["mode"]

    def test_bf16_mixed(self):
        self.assertEqual(self.run_trainer("bf16", precision="bf16-mixed"), "bf16")

    def test_fp32(self):
        self.assertEqual(self.run_trainer("fp32", precision="32-true"), "fp32")

    def test_fp16_mixed_with_a_cpu_gradscaler(self):
        pl = _lightning()
        if pl is None:
            self.skipTest("lightning is not installed")
        from lightning.pytorch.plugins import MixedPrecision
        plugin = MixedPrecision("16-mixed", "cpu", scaler=torch.amp.GradScaler("cpu", init_scale=2.0 ** 16))
        self.assertEqual(self.run_trainer("fp16", plugins=[plugin]), "fp16")


if __name__ == "__main__":
    unittest.main()

"""Tests of ampstudio_probe against independent references: hand-computed bins, a pure-Python
binning, hand-computed loss-scale sequences, Adam's own step count, and the C++ sources the
files must match (key names parsed from them here, so a drift fails a test).

    /usr/bin/python3 -m unittest discover -s app/probe/tests -v        (from the repository root)
    AMPSTUDIO_CLI=build/release/app/ampstudio-cli /usr/bin/python3 -m unittest discover -s app/probe/tests -v
"""
import json
import math
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
import unittest
import warnings
from collections import defaultdict

HERE = os.path.dirname(os.path.abspath(__file__))
PROBE_ROOT = os.path.dirname(HERE)
REPO = os.path.dirname(os.path.dirname(PROBE_ROOT))
sys.path.insert(0, PROBE_ROOT)

import torch  # noqa: E402

import ampstudio_probe  # noqa: E402
from ampstudio_probe import histogram as H  # noqa: E402
from ampstudio_probe.config import SCHEMA_KEYS, flatten  # noqa: E402

EXAMPLE = os.path.join(PROBE_ROOT, "examples", "recipe_amp.py")


def read_text(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def read_json(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def cpp(path):
    """A C++ source of the repository, or None in an installed copy without them."""
    p = os.path.join(REPO, path)
    return read_text(p) if os.path.exists(p) else None


def function_body(src, signature):
    start = src.index(signature)
    return src[start:src.index("\n}\n", start)]


def ref_histogram(values, multiplier=1.0):
    """A pure-Python ExponentHistogram::add(v * multiplier) (engine/telemetry/exponent_histogram.cpp)."""
    h = H.Histogram()
    for v in values:
        w = v * multiplier
        h.counts[H.exponent_bin(w)] += 1
        h.total += 1
        a = abs(w)
        if w != w or math.isinf(w):
            h.nonfinite += 1
            h.overflow += w == w
        else:
            h.underflow += a != 0 and a < 2.0 ** -24
            h.subnormal += a != 0 and a < 2.0 ** -14
            h.overflow += a > 65504.0
    return h


def read_lines(path, killed=False):
    """Every line whole and parsed. killed=True: the writer was SIGKILLed, and the kernel stops a
    buffered write between two pages when a fatal signal is pending, so the last line may be cut
    however it was written; the lines before it must all be whole, and AMP Studio's reader drops
    such a last line, saying so (engine/io/run_record.cpp)."""
    with open(path, "rb") as f:
        data = f.read()
    if killed and data and not data.endswith(b"\n"):
        data = data[: data.rfind(b"\n") + 1]
    assert data == b"" or data.endswith(b"\n"), f"{path}: last line without its newline"
    return [json.loads(l) for l in data.decode().splitlines() if l.strip()]


# ---- scalers scripted for the tests ---------------------------------------------------------

class MinimalScaler:
    """The brief's fake: get_scale(), _growth_tracker, a step() that skips on a non-finite
    gradient and update() with PyTorch's rule (float32 scale, growth when the incremented
    tracker equals the interval). No unscale_: the probe must do without it."""

    def __init__(self, init_scale=65536.0, growth_factor=2.0, backoff_factor=0.5, growth_interval=3):
        self._init_scale, self._growth_factor = init_scale, growth_factor
        self._backoff_factor, self._growth_interval = backoff_factor, growth_interval
        self._scale = torch.tensor(init_scale, dtype=torch.float32)
        self._growth_tracker = 0
        self._found_inf = False

    def get_scale(self):
        return float(self._scale)

    def step(self, opt):
        self._found_inf = any(not bool(torch.isfinite(p.grad).all())
                              for g in opt.param_groups for p in g["params"] if p.grad is not None)
        if not self._found_inf:
            opt.step()

    def update(self):
        if self._found_inf:
            self._scale = self._scale * torch.tensor(self._backoff_factor, dtype=torch.float32)
            self._growth_tracker = 0
            return
        self._growth_tracker += 1
        if self._growth_tracker == self._growth_interval:
            grown = (self._scale.double() * self._growth_factor).float()
            if bool(torch.isfinite(grown)):
                self._scale = grown
            self._growth_tracker = 0


class CpuGradScaler(MinimalScaler):
    """torch.cuda.amp.GradScaler's protocol on the CPU (1.13's needs CUDA): unscale_ in place
    with found_inf per device in _per_optimizer_states, step() unscaling unless the user did,
    optimizer.step() skipped on found_inf, update() dropping the per-optimizer state."""

    READY, UNSCALED, STEPPED = 0, 1, 2

    def __init__(self, **kw):
        super().__init__(**kw)
        self._enabled = True
        self._growth_tracker = torch.zeros(1, dtype=torch.int32)
        self._per_optimizer_states = defaultdict(lambda: {"stage": self.READY, "found_inf_per_device": {}})

    def is_enabled(self):
        return True

    def unscale_(self, opt):
        st = self._per_optimizer_states[id(opt)]
        if st["stage"] != self.READY:
            raise RuntimeError("unscale_() has already been called on this optimizer since the last update().")
        inv = self._scale.double().reciprocal().float()
        found = torch.zeros(1)
        for g in opt.param_groups:
            for p in g["params"]:
                if p.grad is not None:
                    if not bool(torch.isfinite(p.grad).all()):
                        found.fill_(1.0)
                    p.grad.mul_(inv)
        st["found_inf_per_device"] = {torch.device("cpu"): found}
        st["stage"] = self.UNSCALED

    def step(self, opt):
        st = self._per_optimizer_states[id(opt)]
        if st["stage"] == self.READY:
            self.unscale_(opt)
        if not sum(v.item() for v in st["found_inf_per_device"].values()):
            opt.step()
        st["stage"] = self.STEPPED

    def update(self):
        found = any(v.item() for st in self._per_optimizer_states.values()
                    for v in st["found_inf_per_device"].values())
        self._found_inf = found
        tracker = int(self._growth_tracker)
        if found:
            self._scale = self._scale * torch.tensor(self._backoff_factor, dtype=torch.float32)
            tracker = 0
        else:
            tracker += 1
            if tracker == self._growth_interval:
                grown = (self._scale.double() * self._growth_factor).float()
                if bool(torch.isfinite(grown)):
                    self._scale = grown
                tracker = 0
        self._growth_tracker = torch.tensor([tracker], dtype=torch.int32)
        self._per_optimizer_states.clear()


def tiny_model(seed=0):
    torch.manual_seed(seed)
    return torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.ReLU(), torch.nn.Linear(8, 4))


def fake_backward(model, scale, inject, step):
    """Gradients as backward of a scaled loss leaves them: fixed values times the scale, with
    +inf in element 0 of the last weight's gradient on injected steps (train.inject_nonfinite)."""
    g = torch.Generator().manual_seed(step)
    for p in model.parameters():
        p.grad = (torch.randn(p.shape, generator=g) * 1e-3).float() * scale
    if step in inject:
        model[-1].weight.grad.view(-1)[0] = float("inf")


# Hand-computed: init 65536, backoff 0.5, growth 2, interval 3, non-finite at steps 3, 4, 10.
EXPECTED_SCALE = [65536, 65536, 65536, 32768, 16384, 16384, 16384, 32768, 32768, 32768, 16384, 16384, 16384, 32768]
EXPECTED_AFTER = [65536, 65536, 32768, 16384, 16384, 16384, 32768, 32768, 32768, 16384, 16384, 16384, 32768, 32768]
EXPECTED_TRACKER = [1, 2, 0, 0, 1, 2, 0, 1, 2, 0, 1, 2, 0, 1]
EXPECTED_SKIPPED = [3, 4, 10]
EXPECTED_EVENTS = {3: "backoff", 4: "backoff", 7: "growth", 10: "backoff", 13: "growth"}


class TmpDirCase(unittest.TestCase):
    def setUp(self):
        self._tmp = tempfile.TemporaryDirectory()
        self.tmp = self._tmp.name

    def tearDown(self):
        self._tmp.cleanup()

    def folder(self, name="run"):
        return os.path.join(self.tmp, name)


# ---- binning -------------------------------------------------------------------------------

class TestBins(unittest.TestCase):
    def test_hand_computed_bins(self):
        cases = {2.0 ** -30: 10, 1.0: 40, -1.0: 40, 1.5: 40, 2.0: 41, 65504.0: 55, 1e-45: 0, 1e-40: 0,
                 2.0 ** -40: 0, 2.0 ** -41: 0, 2.0 ** -39: 1, 2.0 ** 17: 57, 2.0 ** 20: 57, 1e300: 57,
                 0.0: 58, -0.0: 58, math.inf: 59, -math.inf: 59, math.nan: 60}
        for v, b in cases.items():
            self.assertEqual(H.exponent_bin(v), b, v)

    def test_tensor_bins_match_hand_computed(self):
        t = torch.tensor([2.0 ** -30, 1.0, 65504.0, 1e-45, 2.0 ** 20, 0.0, math.inf, math.nan, -2.0, 3e-39])
        h = H.histogram(t)
        expected = [0] * 61
        for b in (10, 40, 55, 0, 57, 58, 59, 60, 41, 0):
            expected[b] += 1
        self.assertEqual(h.counts, expected)
        self.assertEqual(h.total, 10)

    def test_fp16_fractions_hand_made(self):
        # underflow: 2^-25, 1e-45; subnormal adds 2^-20; overflow: 65520, 2^17, inf; nonfinite: inf, nan
        t = torch.tensor([2.0 ** -25, 1e-45, 2.0 ** -20, 2.0 ** -14, 2.0 ** -24, 65504.0, 65520.0, 2.0 ** 17,
                          math.inf, math.nan, 0.0, 1.0])
        h = H.histogram(t)
        self.assertEqual((h.underflow, h.subnormal, h.overflow, h.nonfinite), (2, 4, 3, 2))
        f = h.fractions_json()
        self.assertEqual(f, {"underflow": 2 / 12, "subnormal": 4 / 12, "overflow": 3 / 12, "nonfinite": 2 / 12})

    def test_overflow_edge_is_65504_exactly(self):
        # 65504 fits fp16; the next fp32 value does not; 65504 * 2^-16 scaled back up by 2^16 neither.
        t = torch.tensor([65504.0, float(torch.nextafter(torch.tensor(65504.0), torch.tensor(1e9)))])
        self.assertEqual(H.histogram(t).overflow, 1)
        t2 = t * 2.0 ** -16
        self.assertEqual(H.histogram(t2, 2.0 ** 16).overflow, 1)
        self.assertEqual(H.histogram(t2).overflow, 0)

    def test_fp16_and_bf16_inputs(self):
        h16 = H.histogram(torch.tensor([2.0 ** -24, 6e-8, 2.0 ** -14, 65504.0, math.inf, 0.0], dtype=torch.float16))
        self.assertEqual(h16.counts[16], 2)  # 2^-24 and 6e-8 (rounds to 2^-24): bin -24 + 40
        self.assertEqual(h16.counts[26], 1)
        self.assertEqual(h16.counts[55], 1)
        self.assertEqual((h16.counts[59], h16.counts[58]), (1, 1))
        self.assertEqual((h16.underflow, h16.subnormal, h16.overflow), (0, 2, 1))
        hb = H.histogram(torch.tensor([2.0 ** -100, 2.0 ** 100, 1e-40, 1.0, -3.0, math.nan], dtype=torch.bfloat16))
        self.assertEqual(hb.counts[0], 2)
        self.assertEqual(hb.counts[57], 1)
        self.assertEqual((hb.counts[40], hb.counts[41], hb.counts[60]), (1, 1, 1))
        self.assertEqual((hb.underflow, hb.overflow, hb.nonfinite), (2, 1, 1))

    def test_random_tensors_match_the_python_reference(self):
        torch.manual_seed(1)
        specials = [0.0, -0.0, math.inf, -math.inf, math.nan, 65504.0, 65505.0, 65520.0, 131008.0, 131009.0,
                    2.0 ** -24, 2.0 ** -25, 2.0 ** -14, 1e-45, 1e-40, 2.0 ** -133, 2.0 ** -134, 3e-39,
                    1.1754942e-38, 1.17549435e-38, 2.0 ** 127 * 1.99, 2.0 ** 20]
        for dt in (torch.float32, torch.float16, torch.bfloat16):
            t = torch.cat([torch.randn(3000) * torch.exp2(torch.randint(-60, 40, (3000,)).float()),
                           torch.tensor(specials)]).to(dt)
            if dt == torch.float32:  # NaNs whose payload is only in the low 16 bits, and -nan
                t = torch.cat([t, torch.tensor([0x7F800001, 0x7FFFFFFF, -1], dtype=torch.int32).view(torch.float32)])
            values = t.double().tolist()
            for shift in (0, 16, -16, 1, -1, -30, 100, -100, 142):
                with self.subTest(dtype=dt, shift=shift):
                    self.assertEqual(H.exponent_counts(t).histogram(shift), ref_histogram(values, 2.0 ** shift))
            for m in (1 / 3, 65536 * 1.5, 1e-3):  # not powers of two: the float64 path
                with self.subTest(dtype=dt, multiplier=m):
                    self.assertEqual(H.histogram(t, m), ref_histogram(values, m))

    def test_unscaled_is_scaled_shifted_by_log2_scale(self):
        torch.manual_seed(2)
        g = torch.randn(10000) * 1e-4 * 65536  # scaled gradients, all well inside the bins
        scaled, unscaled = H.histogram_pair(g, 1 / 65536)
        self.assertEqual(sum(scaled.counts), sum(unscaled.counts))
        for k in range(61 - 3):
            if 16 <= k + 16 < 58 and k > 0:
                self.assertEqual(unscaled.counts[k], scaled.counts[k + 16], k)
        self.assertEqual(unscaled, ref_histogram(g.double().tolist(), 2.0 ** -16))


# ---- skipped steps and the scale sequence ------------------------------------------------

class TestSkipDetection(TmpDirCase):
    def run_fake(self, scaler, optimizer_kind="sgd", give_optimizer=True, steps=14, inject=(3, 4, 10),
                 explicit_unscale=False, scaled_grads=True):
        model = tiny_model()
        opt = (torch.optim.AdamW(model.parameters(), lr=1e-3) if optimizer_kind == "adamw"
               else torch.optim.SGD(model.parameters(), lr=0.1))
        probe = ampstudio_probe.Probe(model, scaler, out=self.folder(), optimizer=opt if give_optimizer else None,
                                      histogram_every=5, batch_size=32)
        records = []
        for step in range(1, steps + 1):
            fake_backward(model, scaler.get_scale() if scaled_grads else 1.0, inject, step)
            if explicit_unscale:
                scaler.unscale_(opt)
                torch.nn.utils.clip_grad_norm_(model.parameters(), 1e-9)  # after unscale_, before step
            scaler.step(opt)
            scaler.update()
            records.append(probe.step(torch.tensor(1.0 / step), injected=step in inject))
            opt.zero_grad()
        probe.close()
        return model, opt, records, read_lines(os.path.join(self.folder(), "metrics.jsonl"))

    def check_sequence(self, lines):
        self.assertEqual([l["scale"] for l in lines], EXPECTED_SCALE)
        self.assertEqual([l["scale_after"] for l in lines], EXPECTED_AFTER)
        self.assertEqual([l["growth_tracker"] for l in lines], EXPECTED_TRACKER)
        self.assertEqual([l["step"] for l in lines if l["skipped"]], EXPECTED_SKIPPED)
        self.assertEqual({l["step"]: l["scale_event"] for l in lines if "scale_event" in l}, EXPECTED_EVENTS)

    def test_minimal_scaler_with_optimizer_count(self):
        _, _, _, lines = self.run_fake(MinimalScaler(), scaled_grads=False)
        self.check_sequence(lines)

    def test_minimal_scaler_without_optimizer_falls_back_to_the_scale(self):
        _, _, _, lines = self.run_fake(MinimalScaler(), give_optimizer=False, scaled_grads=False)
        self.check_sequence(lines)

    def test_gradscaler_protocol_and_adam_step_count(self):
        _, opt, _, lines = self.run_fake(CpuGradScaler(), optimizer_kind="adamw")
        self.check_sequence(lines)
        # Adam counts the updates it made: an independent record of the steps that ran.
        adam_steps = {int(s["step"]) for s in opt.state.values()}
        self.assertEqual(adam_steps, {14 - len(EXPECTED_SKIPPED)})
        events = read_text(os.path.join(self.folder(), "events.log")).splitlines()
        self.assertIn("step 3: non-finite gradient in 2.weight (injected) \u2014 step skipped, scale 65536 \u2192 32768", events)
        self.assertIn("step 7: 3 clean steps \u2014 scale 16384 \u2192 32768", events)
        self.assertFalse(any("probe:" in e for e in events), events)  # the signals agreed

    def test_gradscaler_protocol_without_the_optimizer_uses_found_inf(self):
        _, _, _, lines = self.run_fake(CpuGradScaler(), give_optimizer=False)
        self.check_sequence(lines)

    def test_grad_norms_scaled_and_unscaled(self):
        _, _, recs, lines = self.run_fake(CpuGradScaler(), inject=())
        for step, (r, l) in enumerate(zip(recs, lines), 1):
            model = tiny_model()
            fake_backward(model, 1.0, (), step)
            true = math.sqrt(sum(float((p.grad.double() ** 2).sum()) for p in model.parameters()))
            self.assertAlmostEqual(l["grad_norm"], true, delta=true * 1e-6)
            self.assertAlmostEqual(l["grad_norm_scaled"], true * r.scale, delta=true * r.scale * 1e-6)

    def test_explicit_unscale_and_clipping_keep_the_pre_clip_norm(self):
        _, _, _, lines = self.run_fake(CpuGradScaler(), explicit_unscale=True)
        self.check_sequence(lines)
        self.assertTrue(all(l["grad_norm"] == "inf" for l in lines if l["skipped"]))
        self.assertTrue(all(isinstance(l["grad_norm"], float) and l["grad_norm"] > 1e-4
                            for l in lines if not l["skipped"]))  # not the 1e-9 clip

    def test_histograms_scaled_and_unscaled_sides(self):
        scaler = CpuGradScaler()
        _, _, _, lines = self.run_fake(scaler, inject=(), steps=5)
        self.assertEqual([l["scale"] for l in lines], [65536, 65536, 65536, 131072, 131072])  # growth at 3
        hists = read_lines(os.path.join(self.folder(), "histograms.jsonl"))
        self.assertEqual(sorted({h["step"] for h in hists}), [1, 5])
        # The weights' own lines: every parameter at each histogram step, never scaled.
        weights = [h for h in hists if h["kind"] == "weight"]
        self.assertEqual(sorted((h["step"], h["tensor"]) for h in weights),
                         sorted((s, n) for s in (1, 5) for n, _ in tiny_model().named_parameters()))
        for h in weights:
            self.assertEqual(h["scaled"], h["unscaled"])
            self.assertEqual(sum(h["scaled"]), dict(tiny_model().named_parameters())[h["tensor"]].numel())
        for h in hists:
            if h["kind"] != "weight_grad":
                continue
            step = h["step"]
            model = tiny_model()
            fake_backward(model, 1.0, (), step)
            g = dict(model.named_parameters())[h["tensor"]].grad
            scale = lines[step - 1]["scale"]
            # What was held: the gradient times the scale (exact: a power of two); and back.
            self.assertEqual(h["scaled"], ref_histogram((g.double() * scale).reshape(-1).tolist()).counts)
            self.assertEqual(h["unscaled"], ref_histogram(g.double().reshape(-1).tolist()).counts)

    def test_growth_limit_and_consecutive_skips(self):
        scaler = CpuGradScaler(init_scale=2.0 ** 127, growth_interval=2)
        _, _, _, lines = self.run_fake(scaler, inject=(5, 6, 7), steps=9)
        self.assertEqual([l["step"] for l in lines if l["skipped"]], [5, 6, 7])
        self.assertEqual([l.get("scale_event", "") for l in lines],
                         ["", "growth_rejected", "", "growth_rejected", "backoff", "backoff", "backoff", "", "growth"])
        self.assertEqual(lines[1]["scale"], lines[1]["scale_after"])

    def test_disabled_and_absent_scalers(self):
        for scaler in (None, torch.cuda.amp.GradScaler(enabled=False)):
            with self.subTest(scaler=type(scaler).__name__):
                model = tiny_model()
                opt = torch.optim.SGD(model.parameters(), lr=0.1)
                with ampstudio_probe.Probe(model, scaler, out=self.folder(), optimizer=opt, overwrite=True) as probe:
                    for step in range(1, 4):
                        fake_backward(model, 1.0, (2,), step)
                        if scaler is not None:
                            scaler.step(opt)
                            scaler.update()
                        else:
                            opt.step()
                        probe.step(1.0, injected=step == 2)
                lines = read_lines(os.path.join(self.folder(), "metrics.jsonl"))
                self.assertEqual([(l["scale"], l["skipped"]) for l in lines], [(1.0, False)] * 3)
                self.assertEqual(lines[1]["grad_norm"], "inf")
                cfg = read_json(os.path.join(self.folder(), "config.json"))
                self.assertEqual(cfg["scaler"]["enabled"], "false")
                events = read_text(os.path.join(self.folder(), "events.log"))
                self.assertIn("step 2: non-finite gradient injected, but this scaler never skips", events)

    def test_lr_scheduler_before_and_after_the_probe(self):
        for order in ("before", "after"):
            with self.subTest(order=order):
                model = tiny_model()
                opt = torch.optim.SGD(model.parameters(), lr=1.0)
                sched = torch.optim.lr_scheduler.StepLR(opt, 1, gamma=0.5) if order == "before" else None
                probe = ampstudio_probe.Probe(model, MinimalScaler(), out=self.folder(), optimizer=opt, overwrite=True)
                if sched is None:
                    sched = torch.optim.lr_scheduler.StepLR(opt, 1, gamma=0.5)
                scaler = probe.scaler
                with warnings.catch_warnings():
                    warnings.simplefilter("error")  # "lr_scheduler.step() before optimizer.step()"
                    for step in range(1, 4):
                        fake_backward(model, 1.0, (), step)
                        scaler.step(opt)
                        scaler.update()
                        probe.step(1.0)
                        sched.step()
                probe.close()
                lines = read_lines(os.path.join(self.folder(), "metrics.jsonl"))
                self.assertEqual([l["lr"] for l in lines], [1.0, 0.5, 0.25])
                self.assertFalse(any(l["skipped"] for l in lines))
                # After close the wrapper is gone (or, under the scheduler's, passes calls through).
                opt.step()
                sched.step()
                self.assertEqual(probe._hooks.signals.opt_calls, 0)
                if order == "before":  # the scheduler's mark is back (1.x: _with_counter, 2.x: _wrapped_by_lr_sched)
                    self.assertTrue(getattr(opt.step, "_with_counter", False) or
                                    getattr(opt.step, "_wrapped_by_lr_sched", False))

    def test_config_lr_is_where_the_schedule_starts(self):
        # config.json's optimizer.lr is the run's starting lr, as AMP Studio's is: not the lr a
        # warm-up had already applied when the probe was made (param_groups' "lr"; the scheduler
        # keeps the start as "initial_lr"), nor where a decay done by hand had taken it at close.
        for how in ("warm-up", "by hand"):
            with self.subTest(how=how):
                model = tiny_model()
                opt = torch.optim.SGD(model.parameters(), lr=1.0)
                sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda k: (k + 1) / 4) if how == "warm-up" else None
                used = []
                with ampstudio_probe.Probe(model, None, out=self.folder(), optimizer=opt, overwrite=True) as probe:
                    for step in range(1, 4):
                        fake_backward(model, 1.0, (), step)
                        used.append(opt.param_groups[0]["lr"])
                        opt.step()
                        probe.step(1.0)
                        if sched is not None:
                            sched.step()
                        else:
                            for g in opt.param_groups:
                                g["lr"] *= 0.5
                lines = read_lines(os.path.join(self.folder(), "metrics.jsonl"))
                self.assertEqual([l["lr"] for l in lines], used)  # each step's own lr
                self.assertEqual(used, [0.25, 0.5, 0.75] if sched is not None else [1.0, 0.5, 0.25])
                cfg = read_json(os.path.join(self.folder(), "config.json"))
                self.assertEqual(cfg["optimizer"]["lr"], 1.0)


# ---- the files ---------------------------------------------------------------------------

def schema_keys(src):
    keys = set(re.findall(r'(?:intKey|numKey|boolKey|strKey|choiceKey|listKey)\("([^"]+)"', src))
    keys |= set(re.findall(r'push_back\(\{"([^"]+)"', src))
    return keys


def schema_choices(src):
    out = {}
    for m in re.finditer(r'choiceKey\("([^"]+)", "(?:[^"\\]|\\.)*", \{([^}]*)\}', src):
        out[m.group(1)] = re.findall(r'"([^"]*)"', m.group(2))
    for m in re.finditer(r'push_back\(\{"([^"]+)", "choice", "(?:[^"\\]|\\.)*",\s*\{([^}]*)\}', src):
        out[m.group(1)] = re.findall(r'"([^"]*)"', m.group(2))
    return out


class TestRunFolder(TmpDirCase):
    def record(self, steps=6, **kw):
        model = tiny_model()
        opt = torch.optim.Adam(model.parameters(), lr=1e-3, betas=(0.8, 0.99), weight_decay=0.01)
        x, y = torch.randn(16, 8), torch.randn(16, 4)
        probe = ampstudio_probe.Probe(model, None, out=self.folder(), optimizer=opt, batch_size=16,
                                      histogram_every=3, seed=7, **kw)
        for _ in range(steps):
            with torch.autocast("cpu", dtype=torch.bfloat16):
                loss = torch.nn.functional.mse_loss(model(x), y)
            loss.backward()
            opt.step()
            probe.step(loss)
            opt.zero_grad()
        probe.close()
        return probe

    def test_config_keys_exist_in_the_cpp_schema(self):
        src = cpp("engine/config/config_schema.cpp")
        if src is None:
            self.skipTest("no engine/config/config_schema.cpp beside this copy")
        parsed = schema_keys(src)
        # Every key the probe writes or lets a user set must be one the reader knows. (Keys the
        # C++ has and the probe does not, e.g. newer ones, only make config= refuse them.)
        self.assertLessEqual(SCHEMA_KEYS, parsed, "config.SCHEMA_KEYS has keys config_schema.cpp lacks")
        self.record(config={"model.name": "recipe_mlp", "model": {"width": 8}, "train.inject_nonfinite": [2]})
        cfg = read_json(os.path.join(self.folder(), "config.json"))
        self.assertEqual(cfg["format_version"], 1)
        flat = flatten(cfg)
        for k in flat:
            if k != "format_version":
                self.assertIn(k, parsed, f"config.json key {k} would be refused")
        choices = schema_choices(src)
        for k, v in flat.items():
            if k in choices and isinstance(v, str):
                self.assertIn(v, choices[k], f"{k}={v} is not one of the reader's choices")
        self.assertEqual(flat["amp.mode"], "bf16")  # seen in autocast, not given
        self.assertEqual(flat["model.name"], "recipe_mlp")
        self.assertEqual(flat["model.width"], 8)
        self.assertEqual(flat["data.name"], "external")
        self.assertEqual((flat["optimizer.name"], flat["optimizer.beta1"], flat["optimizer.weight_decay"]),
                         ("adam", 0.8, 0.01))
        self.assertEqual((flat["train.batch_size"], flat["train.histogram_every"], flat["seed"], flat["train.steps"]),
                         (16, 3, 7, 6))

    def test_external_default_and_refused_keys(self):
        with self.assertRaises(ValueError):
            ampstudio_probe.Probe(tiny_model(), None, out=self.folder(), config={"model.colour": "red"})
        self.assertFalse(os.path.exists(os.path.join(self.folder(), "metrics.jsonl")))
        self.record()
        cfg = read_json(os.path.join(self.folder(), "config.json"))
        self.assertEqual((cfg["model"]["name"], cfg["data"]["name"]), ("external", "external"))

    def test_metrics_lines_whole_and_keyed_like_the_cpp(self):
        self.record()
        lines = read_lines(os.path.join(self.folder(), "metrics.jsonl"))
        self.assertEqual([l["step"] for l in lines], list(range(1, 7)))
        src = cpp("engine/io/metrics_json.cpp")
        mem = cpp("engine/core/memory_tracker.h")
        if src is None or mem is None:
            self.skipTest("no C++ sources beside this copy")
        writer_keys = set(re.findall(r'o\["(\w+)"\]', function_body(src, "QJsonObject stepMetricsToJson(")))
        always = {"step", "epoch", "loss", "scale", "scale_after", "growth_tracker", "skipped", "grad_norm", "lr",
                  "step_ms", "samples_per_s", "gemm_gflops", "memory", "memory_peak", "lost_update_frac"}
        self.assertLessEqual(always, writer_keys)
        categories = re.findall(r'"(\w+)"', re.search(r'names\[kMemCategoryCount\] = \{([^}]*)\}', mem).group(1))
        for l in lines:
            self.assertLessEqual(always, set(l))
            self.assertLessEqual(set(l) - {"grad_norm_scaled"}, writer_keys)
            self.assertEqual(set(l["memory_peak"]), set(categories) | {"total"})
            self.assertGreater(l["memory"]["master_weights"], 0)  # autocast: fp32 params are the masters
            self.assertEqual(l["memory"]["total"], sum(l["memory"][c] for c in categories))
            self.assertGreater(l["samples_per_s"], 0)

    def test_fast_line_equals_the_dict(self):
        from ampstudio_probe.records import LineWriter, Memory, StepRecord
        w = LineWriter()
        mem = Memory(total=5, total_peak=7, device_total=100, device_free=40)
        mem.current["gradients"] = 5
        for rec in (StepRecord(step=1, loss=0.25, scale=65536.0, scale_after=32768.0, skipped=True,
                               scale_event="backoff", grad_norm=math.inf, grad_norm_scaled=math.nan,
                               lr=1e-3, step_ms=7.5, samples_per_s=1e5, memory=mem, first_nonfinite="2.weight",
                               injected=True, post_unscale_overflow=True),
                    StepRecord(step=2, epoch=3, loss=-math.inf, growth_tracker=4, lr=0.1, memory=mem),
                    StepRecord(step=3, loss=1e-300, scale=2.0 ** -20, scale_after=2.0 ** 127)):
            line = w.line(rec)
            self.assertTrue(line.endswith(b"\n") and line.count(b"\n") == 1)
            self.assertEqual(json.loads(line), rec.to_json())

    def test_histogram_lines_as_the_reader_wants_them(self):
        self.record(activations=True)
        hists = read_lines(os.path.join(self.folder(), "histograms.jsonl"))
        dtype_src, kind_src = cpp("engine/core/dtype.h"), cpp("engine/train/histogram_recorder.cpp")
        dtypes = set(re.findall(r'case DType::\w+: return "(\w+)"', dtype_src)) if dtype_src else {"fp32", "fp16", "bf16"}
        kinds = set(re.findall(r'return "(\w+)"', function_body(kind_src, "histogramKindName("))) if kind_src else \
            {"weight_grad", "activation_grad", "activation"}
        self.assertEqual({h["step"] for h in hists}, {1, 3, 6})
        seen = {(h["kind"], h["dtype"]) for h in hists}
        self.assertEqual(seen, {("weight_grad", "fp32"), ("activation", "bf16"), ("activation_grad", "bf16"),
                                ("weight", "fp32")})
        for h in hists:
            self.assertIn(h["dtype"], dtypes)
            self.assertIn(h["kind"], kinds)
            self.assertEqual((h["min_exp"], h["max_exp"]), (-40, 17))
            for side in ("scaled", "unscaled"):
                self.assertEqual(len(h[side]), 61)
                self.assertTrue(all(isinstance(c, int) and c >= 0 for c in h[side]))
                for f in h[side + "_fractions"].values():
                    self.assertTrue(0 <= f <= 1)
        names = {h["tensor"] for h in hists if h["kind"] == "weight_grad"}
        self.assertEqual(names, {"0.weight", "0.bias", "2.weight", "2.bias"})

    def test_summary_has_the_cpp_keys(self):
        probe = self.record()
        s = read_json(os.path.join(self.folder(), "summary.json"))
        src = cpp("engine/io/run_output.cpp")
        if src is not None:
            keys = set(re.findall(r'o\["(\w+)"\] = (?!s\.final_test|s\.divergence)', function_body(src, "QJsonObject runSummaryToJson(")))
            required = {k for k in keys if k not in ("final_test_loss", "final_test_acc", "divergence",
                                                     "checkpoint_bytes", "weights_bytes", "weights_dtype")}
            self.assertLessEqual(required, set(s))
        self.assertEqual((s["status"], s["steps"], s["name"]), ("finished", 6, "run"))
        self.assertEqual(s["source"]["kind"], "pytorch-probe")
        self.assertEqual(s["source"]["format_version"], 1)
        self.assertEqual(s["source"]["optimizer_class"], "Adam")
        self.assertAlmostEqual(s["source"]["probe_overhead_ms_per_step"], probe.overhead_ms_per_step())
        self.assertFalse(any(n.endswith(".tmp") or n == ".ampstudio.lock" for n in os.listdir(self.folder())))

    def test_refuses_a_folder_holding_a_run(self):
        self.record()
        with self.assertRaises(FileExistsError):
            ampstudio_probe.Probe(tiny_model(), None, out=self.folder())
        self.record(overwrite=True)

    def test_exception_marks_the_run_failed(self):
        model = tiny_model()
        with self.assertRaises(ZeroDivisionError):
            with ampstudio_probe.Probe(model, None, out=self.folder()) as probe:
                probe.step(1.0)
                1 / 0
        self.assertEqual(read_json(os.path.join(self.folder(), "summary.json"))["status"], "failed")

    def test_killed_process_leaves_whole_lines(self):
        script = (
            "import sys, torch; sys.path.insert(0, %r)\n"
            "import ampstudio_probe\n"
            "m = torch.nn.Linear(64, 64); o = torch.optim.SGD(m.parameters(), lr=0.1)\n"
            "p = ampstudio_probe.Probe(m, None, out=%r, optimizer=o, histogram_every=1)\n"
            "while True:\n"
            "    m(torch.randn(4, 64)).sum().backward(); o.step(); p.step(1.0); o.zero_grad()\n"
        ) % (PROBE_ROOT, self.folder())
        proc = subprocess.Popen([sys.executable, "-c", script])
        metrics = os.path.join(self.folder(), "metrics.jsonl")
        deadline = time.time() + 60
        while time.time() < deadline:
            if os.path.exists(metrics) and os.path.getsize(metrics) > 20000:
                break
            time.sleep(0.05)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        lines = read_lines(metrics, killed=True)  # every line whole but perhaps the one being written
        self.assertGreater(len(lines), 10)
        self.assertEqual([l["step"] for l in lines], list(range(1, len(lines) + 1)))
        read_lines(os.path.join(self.folder(), "histograms.jsonl"), killed=True)
        self.assertFalse(os.path.exists(os.path.join(self.folder(), "summary.json")))


class TestLightningCallback(TmpDirCase):
    def test_steps_once_per_optimizer_step(self):
        model = tiny_model()
        opt = torch.optim.SGD(model.parameters(), lr=0.1)

        class Trainer:  # the attributes ProbeCallback reads
            optimizers = [opt]
            accumulate_grad_batches = 2
            current_epoch = 0

        cb = ampstudio_probe.ProbeCallback(out=self.folder(), batch_size=8)
        trainer = Trainer()
        cb.on_train_start(trainer, model)
        for i in range(6):
            fake_backward(model, 1.0, (), i + 1)
            if i % 2 == 1:
                opt.step()
            cb.on_train_batch_end(trainer, model, {"loss": torch.tensor(0.5)}, None, i)
        cb.on_train_end(trainer, model)
        lines = read_lines(os.path.join(self.folder(), "metrics.jsonl"))
        self.assertEqual([(l["step"], l["loss"], l["skipped"]) for l in lines], [(1, 0.5, False), (2, 0.5, False), (3, 0.5, False)])


# ---- the example ---------------------------------------------------------------------------

class TestExample(TmpDirCase):
    def test_cpu_bf16_run_writes_a_folder(self):
        out = self.folder("recipe")
        r = subprocess.run([sys.executable, EXAMPLE, "--out", out, "--steps", "6", "--width", "64", "--batch", "16",
                            "--mode", "bf16", "--histogram-every", "3", "--inject-nonfinite", "4"],
                           capture_output=True, text=True, timeout=300)
        self.assertEqual(r.returncode, 0, r.stderr)
        for n in ("config.json", "metrics.jsonl", "histograms.jsonl", "events.log", "summary.json"):
            self.assertTrue(os.path.exists(os.path.join(out, n)), n)
        lines = read_lines(os.path.join(out, "metrics.jsonl"))
        self.assertEqual(len(lines), 6)
        self.assertTrue(lines[3]["injected"])
        self.assertEqual(lines[3]["grad_norm"], "inf")
        cfg = read_json(os.path.join(out, "config.json"))
        self.assertEqual((cfg["amp"]["mode"], cfg["model"]["name"], cfg["model"]["width"]), ("bf16", "recipe_mlp", 64))

    def test_cpu_fp32_run(self):
        out = self.folder("fp32")
        r = subprocess.run([sys.executable, EXAMPLE, "--out", out, "--steps", "3", "--width", "32", "--batch", "8",
                            "--mode", "fp32"], capture_output=True, text=True, timeout=300)
        self.assertEqual(r.returncode, 0, r.stderr)
        cfg = read_json(os.path.join(out, "config.json"))
        self.assertEqual(cfg["amp"]["mode"], "fp32")
        self.assertEqual(read_lines(os.path.join(out, "metrics.jsonl"))[0]["memory"]["weights"], 3 * (32 * 32 + 32) * 4)

    @unittest.skipIf(torch.cuda.is_available() or hasattr(torch.amp, "GradScaler"), "fp16 runs here")
    def test_cpu_fp16_is_refused_with_a_reason(self):
        r = subprocess.run([sys.executable, EXAMPLE, "--out", self.folder(), "--steps", "2", "--mode", "fp16"],
                           capture_output=True, text=True, timeout=120)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("needs PyTorch 2.3+", r.stderr)


# ---- AMP Studio reads it back --------------------------------------------------------------

@unittest.skipUnless(os.environ.get("AMPSTUDIO_CLI"), "set AMPSTUDIO_CLI to the built ampstudio-cli")
class TestAmpStudioReadsIt(TmpDirCase):
    def test_export_equals_what_the_probe_recorded(self):
        cli = os.environ["AMPSTUDIO_CLI"]
        out = self.folder("recipe")
        subprocess.run([sys.executable, EXAMPLE, "--out", out, "--steps", "8", "--width", "32", "--batch", "8",
                        "--histogram-every", "4", "--inject-nonfinite", "5", "--activations"],
                       check=True, capture_output=True, timeout=300)
        for folder, scaler in ((out, None), (self.folder(), CpuGradScaler())):
            if scaler is not None:  # a scaled run with skips, histograms of both sides
                TestSkipDetection.run_fake(self, scaler)
            r = subprocess.run([cli, "export", "--run", folder, "--format", "json"], capture_output=True, text=True,
                               timeout=120)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertNotIn("warning", r.stderr)
            run = json.loads(r.stdout)["runs"][0]
            lines = read_lines(os.path.join(folder, "metrics.jsonl"))
            cols = run["metrics"]
            self.assertEqual(cols["step"], [l["step"] for l in lines])
            self.assertEqual(cols["loss"], [l["loss"] for l in lines])
            self.assertEqual(cols["scale"], [l["scale"] for l in lines])
            self.assertEqual(cols["scale_after"], [l["scale_after"] for l in lines])
            self.assertEqual(cols["skipped"], [int(l["skipped"]) for l in lines])
            self.assertEqual(cols["grad_norm"], [l["grad_norm"] for l in lines])
            self.assertEqual(run["status"], "finished")
            self.assertEqual(run["config"]["model"]["name"], "recipe_mlp" if scaler is None else "external")


if __name__ == "__main__":
    unittest.main()

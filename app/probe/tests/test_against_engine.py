"""The probe against AMP Studio's own engine: the recipe MLP run by `ampstudio-cli run` (fp16,
dynamic scaling, overflows injected at steps 5, 6 and 20, growth every 5 clean steps) and the same
recipe trained by PyTorch with the probe (GradScaler's protocol on the CPU, the same injections),
both read back by `ampstudio-cli export --format json` as the app reads them: the scale, the scale
after the update, the growth tracker and the skipped steps agree step for step, and the
histograms come at the same steps for the same tensors in the same bins. Needs AMPSTUDIO_CLI (the
built ampstudio-cli); skipped without it.
"""
import json
import os
import subprocess
import sys
import tempfile
import unittest

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
sys.path.insert(0, HERE)
import ampstudio_probe  # noqa: E402
from test_probe import CpuGradScaler  # noqa: E402

CLI = os.environ.get("AMPSTUDIO_CLI")
WIDTH, BATCH, STEPS, INJECT, EVERY, INTERVAL = 32, 16, 40, (5, 6, 20), 10, 5


def export_json(folder):
    """The run as `ampstudio-cli export --format json` gives it: one array per metrics column."""
    out = subprocess.run([CLI, "export", "--run", folder, "--format", "json"], check=True, capture_output=True).stdout
    return json.loads(out)["runs"][0]


def column(run, key):
    return run["metrics"][key]


@unittest.skipUnless(CLI and os.access(CLI, os.X_OK), "AMPSTUDIO_CLI (the built ampstudio-cli) is not set")
class TestAgainstTheEngine(unittest.TestCase):
    def setUp(self):
        self._tmp = tempfile.TemporaryDirectory()
        self.tmp = self._tmp.name

    def tearDown(self):
        self._tmp.cleanup()

    def engine_run(self):
        out = os.path.join(self.tmp, "engine")
        sets = [f"model.width={WIDTH}", "model.layers=3", f"train.batch_size={BATCH}", f"train.steps={STEPS}",
                "amp.mode=fp16", f"scaler.growth_interval={INTERVAL}",
                "train.inject_nonfinite=" + ",".join(map(str, INJECT)), f"train.histogram_every={EVERY}"]
        subprocess.run([CLI, "run", "--out", out, "--quiet"] + [a for s in sets for a in ("--set", s)],
                       check=True, capture_output=True)
        return out

    def probe_run(self):
        out = os.path.join(self.tmp, "probe")
        torch.manual_seed(0)
        model = torch.nn.Sequential(torch.nn.Linear(WIDTH, WIDTH), torch.nn.ReLU(), torch.nn.Linear(WIDTH, WIDTH),
                                    torch.nn.ReLU(), torch.nn.Linear(WIDTH, WIDTH))
        opt = torch.optim.SGD(model.parameters(), lr=1e-3)
        scaler = CpuGradScaler(growth_interval=INTERVAL)
        xs = [torch.randn(BATCH, WIDTH) for _ in range(10)]
        ys = [torch.randn(BATCH, WIDTH) for _ in range(10)]
        with ampstudio_probe.Probe(model, scaler, out=out, optimizer=opt, histogram_every=EVERY,
                                   batch_size=BATCH, config={"amp.mode": "fp16"}) as probe:
            for step in range(1, STEPS + 1):
                loss = torch.nn.functional.mse_loss(model(xs[step % 10]), ys[step % 10])
                (loss * scaler.get_scale()).backward()
                if step in INJECT:
                    model[4].weight.grad.view(-1)[0] = float("inf")
                scaler.step(opt)
                scaler.update()
                probe.step(loss)
                opt.zero_grad(set_to_none=True)
        return out

    def lines(self, folder, name):
        with open(os.path.join(folder, name)) as f:
            return [json.loads(l) for l in f if l.strip()]

    def test_scale_sequences_and_histogram_bins_agree(self):
        engine, probe = self.engine_run(), self.probe_run()
        a, b = export_json(engine), export_json(probe)
        for key in ("scale", "scale_after", "growth_tracker", "skipped"):
            self.assertEqual(column(a, key), column(b, key), key)
        self.assertEqual([i + 1 for i, s in enumerate(column(b, "skipped")) if s], list(INJECT))
        # Histograms: the same steps, the same weight-gradient tensors, the same bin layout.
        ha = [h for h in self.lines(engine, "histograms.jsonl") if h["kind"] == "weight_grad"]
        hb = [h for h in self.lines(probe, "histograms.jsonl") if h["kind"] == "weight_grad"]
        self.assertEqual(sorted({(h["step"], h["tensor"]) for h in ha}), sorted({(h["step"], h["tensor"]) for h in hb}))
        for h in ha + hb:
            self.assertEqual((h["min_exp"], h["max_exp"], len(h["scaled"]), len(h["unscaled"])), (-40, 17, 61, 61))
        # The injected inf lands in the inf bin of 4.weight's scaled gradient in both at step 20.
        for hs in (ha, hb):
            (h20,) = [h for h in hs if h["step"] == 20 and h["tensor"] == "4.weight"]
            self.assertEqual(h20["scaled"][59], 1)


if __name__ == "__main__":
    unittest.main()

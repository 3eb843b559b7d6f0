"""The CLI's promises about its output folder, held by the probe too (issue 40): check first,
claim, and never lose the old run. An earlier run is replaced only once the new one records a
step; a FIFO where a run file goes is refused instead of hanging; config values the app would
refuse (seed=-1, a width that is no number) are refused at construction, not after the whole run;
a run killed past its planned train.steps does not read as "150/100"; the folder is claimed by
the lock file at its path, as the CLI claims it. Runs under Debian's PyTorch and a current one
alike (no GradScaler needed).
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import unittest
from unittest import mock

try:
    import fcntl
except ImportError:  # Windows: no flock
    fcntl = None

HERE = os.path.dirname(os.path.abspath(__file__))
PACKAGE = os.environ.get("AMPSTUDIO_PROBE_PATH") or os.path.dirname(HERE)
sys.path.insert(0, PACKAGE)

import torch  # noqa: E402

import ampstudio_probe  # noqa: E402


def snapshot(folder):
    out = {}
    for n in sorted(os.listdir(folder)):
        p = os.path.join(folder, n)
        if os.path.isfile(p) and not n.startswith("."):
            with open(p, "rb") as f:
                out[n] = f.read()
    return out


class FolderCase(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="probe-folder-")

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def record(self, out, steps=3, **kw):
        torch.manual_seed(0)
        model = torch.nn.Linear(4, 2)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        with ampstudio_probe.Probe(model, None, out=out, optimizer=opt, histogram_every=0, **kw) as probe:
            for _ in range(steps):
                loss = model(torch.randn(8, 4)).pow(2).mean()
                loss.backward()
                opt.step()
                probe.step(loss)
                opt.zero_grad()
        return out

    def test_overwrite_keeps_the_old_run_until_the_new_one_records_a_step(self):
        out = self.record(os.path.join(self.tmp, "run"), steps=4)
        before = snapshot(out)
        # A wrong argument: refused before anything is touched.
        with self.assertRaises(ValueError):
            self.record(out, overwrite=True, config={"seed": -1})
        self.assertEqual(snapshot(out), before)
        # A script that dies before its first step (a bad batch, Ctrl-C while loading data).
        model = torch.nn.Linear(4, 2)
        with self.assertRaises(RuntimeError):
            with ampstudio_probe.Probe(model, None, out=out, overwrite=True, histogram_every=0):
                raise RuntimeError("the data loader failed")
        self.assertEqual(snapshot(out), before)  # today's code: emptied metrics, no summary
        # One that records: replaced.
        self.record(out, steps=2, overwrite=True)
        self.assertEqual(len(open(os.path.join(out, "metrics.jsonl")).read().splitlines()), 2)

    def test_values_the_app_would_refuse_are_refused_at_construction(self):
        for bad in ({"seed": -1}, {"model.width": "wide"}, {"train.steps": 2.5}, {"optimizer.lr": "fast"},
                    {"tf32": "maybe"}, {"model.name": "transformer"}):
            with self.subTest(config=bad):
                out = os.path.join(self.tmp, "bad")
                with self.assertRaises(ValueError) as ctx:
                    self.record(out, config=bad)
                self.assertIn(next(iter(bad)), str(ctx.exception))
                self.assertFalse(os.path.exists(os.path.join(out, "config.json")))
        with self.assertRaises(ValueError):
            self.record(os.path.join(self.tmp, "bad-seed"), seed=-1)
        self.record(os.path.join(self.tmp, "good"), config={"seed": 2 ** 64 - 1, "model.width": 512})

    def test_the_value_kinds_are_the_cpp_schemas(self):
        # config.py's kinds and choices against config_schema.cpp, so the probe refuses exactly
        # what the reader refuses (a key moved to another kind there fails here).
        import re
        from ampstudio_probe import config as cfg
        src = open(os.path.join(HERE, "..", "..", "..", "engine", "config", "config_schema.cpp")).read()
        kinds = {}
        for kind in ("intKey", "numKey", "boolKey", "strKey", "listKey", "choiceKey"):
            for k in re.findall(kind + r'\("([^"]+)"', src):
                kinds[k] = kind
        for m in re.finditer(r'push_back\(\{"([^"]+)", "choice"', src):
            kinds[m.group(1)] = "choiceKey"
        for keys, kind in ((cfg.INT_KEYS, "intKey"), (cfg.NUM_KEYS, "numKey"), (cfg.BOOL_KEYS, "boolKey"),
                           (cfg.STR_KEYS, "strKey"), (cfg.LIST_KEYS, "listKey"), (cfg.CHOICES, "choiceKey")):
            for k in keys:
                self.assertEqual(kinds.get(k), kind, k)
        for m in re.finditer(r'(?:choiceKey\("|push_back\(\{")([^"]+)", (?:"choice", )?"(?:[^"\\]|\\.)*",\s*\{([^}]*)\}', src):
            if m.group(1) in cfg.CHOICES:
                # Never more than the reader takes (the probe records fewer modes than amp.mode has).
                self.assertLessEqual(set(cfg.CHOICES[m.group(1)]), set(re.findall(r'"([^"]*)"', m.group(2))), m.group(1))
        # Every key the probe lets config= set has a kind (none passes unchecked).
        for k in cfg.SCHEMA_KEYS:
            self.assertTrue(any(k in group for group in (cfg.INT_KEYS, cfg.NUM_KEYS, cfg.BOOL_KEYS, cfg.STR_KEYS,
                                                         cfg.LIST_KEYS, cfg.CHOICES)), k)

    @unittest.skipIf(fcntl is None, "no flock here")
    def test_the_folder_is_claimed_by_the_lock_file_at_its_path(self):
        # A second probe (or `ampstudio-cli run --out`) on a folder being recorded is refused.
        out = os.path.join(self.tmp, "claimed")
        first = ampstudio_probe.Probe(torch.nn.Linear(2, 2), None, out=out, histogram_every=0)
        try:
            with self.assertRaises(RuntimeError) as ctx:
                ampstudio_probe.Probe(torch.nn.Linear(2, 2), None, out=out, histogram_every=0)
            self.assertIn("another process is writing a run there", str(ctx.exception))
        finally:
            first.close()
        # A run that ends just as the probe claims the folder unlinks its lock file between the
        # probe's open() and flock(): a lock on that unlinked file claims nothing (the next run
        # locks a new file at the path). The probe must hold the file that is at the path.
        from ampstudio_probe import run_folder
        out = os.path.join(self.tmp, "race")
        os.makedirs(out)
        lock = os.path.join(out, run_folder.LOCK)
        real_flock, calls = fcntl.flock, []

        def flock(fd, op):
            if not calls and op & fcntl.LOCK_EX and os.path.exists(lock):
                os.unlink(lock)  # the other run's release, at the worst moment
            calls.append(op)
            return real_flock(fd, op)

        with mock.patch.object(run_folder.fcntl, "flock", flock):
            probe = ampstudio_probe.Probe(torch.nn.Linear(2, 2), None, out=out, histogram_every=0)
        try:
            self.assertTrue(os.path.exists(lock), "the probe holds a lock on a file no longer in the folder")
            fd = os.open(lock, os.O_RDWR)
            try:
                with self.assertRaises(BlockingIOError):  # what the CLI's claim gets: refused
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            finally:
                os.close(fd)
        finally:
            probe.close()
        self.assertFalse(os.path.exists(lock))  # released at close

    def test_a_fifo_where_a_run_file_goes_is_refused_not_waited_on(self):
        out = os.path.join(self.tmp, "fifo")
        os.makedirs(out)
        os.mkfifo(os.path.join(out, "metrics.jsonl"))
        code = textwrap.dedent(f"""
            import sys, torch
            sys.path.insert(0, {PACKAGE!r})
            import ampstudio_probe
            try:
                p = ampstudio_probe.Probe(torch.nn.Linear(2, 2), None, out={out!r}, histogram_every=0, overwrite=True)
                p.step(1.0)
            except ValueError as e:
                print("refused:", e)
        """)
        try:
            r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=30)
        except subprocess.TimeoutExpired:
            self.fail("the probe hung on a FIFO named metrics.jsonl")
        self.assertIn("metrics.jsonl: exists and is not a file", r.stdout + r.stderr)

    def test_a_run_killed_past_its_planned_steps_never_claims_fewer(self):
        out = os.path.join(self.tmp, "killed")
        code = textwrap.dedent(f"""
            import os, sys, torch
            sys.path.insert(0, {PACKAGE!r})
            import ampstudio_probe
            m = torch.nn.Linear(2, 2)
            p = ampstudio_probe.Probe(m, None, out={out!r}, steps=3, histogram_every=0, sync_every=2)
            for _ in range(7):
                p.step(1.0)
            os._exit(0)  # killed: no close(), no summary.json
        """)
        subprocess.run([sys.executable, "-c", code], check=True, timeout=120)
        cfg = json.load(open(os.path.join(out, "config.json")))
        recorded = len(open(os.path.join(out, "metrics.jsonl")).read().splitlines())
        self.assertEqual(recorded, 7)
        self.assertGreaterEqual(cfg["train"]["steps"], recorded)  # today's code: 3
        cli = os.environ.get("AMPSTUDIO_CLI")
        if cli:  # and the CLI opens it
            r = subprocess.run([cli, "export", "--run", out, "--format", "csv"], capture_output=True, text=True)
            self.assertEqual(r.returncode, 0, r.stderr)


if __name__ == "__main__":
    unittest.main()

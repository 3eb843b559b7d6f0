"""Probe: records a PyTorch training loop as an AMP Studio run folder.

    probe = Probe(model, scaler, out="runs/my-run", optimizer=opt, batch_size=256)
    for x, y in data:
        with torch.autocast(device_type, dtype=torch.float16):
            loss = loss_fn(model(x), y)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        probe.step(loss)            # once per optimizer step, after scaler.update()
        opt.zero_grad()             # before or after probe.step: the probe has what it needs
    probe.close()                   # summary.json

Where each figure comes from (skip.py explains the wrappers, gradients.py where gradients are read):
* gradients, their norm and histograms are read where they are defined: in scaler.unscale_ just
  before unscaling (the "scaled" side exactly as held) when a GradScaler is enabled; otherwise in
  optimizer.step just before it runs; otherwise in probe.step.
* scale is the scale at unscale_ time (the one backward used), else the previous step's
  scale_after; scale_after and growth_tracker are read after update().
* mode is what autocast was doing during the first training forward of any module (forward
  pre-hooks, removed after step 1), unless given.
* Nothing is written before the first step (config.json, events.log): an earlier run in the folder
  (overwrite=True) is replaced only once this one has a step to record.
"""
from __future__ import annotations

import math
import os
import platform
import time
from typing import List, Optional, Tuple

import torch

from ._version import __version__
from .config import (FORMAT_VERSION, MODES, build_config, check_keys, check_value, flatten, optimizer_settings,
                     scaler_enabled)
from .gradients import GradientReader
from .histogram import DTYPE_NAMES, histogram
from .memory import MemoryMeter
from .records import LineWriter, StepRecord, SummaryBuilder, describe_events, histogram_json
from .run_folder import RunFolder
from .skip import StepHooks, decide_skip


def _autocast_state(device_type: str) -> Tuple[bool, torch.dtype]:
    """(autocast enabled, its dtype) for a device type, across PyTorch versions."""
    if hasattr(torch, "get_autocast_dtype"):  # 2.4+
        try:
            return torch.is_autocast_enabled(device_type), torch.get_autocast_dtype(device_type)
        except (TypeError, RuntimeError):
            pass
    if device_type == "cuda":
        return torch.is_autocast_enabled(), torch.get_autocast_gpu_dtype()
    return torch.is_autocast_cpu_enabled(), torch.get_autocast_cpu_dtype()


class Probe:
    """Records a training loop into an AMP Studio run folder. See the module docstring."""

    def __init__(self, model: torch.nn.Module, scaler=None, out: str = "runs/probe", *,
                 histogram_every: int = 50, optimizer=None, batch_size: Optional[int] = None,
                 config: Optional[dict] = None, mode: Optional[str] = None, name: Optional[str] = None,
                 seed: Optional[int] = None, steps: Optional[int] = None, activations: bool = False,
                 overwrite: bool = False, sync_every: int = 50, exact_norm: bool = True) -> None:
        overrides = flatten(config or {})
        check_keys(overrides)
        # The named arguments go to config keys too: refused now, not when the run is opened.
        for key, v in (("seed", seed), ("train.steps", steps), ("train.batch_size", batch_size)):
            if v is not None:
                check_value(key, v)
        if name is not None:
            check_value("name", name)
        if mode is None:
            mode = overrides.get("amp.mode")
        if mode is not None and mode not in MODES:
            raise ValueError(f"mode must be one of {', '.join(MODES)}, got {mode!r}")
        if histogram_every < 0:
            raise ValueError("histogram_every must be >= 0 (0: never)")
        self.model, self.scaler, self.optimizer = model, scaler, optimizer
        self.out = out
        self.histogram_every = int(histogram_every)
        self.batch_size = batch_size
        self.epoch = 0
        config_name = overrides.pop("name", None)
        self.name = str(name or config_name or os.path.basename(os.path.normpath(out)))
        self._named = [(n, p) for n, p in model.named_parameters() if p.requires_grad]
        self._name_of = {id(p): n for n, p in self._named}
        first = next(iter(model.parameters()), None)
        self.device = first.device if first is not None else torch.device("cpu")
        self._cuda = self.device.type == "cuda"
        self._explicit_mode = mode
        self.mode = mode or ("fp16" if scaler_enabled(scaler) else "fp32")
        self._mode_source = "given" if mode else "guess"
        self._autocast_seen: Optional[Tuple[bool, torch.dtype]] = None
        self._config_args = dict(device=self.device, scaler=scaler, optimizer=optimizer,
                                 optimizer_keys=optimizer_settings(optimizer)[0],
                                 histogram_every=self.histogram_every, batch_size=batch_size,
                                 seed=seed, steps=steps, overrides=overrides)
        self._growth_interval = int(getattr(scaler, "_growth_interval", 2000) or 2000)
        self._step = 0
        self._closed = False
        self._reader = GradientReader(self._named, scaler, lambda: self._hist_step(self._step + 1),
                                      lambda: self._scale_next, self._note, exact_norm)
        self._probe_seconds = 0.0
        self._notes: List[str] = []
        self._summary = SummaryBuilder()
        self._lines = LineWriter()
        self._handles = []
        self._folder = RunFolder(out, overwrite=overwrite, sync_every=sync_every)
        try:
            self._config()  # builds (nothing is written before the first step: RunFolder.start)
            self._planned_steps = int(steps) if steps else 0
            self._scale_next, self._tracker = self._read_scaler()
            self._memory = MemoryMeter([p for _, p in self._named], optimizer, self.device)
            r = self._reader
            self._hooks = StepHooks(optimizer, scaler, r.timed(r.before_unscale), r.timed(r.after_unscale),
                                    r.timed(r.before_opt_step), r.timed(r.read_unscaled))
            # On every module, not only the one given: a LightningModule's training_step often
            # calls a submodule (self.model(x)) and never its own forward. Removed after step 1.
            self._autocast_hooks = [m.register_forward_pre_hook(self._see_autocast) for m in model.modules()]
            if activations:
                for mname, m in model.named_modules():
                    if mname and not any(True for _ in m.children()):
                        self._handles.append(m.register_forward_hook(r.activation_hook(mname)))
            self._first_events = [f"recording PyTorch {torch.__version__} run on {self._device_text()}"]
        except BaseException:
            if getattr(self, "_hooks", None) is not None:
                self._hooks.uninstall()
            for h in self._handles + getattr(self, "_autocast_hooks", []):
                h.remove()
            self._folder.close()
            raise
        self._sync()
        self._t_prev = time.perf_counter()

    # ---- hooks --------------------------------------------------------------------------------

    def _remove_autocast_hooks(self) -> None:
        for h in self._autocast_hooks:
            h.remove()
        self._autocast_hooks = []

    def read_gradients(self, optimizer=None) -> None:
        """Reads this step's gradients now, unless a hook already did (call it before clipping
        when there is no GradScaler, to record the norm before clipping as an fp16 run of the
        same script does; Lightning's callback calls it from on_before_optimizer_step). Reads the
        parameters of `optimizer`, or every parameter of the model when none is given."""
        self._reader.timed(self._reader.read_unscaled)(optimizer)

    def _hist_step(self, n: int) -> bool:
        return self.histogram_every > 0 and (n == 1 or n % self.histogram_every == 0)

    def _see_autocast(self, module, inputs) -> None:
        # The last training forward before step 1 (a sanity check under no_grad does not count).
        if torch.is_grad_enabled() or self._autocast_seen is None:
            self._autocast_seen = _autocast_state(self.device.type)

    # ---- the step -----------------------------------------------------------------------------

    def step(self, loss=None, *, epoch: Optional[int] = None, injected: bool = False,
             test_loss: Optional[float] = None, test_accuracy: Optional[float] = None) -> StepRecord:
        """Records one optimizer step. Call after scaler.update() (or optimizer.step()).
        test_loss / test_accuracy: the script's own evaluation after this step (accuracy as a
        fraction 0..1), shown in the app's test charts as AMP Studio's train.eval_every does."""
        if self._closed:
            raise RuntimeError("Probe.step() after close()")
        test_loss = None if test_loss is None else self._loss_value(test_loss)
        if test_accuracy is not None:
            test_accuracy = float(test_accuracy.item() if isinstance(test_accuracy, torch.Tensor) else test_accuracy)
            if not 0.0 <= test_accuracy <= 1.0:
                raise ValueError(f"test_accuracy must be a fraction in [0, 1], got {test_accuracy!r}")
        self._sync()
        t0 = time.perf_counter()
        n = self._step + 1
        sig = self._hooks.take()
        if not self._reader.cap.captured:
            self._reader.capture(self._named, False, self._scale_next)
        c = self._reader.take()
        scale = c.scale if c.held_is_scaled else self._scale_next
        scale_after, tracker = self._read_scaler()
        has_scaler = self.scaler is not None
        skipped, problem = decide_skip(sig, self._hooks.counts_steps, has_scaler, scale, scale_after)
        if n == 1:
            self._settle_mode(loss)
            # The first write: the earlier run (overwrite=True) is replaced only now.
            self._folder.write_config(self._config())
            self._folder.write_events(self._first_events)
        elif self._planned_steps and n > self._planned_steps:
            # More steps than train.steps said: a run killed now must not read as "150/100".
            self._planned_steps = n + self._folder.sync_every
            self._folder.write_config(self._config(steps=self._planned_steps))
            self._remove_autocast_hooks()  # calls fewer per forward from now on
        held = math.sqrt(c.sumsq)
        if c.held_is_scaled:
            scaled_norm = held
            grad_norm = math.sqrt(c.post_sumsq) if c.post_sumsq is not None else held / scale
        else:
            grad_norm, scaled_norm = held, held * scale
        event = ""
        if scale_after < scale:
            event = "backoff"
        elif scale_after > scale:
            event = "growth"
        elif (scaler_enabled(self.scaler) and not skipped and tracker == 0 and
              self._tracker + 1 == self._growth_interval):
            event = "growth_rejected"  # scale x growth_factor would not be finite in fp32
        first_bad = c.first_nonfinite or (self._reader.first_nonfinite(self._named) if skipped else "")
        # The lr this step's update used (read as optimizer.step began): a scheduler stepped
        # before probe.step() has already moved param_groups to the next step's.
        lr = sig.lr if sig.lr is not None else 0.0
        if sig.lr is None and self.optimizer is not None and self.optimizer.param_groups:
            lr = float(self.optimizer.param_groups[0].get("lr", 0.0))
        step_ms = (t0 - self._t_prev) * 1e3
        rec = StepRecord(
            step=n, epoch=self.epoch if epoch is None else int(epoch), loss=self._loss_value(loss),
            scale=scale, scale_after=scale_after, growth_tracker=tracker, skipped=skipped,
            scale_event=event, grad_norm=grad_norm, grad_norm_scaled=scaled_norm, lr=lr,
            step_ms=step_ms, samples_per_s=(self.batch_size / (step_ms / 1e3)) if self.batch_size and step_ms > 0 else 0.0,
            memory=self._memory.sample(self.mode in ("fp16", "bf16"),
                                       refresh=n <= 3 or n % 16 == 0 or self._hist_step(n)),
            first_nonfinite=first_bad if skipped else "", injected=bool(injected),
            post_unscale_overflow=c.held_is_scaled and not sig.found_inf and scale < 1.0 and not math.isfinite(grad_norm),
            test_loss=test_loss, test_acc=test_accuracy)
        self.epoch = rec.epoch
        hists = []
        for name, (dt, s, u) in c.grad_hists.items():
            hists.append(histogram_json(n, name, "weight_grad", dt, s, u))
        for name, (dt, h) in c.act.items():
            hists.append(histogram_json(n, name, "activation", dt, h, h))  # activations are not scaled
        for name, (dt, s, u) in c.act_grad.items():
            hists.append(histogram_json(n, name, "activation_grad", dt, s, u))
        if self._hist_step(n):
            # The weights as the optimizer left them (kind "weight"): in fp16's range or not, the
            # values a pure-fp16 run would have to hold. Not scaled, so both sides are the same.
            for name, p in self._named:
                dt = DTYPE_NAMES.get(p.dtype)
                if dt is not None:
                    h = histogram(p.detach())
                    hists.append(histogram_json(n, name, "weight", dt, h, h))
        events = describe_events(rec, self._growth_interval)
        if problem:
            events.append(f"step {n}: probe: {problem}")
        events += [f"step {n}: probe: {t}" for t in self._notes]
        self._notes = []
        self._folder.write_step(self._lines.line(rec), hists, events)
        self._summary.add(rec)
        self._step, self._scale_next, self._tracker = n, scale_after, tracker
        self._t_prev = t0
        self._probe_seconds += time.perf_counter() - t0
        return rec

    def _loss_value(self, loss) -> float:
        if loss is None:
            return math.nan
        if isinstance(loss, torch.Tensor):
            return loss.item() if loss.numel() == 1 else float(loss.detach().float().mean())
        return float(loss)

    def _read_scaler(self) -> Tuple[float, int]:
        if self.scaler is None:
            return 1.0, 0
        scale = float(self.scaler.get_scale())
        gt = getattr(self.scaler, "_growth_tracker", None)
        tracker = 0 if gt is None else int(gt.item() if isinstance(gt, torch.Tensor) else gt)
        return scale, tracker

    def _settle_mode(self, loss) -> None:
        """amp.mode from what the first step showed; config.json again if it differs."""
        if self._explicit_mode:
            return
        mode, source = self.mode, "guess"
        seen = self._autocast_seen
        pdtype = self._named[0][1].dtype if self._named else torch.float32
        if seen is not None and seen[0]:
            mode, source = {torch.float16: "fp16", torch.bfloat16: "bf16"}.get(seen[1], mode), "autocast"
            if mode == "fp16" and not scaler_enabled(self.scaler):
                self._note("fp16 autocast without an enabled GradScaler (torch.cuda.amp.GradScaler() disables "
                           "itself without CUDA; use torch.amp.GradScaler(device)): no loss scaling, scale 1")
        elif seen is not None:
            # No autocast: a model converted to 16 bits trains without master weights.
            mode = "pure_fp16" if pdtype == torch.float16 else "bf16" if pdtype == torch.bfloat16 else "fp32"
            source = "parameters"
            if pdtype == torch.bfloat16:
                self._note("the parameters are bf16 without autocast; recorded as amp.mode bf16")
        elif isinstance(loss, torch.Tensor) and loss.dtype in (torch.float16, torch.bfloat16):
            mode, source = ("fp16" if loss.dtype == torch.float16 else "bf16"), "loss dtype"
        self._mode_source = source
        self.mode = mode  # config.json is written right after, at the first step

    def _note(self, text: str) -> None:
        if text not in self._notes:
            self._notes.append(text)

    def _config(self, steps: Optional[int] = None) -> dict:
        args = dict(self._config_args)
        if steps:
            args["steps"] = steps  # at close: the steps recorded, not the plan
        return build_config(name=self.name, mode=self.mode, **args)

    def _sync(self) -> None:
        if self._cuda:
            torch.cuda.synchronize(self.device)

    def _device_text(self) -> str:
        if self.device.type == "cuda":
            return f"{self.device} ({torch.cuda.get_device_name(self.device)})"
        cpu = platform.processor() or platform.machine()
        try:
            with open("/proc/cpuinfo") as f:
                cpu = next((l.split(":", 1)[1].strip() for l in f if l.startswith("model name")), cpu)
        except OSError:
            pass
        n = torch.get_num_threads()
        return f"cpu ({cpu}, {n} thread{'s' if n != 1 else ''})"

    # ---- the end ------------------------------------------------------------------------------

    @property
    def steps(self) -> int:
        return self._step

    def flush(self) -> None:
        """Waits until the recorded steps are in the files (they are written on a thread)."""
        self._folder.flush()

    def overhead_ms_per_step(self) -> float:
        """The probe's own time per step: probe.step() and the hooks' work (norms, histograms)."""
        return (self._probe_seconds + self._reader.seconds) * 1e3 / self._step if self._step else 0.0

    def close(self, status: str = "finished") -> None:
        """Writes summary.json (and config.json with train.steps) and removes every hook."""
        if self._closed:
            return
        self._closed = True
        try:
            self._hooks.uninstall()
            for h in self._handles:
                h.remove()
            self._remove_autocast_hooks()
            if not self._step and self._folder.earlier:
                return  # never started: the earlier run stays whole (finally: released)
            if not self._step:
                self._folder.write_config(self._config())
                self._folder.write_events(self._first_events)
            else:
                self._folder.write_config(self._config(steps=self._step))
            summary = self._summary.to_json(status)
            summary["name"] = self.name
            summary["source"] = {
                "kind": "pytorch-probe", "probe_version": __version__, "format_version": FORMAT_VERSION,
                "torch": torch.__version__, "device": self._device_text(),
                "model_class": type(self.model).__name__,
                "optimizer_class": type(self.optimizer).__name__ if self.optimizer is not None else "",
                "scaler_class": type(self.scaler).__name__ if self.scaler is not None else "",
                "mode_from": self._mode_source,
                "probe_overhead_ms_per_step": self.overhead_ms_per_step(),
                "grad_norm": "float64" if self._reader.exact_norm else "fp32 per tensor (about 1e-6 relative)"}
            if not self.batch_size:  # samples/s needs the batch size: the app says "not logged", not 0
                summary["source"]["not_logged"] = ["samples_per_s"]
            if self._notes:
                self._folder.write_events([f"probe: {t}" for t in self._notes])
            self._folder.write_summary(summary)
        finally:
            self._folder.close()

    def __enter__(self) -> "Probe":
        return self

    def __exit__(self, exc_type, exc, tb) -> bool:
        self.close("finished" if exc_type is None else
                   "stopped" if issubclass(exc_type, KeyboardInterrupt) else "failed")
        return False

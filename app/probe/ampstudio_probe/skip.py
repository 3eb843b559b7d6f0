"""Seeing, from outside the training loop, whether each optimizer step really ran.

GradScaler.step() skips optimizer.step() when unscale_ found an inf/nan gradient, and says so
nowhere once update() has run (update() drops the per-optimizer found_inf). Comparing scales is
not enough either: at the top of the scale's range growth is rejected and the scale stays, a
user may call update(new_scale), and a scaler may be disabled. So the probe watches the two calls
that decide it, on the instances it was given (the classes stay untouched):

* optimizer.step is wrapped to count the calls that ran (returned). GradScaler calls it through
  the instance attribute, so the wrapper sees exactly the steps that were not skipped, also for
  consecutive skips and at the growth limit. The wrapper is a bound method, so a learning-rate
  scheduler created later still wraps it (lr_scheduler's with_counter needs __self__/__func__).
* scaler.unscale_ is wrapped so the probe sees the gradients as they were before unscaling (the
  "scaled" histogram and norm) and reads GradScaler's found_inf right after it was computed.
  GradScaler.step() calls self.unscale_(), so the wrapper fires whether or not the user calls
  unscale_ first.

A probe.step() with no optimizer.step call is a skipped step: call probe.step once per optimizer
step (after the last micro-batch when accumulating gradients).
"""
from __future__ import annotations

import types
from dataclasses import dataclass
from typing import Callable, Optional, Tuple


@dataclass
class StepSignals:
    """What the wrappers saw since the previous probe.step()."""

    opt_calls: int = 0
    found_inf: Optional[bool] = None  # None: no unscale_ ran (no scaler, disabled, or not a GradScaler)
    unscaled: bool = False
    lr: Optional[float] = None  # param_groups[0]["lr"] as the first optimizer.step began: the lr it used


def read_found_inf(scaler, optimizer) -> Optional[bool]:
    """GradScaler's found_inf for `optimizer` after unscale_ (a .item() per device: GradScaler's
    own step() reads the same values a moment later)."""
    states = getattr(scaler, "_per_optimizer_states", None)
    if states is None:
        return None
    per_device = states[id(optimizer)].get("found_inf_per_device") if id(optimizer) in states else None
    if not per_device:
        return None
    return any(float(v.item()) != 0.0 for v in per_device.values())


class StepHooks:
    """Wraps optimizer.step and scaler.unscale_ (instance attributes) while a probe records."""

    def __init__(self, optimizer, scaler,
                 before_unscale: Callable[[object], None],
                 after_unscale: Callable[[object, Optional[bool]], None],
                 before_opt_step: Callable[[object], None],
                 disabled_unscale: Callable[[object], None]) -> None:
        self.optimizer, self.scaler = optimizer, scaler
        self._before_unscale, self._after_unscale = before_unscale, after_unscale
        self._before_opt_step = before_opt_step
        self._disabled_unscale = disabled_unscale
        self.signals = StepSignals()
        self.active = True
        self._installed = []  # (object, attribute name, our wrapper, what was there before)
        # An optimizer that takes the scaler into its own step (fused optimizers) skips inside
        # step(): calls are not a skip signal there, found_inf and the scale are.
        self.counts_steps = optimizer is not None and not getattr(optimizer, "_step_supports_amp_scaling", False)
        if optimizer is not None:
            self._wrap_opt_step(optimizer)
        if scaler is not None and callable(getattr(scaler, "unscale_", None)):
            self._wrap_unscale(scaler)

    def _wrap_opt_step(self, opt) -> None:
        hooks, inner = self, opt.step

        def step(opt_self, *args, **kwargs):
            if not hooks.active:
                return inner(*args, **kwargs)
            s = hooks.signals
            if s.lr is None and getattr(opt_self, "param_groups", None):
                lr = opt_self.param_groups[0].get("lr")
                s.lr = None if lr is None else float(lr)
            closure = kwargs.get("closure", args[0] if args else None)
            if callable(closure):
                # The gradients do not exist yet: the closure runs forward and backward inside
                # step() (Lightning, LBFGS). Read them when it returns, before the update.
                def read_after(*cargs, **ckwargs):
                    out = closure(*cargs, **ckwargs)
                    if hooks.active:
                        hooks._before_opt_step(opt_self)
                    return out
                if "closure" in kwargs:
                    kwargs = dict(kwargs, closure=read_after)
                else:
                    args = (read_after,) + tuple(args[1:])
            else:
                hooks._before_opt_step(opt_self)
                # A fused optimizer (GradScaler hands it the scale and found_inf as attributes)
                # skips inside step(): found_inf is the skip signal there.
                found = getattr(opt_self, "found_inf", None)
                if hooks.scaler is not None and found is not None and hasattr(found, "item"):
                    s.found_inf = bool(s.found_inf) or float(found.item()) != 0.0
            out = inner(*args, **kwargs)
            if hooks.active:
                hooks.signals.opt_calls += 1  # counted once it returned: it really ran
            return out

        # Keep an lr_scheduler's marks: it warns when optimizer.step loses them (1.x: the
        # counter's, 2.x: "optimizer.step() has been overridden after learning rate scheduler
        # initialization").
        for mark in ("_with_counter", "_wrapped_by_lr_sched"):
            if getattr(inner, mark, False):
                setattr(step, mark, True)
        self._set(opt, "step", types.MethodType(step, opt))

    def _wrap_unscale(self, scaler) -> None:
        hooks, inner = self, scaler.unscale_

        def unscale_(scaler_self, optimizer):
            if not hooks.active:
                return inner(optimizer)
            enabled = getattr(scaler_self, "_enabled", True)
            if enabled:
                hooks._before_unscale(optimizer)
            else:
                hooks._disabled_unscale(optimizer)  # same moment as an enabled scaler's read
            out = inner(optimizer)
            if enabled:
                found = read_found_inf(scaler_self, optimizer)
                if found is not None:
                    s = hooks.signals
                    s.found_inf = bool(s.found_inf) or found
                    s.unscaled = True
                hooks._after_unscale(optimizer, found)
            return out

        self._set(scaler, "unscale_", types.MethodType(unscale_, scaler))

    def _set(self, obj, name, wrapper) -> None:
        before = obj.__dict__.get(name, None)
        setattr(obj, name, wrapper)
        self._installed.append((obj, name, wrapper, before))

    def take(self) -> StepSignals:
        s, self.signals = self.signals, StepSignals()
        return s

    def uninstall(self) -> None:
        """Puts the attributes back where nobody wrapped ours since; elsewhere ours stays in the
        chain but passes calls through."""
        self.active = False
        for obj, name, wrapper, before in reversed(self._installed):
            if obj.__dict__.get(name) is wrapper:
                if before is None:
                    delattr(obj, name)
                else:
                    setattr(obj, name, before)
        self._installed.clear()


def decide_skip(signals: StepSignals, counts_steps: bool, has_scaler: bool, scale: float,
                scale_after: float) -> Tuple[bool, Optional[str]]:
    """(skipped, a disagreement between the signals worth a line in events.log, or None).

    The optimizer's step count decides when the probe has it; else GradScaler's found_inf; else
    (a scaler that is not a GradScaler, no optimizer given) a scale that fell."""
    fell = scale_after < scale
    if counts_steps:
        skipped = signals.opt_calls == 0
    elif signals.found_inf is not None:
        skipped = signals.found_inf
    else:
        skipped = has_scaler and fell
    problem = None
    if signals.found_inf is not None and signals.found_inf != skipped:
        problem = ("optimizer.step ran although GradScaler found non-finite gradients" if not skipped else
                   "optimizer.step was not called although GradScaler found the gradients finite "
                   "(is probe.step() called once per optimizer step?)")
    elif signals.found_inf is None and has_scaler and counts_steps and fell != skipped:
        problem = ("the step was skipped but the scale did not fall" if skipped else
                   "the scale fell but optimizer.step ran")
    return skipped, problem

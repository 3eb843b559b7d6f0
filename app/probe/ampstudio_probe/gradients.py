"""Reading the gradients (and, on request, activations) where they are defined.

The probe reads each step's gradients at the first of these that happens:
* scaler.unscale_, just before it unscales (GradScaler enabled): the gradients exactly as
  backward left them, multiplied by the scale; the "scaled" histogram side is them, the
  "unscaled" side them / scale, and right after unscaling GradScaler's found_inf is known;
* optimizer.step, just before it runs (no unscale_ ran: no scaler, a disabled one, a scaler
  that is not a GradScaler): the gradients are taken as unscaled, the scaled side is them times
  the scale;
* probe.step() (neither hook ran).
So zero_grad() may come before probe.step(), and grad_norm is after unscaling and before any
clipping when a GradScaler is enabled (after your clipping otherwise).
"""
from __future__ import annotations

import math
import time
from typing import Callable, Dict, List, Optional, Tuple

import torch

from .histogram import DTYPE_NAMES, Histogram, histogram, histogram_pair

Named = List[Tuple[str, torch.nn.Parameter]]


def sum_of_squares(grads: List[torch.Tensor]) -> float:
    """sum(g^2) over every gradient, in float64 on the host. Per-tensor norms in fp32 (fast, one
    foreach call); a tensor whose fp32 norm overflowed (while its values are finite) or is tiny
    enough for its squares to have lost bits is redone in float64."""
    if not grads:
        return 0.0
    fp32 = [g for g in grads if g.dtype == torch.float32]
    norms = list(torch._foreach_norm(fp32)) if fp32 and hasattr(torch, "_foreach_norm") else \
        [torch.linalg.vector_norm(g) for g in fp32]
    others = [g for g in grads if g.dtype != torch.float32]
    norms += [torch.linalg.vector_norm(g, dtype=torch.float32) for g in others]
    # One device-to-host copy for all of them (each .item() would wait on its own).
    values = torch.stack(norms).tolist() if len({n.device for n in norms}) == 1 else [float(n) for n in norms]
    tensors = fp32 + others
    total = 0.0
    for g, v in zip(tensors, values):
        if not math.isfinite(v) or 0.0 < v < 2.0 ** -60:
            if not math.isfinite(v) and not bool(torch.isfinite(g).all()):
                total += v * v  # a real inf/nan in the gradient: the norm is inf/nan
                continue
            v = float(torch.linalg.vector_norm(g, dtype=torch.float64))
        total += v * v
    return total


class Capture:
    """What the hooks gathered for the step in progress."""

    def __init__(self) -> None:
        self.captured = False
        self.held_is_scaled = False  # the gradients were read before unscaling
        self.scale = 1.0  # the scale at that moment (when held_is_scaled)
        self.sumsq = 0.0
        self.post_sumsq: Optional[float] = None  # after unscaling, when the scale was < 1
        self.first_nonfinite = ""
        self.grad_hists: Dict[str, Tuple[str, Histogram, Histogram]] = {}
        self.act: Dict[str, Tuple[str, Histogram]] = {}
        self.act_grad: Dict[str, Tuple[str, Histogram, Histogram]] = {}


class GradientReader:
    """Fills a Capture per step from the hooks (skip.StepHooks calls before_unscale,
    after_unscale, before_opt_step; activation hooks sit on the model's leaf modules)."""

    def __init__(self, named: Named, scaler, hist_step: Callable[[], bool], scale_now: Callable[[], float],
                 note: Callable[[str], None]) -> None:
        self._named = named
        self.scaler = scaler
        self._hist_step_now = hist_step  # is the step in progress a histogram step?
        self._scale_now = scale_now  # the scale this step's backward used, as far as known
        self._note = note
        self._params_cache: Dict[tuple, Named] = {}
        self.cap = Capture()
        self.seconds = 0.0  # time spent in the hooks, for the overhead figure

    def take(self) -> Capture:
        c, self.cap = self.cap, Capture()
        return c

    def timed(self, fn):
        def run(*args):
            t = time.perf_counter()
            try:
                fn(*args)
            finally:
                self.seconds += time.perf_counter() - t
        return run

    def _params_of(self, optimizer) -> List[Tuple[str, torch.nn.Parameter]]:
        # Cached per optimizer (every step asks); a changed param_groups list is seen by its size.
        key = (id(optimizer), len(optimizer.param_groups), sum(len(g["params"]) for g in optimizer.param_groups))
        named = self._params_cache.get(key)
        if named is None:
            ids = {id(p) for g in optimizer.param_groups for p in g["params"]}
            named = self._params_cache[key] = [(n, p) for n, p in self._named if id(p) in ids]
        return named

    def capture(self, named, held_is_scaled: bool, scale: float) -> None:
        """Norm (every step) and histograms (histogram steps) of the gradients as they are now."""
        c = self.cap
        grads = [(n, p.grad) for n, p in named if p.grad is not None and not p.grad.is_sparse]
        c.captured, c.held_is_scaled, c.scale = True, held_is_scaled, scale
        c.sumsq += sum_of_squares([g for _, g in grads])
        if not self._hist_step_now():
            return
        # The other side: unscaled = held / scale (C++: times 1.0/double(scale)), or
        # scaled = held * scale when the gradients were read after unscaling.
        mult = (1.0 / scale if scale else 1.0) if held_is_scaled else scale
        for n, g in grads:
            dt = DTYPE_NAMES.get(g.dtype)
            if dt is None:
                self._note(f"no histograms of {g.dtype} gradients ({n}): AMP Studio stores fp32, fp16, bf16")
                continue
            held, other = histogram_pair(g, mult)
            c.grad_hists[n] = (dt, held, other) if held_is_scaled else (dt, other, held)

    def first_nonfinite(self, named) -> str:
        # Backward order, approximately: the reverse of registration order.
        for n, p in reversed(named):
            if p.grad is not None and not bool(torch.isfinite(p.grad).all()):
                return n
        return ""

    def before_unscale(self, optimizer) -> None:
        scale = float(self.scaler.get_scale())
        self.capture(self._params_of(optimizer), True, scale)

    def after_unscale(self, optimizer, found_inf: Optional[bool]) -> None:
        c = self.cap
        named = self._params_of(optimizer)
        if found_inf and not c.first_nonfinite:
            c.first_nonfinite = self.first_nonfinite(named)  # inf/nan survive unscaling
        if c.scale < 1.0 and not found_inf:
            # Unscaling by 1/scale > 1 can overflow values that were finite: PyTorch's check
            # (on the values before) misses it; the norm of what the optimizer gets shows it.
            grads = [p.grad for _, p in named if p.grad is not None and not p.grad.is_sparse]
            c.post_sumsq = (c.post_sumsq or 0.0) + sum_of_squares(grads)

    def before_opt_step(self, optimizer) -> None:
        if not self.cap.captured:  # no unscale_ ran: the gradients are not scaled (or scale 1)
            self.capture(self._params_of(optimizer), False, self._scale_now())

    def activation_hook(self, name: str):
        def hook(module, inputs, output):
            if not self._hist_step_now() or not torch.is_grad_enabled():
                return
            t = output if isinstance(output, torch.Tensor) else next(
                (o for o in output if isinstance(o, torch.Tensor)), None) if isinstance(output, (tuple, list)) else None
            if t is None or t.dtype not in DTYPE_NAMES:
                return
            start = time.perf_counter()
            dt = DTYPE_NAMES[t.dtype]
            h = histogram(t)
            if name in self.cap.act:
                self.cap.act[name][1].merge(h)
            else:
                self.cap.act[name] = (dt, h)
            if t.requires_grad:
                scale = self._scale_now()  # the scale this step's backward multiplies by

                def grad_hook(g):
                    s = time.perf_counter()
                    held, unscaled = histogram_pair(g, 1.0 / scale if scale else 1.0)
                    prev = self.cap.act_grad.get(name)
                    if prev:
                        prev[1].merge(held)
                        prev[2].merge(unscaled)
                    else:
                        self.cap.act_grad[name] = (DTYPE_NAMES.get(g.dtype, dt), held, unscaled)
                    self.seconds += time.perf_counter() - s
                try:
                    t.register_hook(grad_hook)
                except RuntimeError:
                    pass  # e.g. an output modified in place later: no activation_grad for it
            self.seconds += time.perf_counter() - start
        return hook

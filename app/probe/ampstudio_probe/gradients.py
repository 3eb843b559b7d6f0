"""Reading the gradients (and, on request, activations) where they are defined.

The probe reads each step's gradients at the first of these that happens:
* scaler.unscale_, just before it unscales (GradScaler enabled): the gradients exactly as
  backward left them, multiplied by the scale; the "scaled" histogram side is them, the
  "unscaled" side them / scale, and right after unscaling GradScaler's found_inf is known;
* a disabled GradScaler's unscale_ (GradScaler(enabled=False), as scripts written for fp16 run
  in bf16 or fp32): taken as unscaled, at the same moment the fp16 run of the script reads them
  (so both read before the clipping that follows unscale_);
* optimizer.step, just before it updates (no unscale_ ran: no scaler, a scaler that is not a
  GradScaler): taken as unscaled, the scaled side is them times the scale. When step() is given
  a closure (Lightning, LBFGS), right after the closure's backward. A fused optimizer
  (Adam(fused=True)) with an enabled GradScaler gets the scale in optimizer.grad_scale and
  unscales inside its kernel: its gradients are read as scaled by that value;
* Probe.read_gradients() (Lightning's on_before_optimizer_step calls it): now;
* probe.step() (none of these ran).
So zero_grad() may come before probe.step(), and grad_norm is after unscaling and before any
clipping when a GradScaler (enabled or not) is unscaled before the clipping; with no scaler, call
probe.read_gradients() before clipping to get the same.
"""
from __future__ import annotations

import math
import time
from typing import Callable, Dict, List, Optional, Tuple

import torch

from .histogram import DTYPE_NAMES, Histogram, histogram, histogram_pair

Named = List[Tuple[str, torch.nn.Parameter]]


def _float64_norm(g: torch.Tensor) -> torch.Tensor:
    """||g||_2 accumulated in float64 (complex: |z|), as a 0-d tensor on g's device."""
    if g.is_complex():
        return torch.linalg.vector_norm(g.to(torch.complex128))
    if g.dtype == torch.float64:
        return torch.linalg.vector_norm(g)
    return torch.linalg.vector_norm(g, dtype=torch.float64)


def dense_values(g: torch.Tensor) -> torch.Tensor:
    """The values that count for a gradient's norm: a sparse gradient's coalesced values (its
    implicit zeros add nothing; duplicates of one index are summed first, as .to_dense() does)."""
    return g.coalesce().values() if g.is_sparse else g


def sum_of_squares(grads: List[torch.Tensor], exact: bool = True) -> float:
    """sum(g^2) over every gradient. exact (the default): accumulated in float64: each
    fp32/fp16/bf16 square is exact in float64 and the sum rounds at 2^-53, so the global norm
    agrees with PyTorch's own float64 norm to ~1e-15 (per-tensor fp32 norms summed were 2e-6 off
    on the recipe MLP, 2e-4 on a real script). Not exact: per-tensor fp32 norms (one foreach call;
    ~1e-6 relative), the cheaper read where float64 is slow (PyTorch 1.13 on a CPU: 2.2 ms against
    0.3 ms for the recipe's 790k gradient values). float64 and complex gradients are included
    either way (in float64), sparse ones by their coalesced values. One device-to-host copy for
    all of them (each .item() would wait on its own)."""
    if not grads:
        return 0.0
    values = [dense_values(g) for g in grads]
    norms = None
    plain = all(v.dtype in (torch.float32, torch.float16, torch.bfloat16) for v in values)
    if plain and hasattr(torch, "_foreach_norm") and len({v.device for v in values}) == 1:
        try:  # one foreach call: 2.1+ accumulates in float64 when asked
            norms = list(torch._foreach_norm(values, 2, dtype=torch.float64) if exact else
                         torch._foreach_norm([v.float() for v in values]))
        except (TypeError, RuntimeError):
            norms = None
    if norms is None:
        norms = [_float64_norm(v) if exact or v.dtype not in (torch.float32, torch.float16, torch.bfloat16)
                 else torch.linalg.vector_norm(v, dtype=torch.float32) for v in values]
    if len({n.device for n in norms}) == 1:
        host = torch.stack(norms).tolist()
    else:
        host = [float(n) for n in norms]
    return math.fsum(v * v for v in host)


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
                 note: Callable[[str], None], exact_norm: bool = True) -> None:
        self._named = named
        self.exact_norm = exact_norm
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
        """fn as a hook of the user's training: timed for the overhead figure, and never raising
        into the user's loop (a probe that cannot read something says so in events.log; the
        training goes on and the step is recorded with what was read)."""
        def run(*args):
            t = time.perf_counter()
            try:
                fn(*args)
            except Exception as err:  # noqa: BLE001 -- the user's training must not die of the probe
                self._note(f"could not read the gradients ({type(err).__name__}: {err})")
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
        grads = [(n, p.grad) for n, p in named if p.grad is not None]
        c.captured, c.held_is_scaled, c.scale = True, held_is_scaled, scale
        c.sumsq += sum_of_squares([g for _, g in grads], self.exact_norm)
        if not self._hist_step_now():
            return
        # The other side: unscaled = held / scale (C++: times 1.0/double(scale)), or
        # scaled = held * scale when the gradients were read after unscaling.
        mult = (1.0 / scale if scale else 1.0) if held_is_scaled else scale
        for n, g in grads:
            dt = DTYPE_NAMES.get(g.dtype)
            if dt is None:
                self._note(f"no histograms of {g.dtype} gradients ({n}): AMP Studio stores fp32, fp16, bf16 "
                           "(they are in grad_norm)")
                continue
            if g.is_sparse:
                # Its implicit zeros are zeros of the gradient the optimizer sees: count them.
                self._note(f"{n}: a sparse gradient, histogram of its dense form (implicit zeros counted)")
                g = g.to_dense()
            held, other = histogram_pair(g, mult)
            c.grad_hists[n] = (dt, held, other) if held_is_scaled else (dt, other, held)

    def first_nonfinite(self, named) -> str:
        # Backward order, approximately: the reverse of registration order.
        for n, p in reversed(named):
            if p.grad is not None and not bool(torch.isfinite(dense_values(p.grad)).all()):
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
            grads = [p.grad for _, p in named if p.grad is not None]
            c.post_sumsq = (c.post_sumsq or 0.0) + sum_of_squares(grads, self.exact_norm)

    def before_opt_step(self, optimizer) -> None:
        """Just before the optimizer updates (after a closure's backward, when step() was given
        one). No unscale_ ran (else the gradients were read there), so they are unscaled --
        unless GradScaler handed the scale to a fused optimizer (Adam(fused=True)) in
        `optimizer.grad_scale`: that optimizer unscales inside its kernel, the gradients are
        still multiplied by the scale now."""
        if self.cap.captured:
            return
        grad_scale = getattr(optimizer, "grad_scale", None)
        if isinstance(grad_scale, torch.Tensor):
            self.capture(self._params_of(optimizer), True, float(grad_scale))
        else:
            self.capture(self._params_of(optimizer), False, self._scale_now())

    def read_unscaled(self, optimizer) -> None:
        """The gradients as they are now, taken as unscaled (a disabled GradScaler's unscale_,
        Lightning's on_before_optimizer_step, Probe.read_gradients): before any clipping that
        follows, as an enabled scaler's unscale_ reads them."""
        if not self.cap.captured:
            self.capture(self._params_of(optimizer) if optimizer is not None else self._named, False,
                         self._scale_now())

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

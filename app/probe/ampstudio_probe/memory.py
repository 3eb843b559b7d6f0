"""Memory by AMP Studio's categories (engine/core/memory_tracker.h), as far as PyTorch shows it.

AMP Studio counts every allocation by what it is for; PyTorch has one counter per device. The
probe sums the tensors it can name and calls the rest activations:

* parameters -> "weights" when the model computes with them (fp32, or a model converted to
  16 bits), "master_weights" under autocast, where the weights computed with are autocast's
  16-bit casts (freed within the step; on CUDA they are part of the rest below);
* .grad tensors -> "gradients"; optimizer.state tensors -> "optimizer_state";
* on CUDA, torch.cuda.memory_allocated() minus those -> "activations", and "total" is
  memory_allocated(); the peaks come from max_memory_allocated() (never reset: the user's own
  figures stay as they were), so the activations' peak is an estimate: that peak minus the
  parameters, gradients and optimizer state at the step's end;
* on the CPU PyTorch counts nothing: activations and workspace are 0 and total is the sum of the
  three known categories.

The sums over tensors are redone on the steps the probe asks (the first ones, every 16th, the
histogram steps) and reused between: walking every parameter's .grad costs more than the
figure changes (it changes when gradients appear or are set to None, or state appears).
"""
from __future__ import annotations

from typing import Optional

import torch

from .records import MEM_CATEGORIES, Memory


def _bytes(t) -> int:
    if not isinstance(t, torch.Tensor):
        return 0
    if t.is_sparse:  # what it holds (indices and values), not its dense shape (an embedding's grad)
        return _bytes(t._indices()) + _bytes(t._values())
    return t.numel() * t.element_size()


class MemoryMeter:
    def __init__(self, params, optimizer, device: torch.device) -> None:
        self.params = list(params)
        self.optimizer = optimizer
        self.device = device
        self.param_bytes = sum(_bytes(p) for p in self.params)
        self._state_len = -1
        self._state_bytes = 0
        self.peak = dict.fromkeys(MEM_CATEGORIES, 0)
        self.total_peak = 0
        self._known = None  # (autocast, the tensor sums by category) last computed
        self._last: Optional[Memory] = None

    def _optimizer_state_bytes(self) -> int:
        # Walking every state tensor each step costs; the state only grows when entries appear.
        state = getattr(self.optimizer, "state", None)
        if not state:
            return 0
        if len(state) != self._state_len:
            self._state_len = len(state)
            self._state_bytes = sum(_bytes(v) for s in state.values() for v in s.values())
        return self._state_bytes

    def sample(self, autocast: bool, refresh: bool = True) -> Memory:
        if not refresh and self._last is not None and self.device.type != "cuda" and self._known[0] == autocast:
            return self._last  # the CPU figures are the tensor sums, unchanged since last time
        if refresh or self._known is None or self._known[0] != autocast:
            cur = dict.fromkeys(MEM_CATEGORIES, 0)
            cur["master_weights" if autocast else "weights"] = self.param_bytes
            cur["gradients"] = sum(_bytes(p.grad) for p in self.params if p.grad is not None)
            cur["optimizer_state"] = self._optimizer_state_bytes()
            self._known = (autocast, cur)
        cur = dict(self._known[1])
        known = sum(cur.values())
        m = Memory()
        if self.device.type == "cuda":
            allocated = torch.cuda.memory_allocated(self.device)
            peak_alloc = torch.cuda.max_memory_allocated(self.device)
            cur["activations"] = max(0, allocated - known)
            total, total_peak = allocated, peak_alloc
            act_peak = max(0, peak_alloc - known)
            try:
                m.device_free, m.device_total = torch.cuda.mem_get_info(self.device)
            except (RuntimeError, AttributeError):
                pass
        else:
            total = known
            total_peak = max(self.total_peak, known)
            act_peak = 0
        for k in MEM_CATEGORIES:
            self.peak[k] = max(self.peak[k], cur[k])
        self.peak["activations"] = max(self.peak["activations"], act_peak)
        self.total_peak = max(self.total_peak, total_peak)
        m.current, m.peak = cur, dict(self.peak)
        m.total, m.total_peak = total, self.total_peak
        self._last = m
        return m

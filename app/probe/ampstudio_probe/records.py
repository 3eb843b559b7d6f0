"""What one step and the whole run look like in AMP Studio's files.

Each function mirrors one C++ function so that a run recorded here reads back exactly like one
AMP Studio trained: stepMetricsToJson and histogramToJson (engine/io/metrics_json.cpp),
describeEvents (engine/train/event_text.cpp), RunSummaryBuilder and runSummaryToJson
(engine/train/run_summary.cpp, engine/io/run_output.cpp).
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Dict, List, Optional

from .histogram import MAX_EXP, MIN_EXP, Histogram

# memCategoryName() in engine/core/memory_tracker.h, in its order.
MEM_CATEGORIES = ("weights", "master_weights", "gradients", "activations", "optimizer_state", "workspace")

# histogramKindName(): the reader refuses any other kind ("weight": a parameter's values).
HISTOGRAM_KINDS = ("weight_grad", "activation_grad", "activation", "weight")


def num(v: float):
    """JSON has no inf/nan: the C++ writes them as the strings "inf", "-inf", "nan"."""
    v = float(v)
    if math.isnan(v):
        return "nan"
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    return v


@dataclass
class Memory:
    """MemorySnapshot: bytes per category now and their peaks, plus totals."""

    current: Dict[str, int] = field(default_factory=lambda: dict.fromkeys(MEM_CATEGORIES, 0))
    peak: Dict[str, int] = field(default_factory=lambda: dict.fromkeys(MEM_CATEGORIES, 0))
    total: int = 0
    total_peak: int = 0
    device_total: int = 0  # the GPU's memory and what is free (cudaMemGetInfo); 0 on the CPU
    device_free: int = 0

    def to_json(self, peak: bool) -> dict:  # memoryToJson()
        o = {k: int((self.peak if peak else self.current)[k]) for k in MEM_CATEGORIES}
        o["total"] = int(self.total_peak if peak else self.total)
        if not peak and self.device_total > 0:
            o["device_total"] = int(self.device_total)
            o["device_free"] = int(self.device_free)
        return o


@dataclass
class StepRecord:
    """StepMetrics, the fields a probe can know, plus grad_norm_scaled."""

    step: int
    epoch: int = 0
    loss: float = math.nan
    scale: float = 1.0
    scale_after: float = 1.0
    growth_tracker: int = 0
    skipped: bool = False
    scale_event: str = ""
    grad_norm: float = 0.0
    grad_norm_scaled: float = 0.0
    lr: float = 0.0
    step_ms: float = 0.0
    samples_per_s: float = 0.0
    memory: Memory = field(default_factory=Memory)
    first_nonfinite: str = ""
    injected: bool = False
    post_unscale_overflow: bool = False
    test_loss: Optional[float] = None  # the script's own evaluation, when given to probe.step()
    test_acc: Optional[float] = None  # a fraction (0..1)

    def to_json(self) -> dict:  # stepMetricsToJson(), same keys and the same omissions
        o = {"step": self.step, "epoch": self.epoch, "loss": num(self.loss), "scale": num(self.scale),
             "scale_after": num(self.scale_after), "growth_tracker": int(self.growth_tracker),
             "skipped": bool(self.skipped)}
        if self.scale_event:
            o["scale_event"] = self.scale_event
        o["grad_norm"] = num(self.grad_norm)
        o["grad_norm_scaled"] = num(self.grad_norm_scaled)  # ours; the reader ignores it
        o["lr"] = num(self.lr)
        o["step_ms"] = float(self.step_ms)
        o["samples_per_s"] = float(self.samples_per_s)
        o["gemm_gflops"] = 0.0  # no GEMM counters in PyTorch's public API
        o["memory"] = self.memory.to_json(False)
        o["memory_peak"] = self.memory.to_json(True)
        if self.first_nonfinite:
            o["first_nonfinite"] = self.first_nonfinite
        if self.injected:
            o["injected"] = True
        if self.post_unscale_overflow:
            o["post_unscale_overflow"] = True
        o["lost_update_frac"] = 0.0  # would need the weights before and after every update
        if self.test_loss is not None:
            o["test_loss"] = num(self.test_loss)
        if self.test_acc is not None:
            o["test_acc"] = float(self.test_acc)
        return o


def _num_text(v: float) -> str:
    """num() as JSON text: float.__repr__ is what json.dumps writes for a float."""
    v = float(v)
    if v != v:
        return '"nan"'
    if v in (math.inf, -math.inf):
        return '"inf"' if v > 0 else '"-inf"'
    return repr(v)


class LineWriter:
    """StepRecord.to_json() as one compact JSON line, written field by field: json.dumps of the
    dict took a third of probe.step() on a small model. The memory objects rarely change, so
    their text is kept and reused while their figures stay the same."""

    def __init__(self) -> None:
        self._mem_key = None
        self._mem_text = ""

    def line(self, m: StepRecord) -> bytes:
        mem = m.memory
        key = (tuple(mem.current.values()), tuple(mem.peak.values()), mem.total, mem.total_peak,
               mem.device_total, mem.device_free)
        if key != self._mem_key:
            self._mem_key = key
            self._mem_text = ('"memory":' + json.dumps(mem.to_json(False), separators=(",", ":")) +
                              ',"memory_peak":' + json.dumps(mem.to_json(True), separators=(",", ":")))
        parts = [f'{{"step":{int(m.step)},"epoch":{int(m.epoch)},"loss":{_num_text(m.loss)},'
                 f'"scale":{_num_text(m.scale)},"scale_after":{_num_text(m.scale_after)},'
                 f'"growth_tracker":{int(m.growth_tracker)},"skipped":{"true" if m.skipped else "false"}']
        if m.scale_event:
            parts.append(',"scale_event":' + json.dumps(m.scale_event))
        parts.append(f',"grad_norm":{_num_text(m.grad_norm)},"grad_norm_scaled":{_num_text(m.grad_norm_scaled)},'
                     f'"lr":{_num_text(m.lr)},"step_ms":{_num_text(m.step_ms)},'
                     f'"samples_per_s":{_num_text(m.samples_per_s)},"gemm_gflops":0.0,{self._mem_text}')
        if m.first_nonfinite:
            parts.append(',"first_nonfinite":' + json.dumps(m.first_nonfinite, ensure_ascii=False))
        if m.injected:
            parts.append(',"injected":true')
        if m.post_unscale_overflow:
            parts.append(',"post_unscale_overflow":true')
        parts.append(',"lost_update_frac":0.0')
        if m.test_loss is not None:
            parts.append(',"test_loss":' + _num_text(m.test_loss))
        if m.test_acc is not None:
            parts.append(',"test_acc":' + repr(float(m.test_acc)))
        parts.append('}\n')
        return "".join(parts).encode()


def histogram_json(step: int, tensor: str, kind: str, dtype: str, scaled: Histogram,
                   unscaled: Histogram) -> dict:
    """histogramToJson(): 61 counts per side, the fp16 fractions, the bins' exponent span."""
    assert kind in HISTOGRAM_KINDS, kind
    return {"step": step, "tensor": tensor, "kind": kind, "dtype": dtype,
            "min_exp": MIN_EXP, "max_exp": MAX_EXP,
            "scaled": scaled.counts, "unscaled": unscaled.counts,
            "scaled_fractions": scaled.fractions_json(), "unscaled_fractions": unscaled.fractions_json()}


def format_scale(s: float) -> str:
    """formatScale(): "65536", "0.5", "2^-20" (powers of two outside 2^-10..2^24 as powers)."""
    if s > 0 and math.isfinite(s):
        m, e = math.frexp(s)
        if m == 0.5 and (e - 1 > 24 or e - 1 < -10):
            return f"2^{e - 1}"
    return f"{s:.10g}"


def describe_events(m: StepRecord, growth_interval: int) -> List[str]:
    """describeEvents(): the events.log sentences of one step, word for word."""
    out = []
    if not (m.skipped or m.injected or m.scale_event or m.post_unscale_overflow):
        return out  # the usual step: nothing to say (and nothing to format)
    at = f"step {m.step}: "
    scales = f"{format_scale(m.scale)} \u2192 {format_scale(m.scale_after)}"
    if m.skipped:
        what = f"non-finite gradient in {m.first_nonfinite}" if m.first_nonfinite else "non-finite gradient"
        if m.injected:
            what += " (injected)"
        if m.post_unscale_overflow:
            what = "gradient overflowed only after unscaling"
        tail = f", scale {scales}" if m.scale_event == "backoff" else ""
        out.append(at + what + " \u2014 step skipped" + tail)
    elif m.injected:
        out.append(at + "non-finite gradient injected, but this scaler never skips: the update used it")
    if m.scale_event == "growth":
        out.append(at + f"{growth_interval} clean steps \u2014 scale {scales}")
    if m.scale_event == "growth_rejected":
        out.append(at + f"scale growth rejected: {format_scale(m.scale)} \u00d7 growth would overflow fp32")
    if m.post_unscale_overflow and not m.skipped:
        out.append(at + "gradients became non-finite only after unscaling (scale < 1) \u2014 "
                        "PyTorch's check misses this")
    return out


def _median(v: List[float]) -> float:
    if not v:
        return 0.0
    s = sorted(v)
    n = len(s)
    return s[n // 2] if n % 2 else 0.5 * (s[n // 2 - 1] + s[n // 2])


class SummaryBuilder:
    """RunSummaryBuilder: the figures summary.json holds, from the steps as they come."""

    def __init__(self) -> None:
        self.steps = 0
        self.skipped_at: List[int] = []
        self.skipped_steps = 0
        self.final_scale = 1.0
        self.step_ms: List[float] = []
        self.samples: List[float] = []
        self.last_losses: List[float] = []
        self.epoch_seconds: List[float] = []
        self._epoch_accum = 0.0
        self._epoch = 0
        self.peak = Memory()

    def add(self, m: StepRecord) -> None:
        # The probe has no epoch-end marks: a change of epoch closes the previous one, as the
        # C++ does for metrics read back from a file (the last epoch stays open).
        if m.epoch != self._epoch and self._epoch_accum > 0:
            self.epoch_seconds.append(self._epoch_accum / 1e3)
            self._epoch_accum = 0.0
        self._epoch = m.epoch
        self._epoch_accum += m.step_ms
        self.steps = m.step
        self.step_ms.append(m.step_ms)
        self.samples.append(m.samples_per_s)
        self.last_losses = (self.last_losses + [m.loss])[-10:]
        if m.skipped:
            self.skipped_steps += 1
            if len(self.skipped_at) < 1000:
                self.skipped_at.append(m.step)
        self.final_scale = m.scale_after
        for k in MEM_CATEGORIES:
            self.peak.peak[k] = max(self.peak.peak[k], m.memory.peak[k])
        self.peak.total_peak = max(self.peak.total_peak, m.memory.total_peak)

    def to_json(self, status: str) -> dict:  # summary() + runSummaryToJson()
        def tail(v):  # skip warm-up steps when there are enough
            return v[3:] if len(v) > 6 else v
        final_loss = sum(self.last_losses) / len(self.last_losses) if self.last_losses else 0.0
        return {"status": status, "steps": self.steps,
                "final_loss": final_loss if math.isfinite(final_loss) else "nan",
                "skipped_steps": self.skipped_steps, "skipped_at": list(self.skipped_at),
                "final_scale": num(self.final_scale),
                "median_step_ms": _median(tail(self.step_ms)),
                "median_samples_per_s": _median(tail(self.samples)),
                "median_gemm_gflops": 0.0, "epoch_seconds": list(self.epoch_seconds),
                "peak_memory": self.peak.to_json(True), "mean_lost_update_frac": 0.0}

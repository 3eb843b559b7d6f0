"""Exponent histograms binned exactly as AMP Studio bins them.

The C++ side (kernels/common/exponent_bins.h) puts a value in bin k (0..57) when its magnitude
is in [2^(-40+k), 2^(-40+k+1)); bin 0 also takes every smaller non-zero value and bin 57 every
larger finite one, so no value is lost. Bin 58 counts zeros, 59 infinities, 60 NaNs. Beside the
counts it keeps four fp16 range counts: underflow (non-zero, |x| < 2^-24), subnormal (non-zero,
|x| < 2^-14, underflow included), overflow (|x| > 65504, inf included) and nonfinite.

Every fp16, bf16 and fp32 value is exactly an fp32 value, so the binary exponent is read from
the fp32 bits (exact, subnormals included) with a few integer tensor ops and one bincount on the
tensor's own device; no copy to numpy. Both sides of a gradient's histogram come from one pass:

* The pass counts values per exact exponent (-149..127), split by whether the mantissa exceeds
  65504's (0x7FE000), which is all the fp16 overflow test needs at exponent 15.
* A power-of-two loss scale only moves exponents, so the other side (x / scale, or x * scale)
  is the same counts moved by log2(scale) -- exact, as binScaledByPowerOfTwo is in C++.
* Any other multiplier is applied in float64, the value of AMP Studio's binDouble(x * m).
"""
from __future__ import annotations

import math
import sys
from dataclasses import dataclass, field
from typing import List, Optional

import numpy as np
import torch

MIN_EXP = -40  # kHistMinExp
MAX_EXP = 17  # kHistMaxExp
EXP_BINS = MAX_EXP - MIN_EXP + 1  # 58
BIN_ZERO = EXP_BINS  # 58
BIN_INF = EXP_BINS + 1  # 59
BIN_NAN = EXP_BINS + 2  # 60
BINS = EXP_BINS + 3  # 61

FP16_MIN_SUBNORMAL = 2.0 ** -24
FP16_MIN_NORMAL = 2.0 ** -14
FP16_MAX = 65504.0

# dtypeName() in engine/core/dtype.h: the only spellings the reader accepts in histograms.jsonl.
DTYPE_NAMES = {torch.float32: "fp32", torch.float16: "fp16", torch.bfloat16: "bf16"}

# Exact exponents of non-zero finite fp32 values: 2^-149 (smallest subnormal) .. 2^127.
_E_LO, _E_HI = -149, 127
_NE = _E_HI - _E_LO + 1
_E = np.arange(_E_LO, _E_HI + 1)
_FP16_MAX_MANTISSA = 0x7FE000  # 65504 = 1.1111111111b x 2^15


def exponent_bin(v: float) -> int:
    """The bin of one value: exponentBin() of exponent_bins.h, for tests and readers."""
    if v != v:
        return BIN_NAN
    if v == 0.0:
        return BIN_ZERO
    if math.isinf(v):
        return BIN_INF
    e = math.frexp(abs(v))[1] - 1  # frexp: |v| = m * 2^e with m in [0.5, 1)
    return min(max(e, MIN_EXP), MAX_EXP) - MIN_EXP


def power_of_two_exponent(x: float) -> Optional[int]:
    """k when x == 2^k exactly, else None (the C++ tests frexp(x) == 0.5 the same way)."""
    if not (x > 0) or math.isinf(x):
        return None
    m, e = math.frexp(x)
    return e - 1 if m == 0.5 else None


@dataclass
class Histogram:
    """One side (scaled or unscaled) of a HistogramRecord: ExponentHistogram in C++."""

    counts: List[int] = field(default_factory=lambda: [0] * BINS)
    total: int = 0
    underflow: int = 0
    subnormal: int = 0
    overflow: int = 0
    nonfinite: int = 0

    def merge(self, o: "Histogram") -> None:
        self.counts = [a + b for a, b in zip(self.counts, o.counts)]
        self.total += o.total
        self.underflow += o.underflow
        self.subnormal += o.subnormal
        self.overflow += o.overflow
        self.nonfinite += o.nonfinite

    def fraction(self, n: int) -> float:
        return n / self.total if self.total else 0.0

    def fractions_json(self) -> dict:
        return {"underflow": self.fraction(self.underflow), "subnormal": self.fraction(self.subnormal),
                "overflow": self.fraction(self.overflow), "nonfinite": self.fraction(self.nonfinite)}


# The 16-bit key of a value (sign bit cleared) is its own bits for fp16 and bf16 and the top half
# of its bits for fp32 (sign, 8 exponent bits, 7 mantissa bits). Seen as rows of 2^mbits keys,
# row r holds the values with biased exponent r; row 0 the zeros and subnormals (m x 2^-sub_shift
# with the leading bit in m), the last row inf and the NaNs. That fixes the exponent of every
# value except fp32 subnormals below 2^-133 (key 0, shared with zero); fp32 key 0x7F80 is inf or
# a NaN whose payload is in the low half. Only for those does the probe look at the tensor again.
_LAYOUTS = {torch.float16: (10, 15, 24), torch.bfloat16: (7, 127, 133), torch.float32: (7, 127, 133)}


def _subnormal_index(mbits: int, sub_shift: int) -> np.ndarray:
    m = np.arange(1, 1 << mbits)
    return np.floor(np.log2(m)).astype(np.int64) - sub_shift - _E_LO  # exponent of m x 2^-shift


_SUBNORMAL_INDEX = {mbits: _subnormal_index(mbits, shift) for mbits, _, shift in _LAYOUTS.values()}
_HI_HALF = 1 if sys.byteorder == "little" else 0  # where an fp32's top 16 bits are


class ExponentCounts:
    """A tensor's values counted per exact binary exponent: enough to bin it at any power-of-two
    scale. Whether a value's mantissa exceeds 65504's (the fp16 overflow test at exponent 15)
    is looked up only for the exponents a histogram asks about, and only in fp32 tensors (no
    fp16 or bf16 mantissa exceeds it)."""

    def __init__(self) -> None:
        self.n = np.zeros(_NE, dtype=np.int64)
        self.zeros = self.infs = self.nans = 0
        self._big = np.zeros(_NE, dtype=np.int64)
        self._big_known = np.ones(_NE, dtype=bool)
        self._x32: Optional[torch.Tensor] = None  # the fp32 values, while big counts may be asked

    @property
    def total(self) -> int:
        return int(self.n.sum()) + self.zeros + self.infs + self.nans

    def big_at(self, e: int) -> int:
        """How many values with exponent e have a mantissa above 0x7FE000."""
        i = e - _E_LO
        if not 0 <= i < _NE:
            return 0
        if not self._big_known[i]:
            bits = self._x32.view(torch.int32) & 0x7FFFFFFF
            if e >= -126:  # normal: the mantissa field itself
                lo, hi = ((e + 127) << 23) | _FP16_MAX_MANTISSA, (e + 128) << 23
            else:  # subnormal 2^lead <= bits < 2^(lead+1): its mantissa shifted up 23 - lead
                lead = e + 149
                lo, hi = (1 << lead) + (_FP16_MAX_MANTISSA >> (23 - lead)), 1 << (lead + 1)
            self._big[i] = int(((bits > lo) & (bits < hi)).sum())
            self._big_known[i] = True
        return int(self._big[i])

    def histogram(self, shift: int = 0) -> Histogram:
        """The histogram of the values times 2^shift (exact: only exponents move)."""
        n = self.n
        e = _E + shift
        bins = np.minimum(np.maximum(e, MIN_EXP), MAX_EXP) - MIN_EXP
        counts = np.zeros(BINS, dtype=np.int64)
        counts[:EXP_BINS] = np.bincount(bins, weights=n, minlength=EXP_BINS)  # exact below 2^53
        counts[BIN_ZERO], counts[BIN_INF], counts[BIN_NAN] = self.zeros, self.infs, self.nans
        h = Histogram(counts=[int(c) for c in counts], total=int(counts.sum()))
        h.underflow = int(n[e < -24].sum())
        h.subnormal = int(n[e < -14].sum())
        h.overflow = int(n[e > 15].sum()) + self.big_at(15 - shift) + self.infs
        h.nonfinite = self.infs + self.nans
        return h


def _bincount(key: torch.Tensor, minlength: int) -> torch.Tensor:
    try:
        return torch.bincount(key, minlength=minlength)
    except RuntimeError:  # a build without int16 bincount
        return torch.bincount(key.int(), minlength=minlength)


def exponent_counts(t: torch.Tensor) -> ExponentCounts:
    """Counts of `t`'s values per exact exponent: one pass over t on its own device (a mask of
    16-bit keys and a bincount), then 32768 bins decoded on the host."""
    x = t.detach().reshape(-1)
    if x.dtype not in DTYPE_NAMES:
        raise TypeError(f"exponent histograms take fp32, fp16 or bf16 tensors, not {x.dtype}")
    x = x.contiguous()
    r = ExponentCounts()
    if x.numel() == 0:
        return r
    halves = x.view(torch.int16)
    key = (halves[_HI_HALF::2] if x.dtype == torch.float32 else halves) & 0x7FFF
    c = _bincount(key, 32768).cpu().numpy().astype(np.int64)
    mbits, bias, _ = _LAYOUTS[x.dtype]
    rows = c.reshape(-1, 1 << mbits)
    per_row = rows.sum(axis=1)
    last = len(rows) - 1
    r.n[1 - bias - _E_LO:last - 1 - bias - _E_LO + 1] = per_row[1:last]  # normal numbers
    r.n += np.bincount(_SUBNORMAL_INDEX[mbits], weights=rows[0, 1:], minlength=_NE).astype(np.int64)
    r.zeros, r.infs = int(rows[0, 0]), int(rows[last, 0])
    r.nans = int(per_row[last]) - r.infs
    if x.dtype != torch.float32:
        return r  # fp16 and bf16 keys are the whole value: exact as they stand
    r._x32 = x
    top = rows[1:last, -1]  # exponent e, mantissa 0x7F....: maybe above 65504's
    r._big_known[np.nonzero(top)[0] + 1 - bias - _E_LO] = False
    if r.zeros:  # key 0: zeros, and subnormals below 2^-133
        zeros = int((x == 0).sum())
        tiny, r.zeros = r.zeros - zeros, zeros
        if tiny:
            bits = x.view(torch.int32) & 0x7FFFFFFF
            sub = bits[(bits != 0) & (bits < 0x10000)]
            # The bits as a float (exact below 2^24): its exponent field is 127 + the
            # position of the leading bit.
            f = sub.float().view(torch.int32)
            e = ((f >> 23) - 127 - 149 - _E_LO).long()
            r.n += np.bincount(e.cpu().numpy(), minlength=_NE)[:_NE]
    # Subnormal exponents: their mantissa test is not in the key; asked for, it is counted.
    r._big_known[:-126 - _E_LO] = r.n[:-126 - _E_LO] == 0
    if r.infs:  # key 0x7F80: inf, or a NaN with its payload in the low half
        infs = int(torch.isinf(x).sum())
        r.nans += r.infs - infs
        r.infs = infs
    return r


def histogram_times(t: torch.Tensor, multiplier: float) -> Histogram:
    """binDouble(double(x) * multiplier) for every x: the path for a scale that is not a power
    of two. The C++ multiplies in double too: the same IEEE product, rounded the same way."""
    x = t.detach().reshape(-1)
    if x.dtype not in DTYPE_NAMES:
        raise TypeError(f"exponent histograms take fp32, fp16 or bf16 tensors, not {x.dtype}")
    w = x.double() * float(multiplier)
    a = w.abs()
    _, e = torch.frexp(w)
    bins = (e.long() - 1).clamp(MIN_EXP, MAX_EXP) - MIN_EXP
    bins = torch.where(w == 0, torch.full_like(bins, BIN_ZERO), bins)
    bins = torch.where(torch.isinf(w), torch.full_like(bins, BIN_INF), bins)
    bins = torch.where(torch.isnan(w), torch.full_like(bins, BIN_NAN), bins)
    counts = torch.bincount(bins, minlength=BINS).cpu().tolist()
    nz = a != 0
    h = Histogram(counts=[int(c) for c in counts], total=int(x.numel()))
    h.underflow = int((nz & (a < FP16_MIN_SUBNORMAL)).sum())
    h.subnormal = int((nz & (a < FP16_MIN_NORMAL)).sum())
    h.overflow = int((a > FP16_MAX).sum())  # inf included; nan compares false
    h.nonfinite = int((~torch.isfinite(w)).sum())
    return h


def histogram_pair(t: torch.Tensor, multiplier: float):
    """(histogram of t as held, histogram of t * multiplier) from one pass over t when the
    multiplier is a power of two (the usual loss scale), else a second pass in float64."""
    counts = exponent_counts(t)
    k = power_of_two_exponent(multiplier)
    other = counts.histogram(k) if k is not None else histogram_times(t, multiplier)
    return counts.histogram(0), other


def histogram(t: torch.Tensor, multiplier: float = 1.0) -> Histogram:
    """The C++ backends' histogram(t, multiplier): bins of every value times `multiplier`."""
    k = power_of_two_exponent(multiplier)
    return exponent_counts(t).histogram(k) if k is not None else histogram_times(t, multiplier)

#!/usr/bin/python3
"""Fits the coefficients of the vectorisable erf and exp in kernels/common/activation_math.h
(GELU's forward and backward) and checks the float32 evaluation on a dense sample.

  /usr/bin/python3 tests/unit/fit_gelu_erf.py          # prints the C++ constants and the check

Needs numpy and mpmath (Debian's python3-numpy, python3-mpmath). Deterministic: the same
constants on every run. tests/unit/test_gelu_erf.cpp checks the committed header exhaustively
against a double-precision erf; this script is how its constants were made.

The functions (a = |x|, s = a * a; every operation a plain float32 multiply or add, no fused
multiply-add, so CPU builds of any ISA and the CUDA kernels (--fmad=false) agree bit for bit):

  erf   a <  A_END:   r = a + a * qA(s)               qA(s) ~ erf(a) / a - 1, degree 6 in s
        a <  B_START: r = M0 + pM(a - M_MID)          pM(d) ~ erf(M_MID + d) - M0
        a <  ONE:     r = 1 + pB(a - B_MID)           pB(d) ~ erf(B_MID + d) - 1 = -erfc
        else          r = 1                           (erf rounds to 1 in float from ONE on)
        result copysign(r, x); pM and pB share one Horner loop, their coefficients selected.
  exp   k = nearest integer to y * log2(e), r = (y - k * LN2_HI) - k * LN2_LO (the first
        difference exact), exp(r) = 1 + (r + r * r * h(r)), times 2^(k / 2) and 2^(k - k / 2).

Fitting: a weighted least-squares polynomial on Chebyshev nodes, reweighted by Lawson's rule
towards the minimax one, then the coefficients rounded to float32 one at a time from the
constant term up, each time refitting the ones not yet rounded to what the rounded ones left
(so a rounded constant's error is absorbed by the rest).
"""
import math
import struct

import mpmath
import numpy as np

mpmath.mp.dps = 40
F = np.float32


def f32(v):
    return float(F(v))


def nodes(lo, hi, n=1200):
    k = np.arange(n)
    return (lo + hi) / 2 + (hi - lo) / 2 * np.cos(np.pi * (k + 0.5) / n)


def lawson_fit(t, target, degree, fixed, iters=60):
    """Coefficients c[0..degree] minimising max |sum c_k t^k - target| (approximately), with
    c[k] = fixed[k] for the first len(fixed) ones."""
    nf = len(fixed)
    rest = target - sum(c * t**k for k, c in enumerate(fixed))
    V = np.stack([t**k for k in range(nf, degree + 1)], axis=1)
    w = np.ones_like(t) / len(t)
    for _ in range(iters):
        sw = np.sqrt(w)
        c, *_ = np.linalg.lstsq(V * sw[:, None], rest * sw, rcond=None)
        err = np.abs(V @ c - rest)
        w = w * (err + 1e-300)
        w /= w.sum()
    return list(fixed) + list(c)


def fit_rounded(t, target, degree):
    cs = []
    for k in range(degree + 1):
        c = lawson_fit(t, target, degree, cs)
        cs.append(f32(c[k]))
    err = np.max(np.abs(sum(c * t**k for k, c in enumerate(cs)) - target))
    return cs, err


def mp_erf(values):
    return np.array([float(mpmath.erf(mpmath.mpf(float(v)))) for v in values])


def first_float_where_erf_rounds_to_one():
    # The smallest float a with erf(a) >= 1 - 2^-25 (the midpoint below 1; ties go to 1, even).
    lo, hi = F(3.0), F(4.5)
    while np.nextafter(lo, F(5)) < hi:
        mid = F((float(lo) + float(hi)) / 2)
        if mpmath.erf(mpmath.mpf(float(mid))) >= 1 - mpmath.mpf(2) ** -25:
            hi = mid
        else:
            lo = mid
    return hi


# ---- the split ---------------------------------------------------------------------------
import os  # AMP_FIT="A_END B_START M_MID": try another split
A_END, B_START, M_MID = (float(v) for v in os.environ.get("AMP_FIT", "0.75 1.45 0.99").split())
ONE = first_float_where_erf_rounds_to_one()
B_MID = (B_START + float(ONE)) / 2
DEG_A, DEG_MB = 6, int(os.environ.get("AMP_FIT_DEG", "13"))

# Region A: qA(s) = erf(a) / a - 1 on s in [0, A_END^2], absolute error (relative in erf).
sA = nodes(0.0, A_END**2)
aA = np.sqrt(sA)
tA = np.array([float(mpmath.erf(mpmath.mpf(float(a))) / mpmath.mpf(float(a)) - 1) if a > 0
               else float(2 / mpmath.sqrt(mpmath.pi) - 1) for a in aA])
QA, errA = fit_rounded(sA, tA, DEG_A)

# Region M: erf(M_MID + d) - M0, d in [A_END - M_MID, B_START - M_MID].
M0 = f32(mpmath.erf(M_MID))
dM = nodes(A_END - M_MID, B_START - M_MID)
tM = np.array([float(mpmath.erf(mpmath.mpf(M_MID) + mpmath.mpf(float(d))) - mpmath.mpf(M0)) for d in dM])
PM, errM = fit_rounded(dM, tM, DEG_MB)

# Region B: erf(B_MID + d) - 1, d in [B_START - B_MID, ONE - B_MID].
dB = nodes(B_START - B_MID, float(ONE) - B_MID)
tB = np.array([-float(mpmath.erfc(mpmath.mpf(B_MID) + mpmath.mpf(float(d)))) for d in dB])
PB, errB = fit_rounded(dB, tB, DEG_MB)

# exp: h(r) = (exp(r) - 1 - r) / r^2 on |r| <= ln2 / 2 (a little more: k from a rounded product).
LN2_HI = f32(float.fromhex("0x1.62e4p-1"))  # 0.693145751953125: 15 significant bits
LN2_LO = f32(float(mpmath.log(2)) - LN2_HI)
LOG2E = f32(1 / math.log(2))
rE = nodes(-0.36, 0.36)
tE = np.array([float((mpmath.exp(mpmath.mpf(float(r))) - 1 - mpmath.mpf(float(r))) / mpmath.mpf(float(r)) ** 2)
               if abs(r) > 1e-12 else 0.5 for r in rE])
HE, errE = fit_rounded(rE, tE, 5)


# ---- the float32 evaluation, operation for operation as the header -------------------------
def horner(cs, t):
    acc = np.full_like(t, F(cs[-1]))
    for c in reversed(cs[:-1]):
        acc = (F(c) + t * acc).astype(F)
    return acc


def erf32(x):
    x = x.astype(F)
    a = np.abs(x)
    s = a * a
    rA = a + a * horner([F(c) for c in QA], s)
    isB = a >= F(B_START)
    d = a - np.where(isB, F(B_MID), F(M_MID)).astype(F)
    cs = [np.where(isB, F(b), F(m)).astype(F) for m, b in zip(PM, PB)]
    acc = cs[-1]
    for c in reversed(cs[:-1]):
        acc = c + d * acc
    rMB = np.where(isB, F(1), F(M0)).astype(F) + acc
    r = np.where(a < F(A_END), rA, rMB)
    r = np.where(a >= ONE, F(1), r)
    return np.copysign(r, x).astype(F)


def ulp32(v):
    v = np.abs(v.astype(F))
    return (np.nextafter(v, F(np.inf)) - v).astype(np.float64)


def check(xs):
    xs = xs.astype(F)
    ours = erf32(xs).astype(np.float64)
    ref = np.array([math.erf(float(v)) for v in xs])  # double: correctly rounded to float here
    cr = ref.astype(F)
    # ulp of the correctly rounded result (the larger one at a power of two: the ulp above)
    err = np.abs(ours - ref) / ulp32(cr)
    return err.max(), float(xs[err.argmax()]), np.count_nonzero(ours != cr.astype(np.float64))


def lit(c):
    return f"{float(c):.9g}f"


def nested(cs, var):
    # c0 + v * (c1 + v * (... + v * cn)): the header's Horner form, innermost last.
    out = lit(cs[-1])
    for c in reversed(cs[:-1]):
        out = f"{lit(c)} + {var} * ({out})"
    return out


def main():
    print("// The constants and polynomials (tests/unit/fit_gelu_erf.py); max |approximation")
    print(f"// error| A {errA:.3g} (in erf(a)/a - 1), M {errM:.3g}, B {errB:.3g}, exp's h {errE:.3g}.")
    print(f"erf: A_END {A_END!r}f  B_START {B_START!r}f  ONE {lit(ONE)}  M_MID {lit(M_MID)}  B_MID {lit(B_MID)}  M0 {lit(M0)}")
    print("  const float q = " + nested(QA, "s") + ";")
    print(f"  float p = b ? {lit(PB[-1])} : {lit(PM[-1])};")
    for m, b in reversed(list(zip(PM[:-1], PB[:-1]))):
        print(f"  p = (b ? {lit(b)} : {lit(m)}) + d * p;")
    print(f"exp: LN2_HI {lit(LN2_HI)}  LN2_LO {lit(LN2_LO)}  LOG2E {lit(LOG2E)}")
    print("  const float h = " + nested(HE, "r") + ";")
    # A dense sample: every 97th float from 2^-30 up to ONE, and the region edges.
    lo = struct.unpack("<I", struct.pack("<f", 2.0**-30))[0]
    hi = struct.unpack("<I", struct.pack("<f", float(ONE)))[0] + 4
    bits = np.arange(lo, hi, 97, dtype=np.uint32)
    xs = bits.view(F)
    for name, (l, h) in {"A": (0, A_END), "M": (A_END, B_START), "B": (B_START, float(ONE) * 1.01)}.items():
        sel = xs[(xs >= l) & (xs < h)]
        m, at, wrong = check(sel)
        print(f"// sample {name}: {len(sel)} floats, max error {m:.4f} ulp at {at:.9g}, "
              f"{wrong} not correctly rounded")


if __name__ == "__main__":
    main()

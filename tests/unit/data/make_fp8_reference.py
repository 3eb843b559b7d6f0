#!/usr/bin/env python3
"""Writes fp8_reference.txt: the reference vectors of tests/unit/test_minifloat.cpp.

Made with PyTorch 2.15 from PyPI (Debian's 1.13 has no fp8):
    build/release/torch-venv/bin/torch-python tests/unit/data/make_fp8_reference.py \
        tests/unit/data/fp8_reference.txt
(installer/torch-venv.sh makes that venv). The test reads the committed file, so the suite checks
these vectors where PyPI is out of reach; where the venv exists, the test run also re-makes the file
and compares (tests/unit/CMakeLists.txt), so a new PyTorch that changes a cast is noticed.

What comes from PyPorch itself: every code of float8_e4m3fn, float8_e5m2 and float8_e8m0fnu decoded;
fp32 boundary cases and a sweep cast to the three (PyTorch saturates E4M3, gives inf for E5M2
overflow). The other overflow rules are checked against independent references written here: the
saturating E5M2 as clamp-then-cast (torch.clamp to +-57344, then PyTorch's cast), the NaN-on-overflow
E4M3 as PyTorch's cast with NaN wherever the value rounds past 448 (above 464, the tie that
rounds to even 448), as PyTorch 2.1's cast did. E2M1 / E3M2 / E2M3 (no PyTorch
cast exists) and the MX block quantisation come from a from-the-rules reference in plain Python
(fractions, no floating point): the nearest representable value, ties to the even code, saturating;
the MX shared exponent floor(log2(amax)) - emax (OCP), ceil(log2(amax)) - emax, and
ceil(log2(amax / max)) (round up to fit, Transformer Engine's), each element then cast by PyTorch
(E4M3 / E5M2) or by the plain reference (E2M1).

Line formats (hex without 0x):
    decode FMT CODE FLOATBITS
    encode FMT RULE XBITS CODE          RULE: sat | nonsat
    mx FMT MODE XBITS*32 ; SCALECODE CODE*32
"""
import fractions
import math
import random
import struct
import sys

import torch

F = fractions.Fraction


def bits(x):
    return struct.unpack("<I", struct.pack("<f", x))[0]


def from_bits(b):
    return struct.unpack("<f", struct.pack("<I", b))[0]


TORCH = {"e4m3": torch.float8_e4m3fn, "e5m2": torch.float8_e5m2}
# Plain-Python layouts of the formats without a PyTorch cast: (exp bits, man bits, bias).
PLAIN = {"e2m1": (2, 1, 1), "e3m2": (3, 2, 3), "e2m3": (2, 3, 1)}


def plain_values(fmt):
    """Every non-negative code's exact value, by code."""
    e_bits, m_bits, bias = PLAIN[fmt]
    out = []
    for code in range(1 << (e_bits + m_bits)):
        e, m = code >> m_bits, code & ((1 << m_bits) - 1)
        if e == 0:
            out.append(F(m, 1 << m_bits) * F(2) ** (1 - bias))
        else:
            out.append((1 + F(m, 1 << m_bits)) * F(2) ** (e - bias))
    return out


def plain_encode(x, fmt):
    """Nearest value, ties to the even code, saturating; NaN gives signed zero (no NaN code)."""
    e_bits, m_bits, _ = PLAIN[fmt]
    sign = (1 << (e_bits + m_bits)) if math.copysign(1.0, x) < 0 else 0
    if math.isnan(x):
        return sign
    values = plain_values(fmt)
    if math.isinf(x):
        return sign | (len(values) - 1)
    a = abs(F(x))
    best = None
    for code, v in enumerate(values):
        d = abs(a - v)
        if best is None or d < best[0] or (d == best[0] and code % 2 == 0):
            best = (d, code)
    if a > values[-1]:
        best = (0, len(values) - 1)
    return sign | best[1]


def torch_encode(xs, fmt):
    return torch.tensor(xs, dtype=torch.float32).to(TORCH[fmt]).view(torch.uint8).tolist()


def boundary_cases(fmt):
    """Ties, the largest finite and past it, subnormals and half of them, specials, a sweep."""
    xs = [0.0, -0.0, float("inf"), float("-inf"), float("nan"), 1e30, -1e30, 3.4e38]
    if fmt in TORCH:
        codes = torch.arange(256, dtype=torch.uint8).view(TORCH[fmt]).float().tolist()
    else:
        codes = [float(v) for v in plain_values(fmt)]
    finite = sorted({abs(c) for c in codes if math.isfinite(c)})
    for lo, hi in zip(finite, finite[1:]):
        mid = (lo + hi) / 2  # exact in fp32 for these formats
        for v in (lo, hi, mid, math.nextafter(mid, 0), math.nextafter(mid, math.inf)):
            xs += [v, -v]
    top = finite[-1]
    step = top - finite[-2]
    for v in (top + step / 2, top + step / 4, top + step, 2 * top, math.nextafter(top, math.inf)):
        xs += [v, -v]
    tiny = finite[1]
    for v in (tiny / 2, tiny / 4, math.nextafter(tiny / 2, math.inf), tiny * 0.75, 1e-45):
        xs += [v, -v]
    rng = random.Random(15)
    for _ in range(1500):
        xs.append(rng.choice([-1, 1]) * 2.0 ** rng.uniform(math.log2(tiny) - 3, math.log2(top) + 2))
    return [from_bits(bits(x)) if math.isfinite(x) else x for x in xs]  # fp32 values


def mx_blocks():
    rng = random.Random(37)
    blocks = []
    for kind in range(8):
        b = [rng.gauss(0, 1) * 2.0 ** rng.randint(-20, 20) for _ in range(32)]
        if kind == 1:
            b[5] = 470.0 * 2.0 ** -3  # amax whose scaled value falls between 448 and 512 (floor clips)
        if kind == 2:
            b[7] = 1000.0 * max(abs(v) for v in b)  # one outlier
        if kind == 3:
            b = [0.0] * 32
        if kind == 4:
            b = [2.0 ** -130] * 32  # amax below E8M0's smallest scale times the format's range
        if kind == 5:
            b[3] = 2.0 ** 8  # amax a power of two
        blocks.append([from_bits(bits(v)) for v in b])
    return blocks


def mx_exponent(amax, fmt, mode):
    emax = {"e4m3": 8, "e5m2": 15, "e2m1": 2}[fmt]
    maxv = {"e4m3": F(448), "e5m2": F(57344), "e2m1": F(6)}[fmt]
    if amax == 0:
        return -127
    a = F(amax)
    fl = math.floor(math.log2(a))
    while F(2) ** fl > a:  # exact floor(log2) on fractions
        fl -= 1
    while F(2) ** (fl + 1) <= a:
        fl += 1
    if mode == "floor":
        e = fl - emax
    elif mode == "ceil":
        e = (fl if F(2) ** fl == a else fl + 1) - emax
    else:  # round up to fit: the smallest e with amax / 2^e <= max
        e = fl - emax - 2
        while a / F(2) ** e > maxv:
            e += 1
    return max(-127, min(127, e))


def main(out):
    lines = []
    for fmt, dt in (("e4m3", torch.float8_e4m3fn), ("e5m2", torch.float8_e5m2), ("e8m0", torch.float8_e8m0fnu)):
        vals = torch.arange(256, dtype=torch.uint8).view(dt).float().tolist()
        for code, v in enumerate(vals):
            lines.append(f"decode {fmt} {code:x} {bits(v) if not math.isnan(v) else 0x7fc00000:x}")
    for fmt in ("e4m3", "e5m2"):
        xs = boundary_cases(fmt)
        got = torch_encode(xs, fmt)
        top = 448.0 if fmt == "e4m3" else 57344.0
        clamped = torch.clamp(torch.tensor(xs, dtype=torch.float32), -top, top).to(TORCH[fmt]).view(torch.uint8).tolist()
        for x, code, cc in zip(xs, got, clamped):
            xb = bits(x)
            if fmt == "e4m3":
                lines.append(f"encode e4m3 sat {xb:x} {code:x}")
                past = math.isinf(x) or (math.isfinite(x) and abs(x) > 464.0)  # rounds past 448 (464 ties to it)
                lines.append(f"encode e4m3 nonsat {xb:x} {(0x7f | (code & 0x80)) if past else code:x}")
            else:
                lines.append(f"encode e5m2 nonsat {xb:x} {code:x}")
                lines.append(f"encode e5m2 sat {xb:x} {cc if not math.isnan(x) else code:x}")
    for fmt in PLAIN:
        for x in boundary_cases(fmt):
            lines.append(f"encode {fmt} sat {bits(x):x} {plain_encode(x, fmt):x}")
    e8 = [0.0, 1.0, 1.5, 0.75, 3.0, 2.0 ** -127, 2.0 ** -128, 2.0 ** -126, 1e-40, -1.0, -3.0,
          float("inf"), float("nan"), 2.0 ** 127, 1.9 * 2.0 ** 127, 1.5 * 2.0 ** -127]
    e8 += [random.Random(8).uniform(-1, 1) * 2.0 ** random.Random(i).randint(-130, 127) for i in range(200)]
    e8 = [from_bits(bits(v)) if math.isfinite(v) else v for v in e8]
    for x, code in zip(e8, torch.tensor(e8, dtype=torch.float32).to(torch.float8_e8m0fnu).view(torch.uint8).tolist()):
        lines.append(f"encode e8m0 sat {bits(x):x} {code:x}")
    for fmt in ("e4m3", "e5m2", "e2m1"):
        for mode in ("floor", "ceil", "fit"):
            for block in mx_blocks():
                amax = max(abs(v) for v in block)
                e = mx_exponent(amax, fmt, mode)
                scaled = [from_bits(bits(float(F(v) / F(2) ** e))) for v in block]  # exact: a power of two
                if fmt == "e2m1":
                    codes = [plain_encode(v, fmt) for v in scaled]
                else:
                    codes = torch_encode(scaled, fmt)
                xs = " ".join(f"{bits(v):x}" for v in block)
                lines.append(f"mx {fmt} {mode} {xs} ; {e + 127:x} " + " ".join(f"{c:x}" for c in codes))
    with open(out, "w") as f:
        f.write(f"# made by make_fp8_reference.py with torch {torch.__version__}\n")
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "fp8_reference.txt")

// The block-scaled GEMMs of sm_100 (MXFP8: cuBLASLt VEC32_UE8M0, NVFP4: VEC16_UE4M3) and what
// serves them on any GPU (issue 41 §3):
//   - the kernel that tiles our quantiser's block scales as cuBLASLt reads them, byte for byte
//     against kernels/common/block_scale_tiles.h's host form (padding zeroed), and the exact
//     transpose of E2M1 codes two to a byte: both run on any GPU;
//   - the path each quantised GEMM takes and, where it falls back, the reason (sm_90: the
//     device; blockwise: no mode wired; operands not blocked along K): any GPU;
//   - the block-scaled GEMMs against the CPU backend's gemmQuantized of the same operands within
//     the bound derived below: sm_100 and newer (elsewhere the test skips saying so);
//   - D's amax (CudaBackend::gemmQuantizedWith) equal to the amax of the downloaded output,
//     bit for bit, on every path the device has.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

#include "engine/backend/cuda_backend.h"
#include "engine/backend/cuda_fast_paths.h"
#include "kernels/common/block_scale_tiles.h"
#include "kernels/cuda/fp8_kernels.h"
#include "tests/gpu/gpu_test_support.h"

using namespace amp;
using namespace amp::gpu_test;

namespace {

QuantSpec mxSpec(MiniFormat f, bool alongRows) {
  QuantSpec s;
  s.scaling = QuantScaling::Mx;
  s.format = f;
  s.block = 32;
  s.mxRounding = MxRounding::RoundUp;
  s.alongRows = alongRows;
  return s;
}

QuantSpec nvfp4Spec(bool alongRows, bool hadamard) {
  QuantSpec s;
  s.scaling = QuantScaling::Nvfp4;
  s.format = MiniFormat::E2M1;
  s.block = 16;
  s.alongRows = alongRows;
  s.hadamard = hadamard;
  s.hadamardSigns = 0x5A3C;
  return s;
}

QuantSpec perTensorSpec(MiniFormat f, float scale) {
  QuantSpec s;
  s.format = f;
  s.tensorScale = scale;
  return s;
}

// One GEMM of Linear's: op(a) (m x k) . op(b) (k x n), each operand blocked along K.
struct Problem {
  const char* name;
  std::int64_t m, n, k;
  bool transA, transB;
};
const Problem kLinearGemms[] = {
    {"forward x . W^T", 64, 48, 96, false, true},
    {"dgrad dy . W", 64, 48, 96, false, false},
    {"wgrad dy^T . x", 48, 64, 128, true, false},
    {"forward, several tiles", 256, 144, 320, false, true},
};

}  // namespace

class Fp8BlockGemmCuda : public CpuAndCuda {
 protected:
  CudaBackend& backend() { return dynamic_cast<CudaBackend&>(*cuda); }
  int sm() const {
    const std::string d = cuda->description();
    const auto at = d.find("(sm_");
    return at == std::string::npos ? 0 : std::stoi(d.substr(at + 4, 3));
  }
  // a (rows x cols of op(a)'s storage) and b quantised on both backends, blocked along K.
  struct Operands {
    QuantizedTensor ca, cb, ga, gb;
  };
  Operands quantiseBoth(const Problem& p, QuantSpec sa, QuantSpec sb, float magnitude, std::uint32_t seed) {
    sa.alongRows = p.transA;
    sb.alongRows = !p.transB;
    const std::int64_t ar = p.transA ? p.k : p.m, ac = p.transA ? p.m : p.k;
    const std::int64_t br = p.transB ? p.n : p.k, bc = p.transB ? p.k : p.n;
    std::vector<float> av = finiteValues(std::size_t(ar * ac), seed, 3.f), bv = finiteValues(std::size_t(br * bc), seed + 1, 3.f);
    for (float& v : av) v *= magnitude;  // NVFP4: a tensor scale S far from 1
    const Pair a = both(av, {ar, ac}, DType::F32), b = both(bv, {br, bc}, DType::F32);
    Operands o;
    cpu->quantize(a.c, ac, sa, o.ca, MemCategory::Workspace);
    cpu->quantize(b.c, bc, sb, o.cb, MemCategory::Workspace);
    cuda->quantize(a.g, ac, sa, o.ga, MemCategory::Workspace);
    cuda->quantize(b.g, bc, sb, o.gb, MemCategory::Workspace);
    return o;
  }
  Tensor uploadBytes(const std::vector<std::uint8_t>& bytes) {
    Tensor t = cuda->empty({std::int64_t(bytes.size())}, DType::U8, MemCategory::Workspace);
    cuda->uploadBytes(t, bytes);
    return t;
  }
};

// The tiles on the device are the host form's, padding zeroed over a destination full of junk:
// MX and NVFP4 scales, both orientations, partial tiles in both directions.
TEST_F(Fp8BlockGemmCuda, TiledBlockScalesAreTheHostLayoutWithZeroPadding) {
  struct Case {
    std::int64_t rows, cols;
    QuantSpec spec;
  };
  for (const Case& c : {Case{48, 96, mxSpec(MiniFormat::E4M3, false)}, Case{96, 48, mxSpec(MiniFormat::E5M2, true)},
                        Case{130, 200, nvfp4Spec(false, false)}, Case{200, 130, nvfp4Spec(true, false)},
                        Case{7, 33, mxSpec(MiniFormat::E4M3, false)}, Case{300, 64, mxSpec(MiniFormat::E4M3, true)}}) {
    const std::string what = std::to_string(c.rows) + " x " + std::to_string(c.cols) +
                             (c.spec.alongRows ? " down columns" : " along rows");
    const Tensor x = cuda->fromHost(finiteValues(std::size_t(c.rows * c.cols), 3, 6.f), {c.rows, c.cols}, DType::F32,
                                    MemCategory::Workspace);
    QuantizedTensor q;
    cuda->quantize(x, c.cols, c.spec, q, MemCategory::Workspace);
    const std::vector<std::uint8_t> scales = cuda->toHostBytes(q.blockScales);
    const QuantLayout L = q.layout();
    ASSERT_EQ(std::int64_t(scales.size()), L.blockCount()) << what;
    std::vector<std::uint8_t> expected(std::size_t(blockScaleTilesOf(L).bytes()));
    tileBlockScales(scales.data(), L, expected.data());
    Tensor tiles = uploadBytes(std::vector<std::uint8_t>(expected.size(), 0xAB));
    cuda::launchTileBlockScales(q.blockScales.data<std::uint8_t>(), L, tiles.data<std::uint8_t>(), backend().stream());
    backend().checkLaunch("tile block scales", what);
    EXPECT_EQ(cuda->toHostBytes(tiles), expected) << what;
  }
}

TEST_F(Fp8BlockGemmCuda, TransposedE2m1CodesAreExact) {
  for (const auto& [rows, cols] : {std::pair<std::int64_t, std::int64_t>{37, 45}, {64, 32}, {1, 7}, {96, 130}}) {
    const std::int64_t n = rows * cols;
    std::vector<std::uint8_t> src(std::size_t((n + 1) / 2));
    for (std::size_t i = 0; i < src.size(); ++i) {
      const bool lastOfOdd = n % 2 == 1 && i + 1 == src.size();  // its free high nibble is zero
      src[i] = std::uint8_t((i * 151 + 7) & (lastOfOdd ? 0x0F : 0xFF));
    }
    std::vector<std::uint8_t> expected(src.size(), 0);
    for (std::int64_t e = 0; e < n; ++e) {  // element (c, r) of the transpose is (r, c)
      const std::uint32_t v = loadQuantCode(src.data(), (e % rows) * cols + e / rows, MiniFormat::E2M1);
      expected[std::size_t(e / 2)] |= std::uint8_t(e % 2 ? v << 4 : v);
    }
    const Tensor s = uploadBytes(src);
    Tensor d = uploadBytes(std::vector<std::uint8_t>(src.size(), 0xFF));
    cuda::launchTransposeNibbles(s.data<std::uint8_t>(), rows, cols, d.data<std::uint8_t>(), backend().stream());
    backend().checkLaunch("transpose nibbles", "");
    EXPECT_EQ(cuda->toHostBytes(d), expected) << rows << " x " << cols;
  }
}

// What each block-scaled GEMM of Linear's runs on here, and the reason where it falls back. On
// sm_90 (the H200) the device is named; blockwise and operands blocked the wrong way are named on
// every device.
TEST_F(Fp8BlockGemmCuda, EachPathOrFallbackReasonIsNamed) {
  const bool gemmOn = cudabk::fastPathEnabled("fp8-gemm"), blockOn = cudabk::fastPathEnabled("fp8-block-gemm");
  const int v = sm();
  for (const Problem& p : kLinearGemms) {
    SCOPED_TRACE(p.name);
    const Operands mx = quantiseBoth(p, mxSpec(MiniFormat::E4M3, false), mxSpec(MiniFormat::E4M3, false), 1.f, 11);
    const Operands fp4 = quantiseBoth(p, nvfp4Spec(false, false), nvfp4Spec(false, false), 1.f, 12);
    const std::string mxPath = backend().quantizedGemmPath(mx.ga, p.transA, mx.gb, p.transB, DType::F32);
    const std::string fp4Path = backend().quantizedGemmPath(fp4.ga, p.transA, fp4.gb, p.transB, DType::BF16);
    if (!gemmOn) {
      EXPECT_EQ(mxPath, "dequantised fp32 GEMM: AMP_CUDA_DISABLE=fp8-gemm");
    } else if (v < 100) {
      const std::string device = "dequantised fp32 GEMM: sm_" + std::to_string(v) +
                                 " has no block-scaled tensor cores (cuBLASLt's VEC32_UE8M0 / VEC16_UE4M3 need sm_100 or "
                                 "newer)";
      EXPECT_EQ(mxPath, device);
      EXPECT_EQ(fp4Path, device);
    } else if (!blockOn) {
      EXPECT_EQ(mxPath, "dequantised fp32 GEMM: AMP_CUDA_DISABLE=fp8-block-gemm");
    } else {
      EXPECT_EQ(mxPath, "block-scaled fp8 tensor cores (cuBLASLt VEC32_UE8M0: MXFP8)");
      EXPECT_EQ(fp4Path, "block-scaled fp4 tensor cores (cuBLASLt VEC16_UE4M3: NVFP4)");
    }
    if (!gemmOn) continue;
    // a blocked along m instead of K: quantised the other way round for this GEMM.
    QuantizedTensor across;
    const Tensor a = cuda->fromHost(finiteValues(std::size_t(mx.ga.rows * mx.ga.cols), 5), {mx.ga.rows, mx.ga.cols},
                                    DType::F32, MemCategory::Workspace);
    cuda->quantize(a, mx.ga.cols, mxSpec(MiniFormat::E4M3, !p.transA), across, MemCategory::Workspace);
    EXPECT_EQ(backend().quantizedGemmPath(across, p.transA, mx.gb, p.transB, DType::F32).rfind(
                  "dequantised fp32 GEMM: a's blocks run along m or n, not along K", 0),
              0u);
  }
  QuantSpec bw;
  bw.scaling = QuantScaling::Blockwise;
  bw.block = 128;
  QuantSpec bwSquare = bw;
  bwSquare.square = true;
  const Operands blockwise = quantiseBoth(kLinearGemms[0], bw, bwSquare, 1.f, 13);
  if (gemmOn) {
    EXPECT_NE(backend().quantizedGemmPath(blockwise.ga, false, blockwise.gb, true, DType::F32).find("VEC128_32F"),
              std::string::npos);
  }
}

// The block-scaled GEMM against the CPU backend's gemmQuantized of the same operands (the
// quantisers agree bit for bit: test_fp8_cuda.cpp). The bound, per element, with
// S = sum over k of |A_ik B_kj| for the CPU's decoded operands A, B and u = 2^-24:
//   - MXFP8: every decoded value is an fp8 code times a power of two, exact in fp32, and so is
//     every product (at most 4 + 4 significant bits). The CPU then adds K exact products in fp32:
//     at most (K + 1) u S with the bias. The GPU multiplies the same exact products and applies
//     the same power-of-two scales exactly; its only error is the tensor cores' accumulation,
//     taken as DeepSeek-V3's measurement of Hopper's fp8 accumulator (about 14 bits kept between
//     promotions to fp32) in the worst case: K 2^-14 S. (Blackwell's block-scaled MMA is assumed
//     no worse; the first sm_100 run should print its figure against this.)
//   - NVFP4: the CPU decodes (e2m1 x s_block) / S_tensor, one rounding per operand, and rounds
//     each product once more; the GPU's alpha = 1 / (S_a S_b) is rounded once and applied once:
//     the two exact sums differ by at most 6 u S. Plus the same accumulation terms.
//   - a bf16 output: each side rounds once, 2^-9 |c| each.
// Bound: (K 2^-14 + (K + 8) u) S + 2^-8 |c| for bf16. A tile layout, scale or transpose error
// shifts values by whole binades, far outside it. The worst case is loose, so the whole output
// is also held to an rms bound (2e-2 of rms(c), as test_fp8_cuda.cpp's fp8 path, plus 4e-3 for
// bf16).
TEST_F(Fp8BlockGemmCuda, BlockScaledGemmsMatchTheCpuWithinTheBound) {
  if (sm() < 100) GTEST_SKIP() << "the block-scaled tensor cores need sm_100 or newer; this GPU is sm_" << sm();
  if (!cudabk::fastPathEnabled("fp8-gemm") || !cudabk::fastPathEnabled("fp8-block-gemm"))
    GTEST_SKIP() << "the block-scaled GEMM is switched off here (AMP_CUDA_DISABLE)";
  struct Recipe {
    const char* name;
    QuantSpec a, b;
    float magnitude;
  };
  const Recipe recipes[] = {
      {"mxfp8 e4m3 x e4m3", mxSpec(MiniFormat::E4M3, false), mxSpec(MiniFormat::E4M3, false), 1.f},
      {"mxfp8 e5m2 x e4m3", mxSpec(MiniFormat::E5M2, false), mxSpec(MiniFormat::E4M3, false), 1.f},
      {"nvfp4", nvfp4Spec(false, false), nvfp4Spec(false, false), 300.f},
      {"nvfp4 hadamard", nvfp4Spec(false, true), nvfp4Spec(false, true), 0.01f},
  };
  for (const Recipe& r : recipes)
    for (const Problem& p : kLinearGemms)
      for (const DType out : {DType::F32, DType::BF16}) {
        const bool withBias = !p.transA && p.transB;  // the forward's
        const std::string what = std::string(r.name) + ", " + p.name + " -> " + name(out);
        SCOPED_TRACE(what);
        const Operands o = quantiseBoth(p, r.a, r.b, r.magnitude, std::uint32_t(p.m + p.k));
        const std::vector<float> biasValues = finiteValues(std::size_t(p.n), 17, 2.f);
        const Pair bias = both(biasValues, {p.n}, DType::F32);
        Pair c = emptyBoth({p.m, p.n}, out);
        cpu->gemmQuantized(o.ca, p.transA, o.cb, p.transB, c.c, withBias ? &bias.c : nullptr);
        cuda->gemmQuantized(o.ga, p.transA, o.gb, p.transB, c.g, withBias ? &bias.g : nullptr);
        // Asked after the GEMM, so a shape cuBLASLt turned down at run time shows its reason.
        const std::string path = backend().quantizedGemmPath(o.ga, p.transA, o.gb, p.transB, out);
        EXPECT_EQ(path.rfind("block-scaled", 0), 0u) << path;
        Pair da = emptyBoth({o.ca.rows, o.ca.cols}, DType::F32), db = emptyBoth({o.cb.rows, o.cb.cols}, DType::F32);
        cpu->dequantize(o.ca, da.c);
        cpu->dequantize(o.cb, db.c);
        const std::vector<float> A = cpu->toHostFloat(da.c), B = cpu->toHostFloat(db.c);
        const std::vector<float> C = cpu->toHostFloat(c.c), G = cuda->toHostFloat(c.g);
        const double u = std::ldexp(1.0, -24);
        double errSq = 0, refSq = 0;
        int reported = 0;
        for (std::int64_t i = 0; i < p.m; ++i)
          for (std::int64_t j = 0; j < p.n; ++j) {
            double absSum = withBias ? std::fabs(biasValues[std::size_t(j)]) : 0.0;
            for (std::int64_t q = 0; q < p.k; ++q)
              absSum += std::fabs(double(A[std::size_t(p.transA ? q * p.m + i : i * p.k + q)]) *
                                  B[std::size_t(p.transB ? j * p.k + q : q * p.n + j)]);
            const double cv = C[std::size_t(i * p.n + j)], gv = G[std::size_t(i * p.n + j)];
            const double bound = (double(p.k) * std::ldexp(1.0, -14) + double(p.k + 8) * u) * absSum +
                                 (out == DType::BF16 ? std::ldexp(1.0, -8) * std::fabs(cv) : 0.0) + 1e-30;
            errSq += (gv - cv) * (gv - cv);
            refSq += cv * cv;
            if (!(std::fabs(gv - cv) <= bound) && reported++ < 5)
              ADD_FAILURE() << "c[" << i << ", " << j << "]: gpu " << gv << ", cpu " << cv << " (bound " << bound << ")";
          }
        const double rms = std::sqrt(errSq / refSq);
        EXPECT_LE(rms, 2e-2 + (out == DType::BF16 ? 4e-3 : 0.0)) << "rms error relative to rms(c)";
        std::printf("[ block gemm ] %s: rms error %.3g of rms(c)\n", what.c_str(), rms);
      }
}

// D's amax (gemmQuantizedWith's dAmaxBits) is the amax of the output as stored, exactly, on every
// path: the per-tensor fp8 tensor cores (sm_89+), the block-scaled ones (sm_100+) or the fallback,
// fp32 and bf16 outputs, with a bias; Backend::amax of the output gives the same bits.
TEST_F(Fp8BlockGemmCuda, GemmDAmaxIsTheDownloadedOutputsAmax) {
  struct Case {
    const char* name;
    Problem p;
    QuantSpec a, b;
  };
  const Case cases[] = {
      {"per-tensor e4m3", {"forward", 64, 48, 96, false, true}, perTensorSpec(MiniFormat::E4M3, 20.f),
       perTensorSpec(MiniFormat::E4M3, 50.f)},
      {"per-tensor e5m2 x e4m3 wgrad", {"wgrad", 48, 64, 128, true, false}, perTensorSpec(MiniFormat::E5M2, 4.f),
       perTensorSpec(MiniFormat::E4M3, 8.f)},
      {"per-tensor odd shape (fallback)", {"forward", 37, 45, 53, false, true}, perTensorSpec(MiniFormat::E4M3, 1.f),
       perTensorSpec(MiniFormat::E4M3, 1.f)},
      {"mxfp8", {"forward", 64, 48, 96, false, true}, mxSpec(MiniFormat::E4M3, false), mxSpec(MiniFormat::E4M3, false)},
      {"nvfp4", {"dgrad", 64, 48, 96, false, false}, nvfp4Spec(false, false), nvfp4Spec(false, false)},
  };
  Tensor bits = cuda->empty({4}, DType::U8, MemCategory::Workspace);
  for (const Case& t : cases)
    for (const DType out : {DType::F32, DType::BF16})
      for (const bool withBias : {false, true}) {
        const std::string what = std::string(t.name) + " -> " + name(out) + (withBias ? " + bias" : "");
        SCOPED_TRACE(what);
        const Operands o = quantiseBoth(t.p, t.a, t.b, 1.f, 21);
        const Tensor bias = cuda->fromHost(finiteValues(std::size_t(t.p.n), 22, 2.f), {t.p.n}, DType::F32,
                                           MemCategory::Workspace);
        Tensor c = cuda->empty({t.p.m, t.p.n}, out, MemCategory::Workspace);
        backend().gemmQuantizedWith(o.ga, t.p.transA, o.gb, t.p.transB, c, withBias ? &bias : nullptr, false,
                                    static_cast<unsigned int*>(bits.rawData()));
        const std::vector<std::uint8_t> b = cuda->toHostBytes(bits);
        std::uint32_t raw = 0;
        std::memcpy(&raw, b.data(), 4);
        float amax = 0;
        for (float v : cuda->toHostFloat(c)) amax = std::max(amax, std::fabs(v));
        EXPECT_GT(amax, 0.f);
        EXPECT_EQ(bitsToFloat(raw), amax)
            << "path " << backend().quantizedGemmPath(o.ga, t.p.transA, o.gb, t.p.transB, out);
        EXPECT_EQ(cuda->amax(c), amax);
      }
}

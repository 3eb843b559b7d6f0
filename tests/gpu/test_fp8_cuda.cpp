// fp8 / block-scaled operands on the GPU (issue 41 §3) against the host reference, the CPU
// backend's Backend::quantize (engine/amp/fp8_quantize.cpp's quantizeToCodes):
//   - the quantisers bit for bit: codes, block scales, the tensor scale and the exact counts, for
//     every scaling, format, rounding and orientation, odd shapes (partial blocks and tiles, an odd
//     number of E2M1 nibbles), zeros, infinities and NaNs, stochastic rounding; and the decode;
//   - the quantised GEMMs, on the fp8 tensor cores and on the dequantised fallback, within a
//     bound derived from the accumulation (below), bias and bf16 output included;
//   - short fp8 training runs (the recipe MLP, delayed and mxfp8) tracking the CPU's.
// Skips with the reason where no GPU is usable, like the rest of the suite.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

#include "engine/backend/cuda_backend.h"
#include "engine/config/config_schema.h"
#include "engine/config/presets.h"
#include "engine/train/trainer.h"
#include "tests/gpu/gpu_test_support.h"

using namespace amp;
using namespace amp::gpu_test;

namespace {

struct Case {
  std::string name;
  QuantSpec spec;
};

QuantSpec perTensor(MiniFormat f, Overflow o, float scale, bool stochastic = false) {
  QuantSpec s;
  s.scaling = QuantScaling::PerTensor;
  s.format = f;
  s.overflow = o;
  s.tensorScale = scale;
  s.stochastic = stochastic;
  s.seed = 0x5eed1234abcdull;
  return s;
}

QuantSpec mx(MiniFormat f, MxRounding r, bool stochastic = false) {
  QuantSpec s;
  s.scaling = QuantScaling::Mx;
  s.format = f;
  s.mxRounding = r;
  s.block = 32;
  s.stochastic = stochastic;
  s.seed = 77;
  return s;
}

QuantSpec blockwise(bool square, bool powerOfTwo) {
  QuantSpec s;
  s.scaling = QuantScaling::Blockwise;
  s.format = MiniFormat::E4M3;
  s.block = 128;
  s.square = square;
  s.powerOfTwo = powerOfTwo;
  return s;
}

QuantSpec nvfp4(bool stochastic, bool hadamard) {
  QuantSpec s;
  s.scaling = QuantScaling::Nvfp4;
  s.format = MiniFormat::E2M1;
  s.block = 16;
  s.stochastic = stochastic;
  s.seed = 0xfeedbeefull;
  s.hadamard = hadamard;
  s.hadamardSigns = 0xA5C3;
  return s;
}

std::vector<Case> everyCase() {
  return {
      {"per-tensor e4m3 saturating", perTensor(MiniFormat::E4M3, Overflow::Saturate, 3.5f)},
      {"per-tensor e4m3 non-saturating", perTensor(MiniFormat::E4M3, Overflow::NonSaturating, 1000.f)},
      {"per-tensor e5m2 non-saturating", perTensor(MiniFormat::E5M2, Overflow::NonSaturating, 0.75f)},
      {"per-tensor e5m2 stochastic", perTensor(MiniFormat::E5M2, Overflow::Saturate, 2.f, true)},
      {"mx e4m3 floor", mx(MiniFormat::E4M3, MxRounding::Floor)},
      {"mx e4m3 ceil", mx(MiniFormat::E4M3, MxRounding::Ceil)},
      {"mx e4m3 round-up", mx(MiniFormat::E4M3, MxRounding::RoundUp)},
      {"mx e5m2 round-up", mx(MiniFormat::E5M2, MxRounding::RoundUp)},
      {"mx e2m1 (mxfp4) stochastic", mx(MiniFormat::E2M1, MxRounding::RoundUp, true)},
      {"mx e3m2", mx(MiniFormat::E3M2, MxRounding::Floor)},
      {"mx e2m3", mx(MiniFormat::E2M3, MxRounding::Ceil)},
      {"blockwise 1x128 fp32 scales", blockwise(false, false)},
      {"blockwise 1x128 power-of-two scales", blockwise(false, true)},
      {"blockwise 128x128", blockwise(true, false)},
      {"nvfp4", nvfp4(false, false)},
      {"nvfp4 stochastic", nvfp4(true, false)},
  };
}

// Test values with their NaNs positive. A NaN's sign is open (gpu_test_support.h): x86 keeps an
// input NaN's sign through x * s where the GPU gives its canonical positive NaN, and fp8 codes
// keep that sign. Each code of a NaN element is then compared by what it decodes to (NaN).
std::vector<float> valuesWithSpecials(std::int64_t n, std::uint32_t seed) {
  std::vector<float> v = testValues(std::size_t(n), seed, 10.f);
  for (float& x : v)
    if (std::isnan(x)) x = kNaN;
  return v;
}

std::uint32_t codeAt(const std::vector<std::uint8_t>& codes, std::int64_t i, MiniFormat f) {
  return loadQuantCode(codes.data(), i, f);
}

class Fp8Cuda : public CpuAndCuda {
 protected:
  // Quantises `values` (rows x cols, dtype) on both backends and asserts that the GPU's operand
  // is the host reference's bit for bit, its statistics too (the double sums within their
  // summation-order rounding), and that both decode to the same fp32 bits.
  void expectSameQuantisation(const std::vector<float>& values, std::int64_t rows, std::int64_t cols,
                              const QuantSpec& spec, DType dtype, const std::string& what) {
    SCOPED_TRACE(what);
    const Pair x = both(values, {rows, cols}, dtype);
    QuantizedTensor qc, qg;
    QuantStats sc, sg;
    cpu->quantize(x.c, cols, spec, qc, MemCategory::Workspace, &sc);
    cuda->quantize(x.g, cols, spec, qg, MemCategory::Workspace, &sg);
    ASSERT_EQ(qg.rows, rows);
    ASSERT_EQ(qg.cols, cols);
    const std::vector<std::uint8_t> cc = cpu->toHostBytes(qc.codes), gc = cuda->toHostBytes(qg.codes);
    ASSERT_EQ(gc.size(), std::size_t(quantCodeBytes(rows * cols, spec.format)));
    ASSERT_EQ(cc.size(), gc.size());
    EXPECT_EQ(std::memcmp(&qc.tensorScale, &qg.tensorScale, 4), 0) << qc.tensorScale << " vs " << qg.tensorScale;
    if (spec.scaling == QuantScaling::PerTensor) {
      EXPECT_FALSE(qg.blockScales.defined());
    } else {
      ASSERT_TRUE(qg.blockScales.defined());
      ASSERT_EQ(qg.blockScales.dtype(), qc.blockScales.dtype());
      ASSERT_EQ(qg.blockScales.numel(), qc.layout().blockCount());
      expectSameElements(qc.blockScales.dtype(), cpu->toHostBytes(qc.blockScales), cuda->toHostBytes(qg.blockScales),
                         "block scales");
    }
    // Decoded on each backend: the GPU's decode of the GPU's codes against the host's of the host's.
    Pair out = emptyBoth({rows, cols}, DType::F32);
    cpu->dequantize(qc, out.c);
    cuda->dequantize(qg, out.g);
    const std::vector<float> dc = cpu->toHostFloat(out.c), dg = cuda->toHostFloat(out.g);
    int reported = 0;
    for (std::int64_t i = 0; i < rows * cols && reported < 5; ++i) {
      const bool nan = std::isnan(dc[std::size_t(i)]);
      const bool same = nan ? std::isnan(dg[std::size_t(i)])
                            : codeAt(cc, i, spec.format) == codeAt(gc, i, spec.format) &&
                                  std::memcmp(&dc[std::size_t(i)], &dg[std::size_t(i)], 4) == 0;
      if (!same) {
        ADD_FAILURE() << "element " << i << " (" << values[std::size_t(i)] << "): code " << codeAt(cc, i, spec.format)
                      << " -> " << dc[std::size_t(i)] << " on the cpu, " << codeAt(gc, i, spec.format) << " -> "
                      << dg[std::size_t(i)] << " on the gpu";
        ++reported;
      }
    }
    // A packed E2M1 tensor of an odd count: the last byte's free high nibble is 0 on both.
    if (spec.format == MiniFormat::E2M1 && (rows * cols) % 2 == 1) {
      EXPECT_EQ(gc.back() >> 4, 0) << "free nibble";
    }
    expectSameOrBothNaN(sc.amax, sg.amax, "amax");
    EXPECT_EQ(sc.scale, sg.scale);
    EXPECT_EQ(sc.count, sg.count);
    EXPECT_EQ(sc.nonzero, sg.nonzero);
    EXPECT_EQ(sc.underflow, sg.underflow);
    EXPECT_EQ(sc.overflow, sg.overflow);
    EXPECT_EQ(sc.nonFinite, sg.nonFinite);
    // Sums of n positive doubles in two orders: each within n * 2^-53 of the exact sum.
    const double orderBound = double(rows * cols) * std::ldexp(1.0, -52);
    EXPECT_NEAR(sg.signalSq, sc.signalSq, orderBound * sc.signalSq + 1e-300);
    EXPECT_NEAR(sg.errorSq, sc.errorSq, orderBound * sc.errorSq + 1e-300);
    EXPECT_EQ(sc.blockExponents, sg.blockExponents);
  }
};

}  // namespace

TEST_F(Fp8Cuda, AmaxIsTheHostsIncludingNaN) {
  for (const std::int64_t n : {1, 37, 4099, 1 << 20}) {
    std::vector<float> v = finiteValues(std::size_t(n), 11, 6.f);
    const Pair x = both(v, {n}, DType::F32);
    EXPECT_EQ(cpu->amax(x.c), cuda->amax(x.g)) << n;
    v[std::size_t(n / 2)] = -kInf;
    const Pair withInf = both(v, {n}, DType::BF16);
    EXPECT_EQ(cuda->amax(withInf.g), kInf) << n;
    v[std::size_t(n - 1)] = kNaN;
    const Pair withNaN = both(v, {n}, DType::F16);
    EXPECT_TRUE(std::isnan(cuda->amax(withNaN.g))) << n;
  }
  const Pair zeros = both(std::vector<float>(100, -0.f), {100}, DType::F32);
  EXPECT_EQ(cuda->amax(zeros.g), 0.f);
}

// Every scaling and format in both orientations on shapes with partial blocks (37 x 45: no line
// a whole number of 16s or 32s; 130 x 300: partial 128 blocks and 128x128 tiles), values over 20
// binades with zeros, infinities and NaNs.
TEST_F(Fp8Cuda, QuantisersAreBitExactAgainstTheHost) {
  const std::pair<std::int64_t, std::int64_t> shapes[] = {{37, 45}, {64, 256}, {130, 300}};
  for (const Case& c : everyCase())
    for (const bool alongRows : {false, true})
      for (const auto& [rows, cols] : shapes) {
        QuantSpec spec = c.spec;
        spec.alongRows = alongRows;
        const std::string what = c.name + (alongRows ? " along rows " : " along columns ") + std::to_string(rows) +
                                 " x " + std::to_string(cols);
        expectSameQuantisation(valuesWithSpecials(rows * cols, std::uint32_t(rows * 7 + cols)), rows, cols, spec,
                               DType::F32, what);
      }
}

// 16-bit inputs are widened exactly first; zeros alone give the smallest scales and zero codes.
TEST_F(Fp8Cuda, SixteenBitInputsAndAllZerosAreBitExact) {
  for (const Case& c : everyCase()) {
    expectSameQuantisation(valuesWithSpecials(96 * 64, 5), 96, 64, c.spec, DType::BF16, c.name + " from bf16");
    expectSameQuantisation(finiteValues(96 * 64, 6, 3.f), 96, 64, c.spec, DType::F16, c.name + " from fp16");
    expectSameQuantisation(std::vector<float>(33 * 40, 0.f), 33, 40, c.spec, DType::F32, c.name + " of zeros");
  }
}

// NVFP4 with the 16x16 Hadamard transform (S from the transformed values). Finite inputs: a
// transform of an infinity makes inf - inf, whose NaN sign differs between x86 and the GPU and
// lands in an E2M1 code's sign; the non-finite rules are covered above without the transform.
TEST_F(Fp8Cuda, Nvfp4WithTheHadamardTransformIsBitExact) {
  for (const bool stochastic : {false, true})
    for (const bool alongRows : {false, true})
      for (const auto& [rows, cols] : {std::pair<std::int64_t, std::int64_t>{48, 64}, {37, 45}, {130, 300}}) {
        QuantSpec spec = nvfp4(stochastic, true);
        spec.alongRows = alongRows;
        std::vector<float> v = finiteValues(std::size_t(rows * cols), 21, 5.f);
        v[7] = 3000.f;  // an outlier the transform spreads over its 16
        v[100] = 0.f;
        expectSameQuantisation(v, rows, cols, spec, DType::F32,
                               std::string("nvfp4 hadamard") + (stochastic ? " stochastic" : "") +
                                   (alongRows ? " along rows " : " along columns ") + std::to_string(rows) + " x " +
                                   std::to_string(cols));
      }
}

// Stochastic rounding draws from the element's index: a different seed changes some codes, the
// same seed none (so the bit-exact comparisons above did test the random bits), and the mean of
// the decoded values stays the input's (unbiased: within 4 standard errors of one ulp's coin).
TEST_F(Fp8Cuda, StochasticRoundingDependsOnTheSeedAndIsUnbiased) {
  const std::int64_t n = 1 << 16;
  const Pair x = both(std::vector<float>(std::size_t(n), 1.0f + 1.0f / 32), {1, n}, DType::F32);  // between e4m3 codes
  QuantSpec a = perTensor(MiniFormat::E4M3, Overflow::Saturate, 1.0f, true);
  QuantSpec b = a;
  b.seed = a.seed + 1;
  QuantizedTensor qa, qa2, qb;
  cuda->quantize(x.g, n, a, qa, MemCategory::Workspace);
  cuda->quantize(x.g, n, a, qa2, MemCategory::Workspace);
  cuda->quantize(x.g, n, b, qb, MemCategory::Workspace);
  const auto ca = cuda->toHostBytes(qa.codes), ca2 = cuda->toHostBytes(qa2.codes), cb = cuda->toHostBytes(qb.codes);
  EXPECT_EQ(ca, ca2);
  EXPECT_NE(ca, cb);
  Tensor out = cuda->empty({1, n}, DType::F32, MemCategory::Workspace);
  cuda->dequantize(qa, out);
  double mean = 0;
  for (float v : cuda->toHostFloat(out)) mean += v;
  mean /= double(n);
  // Codes 1.0 and 1.125: p = 1/4 of 1.125; the mean's standard error 0.125 sqrt(p (1 - p) / n).
  EXPECT_NEAR(mean, 1.0 + 1.0 / 32, 4 * 0.125 * std::sqrt(0.25 * 0.75 / double(n)));
}

namespace {

// The GEMM bound. c = sum over k of a_ik b_kj with a, b the decoded operands (exact fp32
// values). Per product the fp8 path scales the sum by (1/sa)(1/sb) instead of each operand
// (three fp32 roundings: relative 3 u, u = 2^-24). The fp32 fallback accumulates in fp32: at
// most K u relative to S = sum |a_ik b_kj| (the classic gamma_K bound). The fp8 tensor cores'
// accumulator keeps about 14 mantissa bits between promotions to fp32 (DeepSeek-V3's
// measurement on H800; fast accumulation promotes less often): at most K 2^-14 S, a worst case
// over every addition truncating. A bf16 output adds its rounding, 2^-8 |c|; a bias is one more
// fp32 addition. Wrong layouts, scales or transposes give errors of the order of S itself.
// That worst case is loose (about 0.7x a typical |c| at K = 512 on the fp8 path), so the whole
// output is also held to a root-mean-square bound: random-sign errors of a 14-bit accumulator
// give about sqrt(K) 2^-14 = 1.4e-3 of rms(c) at K = 512, with the truncation's bias at most
// K 2^-15 = 1.6e-2; bf16's rounding adds 2^-9 rms. Bound: 2e-2 on the fp8 path (a scale off by
// a few per cent fails), 1e-5 on the fp32 fallback (plus 4e-3 for a bf16 output).
double rmsBound(bool fp8Path, DType out) {
  return (fp8Path ? 2e-2 : 1e-5) + (out == DType::BF16 ? 4e-3 : 0.0);
}
double gemmBound(bool fp8Path, std::int64_t k, double absSum, double value, DType out) {
  const double accumulate = fp8Path ? double(k) * std::ldexp(1.0, -14) + 3 * std::ldexp(1.0, -24)
                                    : double(k + 2) * std::ldexp(1.0, -24);
  return accumulate * absSum + (out == DType::BF16 ? std::ldexp(1.0, -8) : std::ldexp(1.0, -23)) * std::fabs(value) +
         1e-30;
}

struct GemmProblem {
  std::int64_t m, n, k;
  bool transA, transB;
};

}  // namespace

class Fp8CudaGemm : public Fp8Cuda {
 protected:
  // Quantises random a, b on the GPU, multiplies them with gemmQuantized and checks every output
  // against a double product of the decoded operands within gemmBound. Returns the path taken.
  std::string checkGemm(const GemmProblem& p, QuantSpec sa, QuantSpec sb, DType out, bool withBias,
                        const std::string& what) {
    SCOPED_TRACE(what);
    auto* cudaBackend = dynamic_cast<CudaBackend*>(cuda.get());
    if (!cudaBackend) {
      ADD_FAILURE() << "makeBackend(\"cuda\") is not a CudaBackend";
      return "";
    }
    const std::int64_t ar = p.transA ? p.k : p.m, ac = p.transA ? p.m : p.k;
    const std::int64_t br = p.transB ? p.n : p.k, bc = p.transB ? p.k : p.n;
    // Each quantised along K: a along its columns unless transA, b along its rows unless transB.
    sa.alongRows = p.transA;
    sb.alongRows = !p.transB;
    const std::vector<float> av = finiteValues(std::size_t(ar * ac), 31, 3.f), bv = finiteValues(std::size_t(br * bc), 32, 3.f);
    Tensor a = cuda->fromHost(av, {ar, ac}, DType::F32, MemCategory::Workspace);
    Tensor b = cuda->fromHost(bv, {br, bc}, DType::F32, MemCategory::Workspace);
    if (sa.scaling == QuantScaling::PerTensor) sa.tensorScale = perTensorScale(cuda->amax(a), miniMax(sa.format), 0, 1.f);
    if (sb.scaling == QuantScaling::PerTensor) sb.tensorScale = perTensorScale(cuda->amax(b), miniMax(sb.format), 0, 1.f);
    QuantizedTensor qa, qb;
    cuda->quantize(a, ac, sa, qa, MemCategory::Workspace);
    cuda->quantize(b, bc, sb, qb, MemCategory::Workspace);
    Tensor da = cuda->empty({ar, ac}, DType::F32, MemCategory::Workspace);
    Tensor db = cuda->empty({br, bc}, DType::F32, MemCategory::Workspace);
    cuda->dequantize(qa, da);
    cuda->dequantize(qb, db);
    const std::vector<float> A = cuda->toHostFloat(da), B = cuda->toHostFloat(db);
    std::vector<float> biasValues = finiteValues(std::size_t(p.n), 33, 2.f);
    Tensor bias = cuda->fromHost(biasValues, {p.n}, DType::F32, MemCategory::Workspace);
    Tensor c = cuda->empty({p.m, p.n}, out, MemCategory::Workspace);
    const std::string path = cudaBackend->quantizedGemmPath(qa, p.transA, qb, p.transB, out);
    cuda->gemmQuantized(qa, p.transA, qb, p.transB, c, withBias ? &bias : nullptr);
    const std::vector<float> C = cuda->toHostFloat(c);
    // The block-scaled paths (sm_100) accumulate on the same kind of tensor cores: the same bound.
    const bool fp8Path = path.rfind("fp8 tensor cores", 0) == 0 || path.rfind("block-scaled", 0) == 0;
    int reported = 0;
    double errSq = 0, exactSq = 0;
    for (std::int64_t i = 0; i < p.m; ++i)
      for (std::int64_t j = 0; j < p.n; ++j) {
        double exact = withBias ? biasValues[std::size_t(j)] : 0.0, absSum = std::fabs(exact);
        for (std::int64_t q = 0; q < p.k; ++q) {
          const double x = A[std::size_t(p.transA ? q * p.m + i : i * p.k + q)];
          const double y = B[std::size_t(p.transB ? j * p.k + q : q * p.n + j)];
          exact += x * y;
          absSum += std::fabs(x * y);
        }
        const double got = C[std::size_t(i * p.n + j)];
        errSq += (got - exact) * (got - exact);
        exactSq += exact * exact;
        if (!(std::fabs(got - exact) <= gemmBound(fp8Path, p.k, absSum, exact, out)) && reported < 5) {
          ADD_FAILURE() << "c[" << i << ", " << j << "] = " << got << ", exact " << exact << " (bound "
                        << gemmBound(fp8Path, p.k, absSum, exact, out) << ", path " << path << ")";
          ++reported;
        }
      }
    EXPECT_LE(std::sqrt(errSq / exactSq), rmsBound(fp8Path, out)) << "rms error relative to rms(c), path " << path;
    return path;
  }

  // "... (sm_90); ...": the compute capability the backend reports, as major * 10 + minor.
  int smVersion() const {
    const std::string d = cuda->description();
    const auto at = d.find("(sm_");
    return at == std::string::npos ? 0 : std::stoi(d.substr(at + 4, 3));
  }
  bool hasFp8TensorCores() const { return smVersion() >= 89; }
};

// Per-tensor E4M3 x E4M3 (the forward) and E5M2 gradients against E4M3 (the backward GEMMs), in
// every transpose combination (the transposed fp8 copies), fp32 and bf16 outputs, with a bias:
// on the fp8 tensor cores wherever the device has them (asserted, so a silent fallback fails).
TEST_F(Fp8CudaGemm, PerTensorFp8GemmsRunOnTheTensorCoresWithinTheBound) {
  const QuantSpec e4 = perTensor(MiniFormat::E4M3, Overflow::Saturate, 1.f);
  const QuantSpec e5 = perTensor(MiniFormat::E5M2, Overflow::Saturate, 1.f);
  for (const bool transA : {false, true})
    for (const bool transB : {false, true})
      for (const DType out : {DType::F32, DType::BF16}) {
        const GemmProblem p{64, 48, 512, transA, transB};
        const std::string tag = std::string(transA ? "a^T" : "a") + (transB ? " b^T" : " b") + " -> " + name(out);
        const std::string path = checkGemm(p, e4, e4, out, transA == transB, "e4m3 x e4m3 " + tag);
        checkGemm(p, e5, e4, out, false, "e5m2 x e4m3 " + tag);
        checkGemm(p, e4, e5, out, true, "e4m3 x e5m2 " + tag);
        if (hasFp8TensorCores()) {
          EXPECT_EQ(path, "fp8 tensor cores (cuBLASLt)") << tag;
        }
      }
}

// The fallback: block-scaled operands, e5m2 x e5m2, and shapes cuBLASLt's fp8 refuses, through
// the dequantised fp32 GEMM, within the fp32 accumulation bound (much tighter than fp8's). On
// sm_100 and newer the MXFP8 / NVFP4 runs whose shapes the block-scaled GEMM takes run there
// instead (tests/gpu/test_fp8_block_gemm_cuda.cpp checks that path against the CPU).
TEST_F(Fp8CudaGemm, EverythingElseIsDequantisedIntoTheFp32GemmWithinItsBound) {
  const QuantSpec e5 = perTensor(MiniFormat::E5M2, Overflow::Saturate, 1.f);
  const QuantSpec e4 = perTensor(MiniFormat::E4M3, Overflow::Saturate, 1.f);
  struct Run {
    std::string name;
    QuantSpec a, b;
    GemmProblem p;
    bool blockScaledOnSm100;  // MXFP8 / NVFP4 blocked along K in whole 32s, m and n in 16s
  };
  const Run runs[] = {
      {"mxfp8", mx(MiniFormat::E4M3, MxRounding::RoundUp), mx(MiniFormat::E5M2, MxRounding::RoundUp), {64, 32, 96, false, true}, true},
      {"mxfp8 wgrad", mx(MiniFormat::E4M3, MxRounding::Floor), mx(MiniFormat::E4M3, MxRounding::Floor), {40, 24, 70, true, false}, false},
      {"blockwise", blockwise(false, false), blockwise(true, true), {32, 130, 200, false, false}, false},
      {"nvfp4", nvfp4(false, false), nvfp4(true, false), {48, 32, 64, false, true}, true},
      {"nvfp4 hadamard", nvfp4(false, true), nvfp4(false, true), {32, 16, 64, true, false}, true},
      {"e5m2 x e5m2", e5, e5, {64, 48, 64, false, true}, false},
      {"odd per-tensor shape", e4, e4, {37, 45, 53, false, true}, false},
  };
  for (const Run& r : runs)
    for (const DType out : {DType::F32, DType::BF16}) {
      const std::string path = checkGemm(r.p, r.a, r.b, out, true, r.name + " -> " + name(out));
      const char* expected = r.blockScaledOnSm100 && smVersion() >= 100 ? "block-scaled" : "dequantised fp32 GEMM";
      EXPECT_EQ(path.rfind(expected, 0), 0u) << r.name << ": " << path;
    }
}

// The shapes the layers refuse are refused here too (as the host default does).
TEST_F(Fp8CudaGemm, MismatchedOperandsAreRefused) {
  const Tensor a = cuda->fromHost(finiteValues(64 * 32, 1), {64, 32}, DType::F32, MemCategory::Workspace);
  QuantizedTensor qa, qb;
  cuda->quantize(a, 32, perTensor(MiniFormat::E4M3, Overflow::Saturate, 1.f), qa, MemCategory::Workspace);
  cuda->quantize(a, 32, perTensor(MiniFormat::E4M3, Overflow::Saturate, 1.f), qb, MemCategory::Workspace);
  Tensor c = cuda->empty({64, 64}, DType::F32, MemCategory::Workspace);
  EXPECT_THROW(cuda->gemmQuantized(qa, false, qb, false, c), std::invalid_argument);  // k 32 vs 64
  Tensor c16 = cuda->empty({64, 64}, DType::F16, MemCategory::Workspace);
  EXPECT_THROW(cuda->gemmQuantized(qa, false, qb, true, c16), std::invalid_argument);  // fp16 output
  EXPECT_NO_THROW(cuda->gemmQuantized(qa, false, qb, true, c));
}

namespace {

RunConfig fp8Recipe(const std::string& backend, const std::string& recipe) {
  const Preset* p = findPreset("recipe");
  if (!p) throw std::invalid_argument("no recipe preset");
  RunConfig c = presetConfig(*p);
  for (const auto& [k, v] : std::vector<std::pair<std::string, std::string>>{
           {"backend", backend}, {"train.histogram_every", "0"}, {"train.eval_every", "0"}, {"amp.mode", "fp8"},
           {"fp8.recipe", recipe}, {"model.width", "256"}, {"train.batch_size", "128"}})
    setConfigValue(c, k, v);
  return c;
}

std::vector<double> losses(const RunConfig& c, int steps) {
  Trainer t(c);
  std::vector<double> out;
  while (!t.finished() && int(out.size()) < steps) out.push_back(t.step().loss);
  return out;
}

}  // namespace

// fp8 training of the recipe MLP on both backends, 30 steps. The quantisers agree bit for bit
// given the same inputs, but the GEMMs sum in other orders (and per-tensor forwards use fast
// accumulation on the GPU), so an input one fp32 ulp apart can round to the neighbouring fp8 code
// (1/8 relative in E4M3): noise of the fp8 noise's own size. Bound: 5e-2 relative per step (the
// bf16 runs' 2e-2 of test_trainer_cuda, widened by that), and both must train (the loss falls).
TEST(TrainerCudaFp8, RecipeTracksTheCpuWithDelayedAndMxfp8Scaling) {
  AMP_SKIP_WITHOUT_GPU();
  for (const char* recipe : {"delayed", "mxfp8"}) {
    const std::vector<double> cpu = losses(fp8Recipe("cpu", recipe), 30), gpu = losses(fp8Recipe("cuda", recipe), 30);
    ASSERT_EQ(cpu.size(), gpu.size()) << recipe;
    ASSERT_EQ(gpu.size(), 30u) << recipe;
    for (std::size_t i = 0; i < cpu.size(); ++i)
      EXPECT_NEAR(gpu[i], cpu[i], 5e-2 * std::fabs(cpu[i])) << recipe << " step " << i + 1;
    EXPECT_LT(gpu.back(), 0.9 * gpu.front()) << recipe << ": the GPU run did not train";
  }
}

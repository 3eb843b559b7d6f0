// CpuBackend GEMMs against a double-precision reference, in fp32, bf16 and fp16, with every
// transpose and with and without bias; and bf16's two paths (native where oneDNN has bf16
// kernels, the exact fp32 emulation elsewhere) against each other on the same inputs. On an
// AVX2-only CPU (or under ONEDNN_MAX_CPU_ISA=AVX2) both "paths" are the emulation; on AVX-512 /
// AMX machines the native one is compared with the forced emulation.
//
// The bounds: 16-bit values multiply exactly in fp32 (8- or 11-bit significands), so the only
// fp32 error is the summation's, at most (K + 1) u sum|a_i b_i| for any order (u = 2^-24; the
// bias is one more term). A bf16 or fp16 output adds half an ulp of its type (at most 2^-8
// or 2^-11 of the value is at most 2^-8 or 2^-11 of the value). Two fp32 results each within the summation bound of the exact sum lie within
// twice that bound of each other, and when each is rounded once to bf16 they may land on
// neighbouring bf16 values: so native and emulated bf16 agree within 2 x summation bound + one
// bf16 ulp of the result.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "engine/backend/backend.h"
#include "kernels/common/bias_grad_order.h"
#include "kernels/common/float16.h"
#include "kernels/cpu/onednn_matmul.h"
#include "test_support.h"

namespace amp {
namespace {

using test::randomVec;

struct Case {
  std::int64_t m, n, k;
  bool transA, transB, bias;
};

// Shapes of the recipe's three GEMMs (forward, backward-data, backward-weights) at a small
// width, plus odd sizes that leave vector tails everywhere.
const Case kCases[] = {{32, 48, 64, false, true, true},  {32, 64, 48, false, false, false},
                       {48, 64, 32, true, false, false}, {17, 9, 33, true, true, true},
                       {5, 130, 7, false, false, true}};

double rounded(float v, DType d) {
  return d == DType::F16 ? roundToHalf(v) : d == DType::BF16 ? roundToBf16(v) : double(v);
}

class GemmBackendTest : public ::testing::Test {
 protected:
  void TearDown() override { cpu::setForceBf16Emulation(false); }

  struct Operands {
    Tensor a, b, bias;
    std::vector<double> ref, mag;  // exact result on the stored values, and sum |a b| (+|bias|)
  };

  Operands make(const Case& c, DType d, std::uint64_t seed) {
    const Shape as = c.transA ? Shape{c.k, c.m} : Shape{c.m, c.k};
    const Shape bs = c.transB ? Shape{c.n, c.k} : Shape{c.k, c.n};
    const auto av = randomVec(c.m * c.k, seed), bv = randomVec(c.k * c.n, seed + 1),
               biasv = randomVec(c.n, seed + 2);
    Operands o;
    o.a = be->fromHost(av, as, d, MemCategory::Workspace);
    o.b = be->fromHost(bv, bs, d, MemCategory::Workspace);
    if (c.bias) o.bias = be->fromHost(biasv, {c.n}, d, MemCategory::Workspace);
    o.ref.assign(static_cast<std::size_t>(c.m * c.n), 0.0);
    o.mag.assign(o.ref.size(), 0.0);
    for (std::int64_t i = 0; i < c.m; ++i)
      for (std::int64_t j = 0; j < c.n; ++j) {
        double acc = c.bias ? rounded(biasv[j], d) : 0.0, mag = std::fabs(acc);
        for (std::int64_t p = 0; p < c.k; ++p) {
          const double x = rounded(av[c.transA ? p * c.m + i : i * c.k + p], d);
          const double y = rounded(bv[c.transB ? j * c.k + p : p * c.n + j], d);
          acc += x * y;
          mag += std::fabs(x * y);
        }
        o.ref[i * c.n + j] = acc;
        o.mag[i * c.n + j] = mag;
      }
    return o;
  }

  std::vector<float> run(const Case& c, const Operands& o, DType out) {
    Tensor y = be->empty({c.m, c.n}, out, MemCategory::Workspace);
    be->gemm(o.a, c.transA, o.b, c.transB, y, c.bias ? &o.bias : nullptr);
    return be->toHostFloat(y);
  }

  // Summation bound for one output (plus the fp32 product rounding when the inputs are fp32).
  static double sumBound(const Case& c, double mag, DType in) {
    return (double(c.k) + 2.0 + (in == DType::F32 ? 1.0 : 0.0)) * 0x1p-24 * mag;
  }
  // Half an ulp of `out` at the fp32 result (|ref| + its bound); fp16's subnormal spacing too.
  static double halfUlp(DType out, double ref, double bound) {
    const double v = std::fabs(ref) + bound;
    return out == DType::BF16 ? v * 0x1p-8 : out == DType::F16 ? v * 0x1p-11 + 0x1p-25 : 0.0;
  }

  std::unique_ptr<Backend> be = makeCpuBackend();
};

// The bias gradient follows the blocked order of bias_grad_order.h exactly (the CUDA kernel
// follows it too; the GPU suite compares the two bit for bit). The values span 2^-12 .. 2^12 so
// that a different order (one running sum down all rows, say) gives other bits; the row
// counts end inside a row block and span several blocks.
TEST_F(GemmBackendTest, BiasGradSumsInTheSharedBlockedOrder) {
  int orderMatters = 0;
  for (DType d : {DType::F32, DType::F16, DType::BF16})
    for (const auto& [m, n] : {std::pair<std::int64_t, std::int64_t>{1, 3}, {31, 5}, {33, 300},
                                {100, 17}, {512, 260}}) {
      std::vector<float> v = randomVec(m * n, 77);
      for (std::size_t i = 0; i < v.size(); ++i) v[i] = std::ldexp(v[i], int(i * 7 % 25) - 12);
      const Tensor dy = be->fromHost(v, {m, n}, d, MemCategory::Workspace);
      Tensor db = be->empty({n}, d, MemCategory::Workspace);
      be->biasGrad(dy, db);
      const std::vector<float> stored = be->toHostFloat(dy), got = be->toHostFloat(db);
      for (std::int64_t j = 0; j < n; ++j) {
        const float expected = biasGradColumnSum(m, [&](std::int64_t r) { return stored[r * n + j]; });
        float serial = 0.f;
        for (std::int64_t r = 0; r < m; ++r) serial += stored[r * n + j];
        orderMatters += float(rounded(serial, d)) != float(rounded(expected, d));
        ASSERT_EQ(got[j], float(rounded(expected, d)))
            << dtypeName(d) << " " << m << "x" << n << " column " << j;
      }
    }
  // The data must be able to tell the orders apart, or the test proves nothing.
  EXPECT_GT(orderMatters, 10);
}

TEST_F(GemmBackendTest, EveryDtypeMatchesDoubleWithinItsBound) {
  for (DType in : {DType::F32, DType::BF16, DType::F16})
    for (const Case& c : kCases)
      for (DType out : {in, DType::F32}) {
        SCOPED_TRACE(std::string(dtypeName(in)) + " -> " + std::string(dtypeName(out)) + " " +
                     std::to_string(c.m) + "x" + std::to_string(c.n) + "x" + std::to_string(c.k));
        const Operands o = make(c, in, 11);
        const auto got = run(c, o, out);
        for (std::size_t i = 0; i < got.size(); ++i) {
          const double bound = sumBound(c, o.mag[i], in);
          ASSERT_NEAR(got[i], o.ref[i], bound + halfUlp(out, o.ref[i], bound)) << i;
        }
        if (in == out && in == DType::F32) break;
      }
}

// Emulation is exact by construction: the 16-bit result equals the fp32 GEMM of the widened
// values, rounded once, bit for bit (fp16 always; bf16 wherever it is emulated, forced here).
TEST_F(GemmBackendTest, EmulationIsTheFp32GemmRoundedOnce) {
  cpu::setForceBf16Emulation(true);
  for (DType in : {DType::F16, DType::BF16})
    for (const Case& c : kCases) {
      SCOPED_TRACE(dtypeName(in));
      const Operands o = make(c, in, 21);
      Operands wide = o;
      wide.a = be->cast(o.a, DType::F32, MemCategory::Workspace);
      wide.b = be->cast(o.b, DType::F32, MemCategory::Workspace);
      if (c.bias) wide.bias = be->cast(o.bias, DType::F32, MemCategory::Workspace);
      const auto f32 = run(c, wide, DType::F32);
      const auto low = run(c, o, in);
      const auto lowF32 = run(c, o, DType::F32);
      for (std::size_t i = 0; i < f32.size(); ++i) {
        const float once = in == DType::F16 ? roundToHalf(f32[i]) : roundToBf16(f32[i]);
        ASSERT_EQ(floatBits(low[i]), floatBits(once)) << i;
        ASSERT_EQ(floatBits(lowF32[i]), floatBits(f32[i])) << i;
      }
    }
}

TEST_F(GemmBackendTest, NativeAndEmulatedBf16Agree) {
  std::printf("bf16 GEMMs on this CPU: %s\n", be->computePath(DType::BF16).c_str());
  for (const Case& c : kCases)
    for (DType out : {DType::BF16, DType::F32}) {
      const Operands o = make(c, DType::BF16, 31);
      cpu::setForceBf16Emulation(false);
      // Whether this very kernel is native (the backend's summary also asks the convolutions).
      const bool native = cpu::matmulIsNative16(
          cpu::ElemType::BF16, out == DType::BF16 ? cpu::ElemType::BF16 : cpu::ElemType::F32,
          {c.m, c.n, c.k, c.transA, c.transB}, c.bias);
      const auto first = run(c, o, out);
      cpu::setForceBf16Emulation(true);
      const auto emulated = run(c, o, out);
      for (std::size_t i = 0; i < first.size(); ++i) {
        if (!native) {  // both are the emulation: identical
          ASSERT_EQ(floatBits(first[i]), floatBits(emulated[i])) << i;
          continue;
        }
        const double bound = 2 * sumBound(c, o.mag[i], DType::BF16);
        const double ulp = out == DType::BF16 ? (std::fabs(o.ref[i]) + bound) * 0x1p-7 : 0.0;
        ASSERT_NEAR(first[i], emulated[i], bound + ulp) << i;
      }
    }
}

// The emulation's fp32 copies are workspace while the call runs, and nothing stays counted.
TEST_F(GemmBackendTest, EmulationScratchCountsAsWorkspace) {
  cpu::setForceBf16Emulation(true);
  const Case c{64, 96, 80, false, true, true};
  const int ws = static_cast<int>(MemCategory::Workspace);
  for (DType d : {DType::BF16, DType::F16}) {
    const Operands o = make(c, d, 41);
    Tensor y = be->empty({c.m, c.n}, d, MemCategory::Activations);
    const cpu::ElemType t = d == DType::BF16 ? cpu::ElemType::BF16 : cpu::ElemType::F16;
    const cpu::MatmulShape s{c.m, c.n, c.k, c.transA, c.transB};
    const auto scratch = static_cast<std::int64_t>(cpu::matmulScratchBytes(t, t, s, true));
    EXPECT_GE(scratch, 4 * (c.m * c.k + c.k * c.n + c.n + c.m * c.n));  // a, b, bias, c in fp32
    const std::int64_t before = be->memory().snapshot().current[ws];
    be->memory().resetPeaks();
    be->gemm(o.a, c.transA, o.b, c.transB, y, &o.bias);
    const MemorySnapshot after = be->memory().snapshot();
    EXPECT_EQ(after.current[ws], before);
    EXPECT_EQ(after.peak[ws], before + scratch);
  }
  EXPECT_EQ(cpu::matmulScratchBytes(cpu::ElemType::F32, cpu::ElemType::F32,
                                    {c.m, c.n, c.k, false, true}, true),
            0u);
}

// What the backend says per dtype is what the kernels do: "native" only where oneDNN created a
// 16-bit primitive, "emulated" otherwise, never both.
TEST_F(GemmBackendTest, ComputePathSaysWhatTheKernelsDo) {
  const cpu::MatmulShape s{8, 8, 8, false, false};
  const bool kernelNative = cpu::matmulIsNative16(cpu::ElemType::BF16, cpu::ElemType::F32, s, false);
  const std::string bf16 = be->computePath(DType::BF16);
  const std::string isa = cpu::onednnIsaName();
  if (!kernelNative) {  // our emulation
    EXPECT_FALSE(be->nativeCompute(DType::BF16));
    EXPECT_HAS(bf16, "emulated (fp32 math on bf16 values");
  } else if (isa == "AMX" || isa == "AVX512-BF16") {  // bf16 instructions
    EXPECT_TRUE(be->nativeCompute(DType::BF16));
    EXPECT_EQ(bf16, "native (oneDNN, " + isa + ")");
  } else {  // oneDNN's bf16 kernels converting in software (AVX-512 without BF16)
    EXPECT_FALSE(be->nativeCompute(DType::BF16));
    EXPECT_HAS(bf16, "emulated by oneDNN");
  }
  EXPECT_EQ(cpu::matmulImplementation(cpu::ElemType::BF16, cpu::ElemType::F32, s, false)
                    .find("bf16 emulated") != std::string::npos,
            !kernelNative);
  EXPECT_FALSE(be->nativeCompute(DType::F16));
  EXPECT_HAS(be->computePath(DType::F16), "emulated");
  EXPECT_TRUE(be->nativeCompute(DType::F32));
  EXPECT_HAS(be->description(), cpu::onednnIsaName());
  EXPECT_HAS(be->description(), "bf16 " + bf16);

  cpu::setForceBf16Emulation(true);
  EXPECT_FALSE(be->nativeCompute(DType::BF16));
  EXPECT_HAS(be->computePath(DType::BF16), "emulated");
  EXPECT_FALSE(cpu::matmulIsNative16(cpu::ElemType::BF16, cpu::ElemType::F32, s, false));
}

// A failure of the compute library is one line naming the op, what it was asked, the CPU's ISA
// and the library's own words.
TEST_F(GemmBackendTest, ComputeLibraryErrorsNameOpTypesShapesAndIsa) {
  const cpu::MatmulShape s{256, 1024, 512, false, true};
  const std::string what = cpu::describeMatmul(cpu::ElemType::BF16, cpu::ElemType::F32, s);
  EXPECT_EQ(what, "a (256x512) x b^T (1024x512) -> c (256x1024), bf16 in, fp32 out");
  const std::string msg = test::messageOf<cpu::ComputeLibraryError>(
      [&] { cpu::throwComputeError("matmul", what, "could not create a primitive"); });
  EXPECT_HAS(msg, "matmul failed for a (256x512)");
  EXPECT_HAS(msg, "oneDNN ISA " + cpu::onednnIsaName());
  EXPECT_HAS(msg, ": could not create a primitive");
  EXPECT_EQ(msg.find('\n'), std::string::npos);
}

}  // namespace
}  // namespace amp

// CpuBackend convolutions against a naive direct convolution written here in double: forward
// in fp32, bf16 and fp16 (whose emulation must equal the fp32 path on widened inputs rounded
// once), and backward data / weights / bias by central finite differences of a scalar loss.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <limits>
#include <vector>

#include "engine/backend/backend.h"
#include "test_support.h"
#include "kernels/common/float16.h"
#include "kernels/cpu/onednn_conv.h"

namespace amp {
namespace {

using Vec = std::vector<double>;

using test::randomVec;

// The values a tensor of dtype d holds for host values v.
Vec roundedTo(const std::vector<float>& v, DType d) {
  Vec out(v.size());
  for (std::size_t i = 0; i < v.size(); ++i)
    out[i] = d == DType::F16 ? roundToHalf(v[i]) : d == DType::BF16 ? roundToBf16(v[i]) : v[i];
  return out;
}

Shape inShape(const Conv2dGeometry& g) { return {g.n, g.c, g.h, g.w}; }
Shape weiShape(const Conv2dGeometry& g) { return {g.k, g.c, g.r, g.s}; }
Shape outShape(const Conv2dGeometry& g) { return {g.n, g.k, g.outH(), g.outW()}; }

// y = conv(x, w) + b in double; `absSum` (if given) receives sum |x*w| + |b| per output, the
// scale of the fp32 summation error.
Vec naiveConv(const Vec& x, const Vec& w, const Vec* b, const Conv2dGeometry& g,
              Vec* absSum = nullptr) {
  const std::int64_t oh = g.outH(), ow = g.outW();
  Vec y(static_cast<std::size_t>(g.n * g.k * oh * ow));
  if (absSum) absSum->assign(y.size(), 0.0);
  for (std::int64_t n = 0; n < g.n; ++n)
    for (std::int64_t k = 0; k < g.k; ++k)
      for (std::int64_t i = 0; i < oh; ++i)
        for (std::int64_t j = 0; j < ow; ++j) {
          double acc = b ? (*b)[k] : 0.0, mag = b ? std::fabs((*b)[k]) : 0.0;
          for (std::int64_t c = 0; c < g.c; ++c)
            for (std::int64_t r = 0; r < g.r; ++r)
              for (std::int64_t s = 0; s < g.s; ++s) {
                const std::int64_t hi = i * g.strideH - g.padH + r, wi = j * g.strideW - g.padW + s;
                if (hi < 0 || hi >= g.h || wi < 0 || wi >= g.w) continue;
                const double p = x[((n * g.c + c) * g.h + hi) * g.w + wi] *
                                 w[((k * g.c + c) * g.r + r) * g.s + s];
                acc += p;
                mag += std::fabs(p);
              }
          const std::size_t o = static_cast<std::size_t>(((n * g.k + k) * oh + i) * ow + j);
          y[o] = acc;
          if (absSum) (*absSum)[o] = mag;
        }
  return y;
}

double dot(const Vec& a, const Vec& b) {
  double s = 0;
  for (std::size_t i = 0; i < a.size(); ++i) s += a[i] * b[i];
  return s;
}

// A rigorous bound on fp32 summation error for `terms` products summed in any order.
double fp32SumBound(const Conv2dGeometry& g, double absSum) {
  return double(g.c * g.r * g.s + 2) * std::ldexp(1.0, -23) * absSum + 1e-30;
}

Conv2dGeometry geom(std::int64_t n, std::int64_t c, std::int64_t h, std::int64_t w, std::int64_t k,
                    std::int64_t r, std::int64_t s, std::int64_t stride, std::int64_t pad) {
  Conv2dGeometry g;
  g.n = n, g.c = c, g.h = h, g.w = w, g.k = k, g.r = r, g.s = s;
  g.strideH = g.strideW = stride;
  g.padH = g.padW = pad;
  return g;
}

// Geometries covering the fmnist shapes (scaled down), stride 2, no padding, odd sizes,
// a non-square kernel and unequal padding.
std::vector<Conv2dGeometry> geometries() {
  std::vector<Conv2dGeometry> gs{geom(4, 1, 28, 28, 32, 3, 3, 1, 1),
                                 geom(3, 32, 14, 14, 64, 3, 3, 1, 1),
                                 geom(2, 3, 9, 7, 5, 3, 3, 2, 0), geom(2, 5, 6, 6, 17, 1, 1, 1, 0),
                                 geom(2, 4, 8, 9, 6, 5, 5, 1, 2)};
  Conv2dGeometry odd = geom(2, 3, 7, 10, 4, 3, 2, 1, 0);
  odd.padW = 1;
  odd.strideW = 2;
  gs.push_back(odd);
  return gs;
}

class ConvBackendTest : public ::testing::Test {
 protected:
  void TearDown() override { cpu::setForceBf16Emulation(false); }
  std::unique_ptr<Backend> be = makeCpuBackend();
  Tensor make(const std::vector<float>& v, const Shape& s, DType d) {
    return be->fromHost(v, s, d, MemCategory::Workspace);
  }
};

// A kernel larger than the padded input is refused, also where the output size's truncating
// division would still give 1 (h 2, kernel 3, stride 2: (2 - 3) / 2 + 1 == 1).
TEST_F(ConvBackendTest, KernelLargerThanThePaddedInputIsRefused) {
  const Conv2dGeometry g = geom(1, 1, 2, 2, 1, 3, 3, 2, 0);
  ASSERT_EQ(g.outH(), 1);
  EXPECT_FALSE(g.valid());
  EXPECT_TRUE(geom(1, 1, 2, 2, 1, 3, 3, 2, 1).valid());  // padding 1 makes it fit
  Tensor x = be->zeros({1, 1, 2, 2}, DType::F32, MemCategory::Workspace);
  Tensor w = be->zeros({1, 1, 3, 3}, DType::F32, MemCategory::Workspace);
  Tensor y = be->empty({1, 1, 1, 1}, DType::F32, MemCategory::Workspace);
  try {
    be->conv2dForward(x, w, nullptr, y, g);
    ADD_FAILURE() << "accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "conv2d: invalid geometry");
  }
}

// The kernels' scratch (fp16 staged as fp32, blocked-layout copies) is workspace while a call
// runs: the peak shows it, and nothing stays counted afterwards.
TEST_F(ConvBackendTest, ScratchCountsAsWorkspaceDuringTheCall) {
  const Conv2dGeometry g = geom(4, 32, 14, 14, 64, 3, 3, 1, 1);
  for (DType d : {DType::F32, DType::BF16, DType::F16}) {
    SCOPED_TRACE(dtypeName(d));
    Tensor x = make(randomVec(g.n * g.c * g.h * g.w, 1), inShape(g), d);
    Tensor w = make(randomVec(g.k * g.c * g.r * g.s, 2), weiShape(g), d);
    Tensor y = be->empty(outShape(g), d, MemCategory::Activations);
    const cpu::ConvShape& s = g;  // one geometry type for the backend and the kernels
    const auto t = d == DType::F32 ? cpu::ConvType::F32 : d == DType::BF16 ? cpu::ConvType::BF16 : cpu::ConvType::F16;
    const auto scratch = static_cast<std::int64_t>(cpu::convScratchBytes(cpu::ConvPass::Forward, t, t, s, false));
    // fp16 is staged through fp32 copies of input, weight and output: at least 4 bytes each.
    if (d == DType::F16) {
      EXPECT_GE(scratch, 4 * (x.numel() + w.numel() + y.numel()));
    }
    const int ws = static_cast<int>(MemCategory::Workspace);
    const std::int64_t before = be->memory().snapshot().current[ws];
    be->memory().resetPeaks();
    be->conv2dForward(x, w, nullptr, y, g);
    const MemorySnapshot after = be->memory().snapshot();
    EXPECT_EQ(after.current[ws], before);
    EXPECT_EQ(after.peak[ws], before + scratch);
  }
}

TEST_F(ConvBackendTest, ForwardFp32MatchesNaiveWithinSummationBound) {
  for (const auto& g : geometries()) {
    const auto xv = randomVec(shapeNumel(inShape(g)), 1),
               wv = randomVec(shapeNumel(weiShape(g)), 2), bv = randomVec(g.k, 3);
    Tensor x = make(xv, inShape(g), DType::F32), w = make(wv, weiShape(g), DType::F32),
           b = make(bv, {g.k}, DType::F32);
    Tensor y = be->empty(outShape(g), DType::F32, MemCategory::Workspace);
    be->conv2dForward(x, w, &b, y, g);
    const Vec bd(bv.begin(), bv.end());
    Vec mag;
    const Vec ref = naiveConv(Vec(xv.begin(), xv.end()), Vec(wv.begin(), wv.end()), &bd, g, &mag);
    const auto got = be->toHostFloat(y);
    for (std::size_t i = 0; i < ref.size(); ++i)
      ASSERT_NEAR(got[i], ref[i], fp32SumBound(g, mag[i]))
          << "output " << i << " of " << shapeString(outShape(g));
    // Without bias as well.
    be->conv2dForward(x, w, nullptr, y, g);
    const Vec ref0 =
        naiveConv(Vec(xv.begin(), xv.end()), Vec(wv.begin(), wv.end()), nullptr, g, &mag);
    const auto got0 = be->toHostFloat(y);
    for (std::size_t i = 0; i < ref0.size(); ++i)
      ASSERT_NEAR(got0[i], ref0[i], fp32SumBound(g, mag[i]));
  }
}

TEST_F(ConvBackendTest, ForwardBf16IsFp32AccumulationRoundedOnce) {
  for (const auto& g : geometries()) {
    const auto xv = randomVec(shapeNumel(inShape(g)), 4),
               wv = randomVec(shapeNumel(weiShape(g)), 5), bv = randomVec(g.k, 6);
    Tensor x = make(xv, inShape(g), DType::BF16), w = make(wv, weiShape(g), DType::BF16),
           b = make(bv, {g.k}, DType::BF16);
    const Vec bd = roundedTo(bv, DType::BF16);
    Vec mag;
    const Vec ref = naiveConv(roundedTo(xv, DType::BF16), roundedTo(wv, DType::BF16), &bd, g, &mag);
    for (DType out : {DType::BF16, DType::F32}) {
      Tensor y = be->empty(outShape(g), out, MemCategory::Workspace);
      be->conv2dForward(x, w, &b, y, g);
      const auto got = be->toHostFloat(y);
      for (std::size_t i = 0; i < ref.size(); ++i) {
        // fp32 accumulation error, plus half a bf16 ulp when the output is bf16.
        const double tol =
            fp32SumBound(g, mag[i]) + (out == DType::BF16 ? std::fabs(ref[i]) * 0x1p-8 : 0.0);
        ASSERT_NEAR(got[i], ref[i], tol) << dtypeName(out) << " output " << i;
      }
    }
  }
}

// fp16 is emulated exactly as gemm: widen (exact), fp32 convolution, round once. So the fp16
// result must equal the fp32 path run on the widened values, rounded to fp16, bit for bit; and
// it must lie between the fp16 roundings of the exact result minus and plus the fp32
// summation bound (rounding is monotonic), which holds whatever order oneDNN sums in.
TEST_F(ConvBackendTest, ForwardFp16EmulationIsExact) {
  for (const auto& g : geometries()) {
    const auto xv = randomVec(shapeNumel(inShape(g)), 7, -2, 2),
               wv = randomVec(shapeNumel(weiShape(g)), 8), bv = randomVec(g.k, 9);
    Tensor x = make(xv, inShape(g), DType::F16), w = make(wv, weiShape(g), DType::F16),
           b = make(bv, {g.k}, DType::F16);
    Tensor y = be->empty(outShape(g), DType::F16, MemCategory::Workspace);
    be->conv2dForward(x, w, &b, y, g);

    Tensor x32 = be->cast(x, DType::F32, MemCategory::Workspace),
           w32 = be->cast(w, DType::F32, MemCategory::Workspace),
           b32 = be->cast(b, DType::F32, MemCategory::Workspace);
    Tensor y32 = be->empty(outShape(g), DType::F32, MemCategory::Workspace);
    be->conv2dForward(x32, w32, &b32, y32, g);
    Tensor y32to16 = be->cast(y32, DType::F16, MemCategory::Workspace);
    EXPECT_EQ(be->toHostBytes(y), be->toHostBytes(y32to16)) << shapeString(outShape(g));

    const Vec bd = roundedTo(bv, DType::F16);
    Vec mag;
    const Vec ref = naiveConv(roundedTo(xv, DType::F16), roundedTo(wv, DType::F16), &bd, g, &mag);
    const auto got = be->toHostFloat(y);
    std::size_t exact = 0;
    for (std::size_t i = 0; i < ref.size(); ++i) {
      const double e = fp32SumBound(g, mag[i]);
      const float lo = roundToHalf(float(ref[i] - e)), hi = roundToHalf(float(ref[i] + e));
      ASSERT_GE(got[i], lo) << "output " << i;
      ASSERT_LE(got[i], hi) << "output " << i;
      exact += got[i] == roundToHalf(float(ref[i]));
    }
    // Away from rounding midpoints the result is the correctly rounded one.
    EXPECT_GE(double(exact), 0.99 * double(ref.size()));
  }
}

// bf16 without bf16 kernels (AVX2-only CPUs, forced here on any CPU) is emulated as fp16 is:
// the result equals the fp32 convolution of the widened values rounded once, bit for bit, in
// every pass. Where oneDNN has native bf16 kernels, they agree with the emulation within twice
// the fp32 summation bound plus one bf16 ulp (each is within the bound of the exact sum; each
// rounds once to bf16, possibly to neighbouring values).
// For every output of the forward and backward passes, the sum of the absolute values of the
// products it adds up (and the bias), and how many terms there are: the scale of the fp32
// summation error, whatever order a kernel sums in.
struct ConvMagnitudes {
  Vec sum[4];                 // y, dx, dw, db
  std::int64_t terms[4] = {};
};

ConvMagnitudes convMagnitudes(const Vec& x, const Vec& w, const Vec& b, const Vec& dy,
                              const Conv2dGeometry& g) {
  const std::int64_t oh = g.outH(), ow = g.outW();
  ConvMagnitudes m;
  m.sum[0].assign(static_cast<std::size_t>(g.n * g.k * oh * ow), 0.0);
  m.sum[1].assign(x.size(), 0.0);
  m.sum[2].assign(w.size(), 0.0);
  m.sum[3].assign(static_cast<std::size_t>(g.k), 0.0);
  m.terms[0] = g.c * g.r * g.s + 1;
  m.terms[1] = g.k * g.r * g.s;
  m.terms[2] = m.terms[3] = g.n * oh * ow;
  for (std::int64_t n = 0; n < g.n; ++n)
    for (std::int64_t k = 0; k < g.k; ++k)
      for (std::int64_t i = 0; i < oh; ++i)
        for (std::int64_t j = 0; j < ow; ++j) {
          const std::size_t o = static_cast<std::size_t>(((n * g.k + k) * oh + i) * ow + j);
          m.sum[0][o] += std::fabs(b[k]);
          m.sum[3][k] += std::fabs(dy[o]);
          for (std::int64_t c = 0; c < g.c; ++c)
            for (std::int64_t r = 0; r < g.r; ++r)
              for (std::int64_t q = 0; q < g.s; ++q) {
                const std::int64_t hi = i * g.strideH - g.padH + r, wi = j * g.strideW - g.padW + q;
                if (hi < 0 || hi >= g.h || wi < 0 || wi >= g.w) continue;
                const std::size_t xi = static_cast<std::size_t>(((n * g.c + c) * g.h + hi) * g.w + wi);
                const std::size_t wk = static_cast<std::size_t>(((k * g.c + c) * g.r + r) * g.s + q);
                m.sum[0][o] += std::fabs(x[xi] * w[wk]);
                m.sum[1][xi] += std::fabs(dy[o] * w[wk]);
                m.sum[2][wk] += std::fabs(dy[o] * x[xi]);
              }
        }
  return m;
}

TEST_F(ConvBackendTest, Bf16EmulationIsExactAndAgreesWithNative) {
  std::printf("bf16 convolutions on this CPU: %s\n", be->computePath(DType::BF16).c_str());
  for (const auto& g : geometries()) {
    SCOPED_TRACE(shapeString(inShape(g)) + " * " + shapeString(weiShape(g)));
    const auto xv = randomVec(shapeNumel(inShape(g)), 12), wv = randomVec(shapeNumel(weiShape(g)), 13),
               bv = randomVec(g.k, 14), dyv = randomVec(shapeNumel(outShape(g)), 15);
    Tensor x = make(xv, inShape(g), DType::BF16), w = make(wv, weiShape(g), DType::BF16),
           b = make(bv, {g.k}, DType::BF16), dy = make(dyv, outShape(g), DType::BF16);
    // The three passes, all outputs in bf16.
    auto passes = [&] {
      Tensor y = be->empty(outShape(g), DType::BF16, MemCategory::Workspace);
      Tensor dx = be->empty(inShape(g), DType::BF16, MemCategory::Workspace);
      Tensor dw = be->empty(weiShape(g), DType::BF16, MemCategory::Workspace);
      Tensor db = be->empty({g.k}, DType::BF16, MemCategory::Workspace);
      be->conv2dForward(x, w, &b, y, g);
      be->conv2dBackwardData(dy, w, dx, g);
      be->conv2dBackwardWeights(dy, x, dw, &db, g);
      return std::vector<std::vector<float>>{be->toHostFloat(y), be->toHostFloat(dx),
                                             be->toHostFloat(dw), be->toHostFloat(db)};
    };
    const auto first = passes();
    cpu::setForceBf16Emulation(true);
    const auto emulated = passes();
    // The fp32 passes on the widened values, rounded once.
    Tensor x32 = be->cast(x, DType::F32, MemCategory::Workspace),
           w32 = be->cast(w, DType::F32, MemCategory::Workspace),
           b32 = be->cast(b, DType::F32, MemCategory::Workspace),
           dy32 = be->cast(dy, DType::F32, MemCategory::Workspace);
    Tensor y = be->empty(outShape(g), DType::F32, MemCategory::Workspace),
           dx = be->empty(inShape(g), DType::F32, MemCategory::Workspace),
           dw = be->empty(weiShape(g), DType::F32, MemCategory::Workspace),
           db = be->empty({g.k}, DType::F32, MemCategory::Workspace);
    be->conv2dForward(x32, w32, &b32, y, g);
    be->conv2dBackwardData(dy32, w32, dx, g);
    be->conv2dBackwardWeights(dy32, x32, dw, &db, g);
    cpu::setForceBf16Emulation(false);
    const std::vector<std::vector<float>> wide{be->toHostFloat(y), be->toHostFloat(dx),
                                               be->toHostFloat(dw), be->toHostFloat(db)};
    // Per output of each pass: the sum of |terms| and the number of terms (y, dx, dw, db).
    const ConvMagnitudes mag = convMagnitudes(roundedTo(xv, DType::BF16), roundedTo(wv, DType::BF16),
                                              roundedTo(bv, DType::BF16), roundedTo(dyv, DType::BF16), g);
    const cpu::ConvPass kernelOf[] = {cpu::ConvPass::Forward, cpu::ConvPass::BackwardData,
                                      cpu::ConvPass::BackwardWeights, cpu::ConvPass::BackwardWeights};
    for (std::size_t p = 0; p < wide.size(); ++p) {
      // Whether this very kernel is native here (the backend's summary asks matmul and forward).
      const bool native = cpu::convIsNative16(kernelOf[p], cpu::ConvType::BF16, cpu::ConvType::BF16,
                                              g, p != 1);
      for (std::size_t i = 0; i < wide[p].size(); ++i) {
        ASSERT_EQ(floatBits(emulated[p][i]), floatBits(roundToBf16(wide[p][i]))) << "pass " << p << " at " << i;
        if (!native) {
          ASSERT_EQ(floatBits(first[p][i]), floatBits(emulated[p][i])) << "pass " << p;
          continue;
        }
        const double bound = 2 * double(mag.terms[p] + 2) * 0x1p-23 * mag.sum[p][i] + 1e-30;
        ASSERT_NEAR(first[p][i], emulated[p][i], bound + (std::fabs(wide[p][i]) + bound) * 0x1p-7)
            << "pass " << p << " at " << i;
      }
    }
  }
}

// The fp16 rounding of the output keeps IEEE behaviour at the edges: sums past 65504 become
// inf, tiny ones fp16 subnormals (not flushed), exactly as the fp32 result rounded to fp16.
TEST_F(ConvBackendTest, Fp16OutputOverflowsAndKeepsSubnormals) {
  const Conv2dGeometry g = geom(2, 4, 6, 6, 8, 3, 3, 1, 1);
  for (double scale : {300.0, 2e-3}) {
    const auto xv = randomVec(shapeNumel(inShape(g)), 81, 0, scale),
               wv = randomVec(shapeNumel(weiShape(g)), 82, -scale, scale);
    Tensor x = make(xv, inShape(g), DType::F16), w = make(wv, weiShape(g), DType::F16);
    Tensor y = be->empty(outShape(g), DType::F16, MemCategory::Workspace);
    be->conv2dForward(x, w, nullptr, y, g);
    Tensor y32 = be->empty(outShape(g), DType::F32, MemCategory::Workspace);
    be->conv2dForward(be->cast(x, DType::F32, MemCategory::Workspace),
                      be->cast(w, DType::F32, MemCategory::Workspace), nullptr, y32, g);
    EXPECT_EQ(be->toHostBytes(y),
              be->toHostBytes(be->cast(y32, DType::F16, MemCategory::Workspace)));
    std::int64_t inf = 0, subnormal = 0;
    for (float v : be->toHostFloat(y)) {
      inf += std::isinf(v);
      subnormal += v != 0.f && std::fabs(v) < 0x1p-14f;
    }
    if (scale > 1)
      EXPECT_GT(inf, 0);
    else
      EXPECT_GT(subnormal, 0);
  }
}

// Blocked layouts pad odd channel counts, and the staging/reorder buffers are reused between
// calls: leftovers of an earlier call (here NaNs) must never reach a later result.
TEST_F(ConvBackendTest, ReusedScratchDoesNotLeakBetweenCalls) {
  const Conv2dGeometry big = geom(8, 16, 12, 12, 32, 3, 3, 1, 1);
  const Conv2dGeometry odd = geom(2, 3, 5, 5, 5, 3, 3, 1, 1);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  for (DType d : {DType::F32, DType::BF16, DType::F16}) {
    Tensor bx = make(std::vector<float>(shapeNumel(inShape(big)), nan), inShape(big), d);
    Tensor bw = make(std::vector<float>(shapeNumel(weiShape(big)), nan), weiShape(big), d);
    Tensor by = be->empty(outShape(big), d, MemCategory::Workspace);
    Tensor bdx = be->empty(inShape(big), d, MemCategory::Workspace);
    be->conv2dForward(bx, bw, nullptr, by, big);
    be->conv2dBackwardData(by, bw, bdx, big);

    const auto xv = randomVec(shapeNumel(inShape(odd)), 91),
               wv = randomVec(shapeNumel(weiShape(odd)), 92);
    Tensor x = make(xv, inShape(odd), d), w = make(wv, weiShape(odd), d);
    Tensor y = be->empty(outShape(odd), DType::F32, MemCategory::Workspace);
    Tensor dx = be->empty(inShape(odd), DType::F32, MemCategory::Workspace);
    Tensor dw = be->empty(weiShape(odd), DType::F32, MemCategory::Workspace);
    be->conv2dForward(x, w, nullptr, y, odd);
    const Tensor dy = be->cast(y, d, MemCategory::Workspace);
    be->conv2dBackwardData(dy, w, dx, odd);  // fp32 outputs of 16-bit inputs
    be->conv2dBackwardWeights(dy, x, dw, nullptr, odd);
    Vec mag;
    const Vec ref = naiveConv(roundedTo(xv, d), roundedTo(wv, d), nullptr, odd, &mag);
    const auto got = be->toHostFloat(y);
    for (std::size_t i = 0; i < ref.size(); ++i)
      ASSERT_NEAR(got[i], ref[i], fp32SumBound(odd, mag[i]));
    EXPECT_EQ(be->countNonFinite(dx), 0) << dtypeName(d);
    EXPECT_EQ(be->countNonFinite(dw), 0) << dtypeName(d);
  }
}

// oneDNN on plain nchw buffers (no reorders) gives the same results as on its blocked layouts,
// up to summation order, for every pass and input dtype.
TEST_F(ConvBackendTest, PlainLayoutAgreesWithBlockedLayouts) {
  for (const auto& g : {geom(3, 5, 9, 9, 7, 3, 3, 1, 1), geom(2, 1, 12, 12, 16, 3, 3, 2, 1)}) {
    for (DType d : {DType::F32, DType::BF16, DType::F16}) {
      const auto xv = randomVec(shapeNumel(inShape(g)), 101),
                 wv = randomVec(shapeNumel(weiShape(g)), 102), bv = randomVec(g.k, 103),
                 gv = randomVec(shapeNumel(outShape(g)), 104);
      Tensor x = make(xv, inShape(g), d), w = make(wv, weiShape(g), d), b = make(bv, {g.k}, d),
             dy = make(gv, outShape(g), d);
      std::vector<std::vector<float>> results[2];
      for (int plain = 0; plain < 2; ++plain) {
        cpu::setConvLayout(plain ? cpu::ConvLayout::Plain : cpu::ConvLayout::Auto);
        Tensor y = be->empty(outShape(g), DType::F32, MemCategory::Workspace);
        Tensor dx = be->empty(inShape(g), DType::F32, MemCategory::Workspace);
        Tensor dw = be->empty(weiShape(g), DType::F32, MemCategory::Workspace);
        Tensor db = be->empty({g.k}, DType::F32, MemCategory::Workspace);
        be->conv2dForward(x, w, &b, y, g);
        be->conv2dBackwardData(dy, w, dx, g);
        be->conv2dBackwardWeights(dy, x, dw, &db, g);
        for (const Tensor* t : {&y, &dx, &dw, &db}) results[plain].push_back(be->toHostFloat(*t));
      }
      cpu::setConvLayout(cpu::ConvLayout::Auto);
      for (std::size_t r = 0; r < results[0].size(); ++r)
        for (std::size_t i = 0; i < results[0][r].size(); ++i)
          ASSERT_NEAR(results[0][r][i], results[1][r][i], 1e-4 * (1 + std::fabs(results[0][r][i])))
              << dtypeName(d) << " result " << r << " element " << i;
    }
  }
}

// Backward passes against central differences of L = sum(y * G) computed with the naive
// convolution in double (L is linear in x and w, so the differences are exact up to rounding).
class ConvGradTest : public ConvBackendTest, public ::testing::WithParamInterface<int> {};

TEST_P(ConvGradTest, BackwardMatchesFiniteDifferences) {
  const Conv2dGeometry g = GetParam() == 0   ? geom(2, 3, 5, 5, 4, 3, 3, 1, 1)
                           : GetParam() == 1 ? geom(2, 2, 7, 6, 3, 3, 3, 2, 0)
                                             : geom(1, 2, 6, 6, 3, 2, 2, 2, 1);
  const auto xv = randomVec(shapeNumel(inShape(g)), 11),
             wv = randomVec(shapeNumel(weiShape(g)), 12), bv = randomVec(g.k, 13),
             gv = randomVec(shapeNumel(outShape(g)), 14);
  Vec x(xv.begin(), xv.end()), w(wv.begin(), wv.end()), b(bv.begin(), bv.end());
  const Vec G(gv.begin(), gv.end());
  auto loss = [&] { return dot(naiveConv(x, w, &b, g), G); };
  const double h = 1e-3;
  auto fd = [&](Vec& v, std::size_t i) {
    const double keep = v[i];
    v[i] = keep + h;
    const double up = loss();
    v[i] = keep - h;
    const double down = loss();
    v[i] = keep;
    return (up - down) / (2 * h);
  };

  Tensor dy = make(gv, outShape(g), DType::F32), wt = make(wv, weiShape(g), DType::F32),
         xt = make(xv, inShape(g), DType::F32);
  Tensor dx = be->empty(inShape(g), DType::F32, MemCategory::Workspace);
  Tensor dw = be->empty(weiShape(g), DType::F32, MemCategory::Workspace);
  Tensor db = be->empty({g.k}, DType::F32, MemCategory::Workspace);
  be->conv2dBackwardData(dy, wt, dx, g);
  be->conv2dBackwardWeights(dy, xt, dw, &db, g);
  const auto dxv = be->toHostFloat(dx), dwv = be->toHostFloat(dw), dbv = be->toHostFloat(db);
  for (std::size_t i = 0; i < x.size(); ++i) ASSERT_NEAR(dxv[i], fd(x, i), 1e-4) << "dx " << i;
  for (std::size_t i = 0; i < w.size(); ++i) ASSERT_NEAR(dwv[i], fd(w, i), 1e-4) << "dw " << i;
  for (std::size_t i = 0; i < b.size(); ++i) ASSERT_NEAR(dbv[i], fd(b, i), 1e-4) << "db " << i;

  // Without a bias gradient the weight gradient is the same.
  Tensor dw2 = be->empty(weiShape(g), DType::F32, MemCategory::Workspace);
  be->conv2dBackwardWeights(dy, xt, dw2, nullptr, g);
  EXPECT_EQ(be->toHostBytes(dw2), be->toHostBytes(dw));
}

INSTANTIATE_TEST_SUITE_P(Geometries, ConvGradTest, ::testing::Values(0, 1, 2));

// 16-bit backward passes: fp16 equals the fp32 path on widened values rounded once (bit for
// bit); bf16 is within half a bf16 ulp (plus summation error) of the fp32 result.
TEST_F(ConvBackendTest, Backward16BitFollowsFp32Path) {
  const Conv2dGeometry g = geom(4, 8, 10, 10, 16, 3, 3, 1, 1);
  const auto xv = randomVec(shapeNumel(inShape(g)), 21),
             wv = randomVec(shapeNumel(weiShape(g)), 22),
             gv = randomVec(shapeNumel(outShape(g)), 23);
  for (DType d : {DType::F16, DType::BF16}) {
    Tensor x = make(xv, inShape(g), d), w = make(wv, weiShape(g), d), dy = make(gv, outShape(g), d);
    Tensor dx = be->empty(inShape(g), d, MemCategory::Workspace),
           dw = be->empty(weiShape(g), d, MemCategory::Workspace),
           db = be->empty({g.k}, d, MemCategory::Workspace);
    be->conv2dBackwardData(dy, w, dx, g);
    be->conv2dBackwardWeights(dy, x, dw, &db, g);
    // The fp32 path on the same (rounded) values.
    auto wide = [&](const Tensor& t) { return be->cast(t, DType::F32, MemCategory::Workspace); };
    Tensor dx32 = be->empty(inShape(g), DType::F32, MemCategory::Workspace),
           dw32 = be->empty(weiShape(g), DType::F32, MemCategory::Workspace),
           db32 = be->empty({g.k}, DType::F32, MemCategory::Workspace);
    be->conv2dBackwardData(wide(dy), wide(w), dx32, g);
    be->conv2dBackwardWeights(wide(dy), wide(x), dw32, &db32, g);
    if (d == DType::F16) {
      EXPECT_EQ(be->toHostBytes(dx), be->toHostBytes(be->cast(dx32, d, MemCategory::Workspace)));
      EXPECT_EQ(be->toHostBytes(dw), be->toHostBytes(be->cast(dw32, d, MemCategory::Workspace)));
      EXPECT_EQ(be->toHostBytes(db), be->toHostBytes(be->cast(db32, d, MemCategory::Workspace)));
      continue;
    }
    for (auto [got16, ref32, terms] :
         {std::tuple{&dx, &dx32, g.k * 9}, std::tuple{&dw, &dw32, g.n * 100},
          std::tuple{&db, &db32, g.n * 100}}) {
      const auto a = be->toHostFloat(*got16), r = be->toHostFloat(*ref32);
      double scale = 0;
      for (float v : r) scale = std::max(scale, double(std::fabs(v)));
      for (std::size_t i = 0; i < a.size(); ++i)
        ASSERT_NEAR(a[i], r[i], std::fabs(r[i]) * 0x1p-8 + terms * 0x1p-22 * scale) << i;
    }
  }
}

TEST_F(ConvBackendTest, RejectsMismatchedShapesAndDtypes) {
  const Conv2dGeometry g = geom(1, 2, 4, 4, 3, 3, 3, 1, 1);
  Tensor x = be->zeros(inShape(g), DType::F32, MemCategory::Workspace);
  Tensor w = be->zeros(weiShape(g), DType::BF16, MemCategory::Workspace);
  Tensor y = be->zeros(outShape(g), DType::F32, MemCategory::Workspace);
  EXPECT_THROW(be->conv2dForward(x, w, nullptr, y, g), std::invalid_argument);
  Tensor w32 = be->zeros({3, 2, 2, 2}, DType::F32, MemCategory::Workspace);
  EXPECT_THROW(be->conv2dForward(x, w32, nullptr, y, g), std::invalid_argument);
  Tensor xb = be->zeros(inShape(g), DType::BF16, MemCategory::Workspace);
  Tensor y16 = be->zeros(outShape(g), DType::F16, MemCategory::Workspace);
  EXPECT_THROW(be->conv2dForward(xb, w, nullptr, y16, g), std::invalid_argument);
}

TEST_F(ConvBackendTest, CountsConvolutionFlops) {
  const Conv2dGeometry g = geom(2, 3, 8, 8, 4, 3, 3, 1, 1);
  Tensor x = be->zeros(inShape(g), DType::F32, MemCategory::Workspace);
  Tensor w = be->zeros(weiShape(g), DType::F32, MemCategory::Workspace);
  Tensor y = be->empty(outShape(g), DType::F32, MemCategory::Workspace);
  be->resetGemmCounters();
  be->conv2dForward(x, w, nullptr, y, g);
  const GemmCounters c = be->gemmCounters();
  EXPECT_EQ(c.calls, 1);
  EXPECT_DOUBLE_EQ(c.flops, 2.0 * 2 * 4 * 8 * 8 * 3 * 9);
  EXPECT_GE(c.seconds, 0.0);
}

}  // namespace
}  // namespace amp

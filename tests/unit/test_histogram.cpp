// The backend's exponent histograms against ExponentHistogram::add on doubles (the reference):
// the fast power-of-two path must agree bin for bin, fraction for fraction.
#include <gtest/gtest.h>

#include <cmath>

#include "engine/backend/backend.h"
#include "engine/data/rng.h"

using namespace amp;

namespace {
ExponentHistogram reference(const std::vector<float>& v, double m) {
  ExponentHistogram h;
  for (float x : v) h.add(double(x) * m);
  return h;
}
void expectSame(const ExponentHistogram& a, const ExponentHistogram& b, const std::string& what) {
  EXPECT_EQ(a.counts, b.counts) << what;
  EXPECT_EQ(a.total, b.total) << what;
  EXPECT_EQ(a.underflow, b.underflow) << what;
  EXPECT_EQ(a.subnormal, b.subnormal) << what;
  EXPECT_EQ(a.overflow, b.overflow) << what;
  EXPECT_EQ(a.nonFinite, b.nonFinite) << what;
}
}  // namespace

TEST(Histogram, BinsAndFractionsMatchTheDoubleReference) {
  auto be = makeCpuBackend();
  std::vector<float> v;
  Rng rng(9);
  for (int i = 0; i < 100000; ++i) {
    // Magnitudes over the whole fp32 range, subnormals included.
    const double e = rng.uniform(-150, 128);
    v.push_back(float((rng.uniform() < 0.5 ? -1 : 1) * std::ldexp(1.0 + rng.uniform(), int(e))));
  }
  // Edge values: fp16's thresholds and their neighbours, zeros, inf, nan.
  for (float x : {0.f, -0.f, INFINITY, -INFINITY, NAN, 65504.f, 65505.f, 65519.f, 65536.f,
                  5.9604644775390625e-08f, 5.96046e-08f, 6.103515625e-05f, 6.1035e-05f,
                  1e-45f, 1.17549435e-38f, 3.4028235e38f})
    v.push_back(x);
  for (DType dt : {DType::F32, DType::F16, DType::BF16}) {
    Tensor t = be->fromHost(v, {std::int64_t(v.size())}, dt, MemCategory::Workspace);
    const auto stored = be->toHostFloat(t);
    for (double m : {1.0, 1.0 / 65536, 65536.0, std::ldexp(1.0, -40), 1.0 / 3.0, 0.75}) {
      expectSame(be->histogram(t, m), reference(stored, m),
                 std::string(dtypeName(dt)) + " x " + std::to_string(m));
    }
  }
}

TEST(Histogram, KnownValuesLandInTheirBins) {
  auto be = makeCpuBackend();
  Tensor t = be->fromHost(std::vector<float>{1.f, 1.5f, 2.f, 0.f, 65520.f, 1e-8f}, {6}, DType::F32,
                          MemCategory::Workspace);
  const auto h = be->histogram(t, 1.0);
  EXPECT_EQ(h.counts[0 - kHistMinExp], 2);  // 1 and 1.5 in [2^0, 2^1)
  EXPECT_EQ(h.counts[1 - kHistMinExp], 1);
  EXPECT_EQ(h.counts[kHistBinZero], 1);
  EXPECT_EQ(h.overflow, 1);   // 65520 > 65504
  EXPECT_EQ(h.underflow, 1);  // 1e-8 < 2^-24
  EXPECT_EQ(h.subnormal, 1);
}

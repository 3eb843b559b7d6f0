// CpuBackend max pooling (against a naive loop; ties go to the first maximum, as PyTorch's CPU
// kernel) and batch normalisation (forward in training and eval, running statistics with the
// unbiased variance, gradients by central finite differences of a double reference).
#include <gtest/gtest.h>
#include <omp.h>

#include <cmath>
#include <limits>
#include <vector>

#include "engine/backend/backend.h"
#include "test_support.h"
#include "kernels/common/float16.h"

namespace amp {
namespace {

using test::randomVec;

class PoolNormTest : public ::testing::Test {
 protected:
  std::unique_ptr<Backend> be = makeCpuBackend();
  Tensor make(const std::vector<float>& v, const Shape& s, DType d = DType::F32) {
    return be->fromHost(v, s, d, MemCategory::Workspace);
  }
};

Pool2dGeometry pool(std::int64_t n, std::int64_t c, std::int64_t h, std::int64_t w, std::int64_t k,
                    std::int64_t s) {
  Pool2dGeometry g;
  g.n = n, g.c = c, g.h = h, g.w = w, g.kernel = k, g.stride = s;
  return g;
}

// ---- max pooling ---------------------------------------------------------------------------

TEST_F(PoolNormTest, MaxPoolForwardMatchesNaive) {
  for (const auto& g : {pool(2, 3, 8, 8, 2, 2), pool(2, 2, 7, 9, 2, 2), pool(1, 3, 7, 7, 3, 2),
                        pool(2, 1, 6, 6, 3, 3)}) {
    const std::int64_t oh = g.outH(), ow = g.outW();
    // Values on a coarse grid so windows often hold equal maxima (ties).
    auto xv = randomVec(g.n * g.c * g.h * g.w, 31);
    for (auto& v : xv) v = std::round(v * 3.f);
    for (DType d : {DType::F32, DType::BF16, DType::F16}) {
      Tensor x = make(xv, {g.n, g.c, g.h, g.w}, d);
      Tensor y = be->empty({g.n, g.c, oh, ow}, d, MemCategory::Workspace);
      Tensor idx = be->empty({g.n, g.c, oh, ow}, DType::I32, MemCategory::Workspace);
      be->maxPool2dForward(x, y, idx, g);
      const auto yv = be->toHostFloat(y);
      const auto iv = be->toHostInt(idx);
      for (std::int64_t p = 0; p < g.n * g.c; ++p)
        for (std::int64_t i = 0; i < oh; ++i)
          for (std::int64_t j = 0; j < ow; ++j) {
            float best = -INFINITY;
            std::int64_t at = -1;
            for (std::int64_t a = 0; a < g.kernel; ++a)
              for (std::int64_t b = 0; b < g.kernel; ++b) {
                const std::int64_t q = (i * g.stride + a) * g.w + j * g.stride + b;
                if (xv[p * g.h * g.w + q] > best) best = xv[p * g.h * g.w + q], at = q;
              }
            const std::int64_t o = (p * oh + i) * ow + j;
            ASSERT_EQ(yv[o], best) << dtypeName(d) << " output " << o;
            ASSERT_EQ(iv[o], at) << dtypeName(d) << " output " << o << ": first maximum wins";
          }
    }
  }
}

TEST_F(PoolNormTest, MaxPoolTiesGoToTheFirstMaximumAndNanPropagates) {
  // One 2x2 window [[1, 5], [5, 2]]: the maximum 5 appears twice; the first (index 1) wins.
  Tensor x = make({1, 5, 5, 2}, {1, 1, 2, 2});
  Tensor y = be->empty({1, 1, 1, 1}, DType::F32, MemCategory::Workspace);
  Tensor idx = be->empty({1, 1, 1, 1}, DType::I32, MemCategory::Workspace);
  be->maxPool2dForward(x, y, idx, pool(1, 1, 2, 2, 2, 2));
  EXPECT_EQ(be->toHostInt(idx)[0], 1);
  // All equal: the window's top-left element.
  Tensor same = make({-3, -3, -3, -3}, {1, 1, 2, 2});
  be->maxPool2dForward(same, y, idx, pool(1, 1, 2, 2, 2, 2));
  EXPECT_EQ(be->toHostInt(idx)[0], 0);
  EXPECT_EQ(be->toHostFloat(y)[0], -3.f);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  Tensor withNan = make({1, nan, 7, 2}, {1, 1, 2, 2});
  be->maxPool2dForward(withNan, y, idx, pool(1, 1, 2, 2, 2, 2));
  EXPECT_TRUE(std::isnan(be->toHostFloat(y)[0]));
  EXPECT_EQ(be->toHostInt(idx)[0], 1);
}

TEST_F(PoolNormTest, MaxPoolBackwardRoutesToWinnersAndSumsOverlaps) {
  for (const auto& g : {pool(2, 2, 6, 6, 2, 2), pool(1, 2, 7, 7, 3, 2)}) {
    const std::int64_t oh = g.outH(), ow = g.outW(), planes = g.n * g.c;
    const auto xv = randomVec(planes * g.h * g.w, 41);
    const auto gv = randomVec(planes * oh * ow, 42);
    for (DType d : {DType::F32, DType::F16}) {
      Tensor x = make(xv, {g.n, g.c, g.h, g.w}, d);
      Tensor y = be->empty({g.n, g.c, oh, ow}, d, MemCategory::Workspace);
      Tensor idx = be->empty({g.n, g.c, oh, ow}, DType::I32, MemCategory::Workspace);
      be->maxPool2dForward(x, y, idx, g);
      Tensor dy = make(gv, {g.n, g.c, oh, ow}, d);
      Tensor dx = be->empty({g.n, g.c, g.h, g.w}, d, MemCategory::Workspace);
      be->maxPool2dBackward(dy, idx, dx, g);
      const auto iv = be->toHostInt(idx);
      const auto dyv = be->toHostFloat(dy);
      // Summed in fp32 in output order, as the backend does, then rounded once.
      std::vector<float> expect(static_cast<std::size_t>(planes * g.h * g.w), 0.f);
      for (std::int64_t p = 0; p < planes; ++p)
        for (std::int64_t o = 0; o < oh * ow; ++o)
          expect[p * g.h * g.w + iv[p * oh * ow + o]] += dyv[p * oh * ow + o];
      const auto dxv = be->toHostFloat(dx);
      for (std::size_t i = 0; i < expect.size(); ++i) {
        const float want = d == DType::F16 ? roundToHalf(expect[i]) : expect[i];
        ASSERT_EQ(dxv[i], want) << dtypeName(d) << " input " << i;
      }
    }
  }
}

// ---- batch normalisation -------------------------------------------------------------------

struct BnRef {
  std::vector<double> y, mean, varBiased;
};

// Training-mode batch norm in double over x viewed as (N, C, HW).
BnRef bnReference(const std::vector<double>& x, const std::vector<double>& g,
                  const std::vector<double>& b, std::int64_t n, std::int64_t c, std::int64_t hw,
                  double eps) {
  BnRef r;
  r.y.resize(x.size());
  r.mean.assign(c, 0.0);
  r.varBiased.assign(c, 0.0);
  const double m = double(n * hw);
  for (std::int64_t ch = 0; ch < c; ++ch) {
    for (std::int64_t i = 0; i < n; ++i)
      for (std::int64_t j = 0; j < hw; ++j) r.mean[ch] += x[(i * c + ch) * hw + j] / m;
    for (std::int64_t i = 0; i < n; ++i)
      for (std::int64_t j = 0; j < hw; ++j) {
        const double dv = x[(i * c + ch) * hw + j] - r.mean[ch];
        r.varBiased[ch] += dv * dv / m;
      }
    const double inv = 1.0 / std::sqrt(r.varBiased[ch] + eps);
    for (std::int64_t i = 0; i < n; ++i)
      for (std::int64_t j = 0; j < hw; ++j) {
        const std::size_t at = static_cast<std::size_t>((i * c + ch) * hw + j);
        r.y[at] = (x[at] - r.mean[ch]) * inv * g[ch] + b[ch];
      }
  }
  return r;
}

std::vector<double> widen(const std::vector<float>& v) { return {v.begin(), v.end()}; }

class BatchNormShapes : public PoolNormTest, public ::testing::WithParamInterface<Shape> {};

TEST_P(BatchNormShapes, TrainingForwardAndRunningStatistics) {
  const Shape s = GetParam();
  const std::int64_t n = s[0], c = s[1], hw = shapeNumel(s) / (n * c);
  const float eps = 1e-5f, momentum = 0.1f;
  const auto xv = randomVec(shapeNumel(s), 51, -2, 3), gv = randomVec(c, 52, 0.5, 1.5),
             bv = randomVec(c, 53), rm0 = randomVec(c, 54), rv0 = randomVec(c, 55, 0.5, 2);
  Tensor x = make(xv, s), gamma = make(gv, {c}), beta = make(bv, {c});
  Tensor rm = make(rm0, {c}), rv = make(rv0, {c});
  Tensor y = be->empty(s, DType::F32, MemCategory::Workspace);
  Tensor sm = be->empty({c}, DType::F32, MemCategory::Workspace),
         si = be->empty({c}, DType::F32, MemCategory::Workspace);
  be->batchNormForwardTrain(x, gamma, beta, rm, rv, momentum, eps, y, sm, si);
  const BnRef ref = bnReference(widen(xv), widen(gv), widen(bv), n, c, hw, eps);
  const auto yv = be->toHostFloat(y), smv = be->toHostFloat(sm), siv = be->toHostFloat(si);
  const auto rmv = be->toHostFloat(rm), rvv = be->toHostFloat(rv);
  for (std::size_t i = 0; i < yv.size(); ++i)
    ASSERT_NEAR(yv[i], ref.y[i], 2e-6 * (1 + std::fabs(ref.y[i])));
  const double m = double(n * hw);
  for (std::int64_t ch = 0; ch < c; ++ch) {
    EXPECT_NEAR(smv[ch], ref.mean[ch], 1e-6);
    EXPECT_NEAR(siv[ch], 1.0 / std::sqrt(ref.varBiased[ch] + eps), 1e-5);
    // PyTorch: running = (1 - momentum) * running + momentum * batch, variance unbiased.
    EXPECT_NEAR(rmv[ch], 0.9 * rm0[ch] + 0.1 * ref.mean[ch], 1e-6);
    EXPECT_NEAR(rvv[ch], 0.9 * rv0[ch] + 0.1 * ref.varBiased[ch] * m / (m - 1), 1e-6);
  }

  // Eval mode normalises with the running statistics.
  Tensor ye = be->empty(s, DType::F32, MemCategory::Workspace);
  be->batchNormForwardEval(x, gamma, beta, rm, rv, eps, ye);
  const auto yev = be->toHostFloat(ye);
  for (std::int64_t i = 0; i < n; ++i)
    for (std::int64_t ch = 0; ch < c; ++ch)
      for (std::int64_t j = 0; j < hw; ++j) {
        const std::size_t at = static_cast<std::size_t>((i * c + ch) * hw + j);
        const double want =
            (xv[at] - double(rmv[ch])) / std::sqrt(double(rvv[ch]) + eps) * gv[ch] + bv[ch];
        ASSERT_NEAR(yev[at], want, 2e-6 * (1 + std::fabs(want)));
      }
}

TEST_P(BatchNormShapes, GradientsMatchFiniteDifferences) {
  const Shape s = GetParam();
  const std::int64_t n = s[0], c = s[1], hw = shapeNumel(s) / (n * c);
  const double eps = 1e-5;
  const auto xv = randomVec(shapeNumel(s), 61, -2, 2), gv = randomVec(c, 62, 0.5, 1.5),
             bv = randomVec(c, 63), dyv = randomVec(shapeNumel(s), 64);
  std::vector<double> x = widen(xv), g = widen(gv), b = widen(bv);
  const std::vector<double> G = widen(dyv);
  auto loss = [&] {
    const auto y = bnReference(x, g, b, n, c, hw, eps).y;
    double l = 0;
    for (std::size_t i = 0; i < y.size(); ++i) l += y[i] * G[i];
    return l;
  };
  auto fd = [&](std::vector<double>& v, std::size_t i) {
    const double keep = v[i], h = 1e-5;
    v[i] = keep + h;
    const double up = loss();
    v[i] = keep - h;
    const double down = loss();
    v[i] = keep;
    return (up - down) / (2 * h);
  };
  Tensor xt = make(xv, s), gamma = make(gv, {c}), beta = make(bv, {c});
  Tensor rm = be->zeros({c}, DType::F32, MemCategory::Workspace),
         rv = make(std::vector<float>(c, 1.f), {c});
  Tensor y = be->empty(s, DType::F32, MemCategory::Workspace);
  Tensor sm = be->empty({c}, DType::F32, MemCategory::Workspace),
         si = be->empty({c}, DType::F32, MemCategory::Workspace);
  be->batchNormForwardTrain(xt, gamma, beta, rm, rv, 0.1f, float(eps), y, sm, si);
  Tensor dy = make(dyv, s), dx = be->empty(s, DType::F32, MemCategory::Workspace);
  Tensor dg = be->empty({c}, DType::F32, MemCategory::Workspace),
         db = be->empty({c}, DType::F32, MemCategory::Workspace);
  be->batchNormBackward(dy, xt, gamma, sm, si, dx, dg, db);
  const auto dxv = be->toHostFloat(dx), dgv = be->toHostFloat(dg), dbv = be->toHostFloat(db);
  for (std::size_t i = 0; i < x.size(); ++i) ASSERT_NEAR(dxv[i], fd(x, i), 2e-4) << "dx " << i;
  for (std::int64_t i = 0; i < c; ++i) {
    EXPECT_NEAR(dgv[i], fd(g, i), 2e-4) << "dgamma " << i;
    EXPECT_NEAR(dbv[i], fd(b, i), 2e-4) << "dbeta " << i;
  }
}

INSTANTIATE_TEST_SUITE_P(NcAndNchw, BatchNormShapes,
                         ::testing::Values(Shape{8, 5}, Shape{4, 3, 5, 5}, Shape{2, 4, 3, 7}));

TEST_F(PoolNormTest, BatchNormHalfInputUsesFp32StatisticsAndKeepsItsDtype) {
  const Shape s{6, 4, 5, 5};
  const std::int64_t c = 4;
  const auto xv = randomVec(shapeNumel(s), 71, -3, 5);
  for (DType d : {DType::F16, DType::BF16}) {
    Tensor x = make(xv, s, d);
    Tensor gamma = make(std::vector<float>(c, 1.f), {c}),
           beta = be->zeros({c}, DType::F32, MemCategory::Workspace);
    Tensor rm = be->zeros({c}, DType::F32, MemCategory::Workspace),
           rv = make(std::vector<float>(c, 1.f), {c});
    Tensor y = be->empty(s, d, MemCategory::Workspace);
    Tensor sm = be->empty({c}, DType::F32, MemCategory::Workspace),
           si = be->empty({c}, DType::F32, MemCategory::Workspace);
    be->batchNormForwardTrain(x, gamma, beta, rm, rv, 0.1f, 1e-5f, y, sm, si);
    std::vector<double> xr(xv.size());
    for (std::size_t i = 0; i < xv.size(); ++i)
      xr[i] = d == DType::F16 ? roundToHalf(xv[i]) : roundToBf16(xv[i]);
    const BnRef ref =
        bnReference(xr, std::vector<double>(c, 1.0), std::vector<double>(c, 0.0), 6, c, 25, 1e-5);
    const auto yv = be->toHostFloat(y);
    const double ulp = d == DType::F16 ? 0x1p-10 : 0x1p-7;
    for (std::size_t i = 0; i < yv.size(); ++i)
      ASSERT_NEAR(yv[i], ref.y[i], ulp * std::fabs(ref.y[i]) + 1e-5);
    const auto smv = be->toHostFloat(sm);
    for (std::int64_t ch = 0; ch < c; ++ch) EXPECT_NEAR(smv[ch], ref.mean[ch], 1e-6);

    // Backward: dx in dy's 16-bit dtype, rounded once from the fp32 computation on the same
    // values; dgamma and dbeta fp32.
    const auto gv = randomVec(shapeNumel(s), 72);
    Tensor dy = make(gv, s, d), dx = be->empty(s, d, MemCategory::Workspace);
    Tensor dg = be->empty({c}, DType::F32, MemCategory::Workspace),
           db = be->empty({c}, DType::F32, MemCategory::Workspace);
    be->batchNormBackward(dy, x, gamma, sm, si, dx, dg, db);
    Tensor dx32 = be->empty(s, DType::F32, MemCategory::Workspace);
    Tensor dg32 = be->empty({c}, DType::F32, MemCategory::Workspace),
           db32 = be->empty({c}, DType::F32, MemCategory::Workspace);
    be->batchNormBackward(be->cast(dy, DType::F32, MemCategory::Workspace),
                          be->cast(x, DType::F32, MemCategory::Workspace), gamma, sm, si, dx32,
                          dg32, db32);
    const auto a = be->toHostFloat(dx), r = be->toHostFloat(dx32);
    for (std::size_t i = 0; i < a.size(); ++i)
      ASSERT_NEAR(a[i], r[i], ulp * std::fabs(r[i]) + 1e-6) << dtypeName(d) << " dx " << i;
    EXPECT_EQ(be->toHostFloat(dg), be->toHostFloat(dg32));
    EXPECT_EQ(be->toHostFloat(db), be->toHostFloat(db32));
  }
}

// Batch norm walks rows in memory order, split across threads; its sums must still be the same
// bits whatever the thread count (each row summed alone, each channel adding its rows in sample
// order), so a run is reproducible on any machine. A layout big enough to go parallel, with short
// rows (6x6) so that spans cover many rows and channels straddle the threads' ranges.
TEST_F(PoolNormTest, BatchNormGivesTheSameBitsForAnyThreadCount) {
  const Shape s{40, 24, 6, 6};  // 34,560 values: above the parallel threshold
  const std::int64_t c = 24;
  const auto xv = randomVec(shapeNumel(s), 81, -2, 3), gv = randomVec(shapeNumel(s), 82);
  const auto gammaV = randomVec(c, 83, 0.5f, 1.5f), betaV = randomVec(c, 84);
  struct Out {
    std::vector<float> y, yRelu, mean, invStd, rm, rv, dx, dg, db, dxRelu, dgRelu, dbRelu;
  };
  auto runWith = [&](int threads, DType d) {
    const int before = omp_get_max_threads();
    omp_set_num_threads(threads);
    Out o;
    Tensor x = make(xv, s, d), dy = make(gv, s, d);
    Tensor gamma = make(gammaV, {c}), beta = make(betaV, {c});
    Tensor rm = be->zeros({c}, DType::F32, MemCategory::Workspace), rv = make(std::vector<float>(c, 1.f), {c});
    Tensor sm = be->empty({c}, DType::F32, MemCategory::Workspace),
           si = be->empty({c}, DType::F32, MemCategory::Workspace);
    Tensor y = be->empty(s, d, MemCategory::Workspace), yr = be->empty(s, d, MemCategory::Workspace);
    be->batchNormForwardTrain(x, gamma, beta, rm, rv, 0.1f, 1e-5f, y, sm, si);
    be->batchNormReluForwardTrain(x, gamma, beta, rm, rv, 0.1f, 1e-5f, &dy, yr, sm, si);
    Tensor dx = be->empty(s, d, MemCategory::Workspace), dxr = be->empty(s, d, MemCategory::Workspace);
    Tensor dg = be->empty({c}, DType::F32, MemCategory::Workspace),
           db = be->empty({c}, DType::F32, MemCategory::Workspace);
    Tensor dgr = be->empty({c}, DType::F32, MemCategory::Workspace),
           dbr = be->empty({c}, DType::F32, MemCategory::Workspace);
    be->batchNormBackward(dy, x, gamma, sm, si, dx, dg, db);
    be->batchNormReluBackward(dy, yr, x, gamma, sm, si, dxr, dgr, dbr);
    o.y = be->toHostFloat(y), o.yRelu = be->toHostFloat(yr), o.mean = be->toHostFloat(sm),
    o.invStd = be->toHostFloat(si), o.rm = be->toHostFloat(rm), o.rv = be->toHostFloat(rv),
    o.dx = be->toHostFloat(dx), o.dg = be->toHostFloat(dg), o.db = be->toHostFloat(db),
    o.dxRelu = be->toHostFloat(dxr), o.dgRelu = be->toHostFloat(dgr), o.dbRelu = be->toHostFloat(dbr);
    omp_set_num_threads(before);
    return o;
  };
  for (DType d : {DType::F32, DType::BF16, DType::F16}) {
    const Out one = runWith(1, d);
    for (int threads : {2, 3, 7}) {
      const Out many = runWith(threads, d);
      SCOPED_TRACE(std::string(dtypeName(d)) + ", " + std::to_string(threads) + " threads");
      EXPECT_EQ(one.y, many.y);
      EXPECT_EQ(one.yRelu, many.yRelu);
      EXPECT_EQ(one.mean, many.mean);
      EXPECT_EQ(one.invStd, many.invStd);
      EXPECT_EQ(one.rm, many.rm);
      EXPECT_EQ(one.rv, many.rv);
      EXPECT_EQ(one.dx, many.dx);
      EXPECT_EQ(one.dg, many.dg);
      EXPECT_EQ(one.db, many.db);
      EXPECT_EQ(one.dxRelu, many.dxRelu);
      EXPECT_EQ(one.dgRelu, many.dgRelu);
      EXPECT_EQ(one.dbRelu, many.dbRelu);
    }
    // The fused ReLU backward is the ReLU's backward followed by batch norm's, bit for bit.
    EXPECT_NE(one.dx, one.dxRelu);
  }
}

TEST_F(PoolNormTest, BatchNormTrainingNeedsTwoValuesPerChannel) {
  Tensor x = make({1, 2, 3}, {1, 3});
  Tensor p = make({1, 1, 1}, {3}), y = be->empty({1, 3}, DType::F32, MemCategory::Workspace);
  Tensor rm = make({0, 0, 0}, {3}), rv = make({1, 1, 1}, {3}),
         sm = be->empty({3}, DType::F32, MemCategory::Workspace),
         si = be->empty({3}, DType::F32, MemCategory::Workspace);
  EXPECT_THROW(be->batchNormForwardTrain(x, p, p, rm, rv, 0.1f, 1e-5f, y, sm, si),
               std::invalid_argument);
}

}  // namespace
}  // namespace amp

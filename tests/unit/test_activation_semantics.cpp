// Activations on special values, as PyTorch defines them: relu is clamp_min(x, 0), so a NaN
// produced by an fp16 overflow upstream stays NaN and reaches the loss (where the scaler sees
// it), and relu's backward is threshold_backward: where(y <= 0, 0, dy).
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "engine/backend/backend.h"

namespace amp {
namespace {

TEST(ActivationSemantics, ReluKeepsNaNAndInfAndZeroesTheRest) {
  auto be = makeCpuBackend();
  // Repeated past one vector width and a chunk, so vectorised loops and their tails both run.
  const std::vector<float> pattern{NAN, -1.f, 2.f, -INFINITY, INFINITY, -0.f, 0.f, 1e-30f, -3e-8f};
  std::vector<float> x;
  while (x.size() < 5000) x.insert(x.end(), pattern.begin(), pattern.end());
  const std::int64_t n = static_cast<std::int64_t>(x.size());
  for (DType d : {DType::F32, DType::F16, DType::BF16}) {
    SCOPED_TRACE(dtypeName(d));
    Tensor tx = be->fromHost(x, {n}, d, MemCategory::Workspace);
    Tensor ty = be->empty({n}, d, MemCategory::Workspace);
    be->activationForward(Activation::ReLU, tx, ty);
    const auto y = be->toHostFloat(ty);
    const auto xs = be->toHostFloat(tx);  // the input as stored (1e-30 flushes in 16 bits)
    for (std::int64_t i = 0; i < n; ++i) {
      if (std::isnan(xs[i])) EXPECT_TRUE(std::isnan(y[i])) << i;
      else EXPECT_EQ(y[i], xs[i] > 0 ? xs[i] : 0.f) << i;
    }
    // Backward with dy = 1 everywhere except a NaN gradient where y is 0 (it must not leak).
    std::vector<float> dyv(x.size(), 1.f);
    dyv[1] = NAN;  // x = -1: y = 0, so dx = 0 whatever dy is
    Tensor dy = be->fromHost(dyv, {n}, d, MemCategory::Workspace);
    Tensor dx = be->empty({n}, d, MemCategory::Workspace);
    be->activationBackward(Activation::ReLU, tx, ty, dy, dx);
    const auto g = be->toHostFloat(dx);
    for (std::int64_t i = 0; i < n; ++i) {
      const bool passes = std::isnan(y[i]) || y[i] > 0;
      EXPECT_EQ(g[i], passes ? 1.f : 0.f) << i << " y=" << y[i];
    }
  }
}

}  // namespace
}  // namespace amp

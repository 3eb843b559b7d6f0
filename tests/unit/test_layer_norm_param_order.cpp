// LayerNorm's parameter gradients on the CPU sum in kernels/common/bias_grad_order.h's blocked
// order (issue 41), the order the CUDA kernels share so that both give the same bits: checked
// against that order's reference form, on a column where row order would give another answer.
#include <gtest/gtest.h>

#include <vector>

#include "engine/backend/cpu_backend.h"
#include "kernels/common/bias_grad_order.h"
#include "kernels/common/float16.h"
#include "kernels/common/transformer_math.h"

using namespace amp;

TEST(LayerNormParamOrder, CpuGradientsFollowTheBlockedOrder) {
  CpuBackend be;
  const std::int64_t rows = 100, width = 3;
  std::vector<float> x(rows * width), dy(rows * width);
  for (std::int64_t i = 0; i < rows * width; ++i) {
    x[std::size_t(i)] = float((i * 37) % 11) - 5.f;
    dy[std::size_t(i)] = float((i * 13) % 7) * 0.25f - 0.5f;
  }
  // Column 0 of dy: 2^24 in row 0 and ones in rows 32..63. Row order rounds every 1 away
  // (2^24 + 1 is a tie that goes back to 2^24); the blocked order adds block 1's ones first.
  for (std::int64_t r = 0; r < rows; ++r) dy[std::size_t(r * width)] = r == 0 ? 16777216.f : (r >= 32 && r < 64 ? 1.f : 0.f);
  const Tensor xt = be.fromHost(x, {rows, width}, DType::F32, MemCategory::Activations);
  const Tensor dyt = be.fromHost(dy, {rows, width}, DType::F32, MemCategory::Activations);
  const Tensor gamma = be.fromHost(std::vector<float>(width, 1.f), {width}, DType::F32, MemCategory::Weights);
  const Tensor beta = be.zeros({width}, DType::F32, MemCategory::Weights);
  Tensor y = be.empty({rows, width}, DType::F32, MemCategory::Activations);
  Tensor mean = be.empty({rows}, DType::F32, MemCategory::Activations), rstd = be.empty({rows}, DType::F32, MemCategory::Activations);
  be.layerNormForward(xt, gamma, beta, 1e-5f, y, mean, rstd);
  Tensor dx = be.empty({rows, width}, DType::F32, MemCategory::Activations);
  Tensor dgamma = be.empty({width}, DType::F32, MemCategory::Gradients), dbeta = be.empty({width}, DType::F32, MemCategory::Gradients);
  be.layerNormBackward(dyt, xt, gamma, mean, rstd, dx, dgamma, dbeta);
  const std::vector<float> mu = be.toHostFloat(mean), rs = be.toHostFloat(rstd);
  const std::vector<float> dg = be.toHostFloat(dgamma), db = be.toHostFloat(dbeta);
  for (std::int64_t c = 0; c < width; ++c) {
    const float wantB = biasGradColumnSum(rows, [&](std::int64_t r) { return dy[std::size_t(r * width + c)]; });
    const float wantG = biasGradColumnSum(rows, [&](std::int64_t r) {
      return dy[std::size_t(r * width + c)] * layerNormXhat(x[std::size_t(r * width + c)], mu[std::size_t(r)], rs[std::size_t(r)]);
    });
    EXPECT_EQ(floatBits(db[std::size_t(c)]), floatBits(wantB)) << "dbeta column " << c;
    EXPECT_EQ(floatBits(dg[std::size_t(c)]), floatBits(wantG)) << "dgamma column " << c;
  }
  EXPECT_EQ(db[0], 16777216.f + 32.f) << "the row order's answer would be 2^24";
}

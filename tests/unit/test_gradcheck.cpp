// Finite-difference checks of every layer's and loss's backward pass (fp32), against central
// differences of a scalar objective L = sum(R * f(x)) with a fixed random R (gradcheck_support.h).
#include <gtest/gtest.h>

#include <cmath>
#include <functional>

#include "engine/amp/autocast.h"
#include "engine/data/rng.h"
#include "engine/nn/activation_layer.h"
#include "engine/nn/linear.h"
#include "engine/nn/loss.h"
#include "gradcheck_support.h"

using namespace amp;
using namespace amp::test;


TEST(GradCheck, Linear) {
  checkLayer([] { return std::make_unique<Linear>(5, 4); }, {3, 5}, 0, "Linear");
}

TEST(GradCheck, LinearWithoutBias) {
  checkLayer([] { return std::make_unique<Linear>(3, 2, false); }, {4, 3}, 0, "Linear(no bias)");
}

TEST(GradCheck, Activations) {
  for (Activation a : {Activation::ReLU, Activation::Tanh, Activation::Sigmoid, Activation::GELU}) {
    checkLayer([a] { return std::make_unique<ActivationLayer>(a); }, {3, 7},
               a == Activation::ReLU ? 0.05 : 0, std::string(activationName(a)));
  }
}

TEST(GradCheck, Flatten) {
  checkLayer([] { return std::make_unique<Flatten>(); }, {2, 3, 2, 2}, 0, "Flatten");
}

TEST(GradCheck, CrossEntropyLoss) {
  Fixture f;
  const Shape s{4, 5};
  const auto zv = randomVector(20, 21, -2, 2);
  Tensor y = f.be->fromHostInt(std::vector<std::int32_t>{0, 3, 4, 1}, {4}, MemCategory::Activations);
  CrossEntropyLoss loss;
  auto objective = [&](const std::vector<float>& z) {
    Tensor t = f.be->fromHost(z, s, DType::F32, MemCategory::Activations);
    const double l = loss.forward(f.ctx, t, y);
    loss.releaseSaved();
    return l;
  };
  Tensor z = f.be->fromHost(zv, s, DType::F32, MemCategory::Activations);
  loss.forward(f.ctx, z, y);
  const float seed = 3.f;  // the loss scale multiplies the gradient
  Tensor g = loss.backward(f.ctx, seed);
  auto gv = f.be->toHostFloat(g);
  for (auto& v : gv) v /= seed;
  expectGradientsMatch(zv, gv, objective, "cross_entropy", 1e-2, 1e-3);
  // Against the closed form: the mean loss of uniform logits is log(C).
  Tensor u = f.be->fromHost(std::vector<float>(20, 0.f), s, DType::F32, MemCategory::Activations);
  EXPECT_NEAR(loss.forward(f.ctx, u, y), std::log(5.0), 1e-6);
}

TEST(GradCheck, MseLoss) {
  Fixture f;
  const Shape s{3, 4};
  const auto pv = randomVector(12, 31, -1, 1);
  Tensor t = f.be->fromHost(randomVector(12, 32, -1, 1), s, DType::F32, MemCategory::Activations);
  MseLoss loss;
  auto objective = [&](const std::vector<float>& p) {
    Tensor x = f.be->fromHost(p, s, DType::F32, MemCategory::Activations);
    const double l = loss.forward(f.ctx, x, t);
    loss.releaseSaved();
    return l;
  };
  Tensor p = f.be->fromHost(pv, s, DType::F32, MemCategory::Activations);
  loss.forward(f.ctx, p, t);
  Tensor g = loss.backward(f.ctx, 1.f);
  expectGradientsMatch(pv, f.be->toHostFloat(g), objective, "mse", 1e-2, 1e-3);
}

TEST(GradCheck, Fp16LinearMatchesRoundedFp32Reference) {
  // Under autocast fp16, y = round_fp16(round_fp16(x) · round_fp16(W)ᵀ + round_fp16(b)) with fp32
  // accumulation: recompute that in double from the rounded inputs and compare bit patterns.
  Fixture f;
  Linear fc(6, 3);
  fc.setName("0");
  Rng rng(5);
  fc.initialize(*f.be, rng, DType::F32, MemCategory::MasterWeights);
  const auto xv = randomVector(12, 41, -3, 3);
  Tensor x = f.be->fromHost(xv, {2, 6}, DType::F32, MemCategory::Activations);
  Tensor y;
  {
    AutocastRegion region(f.ac, true, DType::F16);
    y = fc.forward(f.ctx, x);
  }
  const auto w = f.be->toHostFloat(f.be->cast(fc.parameters()[0]->value, DType::F16, MemCategory::Workspace));
  const auto b = f.be->toHostFloat(f.be->cast(fc.parameters()[1]->value, DType::F16, MemCategory::Workspace));
  const auto xr = f.be->toHostFloat(f.be->cast(x, DType::F16, MemCategory::Workspace));
  const auto yv = f.be->toHostFloat(y);
  for (int r = 0; r < 2; ++r)
    for (int o = 0; o < 3; ++o) {
      double acc = b[o];
      for (int i = 0; i < 6; ++i) acc += double(xr[r * 6 + i]) * double(w[o * 6 + i]);
      // One fp16 rounding of a value computed exactly (the fp32 sum's error is far below
      // half an fp16 ulp here): must equal the nearest fp16.
      Tensor ref = f.be->fromHost(std::vector<float>{float(acc)}, {1}, DType::F16, MemCategory::Workspace);
      EXPECT_EQ(yv[r * 3 + o], f.be->toHostFloat(ref)[0]) << r << "," << o;
    }
}

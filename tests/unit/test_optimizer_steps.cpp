// Optimizer steps against the update rules in PyTorch's torch.optim documentation, computed
// here in double: SGD (weight decay, momentum with dampening, Nesterov), Adam and AdamW over
// several steps; the gradient sum of squares the step returns (the fused global norm); lost
// updates counted exactly when an update is below half an ulp of the weight.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "engine/backend/backend.h"
#include "test_support.h"
#include "engine/optim/optimizer.h"

namespace amp {
namespace {

// Spans several 4096-value chunks, a ragged tail, and the parallel path.
constexpr std::int64_t kN = 3 * 4096 + 917;

using test::randomVec;

double naiveSumOfSquares(const std::vector<float>& v) {
  double s = 0;
  for (float x : v) s += double(x) * double(x);
  return s;
}

struct Reference {  // one parameter's documented state, in double
  std::vector<double> w, buf, m, v;
};

void sgdReference(Reference& r, const std::vector<float>& g, const OptimizerConfig& c, int t) {
  for (std::size_t i = 0; i < r.w.size(); ++i) {
    double d = g[i] + c.weightDecay * r.w[i];
    if (c.momentum != 0) {
      r.buf[i] = t == 1 ? d : c.momentum * r.buf[i] + (1 - c.dampening) * d;
      d = c.nesterov ? d + c.momentum * r.buf[i] : r.buf[i];
    }
    r.w[i] -= c.lr * d;
  }
}

void adamReference(Reference& r, const std::vector<float>& g, const OptimizerConfig& c, int t) {
  const bool adamw = c.name == "adamw";
  for (std::size_t i = 0; i < r.w.size(); ++i) {
    double gi = g[i];
    if (adamw) r.w[i] *= 1 - c.lr * c.weightDecay;
    else gi += c.weightDecay * r.w[i];
    r.m[i] = c.beta1 * r.m[i] + (1 - c.beta1) * gi;
    r.v[i] = c.beta2 * r.v[i] + (1 - c.beta2) * gi * gi;
    const double mHat = r.m[i] / (1 - std::pow(c.beta1, t));
    const double vHat = r.v[i] / (1 - std::pow(c.beta2, t));
    r.w[i] -= c.lr * mHat / (std::sqrt(vHat) + c.eps);
  }
}

// Runs 4 steps of `c` with fresh gradients each step and compares every weight after each step
// with the double reference, within `tol` (fp32 rounding of a few operations per step).
void expectMatchesReference(const OptimizerConfig& c, double tol) {
  SCOPED_TRACE(c.name + " lr " + std::to_string(c.lr) + " wd " + std::to_string(c.weightDecay) +
               " momentum " + std::to_string(c.momentum) + (c.nesterov ? " nesterov" : ""));
  auto be = makeCpuBackend();
  const auto w0 = randomVec(kN, 1, -1, 1);
  Parameter p;
  p.name = "w";
  p.value = be->fromHost(w0, {kN}, DType::F32, MemCategory::MasterWeights);
  Optimizer opt(*be, {&p}, c);
  Reference r{{w0.begin(), w0.end()}, std::vector<double>(kN), std::vector<double>(kN),
              std::vector<double>(kN)};
  for (int t = 1; t <= 4; ++t) {
    const auto g = randomVec(kN, 100 + t, -0.5, 0.5);
    p.grad = be->fromHost(g, {kN}, DType::F32, MemCategory::Gradients);
    const OptimizerStepStats st = opt.step(c.lr);
    if (c.name == "sgd") sgdReference(r, g, c, t);
    else adamReference(r, g, c, t);
    EXPECT_EQ(st.updated, kN);
    EXPECT_NEAR(st.gradSumOfSquares, naiveSumOfSquares(g), 1e-12 * naiveSumOfSquares(g));
    const auto w = be->toHostFloat(p.value);
    double worst = 0;
    for (std::int64_t i = 0; i < kN; ++i) worst = std::max(worst, std::fabs(w[i] - r.w[i]));
    EXPECT_LE(worst, tol) << "after step " << t;
  }
}

OptimizerConfig config(const std::string& name, double lr, double wd = 0, double momentum = 0,
                       double dampening = 0, bool nesterov = false) {
  OptimizerConfig c;
  c.name = name;
  c.lr = lr;
  c.weightDecay = wd;
  c.momentum = momentum;
  c.dampening = dampening;
  c.nesterov = nesterov;
  return c;
}

TEST(OptimizerSteps, SgdFollowsTheDocumentedRule) {
  // Weights are O(1): 4 steps of fp32 rounding stay within a few ulps of 1 (6e-8 each).
  expectMatchesReference(config("sgd", 0.1), 5e-7);
  expectMatchesReference(config("sgd", 0.1, 0.01), 5e-7);
  expectMatchesReference(config("sgd", 0.05, 0, 0.9, 0.1), 5e-7);
  expectMatchesReference(config("sgd", 0.05, 0.001, 0.9, 0, true), 5e-7);
}

TEST(OptimizerSteps, AdamAndAdamWFollowTheDocumentedRule) {
  // A wrong bias correction or eps placement is off by O(lr) = 1e-2; rounding is ~1e-7.
  expectMatchesReference(config("adam", 0.01), 5e-7);
  expectMatchesReference(config("adam", 0.01, 0.01), 5e-7);
  expectMatchesReference(config("adamw", 0.01, 0.1), 5e-7);
}

TEST(OptimizerSteps, UpdatesBelowHalfAnUlpAreCountedAsLost) {
  auto be = makeCpuBackend();
  const std::vector<float> ones(kN, 1.f);
  // fp32 masters: half an ulp of 1.0 is 2^-24 ~ 6e-8 (below 1.0 the spacing halves, so the
  // test steps downwards by more than a full ulp there to be sure it is kept).
  // fp16 weights: the spacing below 1.0 is 2^-11 ~ 4.9e-4.
  struct Case { DType dtype; double lr; std::int64_t lost; };
  for (const Case& k : {Case{DType::F32, 1e-9, kN}, Case{DType::F32, 1e-6, 0},
                        Case{DType::F16, 1e-4, kN}, Case{DType::F16, 1e-3, 0}}) {
    SCOPED_TRACE(std::string(dtypeName(k.dtype)) + " lr " + std::to_string(k.lr));
    Parameter p;
    p.name = "w";
    p.value = be->fromHost(ones, {kN}, k.dtype, MemCategory::Weights);
    p.grad = be->fromHost(ones, {kN}, k.dtype, MemCategory::Gradients);
    Optimizer opt(*be, {&p}, config("sgd", k.lr));
    const OptimizerStepStats st = opt.step(k.lr);
    EXPECT_EQ(st.lost, k.lost);
    const auto w = be->toHostFloat(p.value);
    if (k.lost == kN) EXPECT_EQ(w[0], 1.f);
    else EXPECT_LT(w[0], 1.f);
  }
}

TEST(OptimizerSteps, UnscaleReturnsTheSumOfSquaresOfTheStoredGradients) {
  auto be = makeCpuBackend();
  const auto a = randomVec(kN, 7, -1000, 1000);
  const auto b = randomVec(513, 8, -10, 10);
  for (DType d : {DType::F32, DType::F16}) {
    SCOPED_TRACE(dtypeName(d));
    Tensor ga = be->fromHost(a, {kN}, d, MemCategory::Gradients);
    Tensor gb = be->fromHost(b, {513}, d, MemCategory::Gradients);
    std::vector<Tensor*> grads{&ga, &gb};
    const UnscaleResult r = be->unscaleAndCheck(grads, 1.f / 1024.f);
    EXPECT_FALSE(r.foundInf);
    // The reference reads back what was stored (fp16 rounds the unscaled values).
    auto sa = be->toHostFloat(ga), sb = be->toHostFloat(gb);
    const double expect = naiveSumOfSquares(sa) + naiveSumOfSquares(sb);
    EXPECT_NEAR(r.sumOfSquares, expect, 1e-12 * expect);
    EXPECT_NEAR(r.sumOfSquares, be->sumOfSquares(ga) + be->sumOfSquares(gb), 1e-12 * expect);
    // Unscaling is by 2^-10: exact for fp32, so the values are the inputs over 1024.
    if (d == DType::F32) {
      EXPECT_EQ(sa[5], a[5] / 1024.f);
    }
  }
  // A non-finite gradient: found (before scaling, as PyTorch), and the norm is not finite.
  auto withInf = b;
  withInf[100] = INFINITY;
  Tensor g = be->fromHost(withInf, {513}, DType::F32, MemCategory::Gradients);
  std::vector<Tensor*> grads{&g};
  const UnscaleResult r = be->unscaleAndCheck(grads, 0.5f);
  EXPECT_TRUE(r.foundInf);
  EXPECT_EQ(r.firstNonFinite, 0);
  EXPECT_FALSE(std::isfinite(r.sumOfSquares));
}

}  // namespace
}  // namespace amp

// Finite-difference gradient checks shared by the layer tests: an analytic gradient against
// central differences of a scalar objective L = sum(R * f(x)) with a fixed random R, for a
// layer's input and every one of its parameters (fp32, CPU backend).
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "engine/amp/autocast.h"
#include "engine/data/rng.h"
#include "engine/nn/layer.h"

namespace amp::test {

struct Fixture {
  std::unique_ptr<Backend> be = makeCpuBackend();
  Autocast ac;
  LayerContext ctx{*be, ac};
};

inline std::vector<float> randomVector(std::size_t n, std::uint64_t seed, double lo, double hi,
                                       double avoidBelow = 0) {
  Rng rng(seed);
  std::vector<float> v(n);
  for (auto& x : v) {
    do x = float(rng.uniform(lo, hi));
    while (std::fabs(x) < avoidBelow);  // keep ReLU's kink out of the differences
  }
  return v;
}

inline double dot(const std::vector<float>& a, const std::vector<float>& b) {
  double s = 0;
  for (std::size_t i = 0; i < a.size(); ++i) s += double(a[i]) * double(b[i]);
  return s;
}

// Compares analytic gradient `g` of L at `values` against central differences, where
// `objective(values)` evaluates L.
inline void expectGradientsMatch(std::vector<float> values, const std::vector<float>& g,
                                 const std::function<double(const std::vector<float>&)>& objective,
                                 const std::string& what, double h = 1e-2, double tol = 2e-3) {
  ASSERT_EQ(values.size(), g.size()) << what;
  for (std::size_t i = 0; i < values.size(); ++i) {
    const float keep = values[i];
    values[i] = keep + float(h);
    const double up = objective(values);
    values[i] = keep - float(h);
    const double down = objective(values);
    values[i] = keep;
    const double fd = (up - down) / (2 * h);
    EXPECT_NEAR(g[i], fd, tol * (1 + std::fabs(fd))) << what << " element " << i;
  }
}

// The layer is made inside, after the backend, so its tensors die before the backend does.
inline void checkLayer(const std::function<std::unique_ptr<Layer>()>& make, const Shape& xShape,
                       double avoidBelow, const std::string& what, double h = 1e-2,
                       double tol = 2e-3) {
  Fixture f;
  std::unique_ptr<Layer> owned = make();
  Layer& layer = *owned;
  Rng rng(3);
  layer.setName("0");
  layer.initialize(*f.be, rng, DType::F32, MemCategory::Weights);
  const auto xv = randomVector(shapeNumel(xShape), 11, -1, 1, avoidBelow);
  Tensor x = f.be->fromHost(xv, xShape, DType::F32, MemCategory::Activations);
  Tensor y0 = layer.forward(f.ctx, x);
  const auto r = randomVector(y0.numel(), 12, -1, 1);
  Tensor dy = f.be->fromHost(r, y0.shape(), DType::F32, MemCategory::Activations);
  Tensor dx = layer.backward(f.ctx, dy, true);
  auto objectiveAt = [&](const std::vector<float>& in) {
    Tensor xi = f.be->fromHost(in, xShape, DType::F32, MemCategory::Activations);
    Tensor yi = layer.forward(f.ctx, xi);
    layer.releaseSaved();
    return dot(f.be->toHostFloat(yi), r);
  };
  expectGradientsMatch(xv, f.be->toHostFloat(dx), objectiveAt, what + " input", h, tol);
  for (Parameter* p : layer.parameters()) {
    const auto pv = f.be->toHostFloat(p->value);
    const auto pg = f.be->toHostFloat(p->grad);
    auto objectiveAtParam = [&](const std::vector<float>& v) {
      f.be->uploadFloat(p->value, v);
      const double l = objectiveAt(xv);
      f.be->uploadFloat(p->value, pv);
      return l;
    };
    expectGradientsMatch(pv, pg, objectiveAtParam, what + " " + p->name, h, tol);
  }
}


}  // namespace amp::test

// Convolutions of the Fashion-MNIST CNN (batch 128; conv 1->32 at 28x28 and 32->64 at 14x14,
// 3x3, padding 1) through the CPU backend: forward, backward-data and backward-weights (with
// the bias gradient), in fp32, bf16 (oneDNN) and fp16 (emulated through fp32), with oneDNN
// free to choose blocked layouts (Auto, the default) or held to plain nchw (Plain).
//
// Run: build/<dir>/tests/bench/bench_conv --benchmark_filter=... ; the label names the oneDNN
// implementation, the GFLOP/s counter counts 2*N*K*OH*OW*C*R*S per pass.
#include <benchmark/benchmark.h>

#include <string>
#include <vector>

#include "engine/backend/cpu_backend.h"
#include "kernels/cpu/onednn_conv.h"

namespace amp {
namespace {

Conv2dGeometry fmnistShape(int which) {
  Conv2dGeometry g;
  g.n = 128, g.r = 3, g.s = 3, g.padH = 1, g.padW = 1;
  if (which == 0) g.c = 1, g.h = 28, g.w = 28, g.k = 32;
  else g.c = 32, g.h = 14, g.w = 14, g.k = 64;
  return g;
}

std::vector<float> ramp(std::int64_t n) {
  std::vector<float> v(static_cast<std::size_t>(n));
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = float(int(i * 7919 % 201) - 100) / 128.f;
  return v;
}

void bmConv(benchmark::State& state) {
  const Conv2dGeometry g = fmnistShape(int(state.range(0)));
  const auto pass = static_cast<cpu::ConvPass>(state.range(1));
  const DType d = state.range(2) == 0 ? DType::F32 : state.range(2) == 1 ? DType::BF16 : DType::F16;
  const auto layout = state.range(3) == 0 ? cpu::ConvLayout::Auto : cpu::ConvLayout::Plain;
  cpu::setConvLayout(layout);
  auto be = makeCpuBackend();
  const Shape xs{g.n, g.c, g.h, g.w}, ws{g.k, g.c, g.r, g.s}, ys{g.n, g.k, g.outH(), g.outW()};
  Tensor x = be->fromHost(ramp(shapeNumel(xs)), xs, d, MemCategory::Workspace);
  Tensor w = be->fromHost(ramp(shapeNumel(ws)), ws, d, MemCategory::Workspace);
  Tensor b = be->fromHost(ramp(g.k), {g.k}, d, MemCategory::Workspace);
  Tensor y = be->fromHost(ramp(shapeNumel(ys)), ys, d, MemCategory::Workspace);
  Tensor dx = be->empty(xs, d, MemCategory::Workspace);
  Tensor dw = be->empty(ws, d, MemCategory::Workspace);
  Tensor db = be->empty({g.k}, d, MemCategory::Workspace);
  auto run = [&] {
    switch (pass) {
      case cpu::ConvPass::Forward: be->conv2dForward(x, w, &b, y, g); break;
      case cpu::ConvPass::BackwardData: be->conv2dBackwardData(y, w, dx, g); break;
      case cpu::ConvPass::BackwardWeights: be->conv2dBackwardWeights(y, x, dw, &db, g); break;
    }
  };
  run();  // creates and caches the primitive
  for (auto _ : state) run();

  cpu::ConvShape s;
  s.n = g.n, s.c = g.c, s.h = g.h, s.w = g.w, s.k = g.k, s.r = g.r, s.s = g.s;
  s.padH = g.padH, s.padW = g.padW;
  const auto mt = d == DType::BF16 ? cpu::MatType::BF16 : cpu::MatType::F32;
  state.SetLabel(std::string(dtypeName(d)) + (d == DType::F16 ? " (emulated) " : " ") +
                 cpu::convImplementation(pass, mt, mt, s, pass != cpu::ConvPass::BackwardData));
  state.counters["GFLOP/s"] = benchmark::Counter(s.flops() * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
  cpu::setConvLayout(cpu::ConvLayout::Auto);
}

// shape: 0 = conv1 (1->32 @28), 1 = conv2 (32->64 @14); pass: 0 fwd, 1 bwd-data, 2 bwd-weights;
// dtype: 0 fp32, 1 bf16, 2 fp16; layout: 0 Auto (blocked + reorders), 1 Plain (nchw).
BENCHMARK(bmConv)
    ->ArgNames({"shape", "pass", "dtype", "layout"})
    ->ArgsProduct({{0, 1}, {0, 1, 2}, {0, 1, 2}, {0, 1}})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace
}  // namespace amp

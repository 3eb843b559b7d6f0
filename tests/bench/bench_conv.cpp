// The Fashion-MNIST CNN's convolutions (batch 128; conv 1->32 at 28x28 and 32->64 at 14x14,
// 3x3, padding 1) through the CPU backend: forward, backward-data and backward-weights (with
// the bias gradient), in fp32, bf16 (oneDNN) and fp16 (emulated through fp32), with oneDNN free
// to choose blocked layouts (Auto, the default) or held to plain nchw (Plain). Also its max
// pools and the batch norm of the model.batchnorm variant.
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
  if (which == 0)
    g.c = 1, g.h = 28, g.w = 28, g.k = 32;
  else
    g.c = 32, g.h = 14, g.w = 14, g.k = 64;
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
      case cpu::ConvPass::Forward:
        be->conv2dForward(x, w, &b, y, g);
        break;
      case cpu::ConvPass::BackwardData:
        be->conv2dBackwardData(y, w, dx, g);
        break;
      case cpu::ConvPass::BackwardWeights:
        be->conv2dBackwardWeights(y, x, dw, &db, g);
        break;
    }
  };
  run();  // creates and caches the primitive
  for (auto _ : state) run();

  cpu::ConvShape s;
  s.n = g.n, s.c = g.c, s.h = g.h, s.w = g.w, s.k = g.k, s.r = g.r, s.s = g.s;
  s.padH = g.padH, s.padW = g.padW;
  const auto mt = d == DType::BF16  ? cpu::ConvType::BF16
                  : d == DType::F16 ? cpu::ConvType::F16
                                    : cpu::ConvType::F32;
  state.SetLabel(std::string(dtypeName(d)) + (d == DType::F16 ? " (emulated) " : " ") +
                 cpu::convImplementation(pass, mt, mt, s, pass != cpu::ConvPass::BackwardData));
  state.counters["GFLOP/s"] =
      benchmark::Counter(s.flops() * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
  cpu::setConvLayout(cpu::ConvLayout::Auto);
}

// shape: 0 = conv1 (1->32 @28), 1 = conv2 (32->64 @14); pass: 0 fwd, 1 bwd-data, 2 bwd-weights;
// dtype: 0 fp32, 1 bf16, 2 fp16; layout: 0 Auto (blocked + reorders), 1 Plain (nchw).
BENCHMARK(bmConv)
    ->ArgNames({"shape", "pass", "dtype", "layout"})
    ->ArgsProduct({{0, 1}, {0, 1, 2}, {0, 1, 2}, {0, 1}})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// The CNN's 2x2 max pools (after each conv), forward and backward. shape: 0 = 32 ch @28,
// 1 = 64 ch @14; dtype as above.
void bmMaxPool(benchmark::State& state) {
  Pool2dGeometry g;
  g.n = 128, g.c = state.range(0) == 0 ? 32 : 64, g.h = g.w = state.range(0) == 0 ? 28 : 14;
  const DType d = state.range(1) == 0 ? DType::F32 : state.range(1) == 1 ? DType::BF16 : DType::F16;
  auto be = makeCpuBackend();
  const Shape xs{g.n, g.c, g.h, g.w}, ys{g.n, g.c, g.outH(), g.outW()};
  Tensor x = be->fromHost(ramp(shapeNumel(xs)), xs, d, MemCategory::Workspace);
  Tensor y = be->empty(ys, d, MemCategory::Workspace),
         dx = be->empty(xs, d, MemCategory::Workspace);
  Tensor idx = be->empty(ys, DType::I32, MemCategory::Workspace);
  for (auto _ : state) {
    be->maxPool2dForward(x, y, idx, g);
    be->maxPool2dBackward(y, idx, dx, g);
  }
  state.SetLabel(std::string(dtypeName(d)) + " forward + backward");
}

BENCHMARK(bmMaxPool)
    ->ArgNames({"shape", "dtype"})
    ->ArgsProduct({{0, 1}, {0, 1, 2}})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// Batch norm after the first conv (the CNN with model.batchnorm): training forward + backward.
void bmBatchNorm(benchmark::State& state) {
  const DType d = state.range(0) == 0 ? DType::F32 : state.range(0) == 1 ? DType::BF16 : DType::F16;
  auto be = makeCpuBackend();
  const Shape xs{128, 32, 28, 28}, cs{32};
  Tensor x = be->fromHost(ramp(shapeNumel(xs)), xs, d, MemCategory::Workspace);
  Tensor y = be->empty(xs, d, MemCategory::Workspace),
         dx = be->empty(xs, d, MemCategory::Workspace);
  Tensor gamma = be->fromHost(std::vector<float>(32, 1.f), cs, DType::F32, MemCategory::Workspace);
  Tensor beta = be->zeros(cs, DType::F32, MemCategory::Workspace);
  Tensor rm = be->zeros(cs, DType::F32, MemCategory::Workspace);
  Tensor rv = be->fromHost(std::vector<float>(32, 1.f), cs, DType::F32, MemCategory::Workspace);
  Tensor sm = be->empty(cs, DType::F32, MemCategory::Workspace);
  Tensor si = be->empty(cs, DType::F32, MemCategory::Workspace);
  Tensor dg = be->empty(cs, DType::F32, MemCategory::Workspace);
  Tensor db = be->empty(cs, DType::F32, MemCategory::Workspace);
  for (auto _ : state) {
    be->batchNormForwardTrain(x, gamma, beta, rm, rv, 0.1f, 1e-5f, y, sm, si);
    be->batchNormBackward(y, x, gamma, sm, si, dx, dg, db);
  }
  state.SetLabel(std::string(dtypeName(d)) + " (128, 32, 28, 28) forward + backward");
}

BENCHMARK(bmBatchNorm)
    ->ArgName("dtype")
    ->DenseRange(0, 2)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// A ResNet-20 stage-1 map (128, 16, 32, 32): the elementwise work of a residual block, each op
// alone (range 1: 0 add, 1 ReLU forward + backward, 2 batch norm forward + backward, 3 global
// average pooling forward + backward on the last stage's (128, 64, 8, 8)); dtype as above. Beside
// the same ops in PyTorch on the same machine, these tell where a step's non-GEMM time goes.
void bmResidualElementwise(benchmark::State& state) {
  const DType d = state.range(0) == 0 ? DType::F32 : state.range(0) == 1 ? DType::BF16 : DType::F16;
  const int op = int(state.range(1));
  auto be = makeCpuBackend();
  const Shape xs = op == 3 ? Shape{128, 64, 8, 8} : Shape{128, 16, 32, 32};
  const std::int64_t c = xs[1];
  Tensor a = be->fromHost(ramp(shapeNumel(xs)), xs, d, MemCategory::Workspace);
  Tensor b = be->fromHost(ramp(shapeNumel(xs)), xs, d, MemCategory::Workspace);
  Tensor y = be->empty(xs, d, MemCategory::Workspace), dx = be->empty(xs, d, MemCategory::Workspace);
  Tensor gamma = be->fromHost(std::vector<float>(std::size_t(c), 1.f), {c}, DType::F32, MemCategory::Workspace);
  Tensor beta = be->zeros({c}, DType::F32, MemCategory::Workspace);
  Tensor rm = be->zeros({c}, DType::F32, MemCategory::Workspace);
  Tensor rv = be->fromHost(std::vector<float>(std::size_t(c), 1.f), {c}, DType::F32, MemCategory::Workspace);
  Tensor sm = be->empty({c}, DType::F32, MemCategory::Workspace), si = be->empty({c}, DType::F32, MemCategory::Workspace);
  Tensor dg = be->empty({c}, DType::F32, MemCategory::Workspace), db = be->empty({c}, DType::F32, MemCategory::Workspace);
  Tensor pooled = be->empty({128, c}, d, MemCategory::Workspace);
  for (auto _ : state) {
    switch (op) {
      case 0: be->add(a, b, y); break;
      case 1:
        be->activationForward(Activation::ReLU, a, y);
        be->activationBackward(Activation::ReLU, y, y, b, dx);
        break;
      case 2:
        be->batchNormForwardTrain(a, gamma, beta, rm, rv, 0.1f, 1e-5f, y, sm, si);
        be->batchNormBackward(b, a, gamma, sm, si, dx, dg, db);
        break;
      default:
        be->globalAvgPoolForward(a, pooled);
        be->globalAvgPoolBackward(pooled, dx);
    }
  }
  static const char* names[] = {"add", "relu fwd+bwd", "batch norm fwd+bwd", "global avg pool fwd+bwd"};
  state.SetLabel(std::string(dtypeName(d)) + " " + names[op] + " " + shapeString(xs));
}

BENCHMARK(bmResidualElementwise)
    ->ArgNames({"dtype", "op"})
    ->ArgsProduct({{0, 1}, {0, 1, 2, 3}})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace
}  // namespace amp

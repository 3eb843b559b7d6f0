// Convolutions (forward with and without bias, backward data, backward weights with and without
// the bias gradient) on the CUDA backend (cuDNN) and the CPU backend (oneDNN), each checked
// against a double reference computed here from the same rounded inputs: the CPU's result is
// held to the same bound, so the reference is checked too. TF32 is off (the default).
//
// The bound for one output, whose exact value is ref = sum of T products p_i (+ bias b):
//   acc   = (T + 2) * 2^-23 * (sum |p_i| + |b|)
//   fp32 output:                 |got - ref| <= acc
//   16-bit output, no bias:      |got - ref| <= e1 = acc + r(|ref_conv| + acc)
//   16-bit output with bias:     |got - ref| <= e1 + r(|ref_conv + b| + e1)
// with r(v) = u_out * v + tiny_out, u_out = 2^-11 (fp16) or 2^-8 (bf16) (half an ulp,
// relative), tiny_out = 2^-25 (fp16) or 2^-134 (bf16) (half the subnormal spacing), and
// T = C*R*S (forward), K*R*S (backward data), N*OH*OW (backward weights and bias gradient).
// acc is the classical bound for a sum of T terms in any order, plus the bias add and the final
// rounding to fp32 (the "+ 2"), with 2^-23 rather than fp32's 2^-24 because tensor cores may
// truncate rather than round while they accumulate (as in the GEMM test). 16-bit inputs
// multiply exactly in fp32; fp32 inputs are covered by acc (an FMA rounds once per term). The
// 16-bit output with a bias is rounded twice on the GPU (the convolution, then the sum with the
// bias, as PyTorch's cuDNN path); the CPU rounds once and meets the bound all the more.
//
// Reference values are computed for a sample of each output (every element of small ones), so
// the full Fashion-MNIST CNN shapes stay quick. Also: workspace memory is back to its previous
// figure after every call (and was counted while a call ran), convolutions count in the GEMM
// counters, gradients are reproducible run to run, and bad shapes are refused as on the CPU.
#include <algorithm>
#include <functional>
#include <optional>
#include <utility>

#include "tests/gpu/gpu_test_support.h"

using namespace amp;
using namespace amp::gpu_test;

namespace {

ConvGeometry geometry(std::int64_t n, std::int64_t c, std::int64_t h, std::int64_t w,
                      std::int64_t k, std::int64_t r, std::int64_t s, std::int64_t strideH,
                      std::int64_t strideW, std::int64_t padH, std::int64_t padW) {
  ConvGeometry g;
  g.n = n, g.c = c, g.h = h, g.w = w, g.k = k, g.r = r, g.s = s;
  g.strideH = strideH, g.strideW = strideW, g.padH = padH, g.padW = padW;
  return g;
}

struct ConvCase {
  const char* name;
  ConvGeometry g;
};

// The fmnist-cnn preset's two convolutions ("conv:32,pool,conv:64": 3x3, padding 1, batch 128),
// a LeNet-style 5x5, strides, 1x1 kernels, non-square kernels and odd sizes.
const std::vector<ConvCase>& convCases() {
  static const std::vector<ConvCase> cases = {
      {"fmnist-cnn conv1 1->32 3x3 p1 on 28x28, batch 128", geometry(128, 1, 28, 28, 32, 3, 3, 1, 1, 1, 1)},
      {"fmnist-cnn conv2 32->64 3x3 p1 on 14x14, batch 128", geometry(128, 32, 14, 14, 64, 3, 3, 1, 1, 1, 1)},
      {"1->32 5x5 p2 on 28x28", geometry(8, 1, 28, 28, 32, 5, 5, 1, 1, 2, 2)},
      {"8->12 3x3 stride 2 p1 on 15x15", geometry(4, 8, 15, 15, 12, 3, 3, 2, 2, 1, 1)},
      {"16->24 1x1 on 7x9", geometry(3, 16, 7, 9, 24, 1, 1, 1, 1, 0, 0)},
      {"5->7 1x1 stride 2 on 9x9", geometry(2, 5, 9, 9, 7, 1, 1, 2, 2, 0, 0)},
      {"3->7 3x5 stride 2x1 pad 1x2 on 13x11", geometry(5, 3, 13, 11, 7, 3, 5, 2, 1, 1, 2)},
      {"4->6 3x3 stride 2 on 8x8 (the last row and column get no gradient)", geometry(2, 4, 8, 8, 6, 3, 3, 2, 2, 0, 0)},
  };
  return cases;
}

// An exactly computed sum (double: every product of two floats is exact in it) and the sum of
// its terms' magnitudes.
struct RefValue {
  double value = 0, magnitude = 0;
  void add(double p) {
    value += p;
    magnitude += std::fabs(p);
  }
};

// Element `index` of y (N, K, OH, OW) = x (N, C, H, W) (*) w (K, C, R, S).
RefValue forwardRef(const ConvGeometry& g, const std::vector<float>& x,
                    const std::vector<float>& w, std::int64_t index) {
  const std::int64_t oh = g.outH(), ow = g.outW();
  const std::int64_t j = index % ow, i = index / ow % oh, k = index / (ow * oh) % g.k,
                     n = index / (ow * oh * g.k);
  RefValue r;
  for (std::int64_t c = 0; c < g.c; ++c)
    for (std::int64_t a = 0; a < g.r; ++a)
      for (std::int64_t b = 0; b < g.s; ++b) {
        const std::int64_t hh = i * g.strideH - g.padH + a, ww = j * g.strideW - g.padW + b;
        if (hh < 0 || hh >= g.h || ww < 0 || ww >= g.w) continue;
        r.add(double(x[((n * g.c + c) * g.h + hh) * g.w + ww]) * w[((k * g.c + c) * g.r + a) * g.s + b]);
      }
  return r;
}

// Element `index` of dx (N, C, H, W) from dy (N, K, OH, OW) and w (K, C, R, S).
RefValue backwardDataRef(const ConvGeometry& g, const std::vector<float>& dy,
                         const std::vector<float>& w, std::int64_t index) {
  const std::int64_t oh = g.outH(), ow = g.outW();
  const std::int64_t ww = index % g.w, hh = index / g.w % g.h, c = index / (g.w * g.h) % g.c,
                     n = index / (g.w * g.h * g.c);
  RefValue r;
  for (std::int64_t k = 0; k < g.k; ++k)
    for (std::int64_t a = 0; a < g.r; ++a)
      for (std::int64_t b = 0; b < g.s; ++b) {
        const std::int64_t ti = hh + g.padH - a, tj = ww + g.padW - b;
        if (ti < 0 || tj < 0 || ti % g.strideH != 0 || tj % g.strideW != 0) continue;
        const std::int64_t i = ti / g.strideH, j = tj / g.strideW;
        if (i >= oh || j >= ow) continue;
        r.add(double(dy[((n * g.k + k) * oh + i) * ow + j]) * w[((k * g.c + c) * g.r + a) * g.s + b]);
      }
  return r;
}

// Element `index` of dw (K, C, R, S) from x and dy.
RefValue backwardWeightsRef(const ConvGeometry& g, const std::vector<float>& x,
                            const std::vector<float>& dy, std::int64_t index) {
  const std::int64_t oh = g.outH(), ow = g.outW();
  const std::int64_t b = index % g.s, a = index / g.s % g.r, c = index / (g.s * g.r) % g.c,
                     k = index / (g.s * g.r * g.c);
  RefValue r;
  for (std::int64_t n = 0; n < g.n; ++n)
    for (std::int64_t i = 0; i < oh; ++i)
      for (std::int64_t j = 0; j < ow; ++j) {
        const std::int64_t hh = i * g.strideH - g.padH + a, ww = j * g.strideW - g.padW + b;
        if (hh < 0 || hh >= g.h || ww < 0 || ww >= g.w) continue;
        r.add(double(dy[((n * g.k + k) * oh + i) * ow + j]) * x[((n * g.c + c) * g.h + hh) * g.w + ww]);
      }
  return r;
}

// Element k of the bias gradient: the sum of dy over N, OH and OW.
RefValue biasGradRef(const ConvGeometry& g, const std::vector<float>& dy, std::int64_t k) {
  const std::int64_t plane = g.outH() * g.outW();
  RefValue r;
  for (std::int64_t n = 0; n < g.n; ++n)
    for (std::int64_t i = 0; i < plane; ++i) r.add(dy[(n * g.k + k) * plane + i]);
  return r;
}

// The bound at the top of the file for one output of dtype `out`, T = terms.
double errorBound(DType out, std::int64_t terms, const RefValue& conv, double bias, bool hasBias) {
  const double acc = double(terms + 2) * std::ldexp(1.0, -23) * (conv.magnitude + std::fabs(bias));
  if (out == DType::F32) return acc;
  const double u = out == DType::F16 ? std::ldexp(1.0, -11) : std::ldexp(1.0, -8);
  const double tiny = out == DType::F16 ? std::ldexp(1.0, -25) : std::ldexp(1.0, -134);
  auto rounding = [&](double magnitude) { return u * magnitude + tiny; };
  const double once = acc + rounding(std::fabs(conv.value) + acc);
  if (!hasBias) return once;
  return once + rounding(std::fabs(conv.value + bias) + once);
}

// Which elements get a reference value: all of a small output, else an even spread (golden-ratio
// steps, so no row or column is favoured) of about 3M multiply-adds' worth, plus both ends.
std::vector<std::int64_t> sampledIndices(std::int64_t count, std::int64_t costPerElement) {
  const std::int64_t wanted =
      std::clamp<std::int64_t>(3'000'000 / std::max<std::int64_t>(1, costPerElement), 64, count);
  std::vector<std::int64_t> out;
  if (wanted == count) {
    for (std::int64_t i = 0; i < count; ++i) out.push_back(i);
    return out;
  }
  out.push_back(0);
  out.push_back(count - 1);
  for (std::int64_t i = 1; i < wanted; ++i) {
    const double f = std::fmod(double(i) * 0.6180339887498949, 1.0);
    out.push_back(std::min<std::int64_t>(count - 1, std::int64_t(f * double(count))));
  }
  return out;
}

// |got[i] - ref| <= bound for every sampled i (NaN fails); at most 5 failures reported.
void expectWithinBounds(const std::vector<float>& got, const std::vector<std::int64_t>& indices,
                        const std::function<std::pair<double, double>(std::int64_t)>& refAndBound,
                        const std::string& what) {
  int bad = 0;
  for (std::int64_t i : indices) {
    const auto [ref, bound] = refAndBound(i);
    if (!(std::fabs(double(got[i]) - ref) <= bound) && bad++ < 5)
      ADD_FAILURE() << what << " [" << i << "]: got " << got[i] << ", reference " << ref
                    << ", bound " << bound;
  }
}

std::string outName(const Tensor* t) { return t ? name(t->dtype()) : "none"; }

}  // namespace

class CudaConv : public CpuAndCuda {
 protected:
  std::int64_t cudaWorkspaceBytes() {
    return cuda->memory().snapshot().current[static_cast<int>(MemCategory::Workspace)];
  }
  // Runs a CUDA call and checks the workspace it took (cuDNN's, fp32 copies) was given back.
  void onGpu(const std::function<void()>& call, const std::string& what) {
    const std::int64_t before = cudaWorkspaceBytes();
    call();
    EXPECT_EQ(cudaWorkspaceBytes(), before) << what << ": workspace not returned";
  }
  // The 16-bit input dtypes paired with every output dtype the contract allows.
  static std::vector<std::pair<DType, DType>> inOutDtypes() {
    return {{DType::F32, DType::F32}, {DType::F16, DType::F16}, {DType::F16, DType::F32},
            {DType::BF16, DType::BF16}, {DType::BF16, DType::F32}};
  }
};

TEST_F(CudaConv, ForwardMatchesADoubleReferenceWithinTheSummationBound) {
  std::uint32_t seed = 100;
  for (const ConvCase& cc : convCases()) {
    const ConvGeometry& g = cc.g;
    for (auto [in, out] : inOutDtypes())
      for (bool withBias : {false, true}) {
        seed += 3;
        Pair x = both(finiteValues(g.n * g.c * g.h * g.w, seed, 2.f), {g.n, g.c, g.h, g.w}, in);
        Pair w = both(finiteValues(g.k * g.c * g.r * g.s, seed + 1, 2.f), {g.k, g.c, g.r, g.s}, in);
        Pair bias = both(finiteValues(g.k, seed + 2, 2.f), {g.k}, in);
        Pair y = emptyBoth({g.n, g.k, g.outH(), g.outW()}, out);
        const std::string what = std::string(cc.name) + ", " + name(in) + " -> " + name(out) +
                                 (withBias ? " + bias" : "");
        cpu->conv2dForward(x.c, w.c, withBias ? &bias.c : nullptr, y.c, g);
        onGpu([&] { cuda->conv2dForward(x.g, w.g, withBias ? &bias.g : nullptr, y.g, g); }, what);
        const auto X = cpu->toHostFloat(x.c), W = cpu->toHostFloat(w.c), B = cpu->toHostFloat(bias.c);
        const std::int64_t terms = g.c * g.r * g.s, plane = g.outH() * g.outW();
        auto refAndBound = [&](std::int64_t i) {
          const RefValue r = forwardRef(g, X, W, i);
          const double b = withBias ? double(B[i / plane % g.k]) : 0.0;
          return std::pair{r.value + b, errorBound(out, terms, r, b, withBias)};
        };
        const auto indices = sampledIndices(y.g.numel(), terms);
        expectWithinBounds(cuda->toHostFloat(y.g), indices, refAndBound, "cuda forward " + what);
        expectWithinBounds(cpu->toHostFloat(y.c), indices, refAndBound, "cpu forward " + what);
      }
  }
}

TEST_F(CudaConv, BackwardDataMatchesADoubleReferenceWithinTheSummationBound) {
  std::uint32_t seed = 200;
  for (const ConvCase& cc : convCases()) {
    const ConvGeometry& g = cc.g;
    for (auto [in, out] : inOutDtypes()) {
      seed += 2;
      Pair dy = both(finiteValues(g.n * g.k * g.outH() * g.outW(), seed, 2.f),
                     {g.n, g.k, g.outH(), g.outW()}, in);
      Pair w = both(finiteValues(g.k * g.c * g.r * g.s, seed + 1, 2.f), {g.k, g.c, g.r, g.s}, in);
      Pair dx = emptyBoth({g.n, g.c, g.h, g.w}, out);
      const std::string what = std::string(cc.name) + ", " + name(in) + " -> " + name(out);
      cpu->conv2dBackwardData(dy.c, w.c, dx.c, g);
      onGpu([&] { cuda->conv2dBackwardData(dy.g, w.g, dx.g, g); }, what);
      const auto DY = cpu->toHostFloat(dy.c), W = cpu->toHostFloat(w.c);
      const std::int64_t terms = g.k * g.r * g.s;
      auto refAndBound = [&](std::int64_t i) {
        const RefValue r = backwardDataRef(g, DY, W, i);
        return std::pair{r.value, errorBound(out, terms, r, 0.0, false)};
      };
      const auto indices = sampledIndices(dx.g.numel(), terms);
      expectWithinBounds(cuda->toHostFloat(dx.g), indices, refAndBound, "cuda backward data " + what);
      expectWithinBounds(cpu->toHostFloat(dx.c), indices, refAndBound, "cpu backward data " + what);
    }
  }
}

TEST_F(CudaConv, BackwardWeightsAndBiasGradMatchADoubleReferenceWithinTheSummationBound) {
  std::uint32_t seed = 300;
  for (const ConvCase& cc : convCases()) {
    const ConvGeometry& g = cc.g;
    for (DType in : kFloats) {
      // (dw, dbias) dtypes: the input's, fp32, mixed, and no bias at all.
      std::vector<std::pair<DType, std::optional<DType>>> outs = {{in, in}, {in, std::nullopt}};
      if (in != DType::F32)
        outs.insert(outs.end(), {{DType::F32, DType::F32}, {DType::F32, in}, {in, DType::F32}});
      for (auto [dwType, dbType] : outs) {
        seed += 2;
        Pair x = both(finiteValues(g.n * g.c * g.h * g.w, seed, 2.f), {g.n, g.c, g.h, g.w}, in);
        Pair dy = both(finiteValues(g.n * g.k * g.outH() * g.outW(), seed + 1, 2.f),
                       {g.n, g.k, g.outH(), g.outW()}, in);
        Pair dw = emptyBoth({g.k, g.c, g.r, g.s}, dwType);
        Pair db = emptyBoth({g.k}, dbType.value_or(in));
        Tensor* dbc = dbType ? &db.c : nullptr;
        Tensor* dbg = dbType ? &db.g : nullptr;
        const std::string what = std::string(cc.name) + ", " + name(in) + " -> dw " +
                                 name(dwType) + ", dbias " + outName(dbg);
        cpu->conv2dBackwardWeights(dy.c, x.c, dw.c, dbc, g);
        onGpu([&] { cuda->conv2dBackwardWeights(dy.g, x.g, dw.g, dbg, g); }, what);
        const auto X = cpu->toHostFloat(x.c), DY = cpu->toHostFloat(dy.c);
        const std::int64_t terms = g.n * g.outH() * g.outW();
        auto dwRef = [&](std::int64_t i) {
          const RefValue r = backwardWeightsRef(g, X, DY, i);
          return std::pair{r.value, errorBound(dwType, terms, r, 0.0, false)};
        };
        const auto indices = sampledIndices(dw.g.numel(), terms);
        expectWithinBounds(cuda->toHostFloat(dw.g), indices, dwRef, "cuda dw " + what);
        expectWithinBounds(cpu->toHostFloat(dw.c), indices, dwRef, "cpu dw " + what);
        if (!dbType) continue;
        auto dbRef = [&](std::int64_t k) {
          const RefValue r = biasGradRef(g, DY, k);
          return std::pair{r.value, errorBound(*dbType, terms, r, 0.0, false)};
        };
        const auto all = sampledIndices(g.k, 1);
        expectWithinBounds(cuda->toHostFloat(db.g), all, dbRef, "cuda dbias " + what);
        expectWithinBounds(cpu->toHostFloat(db.c), all, dbRef, "cpu dbias " + what);
      }
    }
  }
}

// The cuDNN workspace and the fp32 copies of a mixed-dtype call (fp16 in, fp32 out: x and w
// widened) are counted as workspace while the call runs and given back when it returns.
TEST_F(CudaConv, WorkspaceIsCountedDuringACallAndReturnedAfter) {
  const ConvGeometry g = convCases()[1].g;
  Pair x = both(finiteValues(g.n * g.c * g.h * g.w, 400, 2.f), {g.n, g.c, g.h, g.w}, DType::F16);
  Pair w = both(finiteValues(g.k * g.c * g.r * g.s, 401, 2.f), {g.k, g.c, g.r, g.s}, DType::F16);
  Pair y = emptyBoth({g.n, g.k, g.outH(), g.outW()}, DType::F32);
  const std::int64_t before = cudaWorkspaceBytes();
  cuda->memory().resetPeaks();
  cuda->conv2dForward(x.g, w.g, nullptr, y.g, g);
  const MemorySnapshot after = cuda->memory().snapshot();
  const int ws = static_cast<int>(MemCategory::Workspace);
  EXPECT_EQ(after.current[ws], before);
  EXPECT_GE(after.peak[ws], before + 4 * (x.g.numel() + w.g.numel()));
}

TEST_F(CudaConv, ConvolutionsCountInTheGemmCounters) {
  const ConvGeometry g = convCases()[3].g;
  for (Backend* be : {cpu.get(), cuda.get()}) {
    Tensor x = be->fromHost(finiteValues(g.n * g.c * g.h * g.w, 410, 2.f), {g.n, g.c, g.h, g.w}, DType::F16, MemCategory::Workspace);
    Tensor w = be->fromHost(finiteValues(g.k * g.c * g.r * g.s, 411, 2.f), {g.k, g.c, g.r, g.s}, DType::F16, MemCategory::Workspace);
    Tensor b = be->fromHost(finiteValues(g.k, 412, 2.f), {g.k}, DType::F16, MemCategory::Workspace);
    Tensor y = be->empty({g.n, g.k, g.outH(), g.outW()}, DType::F16, MemCategory::Workspace);
    Tensor dx = be->empty(x.shape(), DType::F16, MemCategory::Workspace);
    Tensor dw = be->empty(w.shape(), DType::F32, MemCategory::Workspace);
    Tensor db = be->empty(b.shape(), DType::F16, MemCategory::Workspace);
    be->resetGemmCounters();
    be->conv2dForward(x, w, &b, y, g);
    be->conv2dBackwardData(y, w, dx, g);
    be->conv2dBackwardWeights(y, x, dw, &db, g);
    Tensor wrong = be->empty({1}, DType::F16, MemCategory::Workspace);
    EXPECT_THROW(be->conv2dForward(wrong, w, &b, y, g), std::invalid_argument);  // counts nothing
    be->toHostFloat(dw);  // waits for the work
    const GemmCounters c = be->gemmCounters();
    EXPECT_EQ(c.calls, 3) << be->name();
    EXPECT_DOUBLE_EQ(c.flops, 3 * g.flops()) << be->name();
    EXPECT_GT(c.seconds, 0.0) << be->name();
  }
}

// Deterministic algorithms are preferred and the bias gradient's order is fixed: the same
// inputs give the same bits every time.
TEST_F(CudaConv, GradientsAreReproducible) {
  const ConvGeometry g = convCases()[1].g;
  for (DType d : kFloats) {
    Tensor x = cuda->fromHost(finiteValues(g.n * g.c * g.h * g.w, 420, 2.f), {g.n, g.c, g.h, g.w}, d, MemCategory::Workspace);
    Tensor dy = cuda->fromHost(finiteValues(g.n * g.k * g.outH() * g.outW(), 421, 2.f), {g.n, g.k, g.outH(), g.outW()}, d, MemCategory::Workspace);
    std::vector<std::uint8_t> first[2];
    for (int run = 0; run < 2; ++run) {
      Tensor dw = cuda->empty({g.k, g.c, g.r, g.s}, d, MemCategory::Workspace);
      Tensor db = cuda->empty({g.k}, d, MemCategory::Workspace);
      cuda->conv2dBackwardWeights(dy, x, dw, &db, g);
      if (run == 0) {
        first[0] = cuda->toHostBytes(dw);
        first[1] = cuda->toHostBytes(db);
        continue;
      }
      EXPECT_EQ(cuda->toHostBytes(dw), first[0]) << "dw " << name(d);
      EXPECT_EQ(cuda->toHostBytes(db), first[1]) << "dbias " << name(d);
    }
  }
}

// The CPU's refusals, word for word: shapes naming what is wrong, dtypes, the geometry.
TEST_F(CudaConv, BadShapesAndDtypesAreRefusedAsOnTheCpu) {
  const ConvGeometry g = geometry(2, 3, 8, 8, 4, 3, 3, 1, 1, 0, 0);  // y (2, 4, 6, 6)
  ConvGeometry tooBig = g;
  tooBig.r = 9;  // a 9x9 kernel on an unpadded 8x8 input
  auto messageOf = [](const std::function<void()>& call) -> std::string {
    try {
      call();
    } catch (const std::invalid_argument& e) {
      return e.what();
    }
    return "(no std::invalid_argument)";
  };
  struct Refusal {
    const char* expected;
    std::function<void(Backend&)> call;
  };
  auto t = [](Backend& be, Shape s, DType d = DType::F32) {
    return be.empty(s, d, MemCategory::Workspace);
  };
  const std::vector<Refusal> refusals = {
      {"conv2d: input is (2, 3, 8, 7), expected (2, 3, 8, 8)",
       [&](Backend& be) { Tensor y = t(be, {2, 4, 6, 6}); be.conv2dForward(t(be, {2, 3, 8, 7}), t(be, {4, 3, 3, 3}), nullptr, y, g); }},
      {"conv2d: weight is",
       [&](Backend& be) { Tensor y = t(be, {2, 4, 6, 6}); be.conv2dForward(t(be, {2, 3, 8, 8}), t(be, {4, 3, 3, 2}), nullptr, y, g); }},
      {"conv2d: output is",
       [&](Backend& be) { Tensor y = t(be, {2, 4, 6, 5}); be.conv2dForward(t(be, {2, 3, 8, 8}), t(be, {4, 3, 3, 3}), nullptr, y, g); }},
      {"conv2d: bias is",
       [&](Backend& be) { Tensor y = t(be, {2, 4, 6, 6}), b = t(be, {3}); be.conv2dForward(t(be, {2, 3, 8, 8}), t(be, {4, 3, 3, 3}), &b, y, g); }},
      {"conv2d: invalid geometry",
       [&](Backend& be) { Tensor y = t(be, {2, 4, 6, 6}); be.conv2dForward(t(be, {2, 3, 8, 8}), t(be, {4, 3, 3, 3}), nullptr, y, tooBig); }},
      {"conv2d: inputs must share one dtype",
       [&](Backend& be) { Tensor y = t(be, {2, 4, 6, 6}); be.conv2dForward(t(be, {2, 3, 8, 8}, DType::F16), t(be, {4, 3, 3, 3}), nullptr, y, g); }},
      {"conv2d: outputs must be fp32 or the input dtype",
       [&](Backend& be) { Tensor y = t(be, {2, 4, 6, 6}, DType::BF16); be.conv2dForward(t(be, {2, 3, 8, 8}, DType::F16), t(be, {4, 3, 3, 3}, DType::F16), nullptr, y, g); }},
      {"conv2d: unsupported dtype",
       [&](Backend& be) { Tensor y = t(be, {2, 4, 6, 6}); be.conv2dForward(t(be, {2, 3, 8, 8}, DType::I32), t(be, {4, 3, 3, 3}, DType::I32), nullptr, y, g); }},
      {"conv2d: input gradient is",
       [&](Backend& be) { Tensor dx = t(be, {2, 3, 8, 9}); be.conv2dBackwardData(t(be, {2, 4, 6, 6}), t(be, {4, 3, 3, 3}), dx, g); }},
      {"conv2d: output gradient is",
       [&](Backend& be) { Tensor dx = t(be, {2, 3, 8, 8}); be.conv2dBackwardData(t(be, {2, 4, 6, 7}), t(be, {4, 3, 3, 3}), dx, g); }},
      {"conv2d: weight gradient is",
       [&](Backend& be) { Tensor dw = t(be, {4, 3, 3, 4}); be.conv2dBackwardWeights(t(be, {2, 4, 6, 6}), t(be, {2, 3, 8, 8}), dw, nullptr, g); }},
      {"conv2d: bias gradient is",
       [&](Backend& be) { Tensor dw = t(be, {4, 3, 3, 3}), db = t(be, {5}); be.conv2dBackwardWeights(t(be, {2, 4, 6, 6}), t(be, {2, 3, 8, 8}), dw, &db, g); }},
      {"conv2d: outputs must be fp32 or the input dtype",
       [&](Backend& be) { Tensor dw = t(be, {4, 3, 3, 3}, DType::F16), db = t(be, {4}, DType::BF16); be.conv2dBackwardWeights(t(be, {2, 4, 6, 6}, DType::F16), t(be, {2, 3, 8, 8}, DType::F16), dw, &db, g); }},
  };
  for (const Refusal& r : refusals) {
    const std::string onCpu = messageOf([&] { r.call(*cpu); });
    const std::string onGpu = messageOf([&] { r.call(*cuda); });
    EXPECT_NE(onGpu.find(r.expected), std::string::npos) << onGpu;
    EXPECT_EQ(onGpu, onCpu);
  }
}

// cuDNN convolutions on channels-last (NHWC) activations with KRSC filters (the backend moves
// the KCRS weight and the filter gradient itself), beside the same convolutions on NCHW. cuDNN
// may pick another algorithm for another layout, so neither is compared with the other bit for
// bit: both are held to test_backend_ops_conv.cpp's bound against a double reference computed
// here from the same rounded inputs, for every element of the outputs (the shapes are small) or
// a sample of them (ResNet-20's, batch 64):
//   acc = (T + 2) * 2^-23 * (sum |p_i| + |b|); fp32 output |got - ref| <= acc; a 16-bit output
//   adds r(|ref| + acc) with r(v) = u * v + tiny (u = 2^-11 fp16, 2^-8 bf16; tiny = 2^-25,
//   2^-134), and a second such rounding when a bias is added after the convolution.
// The bias gradient is our kernel, which reads dy in the same order in both layouts: equal bit
// for bit. Workspace (the filter copies included) is handed back after every call.
#include <algorithm>
#include <cmath>
#include <functional>
#include <utility>

#include "tests/gpu/gpu_test_support.h"

using namespace amp;
using namespace amp::gpu_test;

namespace {

constexpr MemoryFormat kNchw = MemoryFormat::Contiguous, kNhwc = MemoryFormat::ChannelsLast;

ConvGeometry geometry(std::int64_t n, std::int64_t c, std::int64_t h, std::int64_t w,
                      std::int64_t k, std::int64_t r, std::int64_t stride, std::int64_t pad) {
  ConvGeometry g;
  g.n = n, g.c = c, g.h = h, g.w = w, g.k = k, g.r = g.s = r;
  g.strideH = g.strideW = stride, g.padH = g.padW = pad;
  return g;
}

struct Ref {
  double value = 0, magnitude = 0;
  std::int64_t terms = 0;
  void add(double p) {
    value += p;
    magnitude += std::fabs(p);
    ++terms;
  }
};

double bound(const Ref& r, double bias, DType out, bool withBias) {
  const double acc = double(r.terms + 2) * std::ldexp(1.0, -23) * (r.magnitude + std::fabs(bias));
  if (out == DType::F32) return acc;
  const double u = out == DType::F16 ? std::ldexp(1.0, -11) : std::ldexp(1.0, -8);
  const double tiny = out == DType::F16 ? std::ldexp(1.0, -25) : std::ldexp(1.0, -134);
  const double e1 = acc + u * (std::fabs(r.value) + acc) + tiny;
  return withBias ? e1 + u * (std::fabs(r.value + bias) + e1) + tiny : e1;
}

// x, w, dy as the convolution reads them (logical NCHW / KCRS order).
struct Operands {
  const ConvGeometry& g;
  const std::vector<float>&x, &w, &dy;
  float xAt(std::int64_t n, std::int64_t c, std::int64_t h, std::int64_t ww) const {
    return x[std::size_t(((n * g.c + c) * g.h + h) * g.w + ww)];
  }
  float wAt(std::int64_t k, std::int64_t c, std::int64_t r, std::int64_t s) const {
    return w[std::size_t(((k * g.c + c) * g.r + r) * g.s + s)];
  }
  float dyAt(std::int64_t n, std::int64_t k, std::int64_t oh, std::int64_t ow) const {
    return dy[std::size_t(((n * g.k + k) * g.outH() + oh) * g.outW() + ow)];
  }
  Ref forward(std::int64_t i) const {  // y element i (N, K, OH, OW)
    const std::int64_t ow = i % g.outW(), oh = i / g.outW() % g.outH(), k = i / g.outW() / g.outH() % g.k,
                       n = i / g.outW() / g.outH() / g.k;
    Ref ref;
    for (std::int64_t c = 0; c < g.c; ++c)
      for (std::int64_t r = 0; r < g.r; ++r)
        for (std::int64_t s = 0; s < g.s; ++s) {
          const std::int64_t h = oh * g.strideH - g.padH + r, ww = ow * g.strideW - g.padW + s;
          if (h >= 0 && h < g.h && ww >= 0 && ww < g.w) ref.add(double(xAt(n, c, h, ww)) * wAt(k, c, r, s));
          else ++ref.terms;
        }
    return ref;
  }
  Ref backwardData(std::int64_t i) const {  // dx element i (N, C, H, W)
    const std::int64_t ww = i % g.w, h = i / g.w % g.h, c = i / g.w / g.h % g.c, n = i / g.w / g.h / g.c;
    Ref ref;
    for (std::int64_t k = 0; k < g.k; ++k)
      for (std::int64_t r = 0; r < g.r; ++r)
        for (std::int64_t s = 0; s < g.s; ++s) {
          ++ref.terms;
          const std::int64_t ph = h + g.padH - r, pw = ww + g.padW - s;
          if (ph < 0 || pw < 0 || ph % g.strideH || pw % g.strideW) continue;
          const std::int64_t oh = ph / g.strideH, ow = pw / g.strideW;
          if (oh < g.outH() && ow < g.outW()) {
            --ref.terms;
            ref.add(double(dyAt(n, k, oh, ow)) * wAt(k, c, r, s));
          }
        }
    return ref;
  }
  Ref backwardWeights(std::int64_t i) const {  // dw element i (K, C, R, S)
    const std::int64_t s = i % g.s, r = i / g.s % g.r, c = i / g.s / g.r % g.c, k = i / g.s / g.r / g.c;
    Ref ref;
    for (std::int64_t n = 0; n < g.n; ++n)
      for (std::int64_t oh = 0; oh < g.outH(); ++oh)
        for (std::int64_t ow = 0; ow < g.outW(); ++ow) {
          const std::int64_t h = oh * g.strideH - g.padH + r, ww = ow * g.strideW - g.padW + s;
          if (h >= 0 && h < g.h && ww >= 0 && ww < g.w) ref.add(double(dyAt(n, k, oh, ow)) * xAt(n, c, h, ww));
          else ++ref.terms;
        }
    return ref;
  }
};

// The exact values of a sample of an output's elements (every one of small outputs), computed
// once for both layouts and both weight-gradient dtypes.
using Samples = std::vector<std::pair<std::int64_t, Ref>>;
Samples sample(std::int64_t total, const std::function<Ref(std::int64_t)>& ref) {
  Samples out;
  const std::int64_t step = std::max<std::int64_t>(1, total / 3000);
  for (std::int64_t i = 0; i < total; i += step) out.emplace_back(i, ref(i));
  return out;
}

void expectWithinBound(const std::vector<float>& got, const Samples& refs,
                       const std::vector<float>* bias, std::int64_t biasStride, std::int64_t biasCount,
                       DType out, const std::string& what) {
  int reported = 0;
  for (const auto& [i, r] : refs) {
    const double b = bias ? (*bias)[std::size_t(i / biasStride % biasCount)] : 0.0;
    const double e = bound(r, b, out, bias != nullptr);
    if (!(std::fabs(double(got[std::size_t(i)]) - (r.value + b)) <= e) && reported++ < 5)
      ADD_FAILURE() << what << " [" << i << "]: got " << got[std::size_t(i)] << ", exact "
                    << r.value + b << ", bound " << e;
  }
}

}  // namespace

TEST(ChannelsLastConvGpu, ConvolutionsInNhwcMeetTheBoundInEveryPass) {
  AMP_SKIP_WITHOUT_GPU();
  auto cuda = makeBackend("cuda");
  const std::pair<const char*, ConvGeometry> cases[] = {
      {"ResNet-20 stem 1->16 3x3 p1 on 32x32, batch 64", geometry(64, 1, 32, 32, 16, 3, 1, 1)},
      {"ResNet-20 16->16 3x3 p1 on 32x32, batch 64", geometry(64, 16, 32, 32, 16, 3, 1, 1)},
      {"ResNet-20 16->32 3x3 s2 p1, batch 64", geometry(64, 16, 32, 32, 32, 3, 2, 1)},
      {"ResNet-20 projection 16->32 1x1 s2, batch 64", geometry(64, 16, 32, 32, 32, 1, 2, 0)},
      {"3->7 5x5 s2 p2 on 13x11", geometry(5, 3, 13, 11, 7, 5, 2, 2)},
      {"8->12 3x3 on 9x9 (no padding)", geometry(4, 8, 9, 9, 12, 3, 1, 0)},
  };
  for (const auto& [label, g] : cases) {
    const Shape xs{g.n, g.c, g.h, g.w}, ws{g.k, g.c, g.r, g.s}, ys{g.n, g.k, g.outH(), g.outW()};
    for (DType d : kFloats) {
      const std::string base = std::string(label) + " " + name(d);
      // Inputs rounded to d, read back as the convolution sees them.
      auto rounded = [&](const Shape& s, std::uint32_t seed) {
        const Tensor t = cuda->fromHost(finiteValues(std::size_t(shapeNumel(s)), seed, 2.f), s, d,
                                        MemCategory::Activations);
        return std::pair{t, cuda->toHostFloat(t)};
      };
      const auto [x, xv] = rounded(xs, 61);
      const auto [w, wv] = rounded(ws, 62);
      const auto [dy, dyv] = rounded(ys, 63);
      const auto [bias, bv] = rounded({g.k}, 64);
      const Operands ops{g, xv, wv, dyv};
      const Samples yRefs = sample(shapeNumel(ys), [&](std::int64_t i) { return ops.forward(i); });
      const Samples dxRefs = sample(shapeNumel(xs), [&](std::int64_t i) { return ops.backwardData(i); });
      const Samples dwRefs = sample(shapeNumel(ws), [&](std::int64_t i) { return ops.backwardWeights(i); });
      std::vector<std::uint8_t> dbias[2];
      for (MemoryFormat f : {kNchw, kNhwc}) {
        const std::string what = base + (f == kNhwc ? " NHWC" : " NCHW");
        const Tensor xf = cuda->toFormat(x, f), dyf = cuda->toFormat(dy, f);
        const std::int64_t before = cuda->memory().snapshot().current[int(MemCategory::Workspace)];
        Tensor y = cuda->empty(ys, d, MemCategory::Activations, f);
        cuda->conv2dForward(xf, w, &bias, y, g);
        expectWithinBound(cuda->toHostFloat(cuda->contiguous(y)), yRefs, &bv, g.outH() * g.outW(),
                          g.k, d, what + " forward");
        Tensor dx = cuda->empty(xs, d, MemCategory::Activations, f);
        cuda->conv2dBackwardData(dyf, w, dx, g);
        expectWithinBound(cuda->toHostFloat(cuda->contiguous(dx)), dxRefs, nullptr, 1, 1, d,
                          what + " backward data");
        // The weight gradient in fp32 (16-bit inputs: the widened path) and in the input dtype.
        for (DType wd : {d, DType::F32}) {
          Tensor dw = cuda->empty(ws, wd, MemCategory::Gradients);
          Tensor db = cuda->empty({g.k}, DType::F32, MemCategory::Gradients);
          cuda->conv2dBackwardWeights(dyf, xf, dw, &db, g);
          EXPECT_FALSE(dw.channelsLast()) << "weights stay (K, C, R, S)";
          expectWithinBound(cuda->toHostFloat(dw), dwRefs, nullptr, 1, 1, wd,
                            what + " backward weights -> " + name(wd));
          if (wd == d) dbias[f == kNhwc] = cuda->toHostBytes(db);
        }
        EXPECT_EQ(cuda->memory().snapshot().current[int(MemCategory::Workspace)], before) << what;
      }
      EXPECT_EQ(dbias[0], dbias[1]) << base << ": the bias gradient reads dy in one order";
    }
  }
}

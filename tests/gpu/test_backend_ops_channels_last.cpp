// Channels-last (NHWC) image ops on the CUDA backend against the same ops on NCHW tensors, and
// against the CPU. Our kernels walk NHWC tensors in the order they walk NCHW ones
// (kernels/common/image_layout.h), so pooling, batch norm, global average pooling, the conv
// bias gradient and the elementwise ops must give the NCHW results bit for bit (and, where the
// NCHW kernel matches the CPU bit for bit, the CPU's). cuDNN may pick another algorithm for
// another layout, so convolutions are held to test_backend_ops_conv.cpp's bound against a
// double reference, in both layouts. Also: the transpose round trip for every dtype, the host
// boundary in the logical order, refusals of mixed formats with the CPU's messages, workspace
// handed back, and the switch. Results are read through contiguous() so that each comparison
// depends on one thing only. Skips without a GPU.
#include <cuda_runtime.h>

#include <cstdlib>
#include <functional>
#include <stdexcept>

#include "engine/backend/cuda_backend.h"
#include "tests/gpu/gpu_test_support.h"

using namespace amp;
using namespace amp::gpu_test;

namespace {

constexpr MemoryFormat kNchw = MemoryFormat::Contiguous, kNhwc = MemoryFormat::ChannelsLast;

std::int64_t workspaceBytes(Backend& be) {
  return be.memory().snapshot().current[static_cast<int>(MemCategory::Workspace)];
}

class ChannelsLastGpu : public CpuAndCuda {
 protected:
  // A tensor's bytes in the logical order, through a contiguous copy on its own backend.
  std::vector<std::uint8_t> logical(Backend& be, const Tensor& t) {
    return be.toHostBytes(be.contiguous(t));
  }
  std::vector<float> logicalFloats(Backend& be, const Tensor& t) {
    return be.toHostFloat(be.contiguous(t));
  }
  // GPU a (NCHW) and b (NHWC), and optionally the CPU's c, bit for bit (NaN matching NaN).
  void expectSame(const Tensor& nchwGpu, const Tensor& nhwcGpu, const std::string& what,
                  const Tensor* onCpu = nullptr) {
    ASSERT_TRUE(nhwcGpu.channelsLast() || nhwcGpu.rank() != 4) << what;
    const auto a = logical(*cuda, nchwGpu), b = logical(*cuda, nhwcGpu);
    expectSameElements(nchwGpu.dtype(), a, b, what + " (NCHW vs NHWC on the GPU)");
    if (onCpu) expectSameElements(nchwGpu.dtype(), logical(*cpu, *onCpu), b, what + " (CPU vs NHWC)");
  }
  // Test-owned tensors count as activations, so the workspace figure shows only the ops' own.
  Tensor upload(const std::vector<float>& v, const Shape& s, DType d, MemoryFormat f) {
    return cuda->toFormat(cuda->fromHost(v, s, d, MemCategory::Activations), f);
  }
};

}  // namespace

TEST_F(ChannelsLastGpu, TransposesRoundTripEveryDtypeAndShape) {
  for (const Shape& s : {Shape{2, 3, 4, 5}, Shape{1, 33, 6, 7}, Shape{64, 16, 32, 32},
                         Shape{2, 1, 5, 5}, Shape{4, 7, 1, 1}, Shape{3, 70, 9, 40}}) {
    const std::vector<float> v = testValues(static_cast<std::size_t>(shapeNumel(s)), 3);
    for (DType d : kFloats) {
      const Tensor x = cuda->fromHost(v, s, d, MemCategory::Workspace);
      const Tensor cl = cuda->toFormat(x, kNhwc);
      EXPECT_TRUE(cl.channelsLast());
      expectSameElements(d, cuda->toHostBytes(x), cuda->toHostBytes(cuda->contiguous(cl)),
                         shapeString(s) + " " + name(d) + " round trip");
      // The CPU's transpose and the GPU's agree (checked through each one's way back).
      const Tensor xc = cpu->fromHost(v, s, d, MemCategory::Workspace);
      expectSameElements(d, logical(*cpu, cpu->toFormat(xc, kNhwc)), logical(*cuda, cl),
                         shapeString(s) + " " + name(d) + " CPU vs GPU");
    }
    // The bytes as they lie on the device: NHWC order, element (n, c, h, w) at ((n*H + h)*W + w)*C
    // + c (a transpose that only copied would pass the round trips above).
    {
      const Tensor x32 = cuda->fromHost(v, s, DType::F32, MemCategory::Workspace);
      const Tensor cl32 = cuda->toFormat(x32, kNhwc);
      std::vector<float> raw(v.size());
      ASSERT_EQ(cudaMemcpy(raw.data(), cl32.rawData(), raw.size() * 4, cudaMemcpyDeviceToHost), cudaSuccess);
      const std::int64_t C = s[1], H = s[2], W = s[3];
      int wrong = 0;
      for (std::int64_t n = 0; n < s[0]; ++n)
        for (std::int64_t c = 0; c < C; ++c)
          for (std::int64_t h = 0; h < H; ++h)
            for (std::int64_t w = 0; w < W; ++w) {
              const float want = v[std::size_t(((n * C + c) * H + h) * W + w)];
              const float got = raw[std::size_t(((n * H + h) * W + w) * C + c)];
              wrong += !(want == got || (std::isnan(want) && std::isnan(got)));
            }
      EXPECT_EQ(wrong, 0) << shapeString(s) << ": elements not where NHWC puts them";
    }
    std::vector<std::int32_t> ints(static_cast<std::size_t>(shapeNumel(s)));
    for (std::size_t i = 0; i < ints.size(); ++i) ints[i] = std::int32_t(i * 7 - 3);
    const Tensor xi = cuda->fromHostInt(ints, s, MemCategory::Workspace);
    EXPECT_EQ(cuda->toHostInt(cuda->contiguous(cuda->toFormat(xi, kNhwc))), ints) << shapeString(s);
  }
}

// uploadFloat/toHostFloat/toHostBytes/uploadBytes/setElement speak the logical order whatever
// the format (Backend's contract): the CUDA backend's transfers (cuda_backend_memory.cpp) must
// route a channels-last tensor through a contiguous copy for this to hold.
TEST_F(ChannelsLastGpu, TheHostBoundarySpeaksTheLogicalOrder) {
  const Shape s{2, 3, 4, 5};
  std::vector<float> v(120);
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = float(i);
  const Tensor cl = upload(v, s, DType::F32, kNhwc);
  EXPECT_EQ(cuda->toHostFloat(cl), v) << "toHostFloat";
  EXPECT_EQ(cuda->toHostBytes(cl), cuda->toHostBytes(cuda->contiguous(cl))) << "toHostBytes";
  Tensor up = cuda->empty(s, DType::BF16, MemCategory::Workspace, kNhwc);
  cuda->uploadFloat(up, v);
  EXPECT_EQ(logicalFloats(*cuda, up), v) << "uploadFloat";
  Tensor bytes = cuda->empty(s, DType::F32, MemCategory::Workspace, kNhwc);
  cuda->uploadBytes(bytes, cpu->toHostBytes(cpu->fromHost(v, s, DType::F32, MemCategory::Workspace)));
  EXPECT_EQ(logicalFloats(*cuda, bytes), v) << "uploadBytes";
  Tensor t = upload(v, s, DType::F32, kNhwc);
  cuda->setElement(t, 7, -1.f);
  std::vector<float> expected = v;
  expected[7] = -1.f;
  EXPECT_EQ(logicalFloats(*cuda, t), expected) << "setElement";
}

TEST_F(ChannelsLastGpu, PoolingAndGlobalAveragePoolingAreBitExactInNhwc) {
  for (const auto& [n, c, h, w, k, st, pad] :
       {std::tuple{64, 16, 32, 32, 2, 2, 0}, std::tuple{2, 3, 9, 11, 3, 2, 0},
        std::tuple{3, 5, 7, 6, 3, 1, 0}, std::tuple{2, 64, 15, 15, 3, 2, 1},
        std::tuple{16, 32, 28, 28, 2, 2, 0}}) {
    Pool2dGeometry g;
    g.n = n, g.c = c, g.h = h, g.w = w, g.kernel = k, g.stride = st, g.padding = pad;
    const Shape in{g.n, g.c, g.h, g.w}, out{g.n, g.c, g.outH(), g.outW()};
    std::vector<float> xv = testValues(static_cast<std::size_t>(shapeNumel(in)), 21, 2.f);
    for (float& x : xv) x = std::round(x * 2.f) / 2.f;  // ties for the first-maximum rule
    const std::vector<float> dyv = finiteValues(static_cast<std::size_t>(shapeNumel(out)), 22);
    for (DType d : kFloats) {
      const std::string what = "max_pool " + shapeString(in) + " k" + std::to_string(k) + "/s" +
                               std::to_string(st) + "/p" + std::to_string(pad) + " " + name(d);
      Tensor y[2], idx[2], dx[2];
      const std::int64_t before = workspaceBytes(*cuda);
      for (int f = 0; f < 2; ++f) {
        const MemoryFormat fmt = f ? kNhwc : kNchw;
        y[f] = cuda->empty(out, d, MemCategory::Activations, fmt);
        idx[f] = cuda->empty(out, DType::I32, MemCategory::Activations, fmt);
        cuda->maxPool2dForward(upload(xv, in, d, fmt), y[f], idx[f], g);
        dx[f] = cuda->empty(in, d, MemCategory::Activations, fmt);
        cuda->fill(dx[f], kNaN);  // every element must be written
        cuda->maxPool2dBackward(upload(dyv, out, d, fmt), idx[f], dx[f], g);
      }
      Tensor yc = cpu->empty(out, d, MemCategory::Activations), ic = cpu->empty(out, DType::I32, MemCategory::Activations);
      cpu->maxPool2dForward(cpu->fromHost(xv, in, d, MemCategory::Activations), yc, ic, g);
      Tensor dxc = cpu->empty(in, d, MemCategory::Activations);
      cpu->maxPool2dBackward(cpu->fromHost(dyv, out, d, MemCategory::Activations), ic, dxc, g);
      expectSame(y[0], y[1], what + " values", &yc);
      expectSame(idx[0], idx[1], what + " argmax", &ic);
      expectSame(dx[0], dx[1], what + " backward", &dxc);

      Tensor gy[2], gdx[2];
      for (int f = 0; f < 2; ++f) {
        const MemoryFormat fmt = f ? kNhwc : kNchw;
        gy[f] = cuda->empty({g.n, g.c}, d, MemCategory::Activations);
        cuda->globalAvgPoolForward(upload(xv, in, d, fmt), gy[f]);
        gdx[f] = cuda->empty(in, d, MemCategory::Activations, fmt);
        cuda->globalAvgPoolBackward(gy[f], gdx[f]);
      }
      Tensor gyc = cpu->empty({g.n, g.c}, d, MemCategory::Activations);
      cpu->globalAvgPoolForward(cpu->fromHost(xv, in, d, MemCategory::Activations), gyc);
      expectSameElements(d, cpu->toHostBytes(gyc), cuda->toHostBytes(gy[1]), what + " global average pool (CPU vs NHWC)");
      expectSameElements(d, cuda->toHostBytes(gy[0]), cuda->toHostBytes(gy[1]), what + " global average pool");
      expectSame(gdx[0], gdx[1], what + " global average pool backward");
      EXPECT_EQ(workspaceBytes(*cuda), before) << what;
    }
  }
}

// Batch norm sums each channel in the same (image, position) order in both layouts: the
// statistics, outputs and gradients agree bit for bit (the fused add + ReLU forms included; 70
// channels: NHWC sums by channel groups of 8 or 16 with a partial last group).
TEST_F(ChannelsLastGpu, BatchNormIsBitExactInNhwc) {
  for (const Shape& in : {Shape{64, 16, 32, 32}, Shape{5, 3, 7, 9}, Shape{128, 32, 14, 14}, Shape{4, 70, 9, 9}}) {
    const std::int64_t c = in[1];
    const auto n = static_cast<std::size_t>(shapeNumel(in));
    const std::vector<float> xv = finiteValues(n, 31, 2.f), rv = finiteValues(n, 32, 2.f),
                             dyv = finiteValues(n, 33, 2.f);
    for (DType d : kFloats) {
      const std::string what = "batch_norm " + shapeString(in) + " " + name(d);
      auto perChannel = [&](float v) {
        return cuda->fromHost(std::vector<float>(std::size_t(c), v), {c}, DType::F32, MemCategory::Workspace);
      };
      const Tensor gamma = cuda->fromHost(finiteValues(std::size_t(c), 34, 1.f), {c}, DType::F32, MemCategory::Workspace);
      const Tensor beta = cuda->fromHost(finiteValues(std::size_t(c), 35, 1.f), {c}, DType::F32, MemCategory::Workspace);
      Tensor y[2], stats[2][4], dx[2], dg[2], db[2], ev[2];
      for (int f = 0; f < 2; ++f) {
        const MemoryFormat fmt = f ? kNhwc : kNchw;
        const Tensor x = upload(xv, in, d, fmt), res = upload(rv, in, d, fmt);
        stats[f][0] = perChannel(0.f), stats[f][1] = perChannel(1.f);  // running mean, var
        stats[f][2] = perChannel(0.f), stats[f][3] = perChannel(0.f);  // saved mean, invStd
        y[f] = cuda->empty(in, d, MemCategory::Workspace, fmt);
        cuda->batchNormReluForwardTrain(x, gamma, beta, stats[f][0], stats[f][1], 0.1f, 1e-5f,
                                        &res, y[f], stats[f][2], stats[f][3]);
        dx[f] = cuda->empty(in, d, MemCategory::Workspace, fmt);
        dg[f] = perChannel(0.f), db[f] = perChannel(0.f);
        cuda->batchNormReluBackward(upload(dyv, in, d, fmt), y[f], x, gamma, stats[f][2],
                                    stats[f][3], dx[f], dg[f], db[f]);
        ev[f] = cuda->empty(in, d, MemCategory::Workspace, fmt);
        cuda->batchNormForwardEval(x, gamma, beta, stats[f][0], stats[f][1], 1e-5f, ev[f]);
      }
      expectSame(y[0], y[1], what + " + add + relu");
      for (int s = 0; s < 4; ++s) expectSame(stats[0][s], stats[1][s], what + " statistic " + std::to_string(s));
      expectSame(dx[0], dx[1], what + " dx");
      expectSame(dg[0], dg[1], what + " dgamma");
      expectSame(db[0], db[1], what + " dbeta");
      expectSame(ev[0], ev[1], what + " eval");
    }
  }
}

// Elementwise ops are order-free on operands of one format; dropout draws its mask by logical
// index, so the same elements drop in either format (and as on the CPU).
TEST_F(ChannelsLastGpu, ElementwiseOpsAndDropoutAgreeInNhwc) {
  const Shape in{4, 6, 5, 7};
  const auto n = static_cast<std::size_t>(shapeNumel(in));
  const std::vector<float> av = testValues(n, 41), bv = testValues(n, 42);
  for (DType d : kFloats) {
    Tensor sum[2], act[2], grad[2], mask[2], drop[2], cast[2];
    for (int f = 0; f < 2; ++f) {
      const MemoryFormat fmt = f ? kNhwc : kNchw;
      const Tensor a = upload(av, in, d, fmt), b = upload(bv, in, DType::F32, fmt);
      sum[f] = cuda->empty(in, DType::F32, MemCategory::Workspace, fmt);
      cuda->add(a, b, sum[f]);
      act[f] = cuda->empty(in, d, MemCategory::Workspace, fmt);
      cuda->activationForward(Activation::GELU, a, act[f]);
      grad[f] = cuda->empty(in, d, MemCategory::Workspace, fmt);
      cuda->activationBackward(Activation::GELU, a, act[f], a, grad[f]);
      mask[f] = cuda->empty(in, DType::U8, MemCategory::Workspace, fmt);
      drop[f] = cuda->empty(in, d, MemCategory::Workspace, fmt);
      cuda->dropoutForward(a, mask[f], drop[f], 0.3f, 1234);
      cast[f] = cuda->cast(a, DType::F32, MemCategory::Workspace);
      EXPECT_EQ(cast[f].format(), fmt) << "a cast keeps the format";
    }
    Tensor maskc = cpu->empty(in, DType::U8, MemCategory::Workspace), dropc = cpu->empty(in, d, MemCategory::Workspace);
    cpu->dropoutForward(cpu->fromHost(av, in, d, MemCategory::Workspace), maskc, dropc, 0.3f, 1234);
    expectSame(sum[0], sum[1], name(d) + " add");
    expectSame(act[0], act[1], name(d) + " gelu");
    expectSame(grad[0], grad[1], name(d) + " gelu backward");
    expectSame(mask[0], mask[1], name(d) + " dropout mask", &maskc);
    expectSame(drop[0], drop[1], name(d) + " dropout", &dropc);
    expectSame(cast[0], cast[1], name(d) + " cast");
  }
}

TEST_F(ChannelsLastGpu, MixedFormatsAreRefusedWithTheCpusMessages) {
  const Shape s{2, 4, 3, 3};
  const std::vector<float> v = finiteValues(72, 51);
  Pair a = both(v, s, DType::F32);
  const Tensor bc = cpu->toFormat(a.c, kNhwc), bg = cuda->toFormat(a.g, kNhwc);
  Pair y = emptyBoth(s, DType::F32);
  auto refusal = [](const std::function<void()>& call) -> std::string {
    try {
      call();
    } catch (const std::logic_error& e) {
      return e.what();
    }
    return "";
  };
  auto same = [&](const char* op, const std::function<void(Backend&, const Tensor&, const Tensor&, Tensor&)>& call) {
    const std::string onCpu = refusal([&] { call(*cpu, a.c, bc, y.c); });
    EXPECT_NE(onCpu.find(op), std::string::npos) << onCpu;
    EXPECT_EQ(refusal([&] { call(*cuda, a.g, bg, y.g); }), onCpu) << op;
  };
  same("add", [](Backend& be, const Tensor& p, const Tensor& q, Tensor& out) { be.add(p, q, out); });
  same("activation", [](Backend& be, const Tensor&, const Tensor& q, Tensor& out) {
    be.activationForward(Activation::ReLU, q, out);
  });
  same("conv2d", [](Backend& be, const Tensor& p, const Tensor& q, Tensor& out) {
    ConvGeometry g;
    g.n = 2, g.c = 4, g.h = 3, g.w = 3, g.k = 4, g.r = g.s = 3, g.padH = g.padW = 1;
    be.conv2dForward(q, be.empty({4, 4, 3, 3}, DType::F32, MemCategory::Workspace), nullptr, out, g);
    (void)p;
  });
  same("batch_norm", [](Backend& be, const Tensor&, const Tensor& q, Tensor& out) {
    Tensor one = be.zeros({4}, DType::F32, MemCategory::Workspace);
    Tensor m = be.zeros({4}, DType::F32, MemCategory::Workspace), v2 = be.zeros({4}, DType::F32, MemCategory::Workspace);
    Tensor sm = be.zeros({4}, DType::F32, MemCategory::Workspace), si = be.zeros({4}, DType::F32, MemCategory::Workspace);
    be.batchNormForwardTrain(q, one, one, m, v2, 0.1f, 1e-5f, out, sm, si);
  });
  same("max_pool2d", [](Backend& be, const Tensor&, const Tensor& q, Tensor&) {
    Pool2dGeometry g;
    g.n = 2, g.c = 4, g.h = 3, g.w = 3, g.kernel = 2, g.stride = 1;
    Tensor out = be.empty({2, 4, 2, 2}, DType::F32, MemCategory::Workspace);
    Tensor idx = be.empty({2, 4, 2, 2}, DType::I32, MemCategory::Workspace);
    be.maxPool2dForward(q, out, idx, g);
  });
}

TEST_F(ChannelsLastGpu, TheSwitchDecidesThePreferredFormat) {
  auto& gpu = dynamic_cast<CudaBackend&>(*cuda);
  const char* env = std::getenv("AMP_CUDA_DISABLE");
  const std::string disabled = "," + std::string(env ? env : "") + ",";
  const bool switchedOff = disabled.find(",channels-last,") != std::string::npos ||
                           disabled.find(",all,") != std::string::npos;
  EXPECT_EQ(gpu.preferredImageFormat(), switchedOff ? kNchw : kNhwc);
  gpu.setChannelsLast(false);
  EXPECT_EQ(gpu.preferredImageFormat(), kNchw);
  gpu.setChannelsLast(true);
  EXPECT_EQ(gpu.preferredImageFormat(), switchedOff ? kNchw : kNhwc);
}

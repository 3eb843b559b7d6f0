// Channels-last tensors (MemoryFormat::ChannelsLast) on the CPU backend: only rank-4 tensors may
// be channels-last and none may be reshaped to another shape; the bytes really lie N, H, W, C;
// the host boundary (uploads, downloads, bytes, setElement) speaks the logical NCHW order;
// every op with several activations refuses a mix of formats, naming itself; and each image op
// gives the same bits on channels-last operands as on contiguous ones (NchwScratch).
#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <stdexcept>
#include <vector>

#include "engine/backend/cpu_backend.h"
#include "test_support.h"

namespace amp {
namespace {

using test::messageOf;
using test::randomVec;

constexpr MemoryFormat kNchw = MemoryFormat::Contiguous, kNhwc = MemoryFormat::ChannelsLast;

class ChannelsLast : public ::testing::Test {
 protected:
  CpuBackend be;
  Tensor make(const Shape& s, std::uint64_t seed, DType d = DType::F32, MemoryFormat f = kNchw) {
    return be.toFormat(be.fromHost(randomVec(shapeNumel(s), seed), s, d, MemCategory::Activations),
                       f);
  }
  Tensor like(const Tensor& t, MemoryFormat f, DType d) {
    return be.empty(t.shape(), d, MemCategory::Activations, f);
  }
  Tensor like(const Tensor& t, MemoryFormat f) { return like(t, f, t.dtype()); }
  void expectSameBits(const Tensor& a, const Tensor& b, const std::string& what) {
    EXPECT_EQ(be.toHostBytes(a), be.toHostBytes(b)) << what;
  }
};

TEST_F(ChannelsLast, OnlyImagesMayBeChannelsLastAndNoneReshapeToAnotherShape) {
  EXPECT_THROW(be.empty({4, 3, 2}, DType::F32, MemCategory::Activations, kNhwc), std::logic_error);
  EXPECT_THROW(be.empty({12}, DType::F32, MemCategory::Activations, kNhwc), std::logic_error);
  const Tensor t = be.empty({2, 3, 4, 5}, DType::F16, MemCategory::Activations, kNhwc);
  EXPECT_TRUE(t.channelsLast());
  EXPECT_EQ(t.shape(), (Shape{2, 3, 4, 5})) << "the logical shape stays (N, C, H, W)";
  // A flatten of NHWC bytes would mix channels and pixels: refused, not silently wrong.
  EXPECT_HAS(messageOf<std::logic_error>([&] { t.reshaped({2, 60}); }), "channels-last");
  EXPECT_THROW(t.reshaped({2, 3, 20}), std::logic_error);
  EXPECT_TRUE(t.reshaped({2, 3, 4, 5}).channelsLast()) << "the same shape is the same view";
  EXPECT_THROW(t.reshaped({2, 61}), std::invalid_argument) << "a wrong count stays that error";
  // Made contiguous through the backend, it reshapes.
  EXPECT_EQ(be.contiguous(t).reshaped({2, 60}).shape(), (Shape{2, 60}));
  // A cast keeps the format.
  EXPECT_TRUE(be.cast(t, DType::F32, MemCategory::Activations).channelsLast());
}

TEST_F(ChannelsLast, BytesLieInNhwcOrderAndTheHostSeesNchw) {
  const Shape s{2, 3, 4, 5};
  std::vector<float> logical(120);
  for (std::size_t i = 0; i < logical.size(); ++i) logical[i] = float(i);
  const Tensor nchw = be.fromHost(logical, s, DType::F32, MemCategory::Activations);
  const Tensor nhwc = be.toFormat(nchw, kNhwc);
  ASSERT_TRUE(nhwc.channelsLast());
  // Element (n, c, h, w) sits at ((n * H + h) * W + w) * C + c.
  const float* raw = nhwc.data<float>();
  for (int n = 0; n < 2; ++n)
    for (int c = 0; c < 3; ++c)
      for (int h = 0; h < 4; ++h)
        for (int w = 0; w < 5; ++w)
          ASSERT_EQ(raw[((n * 4 + h) * 5 + w) * 3 + c], float(((n * 3 + c) * 4 + h) * 5 + w));
  EXPECT_EQ(be.toHostFloat(nhwc), logical) << "toHostFloat speaks the logical order";
  EXPECT_EQ(be.toHostBytes(nhwc), be.toHostBytes(nchw)) << "so do raw bytes (checkpoints)";
  EXPECT_EQ(be.toHostFloat(be.contiguous(nhwc)), logical) << "and the way back";

  // Uploads land where the layout puts them.
  Tensor up = be.empty(s, DType::BF16, MemCategory::Activations, kNhwc);
  be.uploadFloat(up, logical);
  EXPECT_EQ(be.toHostFloat(up), logical);
  EXPECT_EQ(be.toHostFloat(be.contiguous(up)), logical);
  Tensor bytes = be.empty(s, DType::F32, MemCategory::Activations, kNhwc);
  be.uploadBytes(bytes, be.toHostBytes(nchw));
  EXPECT_EQ(be.toHostBytes(bytes), be.toHostBytes(nchw));
  EXPECT_EQ(std::memcmp(bytes.rawData(), nhwc.rawData(), nhwc.bytes()), 0);
  // Integers too (max pooling's argmax may be channels-last).
  std::vector<std::int32_t> ints(120);
  for (std::size_t i = 0; i < ints.size(); ++i) ints[i] = std::int32_t(i);
  Tensor idx = be.empty(s, DType::I32, MemCategory::Activations, kNhwc);
  be.uploadInt(idx, ints);
  EXPECT_EQ(be.toHostInt(idx), ints);
  EXPECT_EQ(idx.data<std::int32_t>()[1], 20) << "NHWC: the next channel comes next";

  // setElement takes a logical index (fault injection).
  Tensor t = be.toFormat(nchw, kNhwc);
  be.setElement(t, 7, -1.f);  // (0, 0, 1, 2)
  std::vector<float> expected = logical;
  expected[7] = -1.f;
  EXPECT_EQ(be.toHostFloat(t), expected);
  // Order-free reductions read the bytes as they lie.
  EXPECT_EQ(be.sumOfSquares(nhwc), be.sumOfSquares(nchw));
  EXPECT_EQ(be.histogram(nhwc, 1.0).counts, be.histogram(nchw, 1.0).counts);
}

// Every op that combines several activations refuses a mix of formats with a logic_error that
// names it: combining NCHW bytes with NHWC bytes element by element would be silently wrong.
TEST_F(ChannelsLast, MixedFormatsAreRefusedByName) {
  const Shape s{2, 4, 3, 3};
  const Tensor a = make(s, 1), b = make(s, 2, DType::F32, kNhwc);
  Tensor y = like(a, kNchw), y16 = like(a, kNchw, DType::F16);
  auto refused = [&](const char* op, const std::function<void()>& call) {
    EXPECT_HAS(messageOf<std::logic_error>(call), op);
    EXPECT_HAS(messageOf<std::logic_error>(call), "memory formats");
  };
  refused("add", [&] { be.add(a, b, y); });
  refused("cast", [&] { be.castInto(b, y16); });
  refused("copy", [&] { be.copyInto(b, y); });
  refused("accumulate", [&] { be.accumulate(y, b); });
  refused("activation", [&] { be.activationForward(Activation::ReLU, b, y); });
  refused("activation backward", [&] { be.activationBackward(Activation::ReLU, a, a, b, y); });
  Tensor mask = be.empty(s, DType::U8, MemCategory::Activations);
  refused("dropout", [&] { be.dropoutForward(b, mask, y, 0.5f, 1); });
  refused("dropout backward", [&] { be.dropoutBackward(b, mask, y, 0.5f); });
  Tensor gamma = be.fromHost(std::vector<float>(4, 1.f), {4}, DType::F32, MemCategory::Weights);
  Tensor beta = be.zeros({4}, DType::F32, MemCategory::Weights);
  Tensor rm = be.zeros({4}, DType::F32, MemCategory::Weights), rv = be.zeros({4}, DType::F32, MemCategory::Weights);
  Tensor sm = be.empty({4}, DType::F32, MemCategory::Activations), si = be.empty({4}, DType::F32, MemCategory::Activations);
  refused("batch_norm", [&] { be.batchNormForwardTrain(b, gamma, beta, rm, rv, 0.1f, 1e-5f, y, sm, si); });
  Pool2dGeometry pg;
  pg.n = 2, pg.c = 4, pg.h = 3, pg.w = 3, pg.kernel = 2, pg.stride = 1;
  Tensor py = be.empty({2, 4, 2, 2}, DType::F32, MemCategory::Activations);
  Tensor arg = be.empty({2, 4, 2, 2}, DType::I32, MemCategory::Activations);
  refused("max_pool2d", [&] { be.maxPool2dForward(b, py, arg, pg); });
  Conv2dGeometry g;
  g.n = 2, g.c = 4, g.h = 3, g.w = 3, g.k = 4, g.r = g.s = 3, g.padH = g.padW = 1;
  const Tensor w = make({4, 4, 3, 3}, 3);
  refused("conv2d", [&] { be.conv2dForward(b, w, nullptr, y, g); });
  // Weights stay (K, C, R, S): a channels-last filter is refused too.
  Tensor y2 = like(b, kNhwc);
  EXPECT_HAS(messageOf<std::logic_error>([&] { be.conv2dForward(b, be.toFormat(w, kNhwc), nullptr, y2, g); }),
             "weight");
}

// Each image op on channels-last operands runs the NCHW code on transposed copies: the results
// (read back in the logical order) are the contiguous ones bit for bit, and the outputs keep the
// format they were given.
TEST_F(ChannelsLast, ImageOpsGiveTheContiguousBits) {
  for (DType d : {DType::F32, DType::F16, DType::BF16}) {
    const std::string dn(dtypeName(d));
    // Convolution: forward with a bias, both backward passes (together and apart).
    Conv2dGeometry g;
    g.n = 3, g.c = 5, g.h = 7, g.w = 6, g.k = 4, g.r = g.s = 3, g.strideH = g.strideW = 2;
    g.padH = g.padW = 1;
    const Tensor x = make({3, 5, 7, 6}, 11, d), w = make({4, 5, 3, 3}, 12, d), bias = make({4}, 13, d);
    const Tensor xl = be.toFormat(x, kNhwc);
    const Shape ys{3, 4, g.outH(), g.outW()};
    Tensor y = be.empty(ys, d, MemCategory::Activations), yl = be.empty(ys, d, MemCategory::Activations, kNhwc);
    be.conv2dForward(x, w, &bias, y, g);
    be.conv2dForward(xl, w, &bias, yl, g);
    expectSameBits(y, yl, dn + " conv2d forward");
    const Tensor dy = make(ys, 14, d), dyl = be.toFormat(dy, kNhwc);
    Tensor dx = like(x, kNchw), dxl = like(x, kNhwc);
    Tensor dw = like(w, kNchw, DType::F32), dwl = like(w, kNchw, DType::F32);
    Tensor db = be.empty({4}, DType::F32, MemCategory::Gradients), dbl = be.empty({4}, DType::F32, MemCategory::Gradients);
    be.conv2dBackward(dy, x, w, &dx, dw, &db, g);
    be.conv2dBackward(dyl, xl, w, &dxl, dwl, &dbl, g);
    expectSameBits(dx, dxl, dn + " conv2d dx");
    expectSameBits(dw, dwl, dn + " conv2d dw");
    expectSameBits(db, dbl, dn + " conv2d dbias");
    Tensor dx2 = like(x, kNhwc);
    be.conv2dBackwardData(dyl, w, dx2, g);
    expectSameBits(dx, dx2, dn + " conv2d backward data alone");
    EXPECT_TRUE(yl.channelsLast() && dxl.channelsLast());

    // Batch norm: training (plain and fused with a residual and the ReLU), eval, backward.
    const Tensor bx = make({4, 3, 5, 5}, 21, d), bxl = be.toFormat(bx, kNhwc);
    const Tensor res = make({4, 3, 5, 5}, 22, d), resl = be.toFormat(res, kNhwc);
    auto channel = [&](float v) {
      return be.fromHost(std::vector<float>(3, v), {3}, DType::F32, MemCategory::Weights);
    };
    const Tensor gamma = make({3}, 23), beta = make({3}, 24);
    Tensor out[2], saved[2][2], running[2][2];
    for (int f = 0; f < 2; ++f) {
      running[f][0] = channel(0.f), running[f][1] = channel(1.f);
      saved[f][0] = channel(0.f), saved[f][1] = channel(0.f);
      out[f] = like(bx, f ? kNhwc : kNchw);
      be.batchNormReluForwardTrain(f ? bxl : bx, gamma, beta, running[f][0], running[f][1], 0.1f,
                                   1e-5f, f ? &resl : &res, out[f], saved[f][0], saved[f][1]);
    }
    expectSameBits(out[0], out[1], dn + " batch norm + add + relu");
    expectSameBits(running[0][1], running[1][1], dn + " running variance");
    expectSameBits(saved[0][1], saved[1][1], dn + " saved invStd");
    const Tensor bdy = make({4, 3, 5, 5}, 25, d);
    Tensor bdx[2], dg[2], dbeta[2];
    for (int f = 0; f < 2; ++f) {
      bdx[f] = like(bx, f ? kNhwc : kNchw);
      dg[f] = channel(0.f), dbeta[f] = channel(0.f);
      be.batchNormReluBackward(f ? be.toFormat(bdy, kNhwc) : bdy, out[f], f ? bxl : bx, gamma,
                               saved[f][0], saved[f][1], bdx[f], dg[f], dbeta[f]);
    }
    expectSameBits(bdx[0], bdx[1], dn + " batch norm backward dx");
    expectSameBits(dg[0], dg[1], dn + " dgamma");
    expectSameBits(dbeta[0], dbeta[1], dn + " dbeta");
    Tensor ev = like(bx, kNchw), evl = like(bx, kNhwc);
    be.batchNormForwardEval(bx, gamma, beta, running[0][0], running[0][1], 1e-5f, ev);
    be.batchNormForwardEval(bxl, gamma, beta, running[0][0], running[0][1], 1e-5f, evl);
    expectSameBits(ev, evl, dn + " batch norm eval");

    // Max pooling (overlapping 3x3 windows, stride 2; argmax means the same in both formats).
    Pool2dGeometry pg;
    pg.n = 2, pg.c = 3, pg.h = 7, pg.w = 7, pg.kernel = 3, pg.stride = 2;
    const Tensor px = make({2, 3, 7, 7}, 31, d), pxl = be.toFormat(px, kNhwc);
    const Shape ps{2, 3, pg.outH(), pg.outW()};
    Tensor py = be.empty(ps, d, MemCategory::Activations), pyl = be.empty(ps, d, MemCategory::Activations, kNhwc);
    Tensor arg = be.empty(ps, DType::I32, MemCategory::Activations);
    Tensor argl = be.empty(ps, DType::I32, MemCategory::Activations, kNhwc);
    be.maxPool2dForward(px, py, arg, pg);
    be.maxPool2dForward(pxl, pyl, argl, pg);
    expectSameBits(py, pyl, dn + " max pool");
    expectSameBits(arg, argl, dn + " argmax");
    const Tensor pdy = make(ps, 32, d);
    Tensor pdx = like(px, kNchw), pdxl = like(px, kNhwc);
    be.maxPool2dBackward(pdy, arg, pdx, pg);
    be.maxPool2dBackward(be.toFormat(pdy, kNhwc), argl, pdxl, pg);
    expectSameBits(pdx, pdxl, dn + " max pool backward");

    // Global average pooling.
    Tensor gy = be.empty({2, 3}, d, MemCategory::Activations), gyl = be.empty({2, 3}, d, MemCategory::Activations);
    be.globalAvgPoolForward(px, gy);
    be.globalAvgPoolForward(pxl, gyl);
    expectSameBits(gy, gyl, dn + " global average pool");
    Tensor gdx = like(px, kNchw), gdxl = like(px, kNhwc);
    be.globalAvgPoolBackward(gy, gdx);
    be.globalAvgPoolBackward(gy, gdxl);
    expectSameBits(gdx, gdxl, dn + " global average pool backward");

    // Dropout: the mask is drawn per logical index, so the same elements drop.
    Tensor m = be.empty(px.shape(), DType::U8, MemCategory::Activations);
    Tensor ml = be.empty(px.shape(), DType::U8, MemCategory::Activations, kNhwc);
    Tensor dy1 = like(px, kNchw), dyl1 = like(px, kNhwc);
    be.dropoutForward(px, m, dy1, 0.3f, 99);
    be.dropoutForward(pxl, ml, dyl1, 0.3f, 99);
    expectSameBits(m, ml, dn + " dropout mask");
    expectSameBits(dy1, dyl1, dn + " dropout");
  }
}

// The emulation switch: what the engine asks the backend for.
TEST_F(ChannelsLast, TheEmulationMakesTheCpuPreferChannelsLast) {
  EXPECT_EQ(be.preferredImageFormat(), kNchw);
  be.setChannelsLastEmulation(true);
  EXPECT_EQ(be.preferredImageFormat(), kNhwc);
  EXPECT_EQ(makeCpuBackend()->preferredImageFormat(), kNchw) << "off unless asked for";
}

}  // namespace
}  // namespace amp

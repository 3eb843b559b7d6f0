// The residual networks' ops on the CUDA backend (issue 14) against the CPU backend: the residual
// add (every dtype pair, PyTorch's promotion: bit for bit, both compute one fp32 sum rounded
// once), global average pooling forward and backward (bit for bit: each plane summed in fp32 in
// the same row-major order), padded max pooling (the ImageNet stem's 3x3/2/1: bit for bit, with
// -inf rows and ties), the refusals the CPU makes; and a ResNet-8 trained on both backends,
// whose losses track each other. Skips without a GPU (and the trainer test without Fashion-MNIST).
#include <cstdlib>
#include <filesystem>
#include <functional>

#include "engine/config/config_schema.h"
#include "engine/data/dataset.h"
#include "engine/train/trainer.h"
#include "tests/gpu/gpu_test_support.h"

using namespace amp;
using namespace amp::gpu_test;

TEST_F(CpuAndCuda, ResidualAddIsBitExactForEveryDtypePair) {
  const Shape s{3, 5, 7, 11};
  const auto n = static_cast<std::size_t>(shapeNumel(s));
  std::vector<float> av = finiteValues(n, 31, 8.f), bv = finiteValues(n, 32, 8.f);
  // inf, -inf, and a sum past fp16's range (no NaN: the bits of a NaN the hardware makes differ
  // between the CPU and the GPU, while PyTorch promises only that it is a NaN).
  av[0] = kInf, bv[1] = -kInf, av[2] = 65504.f, bv[2] = 65504.f;
  for (DType a : kFloats)
    for (DType b : kFloats) {
      const DType out = a == b ? a : DType::F32;  // torch.promote_types
      Pair x = both(av, s, a), y = both(bv, s, b), z = emptyBoth(s, out);
      cpu->add(x.c, y.c, z.c);
      cuda->add(x.g, y.g, z.g);
      expectSameBits(z, "add " + name(a) + " + " + name(b));
    }
}

TEST_F(CpuAndCuda, GlobalAveragePoolingIsBitExact) {
  // ResNet-20's last map (8x8), ImageNet's (7x7), a 1x1 plane and a long one.
  for (const Shape& s : {Shape{4, 64, 8, 8}, Shape{2, 512, 7, 7}, Shape{3, 5, 1, 1}, Shape{2, 3, 40, 37}})
    for (DType d : kFloats)
      for (DType od : {d, DType::F32}) {
        const std::string what = "adaptive_avg_pool2d " + shapeString(s) + " " + name(d) + " -> " + name(od);
        const Shape out{s[0], s[1]};
        Pair x = both(finiteValues(std::size_t(shapeNumel(s)), 33, 6.f), s, d), y = emptyBoth(out, od);
        cpu->globalAvgPoolForward(x.c, y.c);
        cuda->globalAvgPoolForward(x.g, y.g);
        expectSameBits(y, what);
        Pair dy = both(finiteValues(std::size_t(shapeNumel(out)), 34, 3.f), out, od), dx = emptyBoth(s, d);
        cpu->globalAvgPoolBackward(dy.c, dx.c);
        cuda->globalAvgPoolBackward(dy.g, dx.g);
        expectSameBits(dx, what + " backward");
      }
}

TEST_F(CpuAndCuda, PaddedMaxPoolingIsBitExact) {
  for (const Shape& s : {Shape{2, 3, 9, 9}, Shape{2, 4, 75, 75}, Shape{1, 2, 4, 5}}) {
    Pool2dGeometry g;
    g.n = s[0], g.c = s[1], g.h = s[2], g.w = s[3], g.kernel = 3, g.stride = 2, g.padding = 1;
    const Shape out{g.n, g.c, g.outH(), g.outW()};
    std::vector<float> xv = finiteValues(std::size_t(shapeNumel(s)), 35, 1.f);
    for (float& v : xv) v = std::round(v * 2.f) / 2.f;  // ties
    std::fill(xv.begin(), xv.begin() + 2 * g.w, -kInf);  // windows of -inf beside the padding
    for (DType d : kFloats) {
      const std::string what = "max_pool 3/2/1 " + shapeString(s) + " " + name(d);
      Pair x = both(xv, s, d), y = emptyBoth(out, d), idx = emptyBoth(out, DType::I32);
      cpu->maxPool2dForward(x.c, y.c, idx.c, g);
      cuda->maxPool2dForward(x.g, y.g, idx.g, g);
      expectSameBits(y, what);
      expectSameBits(idx, what + " argmax");
      Pair dy = both(finiteValues(std::size_t(shapeNumel(out)), 36, 2.f), out, d), dx = emptyBoth(s, d);
      cpu->maxPool2dBackward(dy.c, idx.c, dx.c, g);
      cuda->maxPool2dBackward(dy.g, idx.g, dx.g, g);
      expectSameBits(dx, what + " backward");
    }
  }
}

TEST_F(CpuAndCuda, ResidualOpsRefuseWhatTheCpuRefuses) {
  Pair a = both(finiteValues(12, 37), {3, 4}, DType::F32), b = emptyBoth({3, 5}, DType::F32);
  Pair x = both(finiteValues(24, 38), {1, 2, 3, 4}, DType::F16), badY = emptyBoth({1, 3}, DType::F16);
  auto refusal = [](const std::function<void()>& f) -> std::string {
    try {
      f();
    } catch (const std::invalid_argument& e) {
      return e.what();
    }
    return "";
  };
  const std::string addCpu = refusal([&] { cpu->add(a.c, b.c, a.c); });
  EXPECT_FALSE(addCpu.empty());
  EXPECT_EQ(refusal([&] { cuda->add(a.g, b.g, a.g); }), addCpu);
  const std::string poolCpu = refusal([&] { cpu->globalAvgPoolForward(x.c, badY.c); });
  EXPECT_FALSE(poolCpu.empty());
  EXPECT_EQ(refusal([&] { cuda->globalAvgPoolForward(x.g, badY.g); }), poolCpu);
}

// ResNet-8 (width 8) on Fashion-MNIST padded to 32x32 with the ResNet preset's recipe: cuDNN's
// convolutions sum in another order than oneDNN's, so the losses track within bounds.
TEST(TrainerCudaResNet, TracksTheCpuInEveryMode) {
  AMP_SKIP_WITHOUT_GPU();
  const char* env = std::getenv("AMP_FASHION_MNIST_DIR");
  const std::string data = env ? env : kFashionMnistDir;
  if (!std::filesystem::exists(data)) GTEST_SKIP() << "Fashion-MNIST is not here (set AMP_FASHION_MNIST_DIR)";
  for (const char* mode : {"fp32", "fp16", "bf16"}) {
    std::vector<double> loss[2];
    for (int gpu = 0; gpu < 2; ++gpu) {
      RunConfig c;
      for (const auto& [k, v] : std::vector<std::pair<std::string, std::string>>{
               {"model.name", "resnet"}, {"model.depth", "8"}, {"model.base_width", "8"},
               {"data.name", "fmnist"}, {"data.path", data}, {"data.subset", "2048"}, {"data.test_subset", "512"},
               {"data.normalize", "standard"}, {"train.batch_size", "64"}, {"train.steps", "60"},
               {"optimizer.name", "sgd"}, {"optimizer.lr", "0.05"}, {"optimizer.momentum", "0.9"},
               {"train.histogram_every", "0"}, {"train.eval_every", "0"}, {"amp.mode", mode},
               {"backend", gpu ? "cuda" : "cpu"}})
        setConfigValue(c, k, v);
      Trainer t(c);
      while (!t.finished()) loss[gpu].push_back(t.step().loss);
    }
    const bool f32 = std::string(mode) == "fp32";
    EXPECT_NEAR(loss[1][0], loss[0][0], (f32 ? 1e-4 : 1e-2) * loss[0][0]) << mode;
    double c = 0, g = 0;
    for (int i = 40; i < 60; ++i) c += loss[0][i], g += loss[1][i];
    EXPECT_NEAR(g, c, (f32 ? 0.03 : 0.06) * c) << mode << ": mean loss of steps 41-60";
    EXPECT_LT(g / 20, 0.8 * loss[1][0]) << mode << " learns on the GPU";
  }
}

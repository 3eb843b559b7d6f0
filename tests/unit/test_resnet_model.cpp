// model.name = resnet: the layouts against published parameter counts (torchvision's ResNet-18
// and ResNet-34, the CIFAR ResNet-20 counted by hand), the PyTorch peer's state_dict names, the
// ImageNet stem's shapes, refusals of bad depths; and training through the Trainer in fp32 and
// AMP: it learns, AMP stores activations in 16 bits (at most 0.6x fp32's peak), the per-op trace
// shows the residual adds and the pooling.
#include <gtest/gtest.h>

#include <set>

#include "engine/config/config_schema.h"
#include "engine/train/memory_estimate.h"
#include "engine/train/resnet_builder.h"
#include "engine/train/trainer.h"
#include "test_support.h"

using namespace amp;

namespace {

std::int64_t countParameters(int depth, const Shape& sample, std::int64_t classes,
                             std::int64_t width = 0) {
  ModelConfig m;
  m.name = "resnet";
  m.depth = depth;
  m.baseWidth = width;
  auto be = makeCpuBackend();  // first: the model's tensors die before their backend
  auto net = buildResNet(m, sample, classes);
  net->initialize(*be, 1, DType::F32, MemCategory::Weights);
  return net->parameterCount();
}

RunConfig resnetRun(const std::string& mode, std::int64_t steps) {
  RunConfig c;
  for (const auto& [k, v] : std::vector<std::pair<std::string, std::string>>{
           {"model.name", "resnet"}, {"model.depth", "8"}, {"model.base_width", "8"},
           // data.subset cuts only the training set: the epoch-end evaluation gets 256 test images
           // instead of 10,000.
           {"data.name", "fmnist"}, {"data.subset", "512"}, {"data.test_subset", "256"},
           {"data.normalize", "standard"},
           {"train.batch_size", "32"}, {"train.steps", std::to_string(steps)},
           {"optimizer.name", "sgd"}, {"optimizer.lr", "0.05"}, {"optimizer.momentum", "0.9"},
           {"train.histogram_every", "0"}, {"train.eval_every", "0"}, {"amp.mode", mode},
           {"seed", "3"}})
    setConfigValue(c, k, v);
  return c;
}

}  // namespace

TEST(ResNetModel, ParameterCountsMatchThePublishedOnes) {
  // torchvision.models.resnet18() / resnet34(): 11,689,512 and 21,797,672 parameters (3-channel
  // 224x224 input, 1000 classes; the same basic blocks, projections with batch norm).
  EXPECT_EQ(countParameters(18, {3, 224, 224}, 1000), 11689512);
  EXPECT_EQ(countParameters(34, {3, 224, 224}, 1000), 21797672);
  // ResNet-20 with projection shortcuts (the peer, 1 input channel, 10 classes), by hand:
  // stem 1*16*9 + 32; stage 1: 3 x (2*16*16*9 + 2*32); stage 2: 16*32*9 + 32*32*9 + 2*64 +
  // 16*32 + 64, then 2 x (2*32*32*9 + 2*64); stage 3 likewise with 64; fc 64*10 + 10.
  const std::int64_t stem = 144 + 32, s1 = 3 * (4608 + 64);
  const std::int64_t s2 = (4608 + 9216 + 128 + 512 + 64) + 2 * (18432 + 128);
  const std::int64_t s3 = (18432 + 36864 + 256 + 2048 + 128) + 2 * (73728 + 256);
  EXPECT_EQ(countParameters(20, {1, 32, 32}, 10), stem + s1 + s2 + s3 + 650);
  EXPECT_EQ(stem + s1 + s2 + s3 + 650, 272186);
  // A settable width: the 18-layer layout at 16 channels on CIFAR-sized images.
  EXPECT_LT(countParameters(18, {3, 32, 32}, 10, 16), countParameters(18, {3, 32, 32}, 10) / 10);
}

TEST(ResNetModel, NamesFollowThePeersStateDict) {
  ModelConfig m;
  m.name = "resnet";
  auto be = makeCpuBackend();
  auto net = buildResNet(m, {1, 32, 32}, 10);
  net->initialize(*be, 1, DType::F32, MemCategory::Weights);
  std::set<std::string> names;
  for (Parameter* p : net->parameters()) names.insert(p->name);
  for (auto& [name, t] : net->buffers()) names.insert(name);
  for (const char* key : {"stem.0.weight", "stem.1.weight", "stem.1.bias", "stem.1.running_mean",
                          "stem.1.running_var", "stem.1.num_batches_tracked", "layers.0.c1.weight",
                          "layers.0.b2.bias", "layers.3.short.0.weight", "layers.3.short.1.running_var",
                          "layers.6.short.1.weight", "layers.8.c2.weight", "fc.weight", "fc.bias"})
    EXPECT_TRUE(names.count(key)) << key;
  EXPECT_FALSE(names.count("layers.1.short.0.weight")) << "identity blocks have no projection";
  EXPECT_FALSE(names.count("layers.9.c1.weight")) << "ResNet-20 has 9 blocks";
  // PyTorch's shapes: the projection is a 1x1 convolution (out, in, 1, 1).
  for (Parameter* p : net->parameters()) {
    if (p->name == "layers.3.short.0.weight") {
      EXPECT_EQ(p->value.shape(), (Shape{32, 16, 1, 1}));
    }
  }
}

TEST(ResNetModel, ImageNetStemShrinksLargeImagesAsTorchvision) {
  ModelConfig m;
  m.name = "resnet";
  m.depth = 18;
  const ResNetLayout big = resnetLayout(m, {3, 150, 150});
  EXPECT_TRUE(big.imagenetStem);
  EXPECT_FALSE(resnetLayout(m, {3, 32, 32}).imagenetStem) << "auto keeps 32x32 images whole";
  auto net = buildResNet(m, {3, 150, 150}, 6);
  // 150 -> conv 7x7/2 pad 3 -> 75 -> max-pool 3x3/2 pad 1 -> 38 -> 38, 19, 10, 5 -> 512 -> 6.
  Shape s{3, 150, 150};
  std::vector<Shape> shapes;
  for (const auto& l : net->layers()) shapes.push_back(s = l->outputShape(s));
  EXPECT_EQ(shapes[0], (Shape{64, 75, 75}));
  EXPECT_EQ(shapes[3], (Shape{64, 38, 38}));
  EXPECT_EQ(shapes[shapes.size() - 3], (Shape{512, 5, 5}));
  EXPECT_EQ(shapes.back(), (Shape{6}));
  EXPECT_NE(big.name.find("ResNet-18"), std::string::npos);
  m.depth = 20;
  EXPECT_NE(resnetLayout(m, {1, 32, 32}).name.find("16/32/64"), std::string::npos);
}

TEST(ResNetModel, BadDepthsAndNonImageDataAreRefusedByKey) {
  ModelConfig m;
  m.name = "resnet";
  m.depth = 21;
  EXPECT_HAS(test::messageOf<ConfigError>([&] { resnetLayout(m, {1, 32, 32}); }), "model.depth");
  m.depth = 20;
  EXPECT_HAS(test::messageOf<ConfigError>([&] { resnetLayout(m, {784}); }), "image data");
  RunConfig c;
  EXPECT_HAS(test::messageOf<ConfigError>([&] { setConfigValue(c, "model.stem", "huge"); }),
             "model.stem");
  setConfigValue(c, "model.base_width", "-1");
  ASSERT_TRUE(validateRunConfig(c).has_value());
  EXPECT_HAS(*validateRunConfig(c), "model.base_width");
}

TEST(ResNetModel, TrainsInFp32AndAmpAndTracesTheResidualOps) {
  std::map<std::string, std::vector<double>> losses;
  for (const char* mode : {"fp32", "fp16", "bf16"}) {
    Trainer t(resnetRun(mode, 24));
    if (std::string(mode) == "fp16") t.requestTrace();
    while (!t.finished()) {
      const StepMetrics m = t.step();
      ASSERT_FALSE(m.skipped) << mode << " step " << m.step;
      losses[mode].push_back(m.loss);
      if (m.step == 1 && std::string(mode) == "fp16") {
        std::set<std::string> ops;
        for (const auto& e : t.lastTrace()) {
          ops.insert(e.op);
          if (e.op == "add" && e.phase == TracePhase::Forward) {
            EXPECT_EQ(e.outputDtype, DType::F16) << e.layer;
          }
          if (e.op == "adaptive_avg_pool2d") {
            EXPECT_EQ(e.computeDtype, DType::F16);
          }
        }
        for (const char* op : {"conv2d", "batch_norm", "add", "adaptive_avg_pool2d", "linear",
                               "add_backward", "adaptive_avg_pool2d_backward"})
          EXPECT_TRUE(ops.count(op)) << op;
      }
    }
  }
  const auto& f32 = losses["fp32"];
  // Learning: ten classes start near log(10) = 2.3; 24 steps of SGD take it well below.
  EXPECT_LT(f32.back(), 0.75 * f32.front());
  for (const char* mode : {"fp16", "bf16"}) {
    const auto& l = losses[mode];
    EXPECT_NEAR(l.front(), f32.front(), 0.02 * f32.front()) << mode << ": the first step";
    EXPECT_LT(l.back(), 0.75 * l.front()) << mode << " learns too";
  }
}

TEST(ResNetModel, AmpKeepsActivationsAtMostSixTenthsOfFp32s) {
  const int act = int(MemCategory::Activations);
  std::map<std::string, std::int64_t> peak;
  for (const char* mode : {"fp32", "fp16", "bf16"}) {
    Trainer t(resnetRun(mode, 2));
    StepMetrics m;
    while (!t.finished()) m = t.step();
    peak[mode] = m.memory.peak[act];
  }
  EXPECT_LE(double(peak["fp16"]), 0.6 * double(peak["fp32"]));
  EXPECT_LE(double(peak["bf16"]), 0.6 * double(peak["fp32"]));
  EXPECT_GT(double(peak["fp16"]), 0.4 * double(peak["fp32"])) << "16 bits: about half, not less";
}

TEST(ResNetModel, MemoryEstimateIsWithinAQuarterOfTheMeasuredPeak) {
  for (const char* mode : {"fp32", "fp16"}) {
    RunConfig c = resnetRun(mode, 2);
    Trainer t(c);
    std::int64_t peak = 0;
    while (!t.finished()) peak = std::max(peak, t.step().memory.totalPeak);
    const double estimate = double(t.memoryEstimate().tracked());
    EXPECT_NEAR(estimate, double(peak), 0.25 * double(peak))
        << mode << ": estimate " << t.memoryEstimate().summary() << ", measured " << formatBytes(peak);
  }
}

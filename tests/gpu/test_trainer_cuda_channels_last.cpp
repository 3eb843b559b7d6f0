// ResNet-20 (the resnet preset's model, batch 64) trained on the GPU with channels-last
// activations, with them off (CudaBackend::setChannelsLast(false): every activation NCHW), and
// on the CPU. Our kernels give the same bits in both layouts, but cuDNN may choose another
// convolution algorithm for NHWC than for NCHW, so the GPU runs are held to the bounds the GPU
// suite holds the GPU to against the CPU (test_backend_ops_residual.cpp's TrainerCudaResNet):
// the first step's loss within 1e-4 relative in fp32 (TF32 off) and 1e-2 in fp16/bf16, the mean
// loss of the last steps within 3% / 6%. Histogram steps (the unfused residual path) and an
// evaluation (batch norm's running statistics) are on the way. Skips without a GPU, and where
// Fashion-MNIST is absent.
#include <cstdlib>
#include <filesystem>

#include "engine/backend/cuda_backend.h"
#include "engine/config/config_schema.h"
#include "engine/config/presets.h"
#include "engine/data/dataset.h"
#include "engine/amp/autocast.h"
#include "engine/nn/layer.h"
#include "engine/train/trainer.h"
#include "tests/gpu/gpu_test_support.h"

using namespace amp;

namespace {

std::string fashionMnist() {
  const char* dir = std::getenv("AMP_FASHION_MNIST_DIR");
  const std::string path = dir ? dir : kFashionMnistDir;
  return std::filesystem::exists(path) ? path : std::string();
}

RunConfig resnet20(const std::string& data, const char* mode) {
  RunConfig c = presetConfig(*findPreset("resnet"));
  for (const auto& [k, v] : std::vector<std::pair<std::string, std::string>>{
           {"data.path", data}, {"data.subset", "2048"}, {"data.test_subset", "256"},
           {"train.batch_size", "64"}, {"train.epochs", "0"}, {"train.steps", "30"},
           {"train.histogram_every", "10"}, {"train.eval_every", "30"},
           {"checkpoint.at_end", "false"}, {"amp.mode", mode}, {"seed", "5"}})
    setConfigValue(c, k, v);
  return c;
}

struct RunResult {
  std::vector<double> loss;
  std::optional<double> testLoss;
};

// runs: 0 = CPU, 1 = GPU with channels-last, 2 = GPU without.
RunResult train(const RunConfig& c, int which) {
  std::unique_ptr<Backend> be = makeBackend(which == 0 ? "cpu" : "cuda");
  if (which > 0) {
    auto& gpu = dynamic_cast<CudaBackend&>(*be);
    gpu.setChannelsLast(which == 1);
  }
  EXPECT_EQ(be->preferredImageFormat(),
            which == 1 ? MemoryFormat::ChannelsLast : MemoryFormat::Contiguous);
  Trainer t(c, std::move(be));
  RunResult r;
  while (!t.finished()) {
    const StepMetrics m = t.step();
    EXPECT_FALSE(m.skipped) << "step " << m.step;
    r.loss.push_back(m.loss);
    if (m.testLoss) r.testLoss = m.testLoss;
  }
  if (which > 0) {
    // The run really was in the format asked for: the model's first layer (the stem
    // convolution) writes its output in it.
    Autocast autocast;
    LayerContext ctx{t.backend(), autocast, false};
    const Tensor x = t.backend().zeros({2, 1, 28, 28}, DType::F32, MemCategory::Workspace);
    const Tensor y = t.model().layers().front()->forward(ctx, x);
    EXPECT_EQ(y.rank(), 4);
    EXPECT_EQ(y.format(), which == 1 ? MemoryFormat::ChannelsLast : MemoryFormat::Contiguous)
        << "the stem's output";
  }
  return r;
}

double mean(const std::vector<double>& v, std::size_t from) {
  double s = 0;
  for (std::size_t i = from; i < v.size(); ++i) s += v[i];
  return s / double(v.size() - from);
}

}  // namespace

TEST(TrainerCudaChannelsLast, ResNet20TracksBothTheNchwRunAndTheCpu) {
  AMP_SKIP_WITHOUT_GPU();
  const std::string data = fashionMnist();
  if (data.empty()) GTEST_SKIP() << "Fashion-MNIST is not here (set AMP_FASHION_MNIST_DIR)";
  {
    auto probe = makeBackend("cuda");
    if (probe->preferredImageFormat() != MemoryFormat::ChannelsLast)
      GTEST_SKIP() << "channels-last is switched off here (AMP_CUDA_DISABLE)";
  }
  for (const char* mode : {"fp32", "fp16", "bf16"}) {
    const RunConfig c = resnet20(data, mode);
    const RunResult cpu = train(c, 0), nhwc = train(c, 1), nchw = train(c, 2);
    ASSERT_EQ(nhwc.loss.size(), 30u) << mode;
    ASSERT_EQ(nchw.loss.size(), 30u) << mode;
    const bool f32 = std::string(mode) == "fp32";
    const double first = f32 ? 1e-4 : 1e-2, later = f32 ? 0.03 : 0.06;
    for (const auto& [other, label] : {std::pair{&nchw, "NCHW on the GPU"}, std::pair{&cpu, "the CPU"}}) {
      EXPECT_NEAR(nhwc.loss[0], other->loss[0], first * other->loss[0]) << mode << " vs " << label;
      EXPECT_NEAR(mean(nhwc.loss, 20), mean(other->loss, 20), later * mean(other->loss, 20))
          << mode << " vs " << label << ": mean loss of steps 21-30";
      ASSERT_TRUE(nhwc.testLoss && other->testLoss) << mode;
      EXPECT_NEAR(*nhwc.testLoss, *other->testLoss, 0.05 * *other->testLoss) << mode << " vs " << label;
    }
    EXPECT_LT(mean(nhwc.loss, 20), 0.9 * nhwc.loss[0]) << mode << ": it learns";
  }
}

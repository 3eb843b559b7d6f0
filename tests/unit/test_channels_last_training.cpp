// The engine's channels-last plumbing, checked exactly on the CPU: CpuBackend's channels-last
// emulation (setChannelsLastEmulation) prefers ChannelsLast images as the CUDA backend does, and
// runs each image op on NCHW copies, so a model must give the same bits with it on and off. Any
// layer that mixed up a format (a flatten of NHWC bytes, a residual add of two layouts, a
// gradient handed back in another format and read as its own) changes a loss, a gradient or a
// weight here. Covered: a CNN (conv with bias, batch norm, ReLU, dropout, max pooling, Flatten,
// Linear) and a residual stack (projection and identity blocks, global average pooling) driven
// layer by layer in fp32 and under fp16/bf16 autocast, with and without an observer (the
// unfused residual path); and whole Trainer runs of the ResNet and Fashion-MNIST CNN presets in
// fp32, fp16 and bf16 (losses, gradient norms, histograms, evaluation, gradients, weights,
// batch-norm statistics), skipped where Fashion-MNIST is not installed.
#include <gtest/gtest.h>

#include <array>
#include <filesystem>
#include <memory>

#include "engine/backend/cpu_backend.h"
#include "engine/config/config_schema.h"
#include "engine/config/presets.h"
#include "engine/data/dataset.h"
#include "engine/nn/activation_layer.h"
#include "engine/nn/batch_norm.h"
#include "engine/nn/conv2d.h"
#include "engine/nn/dropout.h"
#include "engine/nn/global_avg_pool.h"
#include "engine/nn/linear.h"
#include "engine/nn/max_pool2d.h"
#include "engine/nn/residual_block.h"
#include "engine/nn/sequential.h"
#include "engine/train/trainer.h"
#include "test_support.h"

namespace amp {
namespace {

// Activation histograms as the trainer's observer takes them, plus the formats it saw.
class RecordingObserver final : public TensorObserver {
 public:
  explicit RecordingObserver(Backend& be) : m_be(be) {}
  void activation(const std::string& layer, const Tensor& y) override { record(layer, y); }
  void activationGrad(const std::string& layer, const Tensor& dy) override { record(layer, dy); }
  std::vector<std::array<std::int64_t, kHistBins>> counts;
  int channelsLastSeen = 0;

 private:
  void record(const std::string&, const Tensor& t) {
    counts.push_back(m_be.histogram(t, 1.0).counts);
    channelsLastSeen += t.channelsLast();
  }
  Backend& m_be;
};

std::unique_ptr<Sequential> cnn() {
  auto net = std::make_unique<Sequential>();
  net->add(std::make_unique<Conv2d>(3, 8, 3, 1));  // with a bias
  net->add(std::make_unique<BatchNorm>(8));
  net->add(std::make_unique<ActivationLayer>(Activation::ReLU));
  net->add(std::make_unique<Dropout>(0.2));
  net->add(std::make_unique<MaxPool2d>(2, 2));
  net->add(std::make_unique<Conv2d>(8, 12, 3, 1, 2));
  net->add(std::make_unique<ActivationLayer>(Activation::GELU));
  net->add(std::make_unique<Flatten>());
  net->add(std::make_unique<Linear>(12 * 3 * 3, 10));
  return net;
}

std::unique_ptr<Sequential> residual() {
  auto net = std::make_unique<Sequential>();
  // Batch norm on the contiguous input, then an identity block: its shortcut carries a
  // contiguous map while its branch is channels-last (the block must bring them together,
  // forward and backward), and the batch norm gets its gradient back channels-last.
  net->add(std::make_unique<BatchNorm>(3));
  net->add(std::make_unique<ResidualBlock>(3, 3, 1));
  net->add(std::make_unique<ResidualBlock>(3, 8, 2));
  net->add(std::make_unique<ResidualBlock>(8, 8, 1));
  net->add(std::make_unique<GlobalAvgPool>());
  net->add(std::make_unique<Linear>(8, 10));
  return net;
}

struct LayerRun {
  std::vector<std::vector<std::uint8_t>> outputs, grads, buffers;
  std::vector<std::array<std::int64_t, kHistBins>> histograms;
  int channelsLastSeen = 0;
};

// Two training steps (forward, backward) of a fresh model on fixed data.
LayerRun runLayers(std::unique_ptr<Sequential> (*build)(), bool emulate, DType autocastDtype,
                   bool observe) {
  CpuBackend be;
  be.setChannelsLastEmulation(emulate);
  auto net = build();
  net->initialize(be, 5, DType::F32, MemCategory::Weights);
  Autocast ac;
  RecordingObserver observer(be);
  LayerContext ctx{be, ac};
  ctx.observer = observe ? &observer : nullptr;
  LayerRun run;
  for (int step = 0; step < 2; ++step) {
    ctx.stepSeed = 40 + step;
    const Tensor x = be.fromHost(test::randomVec(4 * 3 * 12 * 12, 60 + step), {4, 3, 12, 12},
                                 DType::F32, MemCategory::Activations);
    Tensor logits;
    {
      AutocastRegion region(ac, autocastDtype != DType::F32, autocastDtype == DType::F32 ? DType::F16 : autocastDtype);
      logits = net->forward(ctx, x);
    }
    run.outputs.push_back(be.toHostBytes(logits));
    const Tensor dy = be.fromHost(test::randomVec(logits.numel(), 70 + step), logits.shape(),
                                  logits.dtype(), MemCategory::Activations);
    net->backward(ctx, dy);
  }
  for (Parameter* p : net->parameters()) run.grads.push_back(be.toHostBytes(p->grad));
  for (auto& [name, t] : net->buffers()) run.buffers.push_back(be.toHostBytes(*t));
  run.histograms = observer.counts;
  run.channelsLastSeen = observer.channelsLastSeen;
  return run;
}

void expectSameLayerRuns(std::unique_ptr<Sequential> (*build)(), const char* model) {
  for (DType d : {DType::F32, DType::F16, DType::BF16})
    for (bool observe : {false, true}) {
      const std::string what = std::string(model) + " " + std::string(dtypeName(d)) +
                               (observe ? " observed" : "");
      const LayerRun off = runLayers(build, false, d, observe);
      const LayerRun on = runLayers(build, true, d, observe);
      EXPECT_EQ(off.outputs, on.outputs) << what << ": logits";
      EXPECT_EQ(off.grads, on.grads) << what << ": parameter gradients";
      EXPECT_EQ(off.buffers, on.buffers) << what << ": batch-norm statistics";
      EXPECT_EQ(off.histograms, on.histograms) << what << ": observed histograms";
      if (observe) {
        // Not vacuous: the emulated run did carry channels-last activations, the other none.
        EXPECT_EQ(off.channelsLastSeen, 0) << what;
        EXPECT_GT(on.channelsLastSeen, 10) << what;
      }
    }
}

TEST(ChannelsLastTraining, CnnLayersGiveTheSameBitsWithTheEmulation) {
  expectSameLayerRuns(cnn, "cnn");
}

TEST(ChannelsLastTraining, ResidualLayersGiveTheSameBitsWithTheEmulation) {
  expectSameLayerRuns(residual, "residual");
}

// ---- whole runs through the Trainer ---------------------------------------------------------

struct TrainerRun {
  std::vector<StepMetrics> steps;
  std::vector<std::vector<std::uint8_t>> weights, grads, buffers;
};

TrainerRun train(const RunConfig& c, bool emulate) {
  auto be = std::make_unique<CpuBackend>();
  be->setChannelsLastEmulation(emulate);
  Trainer t(c, std::move(be));
  TrainerRun r;
  while (!t.finished()) r.steps.push_back(t.step());
  for (Parameter* p : t.model().parameters()) {
    r.weights.push_back(t.backend().toHostBytes(p->value));
    if (p->grad.defined()) r.grads.push_back(t.backend().toHostBytes(p->grad));
  }
  for (auto& [name, b] : t.model().buffers()) r.buffers.push_back(t.backend().toHostBytes(*b));
  return r;
}

void expectSameTrainerRuns(const RunConfig& c, const std::string& what) {
  const TrainerRun off = train(c, false), on = train(c, true);
  ASSERT_EQ(off.steps.size(), on.steps.size()) << what;
  int evaluated = 0, histogramSteps = 0;
  for (std::size_t i = 0; i < off.steps.size(); ++i) {
    const StepMetrics &a = off.steps[i], &b = on.steps[i];
    const std::string at = what + " step " + std::to_string(i + 1);
    EXPECT_EQ(a.loss, b.loss) << at;
    EXPECT_EQ(a.gradNorm, b.gradNorm) << at;
    EXPECT_EQ(a.skipped, b.skipped) << at;
    EXPECT_EQ(a.scaleAfter, b.scaleAfter) << at;
    EXPECT_EQ(a.lostUpdateFrac, b.lostUpdateFrac) << at;
    EXPECT_EQ(a.testLoss, b.testLoss) << at;
    EXPECT_EQ(a.testAcc, b.testAcc) << at;
    evaluated += a.testLoss.has_value();
    ASSERT_EQ(a.histograms.size(), b.histograms.size()) << at;
    histogramSteps += !a.histograms.empty();
    for (std::size_t h = 0; h < a.histograms.size(); ++h) {
      EXPECT_EQ(a.histograms[h].tensor, b.histograms[h].tensor) << at;
      EXPECT_EQ(a.histograms[h].scaled.counts, b.histograms[h].scaled.counts)
          << at << " " << a.histograms[h].tensor;
      EXPECT_EQ(a.histograms[h].flushedToZero, b.histograms[h].flushedToZero)
          << at << " " << a.histograms[h].tensor;
    }
  }
  EXPECT_GT(evaluated, 0) << what << ": the evaluation ran (batch norm's eval path)";
  EXPECT_GT(histogramSteps, 0) << what << ": histogram steps ran (the unfused paths)";
  EXPECT_EQ(off.weights, on.weights) << what << ": weights";
  EXPECT_EQ(off.grads, on.grads) << what << ": gradients";
  EXPECT_EQ(off.buffers, on.buffers) << what << ": batch-norm statistics";
}

std::string fashionMnist() {
  return std::filesystem::exists(kFashionMnistDir) ? kFashionMnistDir : std::string();
}

RunConfig presetRun(const char* preset, const char* mode) {
  RunConfig c = presetConfig(*findPreset(preset));
  for (const auto& [k, v] : std::vector<std::pair<std::string, std::string>>{
           {"amp.mode", mode}, {"data.subset", "96"}, {"data.test_subset", "32"},
           {"train.batch_size", "16"}, {"train.epochs", "0"}, {"train.steps", "4"},
           {"train.histogram_every", "2"}, {"train.eval_every", "4"},
           {"checkpoint.at_end", "false"}, {"seed", "11"}})
    setConfigValue(c, k, v);
  return c;
}

TEST(ChannelsLastTraining, ResNetPresetTrainsToTheSameBitsWithTheEmulation) {
  if (fashionMnist().empty()) GTEST_SKIP() << "Fashion-MNIST is not installed in " << kFashionMnistDir;
  for (const char* mode : {"fp32", "fp16", "bf16"}) {
    RunConfig c = presetRun("resnet", mode);
    setConfigValue(c, "model.depth", "8");  // ResNet-8: every kind of block, a CPU-test's cost
    expectSameTrainerRuns(c, std::string("resnet ") + mode);
  }
}

TEST(ChannelsLastTraining, FashionCnnPresetTrainsToTheSameBitsWithTheEmulation) {
  if (fashionMnist().empty()) GTEST_SKIP() << "Fashion-MNIST is not installed in " << kFashionMnistDir;
  for (const char* mode : {"fp32", "fp16", "bf16"})
    expectSameTrainerRuns(presetRun("fmnist-cnn", mode), std::string("fmnist-cnn ") + mode);
}

}  // namespace
}  // namespace amp

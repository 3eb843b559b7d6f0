// Convolutional runs on the CUDA backend beside the CPU one (issue 11): the Fashion-MNIST CNN
// (cuDNN convolutions, our pooling and batch norm) tracks the CPU's loss within stated bounds;
// on the overflow settings with a CNN both backends skip exactly the same steps; and a run's
// state moved between trainers the way checkpoints move it (parameter, buffer and optimizer
// bytes, optimizer scalars, the scaler's state dict, the loader's progress) resumes bit for bit
// on the GPU and carries the weights intact between the GPU and the CPU. The zip layer itself
// needs Qt, which this suite has not; its byte-level round trip is tested on the CPU
// (tests/unit/test_checkpoint.cpp). Skips without a GPU, and where Fashion-MNIST is absent.
#include <cstdlib>
#include <filesystem>
#include <map>

#include "engine/config/config_schema.h"
#include "engine/config/presets.h"
#include "engine/data/dataset.h"
#include "engine/train/trainer.h"
#include "tests/gpu/gpu_test_support.h"
#include "tests/gpu/trainer_state_support.h"

using namespace amp;
using amp::gpu_test::moveState;

namespace {

using Overrides = std::vector<std::pair<std::string, std::string>>;

// The four IDX .gz files: Debian's dataset-fashion-mnist, or a folder carried to the GPU machine
// and named by AMP_FASHION_MNIST_DIR. Empty when absent.
std::string fashionMnist() {
  const char* dir = std::getenv("AMP_FASHION_MNIST_DIR");
  const std::string path = dir ? dir : kFashionMnistDir;
  return std::filesystem::exists(path) ? path : std::string();
}

#define AMP_NEED_FMNIST(path)                                                   \
  const std::string path = fashionMnist();                                      \
  if (path.empty()) GTEST_SKIP() << "Fashion-MNIST is not here (set AMP_FASHION_MNIST_DIR)"

RunConfig cnn(const std::string& backend, const std::string& data, const Overrides& o = {}) {
  RunConfig c = presetConfig(*findPreset("fmnist-cnn"));
  setConfigValue(c, "backend", backend);
  setConfigValue(c, "data.path", data);
  setConfigValue(c, "train.histogram_every", "0");
  setConfigValue(c, "train.eval_every", "0");
  for (const auto& [k, v] : o) setConfigValue(c, k, v);
  return c;
}

std::vector<StepMetrics> steps(Trainer& t, int n) {
  std::vector<StepMetrics> out;
  while (!t.finished() && static_cast<int>(out.size()) < n) out.push_back(t.step());
  return out;
}

double meanLoss(const std::vector<StepMetrics>& m, std::size_t from, std::size_t to) {
  double s = 0;
  for (std::size_t i = from; i < to; ++i) s += m[i].loss;
  return s / double(to - from);
}

void expectSameWeights(Trainer& a, Trainer& b, const std::string& what) {
  const auto pa = a.model().parameters();
  const auto pb = b.model().parameters();
  ASSERT_EQ(pa.size(), pb.size());
  for (std::size_t i = 0; i < pa.size(); ++i)
    EXPECT_EQ(a.backend().toHostBytes(pa[i]->value), b.backend().toHostBytes(pb[i]->value))
        << what << ": " << pa[i]->name;
  const auto ba = a.model().buffers();
  const auto bb = b.model().buffers();
  for (std::size_t i = 0; i < ba.size() && i < bb.size(); ++i)
    EXPECT_EQ(a.backend().toHostBytes(*ba[i].second), b.backend().toHostBytes(*bb[i].second))
        << what << ": " << ba[i].first;
}

}  // namespace

// Stated bounds. Step 1 computes the loss of identical weights on identical data: fp32 within
// 1e-5 relative (cuDNN and oneDNN sum the convolutions in other orders; TF32 off), fp16/bf16
// within 1e-2 (an fp32 sum a few ulps apart can round a 16-bit activation the other way, and
// max-pool then picks another element). Over 300 Adam steps the two trajectories part like any
// two runs with rounding-level differences: the mean loss of each 50-step window within 5%
// relative (fp32 2%) of the CPU's, and both must learn (last window under half the first step).
TEST(TrainerCudaCnn, FashionMnistCnnTracksTheCpuInEveryMode) {
  AMP_SKIP_WITHOUT_GPU();
  AMP_NEED_FMNIST(data);
  for (const char* mode : {"fp32", "fp16", "bf16"}) {
    const bool f32 = std::string(mode) == "fp32";
    Trainer tc(cnn("cpu", data, {{"amp.mode", mode}}));
    Trainer tg(cnn("cuda", data, {{"amp.mode", mode}}));
    ASSERT_EQ(tg.backend().name().rfind("cuda", 0), 0u);
    const auto cpu = steps(tc, 300), gpu = steps(tg, 300);
    ASSERT_EQ(cpu.size(), 300u);
    ASSERT_EQ(gpu.size(), 300u);
    EXPECT_NEAR(gpu[0].loss, cpu[0].loss, (f32 ? 1e-5 : 1e-2) * cpu[0].loss) << mode;
    for (std::size_t w = 0; w < 300; w += 50) {
      const double c = meanLoss(cpu, w, w + 50), g = meanLoss(gpu, w, w + 50);
      EXPECT_NEAR(g, c, (f32 ? 0.02 : 0.05) * c) << mode << " steps " << w + 1 << "-" << w + 50;
    }
    EXPECT_LT(meanLoss(gpu, 250, 300), 0.5 * gpu[0].loss) << mode;
    EXPECT_EQ(tg.evaluate().samples, tc.evaluate().samples);
  }
}

// BatchNorm (training statistics, running estimates, eval mode) and dropout in the CNN: the
// same bounds as above over 100 steps, and the evaluation (running statistics) within 5%.
TEST(TrainerCudaCnn, BatchNormAndDropoutTrackTheCpu) {
  AMP_SKIP_WITHOUT_GPU();
  AMP_NEED_FMNIST(data);
  for (const char* mode : {"fp32", "fp16"}) {
    const Overrides o{{"amp.mode", mode}, {"model.batchnorm", "true"}, {"model.dropout", "0.25"}};
    Trainer tc(cnn("cpu", data, o));
    Trainer tg(cnn("cuda", data, o));
    const auto cpu = steps(tc, 100), gpu = steps(tg, 100);
    ASSERT_EQ(gpu.size(), cpu.size());
    const bool f32 = std::string(mode) == "fp32";
    EXPECT_NEAR(gpu[0].loss, cpu[0].loss, (f32 ? 1e-5 : 1e-2) * cpu[0].loss) << mode;
    for (std::size_t w = 0; w < 100; w += 50)
      EXPECT_NEAR(meanLoss(gpu, w, w + 50), meanLoss(cpu, w, w + 50), 0.05 * meanLoss(cpu, w, w + 50))
          << mode << " window " << w;
    const EvalResult ec = tc.evaluate(), eg = tg.evaluate();
    EXPECT_NEAR(eg.loss, ec.loss, 0.05 * ec.loss) << mode;
  }
}

// Real fp16 overflow in a CNN: an initial scale of 2^40 overflows the convolutions' gradients
// until the scaler has backed off far enough, and injected infs at steps 30, 31 and 90 force
// three more skips. found_inf, the skip and the scale rule are decided on each backend from its
// own gradients: the same steps must be skipped with the same scales and growth trackers.
TEST(TrainerCudaCnn, OverflowWithACnnSkipsTheSameSteps) {
  AMP_SKIP_WITHOUT_GPU();
  AMP_NEED_FMNIST(data);
  const Overrides o{{"amp.mode", "fp16"},          {"scaler.init_scale", "1099511627776"},
                    {"scaler.growth_interval", "20"}, {"train.inject_nonfinite", "30,31,90"},
                    {"optimizer.name", "sgd"},     {"optimizer.lr", "0.01"}};
  Trainer tc(cnn("cpu", data, o));
  Trainer tg(cnn("cuda", data, o));
  const auto cpu = steps(tc, 120), gpu = steps(tg, 120);
  ASSERT_EQ(cpu.size(), gpu.size());
  int skipped = 0;
  for (std::size_t i = 0; i < cpu.size(); ++i) {
    EXPECT_EQ(gpu[i].skipped, cpu[i].skipped) << "step " << i + 1;
    EXPECT_EQ(gpu[i].scale, cpu[i].scale) << "step " << i + 1;
    EXPECT_EQ(gpu[i].scaleAfter, cpu[i].scaleAfter) << "step " << i + 1;
    EXPECT_EQ(gpu[i].growthTracker, cpu[i].growthTracker) << "step " << i + 1;
    skipped += gpu[i].skipped;
  }
  EXPECT_GE(skipped, 3 + 10);  // the injections, and at least 10 backoffs from 2^40
  EXPECT_TRUE(gpu[29].skipped && gpu[30].skipped && gpu[89].skipped);
}

// A GPU run moved at step 20 into a fresh GPU trainer continues exactly as the uninterrupted run:
// the weights and buffers bit for bit, the scaler's decisions equal, the losses equal up to the
// order of the loss's double sum (1e-12 relative). BatchNorm, dropout, Adam and fp16 with a
// dynamic scale: every piece of state a checkpoint carries.
TEST(TrainerCudaCnn, StateMovedOnTheGpuResumesBitForBit) {
  AMP_SKIP_WITHOUT_GPU();
  AMP_NEED_FMNIST(data);
  const Overrides o{{"amp.mode", "fp16"}, {"model.batchnorm", "true"}, {"model.dropout", "0.25"},
                    {"train.inject_nonfinite", "25"}};
  Trainer whole(cnn("cuda", data, o));
  const auto ref = steps(whole, 40);
  Trainer first(cnn("cuda", data, o));
  steps(first, 20);
  Trainer resumed(cnn("cuda", data, o));
  moveState(first, resumed);
  const auto rest = steps(resumed, 20);
  ASSERT_EQ(rest.size(), 20u);
  for (std::size_t i = 0; i < rest.size(); ++i) {
    const StepMetrics& r = ref[20 + i];
    EXPECT_EQ(rest[i].step, r.step);
    EXPECT_NEAR(rest[i].loss, r.loss, 1e-12 * std::fabs(r.loss)) << "step " << r.step;
    EXPECT_EQ(rest[i].skipped, r.skipped) << "step " << r.step;
    EXPECT_EQ(rest[i].scaleAfter, r.scaleAfter) << "step " << r.step;
  }
  expectSameWeights(whole, resumed, "resumed on the GPU");
}

// Between backends: the weights arrive intact (the same bytes), in both directions, and the run
// continues on the other backend within the CNN's bounds above.
TEST(TrainerCudaCnn, StateMovesBetweenGpuAndCpuWithTheWeightsIntact) {
  AMP_SKIP_WITHOUT_GPU();
  AMP_NEED_FMNIST(data);
  const Overrides o{{"amp.mode", "bf16"}, {"model.batchnorm", "true"}};
  for (const auto& [fromName, toName] : {std::pair{"cuda", "cpu"}, std::pair{"cpu", "cuda"}}) {
    const std::string what = std::string(fromName) + " -> " + toName;
    Trainer from(cnn(fromName, data, o));
    steps(from, 15);
    Trainer to(cnn(toName, data, o));
    moveState(from, to);
    expectSameWeights(from, to, what);
    EXPECT_EQ(to.stepsDone(), 15) << what;
    const auto a = steps(from, 10), b = steps(to, 10);
    ASSERT_EQ(a.size(), b.size());
    EXPECT_NEAR(b[0].loss, a[0].loss, 1e-2 * a[0].loss) << what;
    EXPECT_NEAR(meanLoss(b, 0, 10), meanLoss(a, 0, 10), 0.05 * meanLoss(a, 0, 10)) << what;
  }
}

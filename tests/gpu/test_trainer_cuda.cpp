// Whole training runs on the CPU and the CUDA backend side by side. Exact: the overflow preset's
// skipped steps and its scale / growth-tracker sequence (the decisions come from found_inf and
// the shared scale rule). Within stated bounds: the loss curves of the recipe and fmnist-mlp in
// fp32, fp16 and bf16 (cuBLAS sums in another order than oneDNN, and fp16/bf16 roundings then
// amplify the difference). Pure fp16 loses updates on both. Skips without a GPU.
#include <cstdlib>
#include <filesystem>

#include "engine/config/config_schema.h"
#include "engine/config/presets.h"
#include "engine/data/dataset.h"
#include "engine/train/trainer.h"
#include "tests/gpu/gpu_test_support.h"

using namespace amp;

namespace {

RunConfig preset(const std::string& name, const std::string& backend,
                 const std::vector<std::pair<std::string, std::string>>& overrides = {}) {
  const Preset* p = findPreset(name);
  if (!p) throw std::invalid_argument("no preset " + name);
  RunConfig c = presetConfig(*p);
  setConfigValue(c, "backend", backend);
  setConfigValue(c, "train.histogram_every", "0");
  setConfigValue(c, "train.eval_every", "0");
  for (const auto& [k, v] : overrides) setConfigValue(c, k, v);
  return c;
}

std::vector<StepMetrics> runAll(const RunConfig& c, int maxSteps) {
  Trainer t(c);
  std::vector<StepMetrics> out;
  while (!t.finished() && static_cast<int>(out.size()) < maxSteps) out.push_back(t.step());
  return out;
}

void expectLossTracks(const std::vector<StepMetrics>& cpu, const std::vector<StepMetrics>& gpu,
                      double rel, const std::string& what) {
  ASSERT_EQ(cpu.size(), gpu.size()) << what;
  for (std::size_t i = 0; i < cpu.size(); ++i)
    EXPECT_NEAR(gpu[i].loss, cpu[i].loss, rel * std::fabs(cpu[i].loss)) << what << " step " << i + 1;
}

}  // namespace

TEST(TrainerCuda, OverflowPresetSkipsTheSameStepsWithTheSameScales) {
  AMP_SKIP_WITHOUT_GPU();
  const auto cpu = runAll(preset("overflow", "cpu"), 140);
  const auto gpu = runAll(preset("overflow", "cuda"), 140);
  ASSERT_EQ(cpu.size(), gpu.size());
  int skipped = 0;
  for (std::size_t i = 0; i < cpu.size(); ++i) {
    EXPECT_EQ(cpu[i].skipped, gpu[i].skipped) << "step " << i + 1;
    EXPECT_EQ(cpu[i].scale, gpu[i].scale) << "step " << i + 1;
    EXPECT_EQ(cpu[i].scaleAfter, gpu[i].scaleAfter) << "step " << i + 1;
    EXPECT_EQ(cpu[i].growthTracker, gpu[i].growthTracker) << "step " << i + 1;
    EXPECT_EQ(cpu[i].scaleEvent, gpu[i].scaleEvent) << "step " << i + 1;
    EXPECT_EQ(cpu[i].firstNonFinite, gpu[i].firstNonFinite) << "step " << i + 1;
    skipped += gpu[i].skipped;
  }
  EXPECT_GE(skipped, 3);  // the injected steps 30, 31 and 90
}

TEST(TrainerCuda, EveryScalerVariantDecidesAsTheCpu) {
  AMP_SKIP_WITHOUT_GPU();
  for (const char* kind : {"dynamic", "static", "none", "apex_dynamic", "hysteresis"}) {
    const std::vector<std::pair<std::string, std::string>> o{
        {"scaler.kind", kind}, {"scaler.growth_interval", "5"}, {"train.clip_norm", "1.0"},
        {"train.accumulation", "2"}};
    const auto cpu = runAll(preset("overflow", "cpu", o), 40);
    const auto gpu = runAll(preset("overflow", "cuda", o), 40);
    ASSERT_EQ(cpu.size(), gpu.size()) << kind;
    for (std::size_t i = 0; i < cpu.size(); ++i) {
      EXPECT_EQ(cpu[i].skipped, gpu[i].skipped) << kind << " step " << i + 1;
      EXPECT_EQ(cpu[i].scaleAfter, gpu[i].scaleAfter) << kind << " step " << i + 1;
      EXPECT_EQ(cpu[i].growthTracker, gpu[i].growthTracker) << kind << " step " << i + 1;
    }
  }
}

// Stated bounds, relative to the CPU's loss at every step: fp32 1e-4 (summation order only, TF32
// off), fp16 and bf16 2e-2 (a different fp32 sum can round a 16-bit activation the other way).
TEST(TrainerCuda, RecipeTracksTheCpuLossInEveryMode) {
  AMP_SKIP_WITHOUT_GPU();
  for (const char* mode : {"fp32", "fp16", "bf16"}) {
    const std::vector<std::pair<std::string, std::string>> o{
        {"amp.mode", mode}, {"model.width", "256"}, {"train.batch_size", "128"}};
    const auto cpu = runAll(preset("recipe", "cpu", o), 30);
    const auto gpu = runAll(preset("recipe", "cuda", o), 30);
    expectLossTracks(cpu, gpu, std::string(mode) == "fp32" ? 1e-4 : 2e-2, std::string("recipe ") + mode);
  }
}

TEST(TrainerCuda, FashionMnistMlpTracksTheCpuLoss) {
  AMP_SKIP_WITHOUT_GPU();
  // The four IDX .gz files: Debian's dataset-fashion-mnist, or a folder carried to the GPU
  // machine and named by AMP_FASHION_MNIST_DIR.
  const char* dir = std::getenv("AMP_FASHION_MNIST_DIR");
  const std::string path = dir ? dir : kFashionMnistDir;
  if (!std::filesystem::exists(path)) GTEST_SKIP() << "Fashion-MNIST is not in " << path;
  for (const char* mode : {"fp32", "fp16", "bf16"}) {
    const std::vector<std::pair<std::string, std::string>> o{{"amp.mode", mode}, {"data.path", path}};
    const auto cpu = runAll(preset("fmnist-mlp", "cpu", o), 50);
    const auto gpu = runAll(preset("fmnist-mlp", "cuda", o), 50);
    expectLossTracks(cpu, gpu, std::string(mode) == "fp32" ? 1e-3 : 3e-2, std::string("fmnist-mlp ") + mode);
  }
}

TEST(TrainerCuda, PureFp16LosesUpdatesAsOnTheCpu) {
  AMP_SKIP_WITHOUT_GPU();
  const auto cpu = runAll(preset("pure-fp16", "cpu"), 20);
  const auto gpu = runAll(preset("pure-fp16", "cuda"), 20);
  ASSERT_EQ(cpu.size(), gpu.size());
  double lostCpu = 0, lostGpu = 0;
  for (std::size_t i = 0; i < cpu.size(); ++i) {
    lostCpu += cpu[i].lostUpdateFrac;
    lostGpu += gpu[i].lostUpdateFrac;
  }
  EXPECT_GT(lostGpu, 0.0);
  EXPECT_NEAR(lostGpu, lostCpu, 0.05 * lostCpu + 1e-9);
}

TEST(TrainerCuda, ConvolutionalModelsAreRefusedOrFallBack) {
  AMP_SKIP_WITHOUT_GPU();
  try {
    Trainer t(preset("fmnist-cnn", "cuda"));
    ADD_FAILURE() << "the CNN preset was accepted on the CUDA backend";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("issue 11"), std::string::npos) << e.what();
  } catch (const std::exception&) {
    // data missing here: also a refusal, but not the one under test
  }
  EXPECT_EQ(resolveBackendName("auto"), "cuda");
}

// Whole-step CUDA graphs on the models the recipe tests do not reach: the GPT (embedding,
// layer norm, attention, the tied output layer), evaluations between replays (eager work that
// allocates and frees between two replays of the same graph), a ResNet in fp16 with
// channels-last activations (NHWC cuDNN calls, batch norm and overflow skips inside a graph), and
// the GPT at the target shape (context 1024, 768 wide, batch 32: tensors past 2^31 bytes).
// The reference is the eager run on the same GPU, bit for bit for every weight (see
// test_step_graph_cuda.cpp for why losses agree within 1e-12), and at the target shape the CPU
// backend for the first step's loss. Skips without a GPU, the corpus or Fashion-MNIST.
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "engine/backend/cuda_backend.h"
#include "engine/config/config_schema.h"
#include "engine/config/presets.h"
#include "engine/data/dataset.h"
#include "engine/train/trainer.h"
#include "tests/gpu/gpu_test_support.h"
#include "tests/gpu/step_graph_support.h"

using namespace amp;
using namespace amp::step_graph_test;

namespace {

// The GPT's text: AMP_GPT_CORPUS (the GPU check packs Debian's fortunes file and names it),
// else Debian's fortunes where installed. Empty where neither is here.
std::string gptCorpus() {
  const char* env = std::getenv("AMP_GPT_CORPUS");
  const std::string path = env ? env : "/usr/share/games/fortunes/fortunes";
  return std::filesystem::exists(path) ? path : std::string();
}

std::string fashionMnist() {
  const char* dir = std::getenv("AMP_FASHION_MNIST_DIR");
  const std::string path = dir ? dir : kFashionMnistDir;
  return std::filesystem::exists(path) ? path : std::string();
}

RunConfig gpt(const std::string& corpus, const Overrides& o) {
  RunConfig c = presetConfig(*findPreset("gpt"));
  for (const auto& [k, v] : Overrides{{"backend", "cuda"}, {"data.path", corpus},
                                      {"model.layers", "2"}, {"model.heads", "2"},
                                      {"model.embd", "64"}, {"model.block", "64"},
                                      {"train.batch_size", "8"}, {"train.steps", "40"},
                                      {"train.histogram_every", "0"}, {"train.eval_every", "0"}})
    setConfigValue(c, k, v);
  for (const auto& [k, v] : o) setConfigValue(c, k, v);
  return c;
}

}  // namespace

// The transformer's kernels inside a graph: every AMP mode, with a scaler, and with a clip.
TEST(StepGraphCudaModels, GptReplaysGiveTheEagerRunBitForBit) {
  AMP_SKIP_WITHOUT_GPU();
  const std::string corpus = gptCorpus();
  if (corpus.empty()) GTEST_SKIP() << "no text corpus (set AMP_GPT_CORPUS or install fortunes)";
  const std::vector<std::pair<std::string, Overrides>> variants{
      {"gpt fp32", {{"amp.mode", "fp32"}}},
      {"gpt fp16 dynamic scaler", {{"amp.mode", "fp16"}}},
      {"gpt bf16", {{"amp.mode", "bf16"}}},
      {"gpt fp16 clip", {{"amp.mode", "fp16"}, {"train.clip_norm", "1"}}},
  };
  for (const auto& [what, o] : variants) {
    const RunConfig c = gpt(corpus, o);
    const GraphRun eager = run(c, 30, false), graph = run(c, 30, true);
    expectSameRun(eager, graph, what);
    EXPECT_EQ(count(graph.how, "captured"), 1) << what;
    EXPECT_GE(count(graph.how, "replayed"), 25) << what;
  }
}

// Evaluations every 7 steps between replays: eager work that allocates and frees while a graph
// holds its memory. The replays after each must still give the eager run's weights, and each
// evaluation the eager run's test loss.
TEST(StepGraphCudaModels, EvaluationsBetweenReplaysLeaveTheRunUnchanged) {
  AMP_SKIP_WITHOUT_GPU();
  const std::string corpus = gptCorpus();
  if (corpus.empty()) GTEST_SKIP() << "no text corpus (set AMP_GPT_CORPUS or install fortunes)";
  for (const char* mode : {"fp16", "bf16"}) {
    const RunConfig c = gpt(corpus, {{"amp.mode", mode}, {"train.eval_every", "7"}});
    const GraphRun eager = run(c, 30, false), graph = run(c, 30, true);
    expectSameRun(eager, graph, std::string("gpt eval ") + mode);
    int evaluated = 0;
    for (const auto& m : graph.steps) evaluated += m.testLoss.has_value();
    EXPECT_GE(evaluated, 4) << mode;
    EXPECT_GE(count(graph.how, "replayed"), 20) << mode << ": evaluation does not drop the graph";
  }
}

// fp16 with channels-last under graphs: NHWC convolutions and batch norm captured, skipped steps
// (an injected overflow, then the scale's own backoff) between replays.
TEST(StepGraphCudaModels, Fp16ChannelsLastResNetReplaysGiveTheEagerRun) {
  AMP_SKIP_WITHOUT_GPU();
  const std::string data = fashionMnist();
  if (data.empty()) GTEST_SKIP() << "Fashion-MNIST is not here (set AMP_FASHION_MNIST_DIR)";
  RunConfig c;
  for (const auto& [k, v] : Overrides{
           {"backend", "cuda"}, {"model.name", "resnet"}, {"model.depth", "8"},
           {"model.base_width", "8"}, {"data.name", "fmnist"}, {"data.path", data},
           {"data.subset", "1024"}, {"data.test_subset", "256"}, {"data.normalize", "standard"},
           {"train.batch_size", "64"}, {"train.steps", "30"}, {"train.histogram_every", "0"},
           {"train.eval_every", "10"}, {"optimizer.name", "sgd"}, {"optimizer.lr", "0.1"},
           {"optimizer.momentum", "0.9"}, {"amp.mode", "fp16"},
           {"scaler.init_scale", "1048576"}, {"scaler.growth_interval", "4"},
           {"train.inject_nonfinite", "12"}})
    setConfigValue(c, k, v);
  const GraphRun eager = run(c, 30, false, 1), graph = run(c, 30, true, 1);
  expectSameRun(eager, graph, "resnet fp16 channels-last");
  int skipped = 0;
  for (const auto& m : graph.steps) skipped += m.skipped;
  EXPECT_GE(skipped, 1) << "the injected overflow";
  EXPECT_GE(count(graph.how, "replayed"), 15);
}

// The GPT at the target shape (context 1024, 768 wide, 12 heads, batch 32; one block, so the
// CPU can afford the reference): 32,768 rows in the loss, attention scores of 32 x 12 x 1024 x
// 1024 values (1.6 GB in fp32: byte offsets past 2^31). The first step's loss against the CPU's
// (the same initial weights and batch), then eager against replayed steps on the GPU.
TEST(StepGraphCudaModels, GptAtTheTargetShapeMatchesTheCpuAndReplays) {
  AMP_SKIP_WITHOUT_GPU();
  const std::string corpus = gptCorpus();
  if (corpus.empty()) GTEST_SKIP() << "no text corpus (set AMP_GPT_CORPUS or install fortunes)";
  for (const char* mode : {"fp32", "bf16"}) {
    const RunConfig c = gpt(corpus, {{"amp.mode", mode}, {"model.layers", "1"}, {"model.heads", "12"},
                                     {"model.embd", "768"}, {"model.block", "1024"},
                                     {"train.batch_size", "32"}, {"train.steps", "6"}});
    RunConfig onCpu = c;
    setConfigValue(onCpu, "backend", "cpu");
    Trainer cpu(onCpu, makeBackend("cpu"));
    const StepMetrics first = cpu.step();
    const GraphRun eager = run(c, 6, false), graph = run(c, 6, true);
    ASSERT_FALSE(eager.steps.empty());
    // fp32 (TF32 off): sums in another order, 1e-5 relative; bf16: operands rounded alike, the
    // GEMMs' accumulation order differs, 1e-3.
    const double bound = std::string(mode) == "fp32" ? 1e-5 : 1e-3;
    EXPECT_NEAR(eager.steps[0].loss, first.loss, bound * first.loss) << mode << " first loss, GPU vs CPU";
    EXPECT_NEAR(first.loss, std::log(256.0), 0.5) << mode << ": an untrained model guesses uniformly";
    expectSameRun(eager, graph, std::string("gpt target shape ") + mode);
    EXPECT_GE(count(graph.how, "replayed"), 2) << mode;
  }
}

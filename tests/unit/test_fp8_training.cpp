// fp8 training end to end on the CPU (amp.mode=fp8): every recipe trains a small GPT (its
// validation loss falls and stays near bf16's), the recipe MLP and a ResNet's classifier; the
// Linear layers' GEMMs really see quantised operands (the figures say so, and a scale-1 run of
// tiny gradients loses them); a checkpoint resumes a delayed-scaling run bit for bit (amax
// histories included) and refuses one that does not fit; data-parallel ranks share one scale
// when an outlier is on one rank only; bad keys are refused naming the key.
// First: thread_communicator.h names a variable "slots", which Qt's headers define as a macro.
#include "tests/unit/data_parallel_support.h"

#include <gtest/gtest.h>

#include <QFile>
#include <QTemporaryDir>
#include <cmath>

#include "engine/config/config_schema.h"
#include "engine/io/checkpoint.h"
#include "engine/train/trainer.h"
#include "tests/unit/gpt_test_corpus.h"

using namespace amp;

namespace {

using Overrides = std::vector<std::pair<std::string, std::string>>;

QString writeCorpus(const QTemporaryDir& dir) { return test::writeGptCorpus(dir); }

RunConfig tinyGpt(const QString& corpus, const Overrides& more) {
  RunConfig c;
  for (const auto& [k, v] : Overrides{
           {"model.name", "gpt"}, {"model.layers", "2"}, {"model.heads", "2"}, {"model.embd", "32"},
           {"model.block", "16"}, {"data.name", "text"}, {"data.path", corpus.toStdString()},
           {"optimizer.name", "adamw"}, {"optimizer.lr", "0.003"}, {"optimizer.beta2", "0.99"},
           {"optimizer.weight_decay", "0"}, {"train.batch_size", "16"}, {"train.steps", "60"},
           {"train.eval_every", "60"}, {"train.histogram_every", "20"}, {"amp.mode", "fp8"},
           {"fp8.keep_bf16", "none"}, {"seed", "3"}})
    setConfigValue(c, k, v);
  for (const auto& [k, v] : more) setConfigValue(c, k, v);
  return c;
}

struct Trained {
  std::vector<StepMetrics> steps;
  double testLoss = 0;
};

Trained train(const RunConfig& c) {
  Trainer t(c);
  Trained r;
  while (!t.finished()) r.steps.push_back(t.step());
  r.testLoss = t.evaluate().loss;
  return r;
}

const Fp8TensorRecord* find(const StepMetrics& m, const std::string& tensor) {
  for (const auto& r : m.fp8)
    if (r.tensor == tensor) return &r;
  return nullptr;
}

}  // namespace

TEST(Fp8Training, EveryRecipeTrainsTheGptNearBf16) {
  QTemporaryDir dir;
  const QString corpus = writeCorpus(dir);
  const double untrained = std::log(256.0);
  const Trained bf16 = train(tinyGpt(corpus, {{"amp.mode", "bf16"}}));
  ASSERT_LT(bf16.testLoss, untrained - 1.0);
  const std::vector<std::pair<std::string, Overrides>> recipes{
      {"delayed", {}},
      {"current", {{"fp8.recipe", "current"}}},
      {"mxfp8", {{"fp8.recipe", "mxfp8"}, {"fp8.format", "e4m3"}}},
      {"blockwise", {{"fp8.recipe", "blockwise"}}},
      {"nvfp4", {{"fp8.recipe", "nvfp4"}}},
  };
  for (const auto& [name, more] : recipes) {
    const Trained r = train(tinyGpt(corpus, more));
    EXPECT_TRUE(std::isfinite(r.testLoss)) << name;
    // Small models learn this corpus in fp8 as in bf16; nvfp4's 4 bits are allowed a wider gap.
    const double gap = name == "nvfp4" ? 0.25 : 0.10;
    EXPECT_LT(r.testLoss, bf16.testLoss * (1 + gap)) << name << ": " << r.testLoss << " vs bf16 " << bf16.testLoss;
    // Every quantised Linear layer reports x, w and dy at every step (2 blocks x 4 + the head).
    ASSERT_FALSE(r.steps.empty());
    EXPECT_EQ(r.steps.back().fp8.size(), 9u * 3u) << name;
    const Fp8TensorRecord* x = find(r.steps.back(), "transformer.h.0.mlp.c_fc.x");
    ASSERT_NE(x, nullptr) << name;
    EXPECT_GT(x->sqnrDb, 10) << name;
    EXPECT_TRUE(std::isfinite(x->sqnrDb)) << name << ": quantisation changed nothing?";
    EXPECT_EQ(x->format, name == "nvfp4" ? "e2m1" : "e4m3");
    const Fp8TensorRecord* dy = find(r.steps.back(), "transformer.h.0.mlp.c_fc.dy");
    ASSERT_NE(dy, nullptr);
    EXPECT_EQ(dy->format, name == "nvfp4" ? "e2m1" : name == "mxfp8" ? "e4m3" : "e5m2");
    // Block recipes record their block exponents on histogram steps.
    if (name == "mxfp8" || name == "blockwise" || name == "nvfp4") {
      EXPECT_FALSE(find(r.steps[19], "transformer.h.0.mlp.c_fc.x")->blockExponents.empty()) << name;
      EXPECT_TRUE(find(r.steps[20], "transformer.h.0.mlp.c_fc.x")->blockExponents.empty()) << name;
    }
  }
}

// Gradients far below E5M2's range without a scale (delayed scaling's first step uses scale 1,
// then the history moves them up), with a loss weight of 1e-6: at step 1 the head's output
// gradient (about 4e-9) flushes to zero whole, so no layer below it gets any; at step 2 it passes
// (scaled by step 1's amax) and reaches the last block, whose own dy scale is still 1 (its
// history held only step 1's zero amax, which makes no scale): all of it flushes there; at step 3
// that layer is scaled by step 2's amax and keeps nearly everything.
TEST(Fp8Training, TheScaleMovesTinyGradientsIntoRange) {
  QTemporaryDir dir;
  const Trained r = train(tinyGpt(writeCorpus(dir), {{"train.loss_weight", "0.000001"}, {"train.steps", "3"}}));
  const Fp8TensorRecord* head = find(r.steps[0], "lm_head.dy");
  ASSERT_NE(head, nullptr);
  EXPECT_EQ(head->scale, 1.0);
  EXPECT_EQ(head->underflow, 1.0);
  const std::string t = "transformer.h.1.mlp.c_proj.dy";
  EXPECT_EQ(find(r.steps[0], t)->amax, 0.0) << "nothing reached it";
  EXPECT_EQ(find(r.steps[1], t)->scale, 1.0);
  EXPECT_EQ(find(r.steps[1], t)->underflow, 1.0);
  EXPECT_GT(find(r.steps[2], t)->scale, 1e12);
  EXPECT_LT(find(r.steps[2], t)->underflow, 0.01);
}

TEST(Fp8Training, TheRecipeMlpAndAResNetClassifierTrain) {
  RunConfig mlp;
  for (const auto& [k, v] : Overrides{{"model.name", "recipe_mlp"}, {"model.width", "128"}, {"data.name", "synthetic"},
                                      {"data.batches", "4"}, {"train.batch_size", "64"}, {"train.steps", "6"},
                                      {"train.histogram_every", "0"}, {"amp.mode", "fp8"}, {"fp8.recipe", "mxfp8"}})
    setConfigValue(mlp, k, v);
  const Trained m = train(mlp);
  EXPECT_EQ(m.steps.back().fp8.size(), 3u) << "3 layers, first and last kept: the middle one's x, w, dy";
  RunConfig resnet;
  for (const auto& [k, v] : Overrides{{"model.name", "resnet"}, {"model.depth", "8"}, {"model.base_width", "4"},
                                      {"data.name", "fmnist"}, {"data.subset", "128"}, {"data.test_subset", "32"},
                                      {"train.batch_size", "16"}, {"train.steps", "3"},
                                      {"train.histogram_every", "0"}, {"amp.mode", "fp8"}, {"fp8.recipe", "current"},
                                      {"fp8.keep_bf16", "none"}})
    setConfigValue(resnet, k, v);
  try {
    const Trained r = train(resnet);
    EXPECT_EQ(r.steps.back().fp8.size(), 3u) << "the classifier (fc)";
    EXPECT_TRUE(std::isfinite(r.steps.back().loss));
  } catch (const ConfigError& e) {
    FAIL() << e.what();
  }
  // The default keeps the first and last Linear layers: a ResNet's only one is both.
  setConfigValue(resnet, "fp8.keep_bf16", "first,last");
  try {
    Trainer t(resnet);
    FAIL() << "a ResNet with its only Linear layer kept in bf16 has nothing to quantise";
  } catch (const ConfigError& e) {
    EXPECT_EQ(std::string(e.what()).rfind("fp8.keep_bf16:", 0), 0u) << e.what();
  }
}

TEST(Fp8Training, TheMemoryChartCountsOneByteWeightsAndFp32Gradients) {
  // The same MLP in bf16 AMP and in fp8 (every Linear layer quantised): the compute copy of the
  // weights is 2 bytes a value in bf16 and 1 byte in fp8 (its codes; per-tensor scales are a
  // float each); the weight gradients are fp32 .grad in both, counted as gradients.
  const auto peaks = [](const std::string& mode) {
    RunConfig c;
    for (const auto& [k, v] : Overrides{{"model.name", "recipe_mlp"}, {"model.width", "256"}, {"data.name", "synthetic"},
                                        {"data.batches", "2"}, {"train.batch_size", "32"}, {"train.steps", "2"},
                                        {"train.histogram_every", "0"}, {"amp.mode", mode}, {"fp8.recipe", "current"},
                                        {"fp8.keep_bf16", "none"}})
      setConfigValue(c, k, v);
    return train(c).steps.back().memory.peak;
  };
  const auto bf16 = peaks("bf16"), fp8 = peaks("fp8");
  const auto at = [](const auto& peak, MemCategory c) { return double(peak[std::size_t(c)]); };
  EXPECT_LE(at(fp8, MemCategory::Weights), 0.55 * at(bf16, MemCategory::Weights));
  EXPECT_GE(at(fp8, MemCategory::Weights), 0.45 * at(bf16, MemCategory::Weights));
  EXPECT_GE(at(fp8, MemCategory::Gradients), 0.9 * at(bf16, MemCategory::Gradients))
      << "fp8's weight gradients are .grad too, not activations";
}

TEST(Fp8Training, ACheckpointResumesDelayedScalingBitForBit) {
  QTemporaryDir dir;
  const QString corpus = writeCorpus(dir);
  const RunConfig c = tinyGpt(corpus, {{"train.steps", "12"}, {"fp8.history_len", "4"}, {"train.histogram_every", "0"}});
  Trainer whole(c);
  std::vector<StepMetrics> a;
  while (!whole.finished()) a.push_back(whole.step());
  const QString zip = dir.filePath("at6.zip");
  {
    Trainer first(c);
    for (int i = 0; i < 6; ++i) first.step();
    saveCheckpoint(first, zip, QByteArray());
  }
  Trainer resumed(c);
  loadCheckpoint(resumed, zip);
  for (std::size_t i = 6; i < a.size(); ++i) {
    const StepMetrics m = resumed.step();
    EXPECT_EQ(m.loss, a[i].loss) << "step " << i + 1;
    ASSERT_EQ(m.fp8.size(), a[i].fp8.size());
    for (std::size_t k = 0; k < m.fp8.size(); ++k) EXPECT_EQ(m.fp8[k].scale, a[i].fp8[k].scale) << m.fp8[k].tensor;
  }
  // A history that does not fit (another length) and an fp8 checkpoint into a bf16 run: refused.
  RunConfig shorter = c;
  setConfigValue(shorter, "fp8.history_len", "2");
  Trainer wrongLength(shorter);
  EXPECT_THROW(loadCheckpoint(wrongLength, zip), CheckpointError);
  RunConfig plain = c;
  setConfigValue(plain, "amp.mode", "bf16");
  Trainer bf16(plain);
  EXPECT_THROW(loadCheckpoint(bf16, zip), CheckpointError);
}

// An outlier on rank 1 only (a spike of 1000 x amax in one layer's input at step 3): with the
// amax reduced over the ranks, both ranks make the same scale from it at step 4.
TEST(Fp8Training, RanksShareTheScaleWhenOneHasAnOutlier) {
  QTemporaryDir dir;
  const RunConfig c = tinyGpt(writeCorpus(dir), {{"train.steps", "5"}, {"train.histogram_every", "0"},
                                                  {"fp8.inject_spike", "3:transformer.h.0.mlp.c_fc.x:1000"},
                                                  {"dist.inject_rank", "1"}});
  const auto ranks = test::trainOnRanks(c, 2);
  const std::string t = "transformer.h.0.mlp.c_fc.x";
  for (std::size_t s = 0; s < 5; ++s)
    EXPECT_EQ(find(ranks[0].steps[s], t)->scale, find(ranks[1].steps[s], t)->scale) << "step " << s + 1;
  EXPECT_GT(find(ranks[1].steps[2], t)->amax, 100 * find(ranks[0].steps[2], t)->amax) << "the spike is rank 1's";
  EXPECT_LT(find(ranks[0].steps[3], t)->scale, find(ranks[0].steps[2], t)->scale / 100)
      << "rank 0 scales by rank 1's outlier too";
  EXPECT_EQ(ranks[0].digest, ranks[1].digest);
}

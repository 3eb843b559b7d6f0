// The memory a config needs, estimated from its settings and the data's shapes before anything
// is allocated: within 25% of what the MemoryTracker measures for MLPs in fp32 and AMP and for
// a CNN; a config that cannot fit is refused with the estimate and the memory available.
#include <gtest/gtest.h>

#include <fstream>

#include "engine/config/config_schema.h"
#include "engine/train/memory_estimate.h"
#include "engine/train/trainer.h"
#include "test_support.h"

using namespace amp;

namespace {

RunConfig configOf(const std::vector<std::pair<std::string, std::string>>& settings) {
  RunConfig c;
  setConfigValue(c, "train.histogram_every", "0");
  setConfigValue(c, "train.eval_every", "0");
  for (const auto& [k, v] : settings) setConfigValue(c, k, v);
  return c;
}

// The largest per-step peak of every category together, over a few steps.
std::int64_t measuredPeak(const RunConfig& c, std::string* categories = nullptr) {
  Trainer t(c);
  std::int64_t peak = 0;
  for (int i = 0; i < 3 && !t.finished(); ++i) {
    const MemorySnapshot m = t.step().memory;
    if (m.totalPeak <= peak) continue;
    peak = m.totalPeak;
    if (categories) {
      *categories = "";
      for (int k = 0; k < kMemCategoryCount; ++k)
        *categories += std::string(memCategoryName(MemCategory(k))) + " " + formatBytes(m.peak[k]) + ", ";
    }
  }
  return peak;
}

void writeBigEndian(std::ofstream& f, std::uint32_t v) {
  const char b[4] = {char(v >> 24), char(v >> 16), char(v >> 8), char(v)};
  f.write(b, 4);
}

// A Fashion-MNIST folder of n raw IDX images (28x28) and labels, for train and test.
void writeFakeFmnist(const std::filesystem::path& dir, std::uint32_t n) {
  for (const char* prefix : {"train", "t10k"}) {
    std::ofstream img(dir / (std::string(prefix) + "-images-idx3-ubyte"), std::ios::binary);
    writeBigEndian(img, 0x803);
    writeBigEndian(img, n);
    writeBigEndian(img, 28);
    writeBigEndian(img, 28);
    for (std::uint32_t i = 0; i < n * 784; ++i) img.put(char(i * 37 % 256));
    std::ofstream lab(dir / (std::string(prefix) + "-labels-idx1-ubyte"), std::ios::binary);
    writeBigEndian(lab, 0x801);
    writeBigEndian(lab, n);
    for (std::uint32_t i = 0; i < n; ++i) lab.put(char(i % 10));
  }
}

class MemoryEstimateTest : public test::ScratchDirTest {};

void expectWithin25Percent(const RunConfig& c, const std::string& what) {
  const MemoryEstimate e = estimateMemory(c);
  std::string categories;
  const std::int64_t measured = measuredPeak(c, &categories);
  EXPECT_GE(double(e.tracked()), 0.75 * double(measured)) << what << ": " << e.summary()
                                                          << " vs measured " << measured << " (" << categories << ")";
  EXPECT_LE(double(e.tracked()), 1.25 * double(measured)) << what << ": " << e.summary()
                                                          << " vs measured " << measured << " (" << categories << ")";
}

}  // namespace

TEST_F(MemoryEstimateTest, MlpEstimatesMatchTheMeasuredPeak) {
  for (const char* mode : {"fp32", "fp16", "bf16", "pure_fp16"})
    for (const char* optimizer : {"sgd", "adam"}) {
      expectWithin25Percent(
          configOf({{"model.name", "recipe_mlp"}, {"model.width", "256"}, {"model.layers", "3"},
                    {"data.name", "synthetic"}, {"data.batches", "2"}, {"train.batch_size", "128"},
                    {"optimizer.name", optimizer}, {"optimizer.momentum", "0.9"},
                    {"train.steps", "3"}, {"amp.mode", mode}}),
          std::string("recipe ") + mode + " " + optimizer);
    }
  expectWithin25Percent(configOf({{"model.name", "mlp"}, {"model.hidden", "256,256"},
                                  {"data.name", "spirals"}, {"data.samples", "2000"},
                                  {"train.batch_size", "500"}, {"optimizer.name", "adam"},
                                  {"train.steps", "3"}, {"amp.mode", "fp16"}}),
                        "spirals mlp fp16");
}

TEST_F(MemoryEstimateTest, CnnEstimateMatchesTheMeasuredPeak) {
  writeFakeFmnist(m_dir, 64);
  for (const char* mode : {"fp32", "bf16"})
    expectWithin25Percent(configOf({{"model.name", "cnn"}, {"model.cnn", "conv:8,pool,conv:16,pool,fc:64"},
                                    {"data.name", "fmnist"}, {"data.path", m_dir.string()},
                                    {"train.batch_size", "32"}, {"optimizer.name", "sgd"},
                                    {"optimizer.momentum", "0.9"}, {"train.steps", "3"},
                                    {"amp.mode", mode}}),
                          std::string("cnn ") + mode);
}

TEST_F(MemoryEstimateTest, AHugeModelIsRefusedBeforeAllocatingWithTheEstimate) {
  RunConfig c = configOf({{"model.name", "mlp"}, {"model.hidden", "1000000,1000000"},
                          {"data.name", "spirals"}, {"optimizer.name", "adam"}});
  const MemoryEstimate e = estimateMemory(c);
  EXPECT_EQ(e.parameterCount, 2 * 1000000 + 1000000 + 1000000LL * 1000000 + 1000000 + 2 * 1000000 + 2);
  EXPECT_EQ(e.optimizerState, 8 * e.parameterCount);
  // 1e12 parameters: 4 TB each of weights and gradients and 8 TB of Adam state.
  const std::string msg = test::messageOf<ConfigError>([&] { Trainer t(c); });
  EXPECT_HAS(msg, "model.hidden=1000000,1000000");
  EXPECT_HAS(msg, "needs ≈ ");
  EXPECT_HAS(msg, "Adam state 7450.6");
  EXPECT_HAS(msg, " available");
  EXPECT_EQ(msg.find("bad_alloc"), std::string::npos);
}

TEST_F(MemoryEstimateTest, HostMemoryAvailableIsReadFromTheSystem) {
  const auto avail = hostMemoryAvailable();
  ASSERT_TRUE(avail.has_value());
  EXPECT_GT(*avail, 0);
}

TEST_F(MemoryEstimateTest, GptEstimateMatchesTheMeasuredPeak) {
  {
    std::ofstream f(m_dir / "corpus.txt");
    for (int i = 0; i < 400; ++i) f << "a line of text for the language model, number " << i << "\n";
  }
  for (const char* mode : {"fp32", "fp16", "bf16"})
    expectWithin25Percent(configOf({{"model.name", "gpt"}, {"model.layers", "2"}, {"model.heads", "4"},
                                    {"model.embd", "64"}, {"model.block", "64"}, {"data.name", "text"},
                                    {"data.path", (m_dir / "corpus.txt").string()},
                                    {"train.batch_size", "16"}, {"optimizer.name", "adamw"},
                                    {"train.steps", "3"}, {"amp.mode", mode}}),
                          std::string("gpt ") + mode);
}

TEST(MemoryRefusal, NamesTheGptSettings) {
  ModelConfig m;
  m.name = "gpt";
  m.layers = 12;
  m.embd = 768;
  EXPECT_EQ(modelSettingsText(m), "model.layers=12, model.heads=4, model.embd=768, model.block=128");
}

// Checkpoint files between the GPU and the CPU, through the real zip (saveCheckpoint /
// loadCheckpoint, so Qt and QuaZip: this program needs Qt, unlike ampstudio-gpu-tests, and runs
// where a GPU and Qt meet; its Qt-free twin, moving the same state without the zip, is
// TrainerCudaCnn.StateMoved* in the GPU suite). A checkpoint written on the GPU resumes there bit
// for bit and loads on the CPU with every weight's bytes intact, and the reverse. Skips without
// a GPU.
#include <gtest/gtest.h>

#include <QTemporaryDir>

#include "engine/backend/backend_registry.h"
#include "engine/config/config_schema.h"
#include "engine/config/presets.h"
#include "engine/io/checkpoint.h"
#include "engine/train/trainer.h"

using namespace amp;

namespace {

// The recipe MLP with BatchNorm (buffers), Adam (moments and a step count) and fp16 with a
// dynamic scale and one injected overflow (scaler state, a skipped step): every kind of state.
RunConfig config(const std::string& backend) {
  RunConfig c = presetConfig(*findPreset("recipe"));
  for (const auto& [k, v] : std::vector<std::pair<std::string, std::string>>{
           {"backend", backend}, {"model.width", "256"}, {"train.batch_size", "64"},
           {"model.batchnorm", "true"}, {"optimizer.name", "adam"}, {"amp.mode", "fp16"},
           {"train.inject_nonfinite", "4"}, {"train.steps", "40"}, {"train.histogram_every", "0"}})
    setConfigValue(c, k, v);
  return c;
}

std::vector<std::vector<std::uint8_t>> weightBytes(Trainer& t) {
  std::vector<std::vector<std::uint8_t>> out;
  for (Parameter* p : t.model().parameters()) out.push_back(t.backend().toHostBytes(p->value));
  for (const auto& [name, b] : t.model().buffers()) out.push_back(t.backend().toHostBytes(*b));
  return out;
}

class CheckpointCuda : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!gpuInventory().usable()) GTEST_SKIP() << "no usable GPU: " << gpuInventory().unavailableReason;
    ASSERT_TRUE(m_dir.isValid());
  }
  QString path(const char* name) const { return m_dir.filePath(QString::fromLatin1(name)); }
  QTemporaryDir m_dir;
};

}  // namespace

TEST_F(CheckpointCuda, SavedOnTheGpuResumesBitForBitThere) {
  Trainer whole(config("cuda"));
  std::vector<StepMetrics> ref;
  while (!whole.finished()) ref.push_back(whole.step());
  Trainer first(config("cuda"));
  for (int i = 0; i < 20; ++i) first.step();
  saveCheckpoint(first, path("gpu.zip"), {});
  Trainer resumed(config("cuda"));
  loadCheckpoint(resumed, path("gpu.zip"));
  std::size_t i = 20;
  while (!resumed.finished()) {
    const StepMetrics m = resumed.step();
    ASSERT_LT(i, ref.size());
    EXPECT_EQ(m.skipped, ref[i].skipped) << "step " << m.step;
    EXPECT_EQ(m.scaleAfter, ref[i].scaleAfter) << "step " << m.step;
    EXPECT_NEAR(m.loss, ref[i].loss, 1e-12 * std::fabs(ref[i].loss)) << "step " << m.step;
    ++i;
  }
  EXPECT_EQ(weightBytes(resumed), weightBytes(whole));
}

TEST_F(CheckpointCuda, LoadsAcrossBackendsWithTheWeightsIntact) {
  for (const auto& [from, to] : {std::pair{"cuda", "cpu"}, std::pair{"cpu", "cuda"}}) {
    Trainer a(config(from));
    for (int i = 0; i < 10; ++i) a.step();
    const QString file = path((std::string(from) + ".zip").c_str());
    saveCheckpoint(a, file, {});
    Trainer b(config(to));
    loadCheckpoint(b, file);
    EXPECT_EQ(weightBytes(b), weightBytes(a)) << from << " -> " << to;
    EXPECT_EQ(b.stepsDone(), 10) << from << " -> " << to;
    EXPECT_EQ(b.scaler().scale(), a.scaler().scale()) << from << " -> " << to;
    const StepMetrics ma = a.step(), mb = b.step();  // and it goes on learning from there
    EXPECT_NEAR(mb.loss, ma.loss, 2e-2 * std::fabs(ma.loss)) << from << " -> " << to;
  }
}

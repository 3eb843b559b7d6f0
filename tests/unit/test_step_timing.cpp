// A step's time must cover the same work whether the step runs eagerly or as a step graph
// (issue 41): an eager step uploads its batch inside runStepAs, a graph step (capture or
// replay) in planStepGraph, before runStepAs begins. With the timer started in runStepAs, graph
// steps looked faster by the batch's upload. Here a backend that stands in for the CUDA one's
// capture protocol (as in test_step_graph_fallback.cpp) makes every batch upload take a known
// time (a sleep), and each step's time, eager or captured, must include it. On the CPU the
// step's time is wall time; the CUDA backend's event clock starts at the same mark
// (Backend::beginStepTiming), which the stand-in counts: once per step, before the upload.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "engine/backend/cpu_backend.h"
#include "engine/config/config_schema.h"
#include "engine/train/trainer.h"

using namespace amp;

namespace {

constexpr int kUploadMs = 40;

struct Seen {
  int marks = 0, uploads = 0;
  std::vector<int> uploadsAtMark;  // uploads seen when each step's timing mark came
};

class SlowUploadGraphStandIn final : public CpuBackend {
 public:
  explicit SlowUploadGraphStandIn(Seen& seen) : m_seen(seen) {}
  void arm() { m_armed = true; }

  // Records every steady step (and keeps none, so each later steady step records again): the
  // capture computes the step as an eager one would.
  bool capturesSteps() const override { return true; }
  void beginStepCapture() override { m_pending = true; }
  bool stepGraphPending() const override { return m_pending; }
  void dropStepGraph() override { m_pending = false; }
  StepStats readStepStats() override {
    m_pending = false;
    return CpuBackend::readStepStats();
  }

  void beginStepTiming() override {
    ++m_seen.marks;
    m_seen.uploadsAtMark.push_back(m_seen.uploads);
  }
  void uploadFloat(Tensor& dst, std::span<const float> src) override {
    slow();
    CpuBackend::uploadFloat(dst, src);
  }
  void uploadInt(Tensor& dst, std::span<const std::int32_t> src) override {
    slow();
    CpuBackend::uploadInt(dst, src);
  }

 private:
  void slow() {
    if (!m_armed) return;
    ++m_seen.uploads;
    std::this_thread::sleep_for(std::chrono::milliseconds(kUploadMs));
  }
  Seen& m_seen;
  bool m_armed = false, m_pending = false;
};

RunConfig recipe() {
  RunConfig c;
  for (const auto& [k, v] : std::vector<std::pair<std::string, std::string>>{
           {"model.name", "recipe_mlp"}, {"model.width", "16"}, {"model.layers", "2"},
           {"data.name", "synthetic"}, {"data.batches", "4"}, {"train.batch_size", "8"},
           {"optimizer.name", "sgd"}, {"optimizer.lr", "0.01"}, {"train.steps", "5"},
           {"train.histogram_every", "0"}, {"train.eval_every", "0"}, {"seed", "3"},
           {"data.device_cache", "off"}, {"amp.mode", "fp32"}})
    setConfigValue(c, k, v);
  return c;
}

}  // namespace

TEST(StepTiming, EagerAndCapturedStepsBothTimeTheBatchUpload) {
  Seen seen;
  auto owned = std::make_unique<SlowUploadGraphStandIn>(seen);
  SlowUploadGraphStandIn* be = owned.get();
  Trainer t(recipe(), std::move(owned));
  be->arm();
  std::vector<std::string> how;
  std::vector<double> ms;
  while (!t.finished()) {
    ms.push_back(t.step().stepMs);
    how.push_back(t.lastStepGraph());
  }
  ASSERT_EQ(how.size(), 5u);
  // Step 1: the optimizer's first (eager), step 2 the warm-up (eager), then captures.
  EXPECT_EQ(how[0], "eager");
  EXPECT_EQ(how[2], "captured");
  int captured = 0;
  for (std::size_t i = 0; i < ms.size(); ++i) {
    captured += how[i] == "captured";
    // The input's and the target's uploads: at least one sleep in every step's time.
    EXPECT_GE(ms[i], kUploadMs) << "step " << i + 1 << " (" << how[i] << ") did not time its batch's upload";
  }
  EXPECT_GE(captured, 2);
  // One timing mark per step, each before that step's uploads.
  ASSERT_EQ(seen.marks, 5);
  ASSERT_EQ(seen.uploadsAtMark.size(), 5u);
  for (std::size_t i = 1; i < seen.uploadsAtMark.size(); ++i)
    EXPECT_GT(seen.uploadsAtMark[i], seen.uploadsAtMark[i - 1]) << "step " << i + 1;
  EXPECT_EQ(seen.uploadsAtMark[0], 0) << "the first step's mark came after an upload";
}

// Run summaries: epoch times are the sums of their steps' times, every completed epoch counts
// (the run's last one too), and the trainer marks the step that ends an epoch.
#include <gtest/gtest.h>

#include <vector>

#include "engine/config/config_schema.h"
#include "engine/train/run_summary.h"
#include "engine/train/trainer.h"

namespace amp {
namespace {

// Feeds steps of 3-step epochs with the given times; steps from `firstMarked` on (0-based)
// carry end marks, as live steps do; earlier ones have none, as metrics read back from a file.
RunSummary summarise(const std::vector<double>& ms, std::size_t firstMarked = 0) {
  RunSummaryBuilder b;
  for (std::size_t i = 0; i < ms.size(); ++i) {
    StepMetrics m;
    m.step = static_cast<std::int64_t>(i + 1);
    m.epoch = static_cast<int>(i / 3);
    m.epochEnd = i >= firstMarked && i % 3 == 2;
    m.stepMs = ms[i];
    b.add(m);
  }
  return b.summary();
}

TEST(RunSummary, EpochSecondsSumTheStepsOfEachCompletedEpoch) {
  // Two whole epochs of 3 steps, then a run stopped 2 steps into the third.
  const RunSummary s = summarise({10, 20, 30, 1, 2, 3, 100, 200});
  ASSERT_EQ(s.epochSeconds.size(), 2u);
  EXPECT_DOUBLE_EQ(s.epochSeconds[0], 0.060);
  EXPECT_DOUBLE_EQ(s.epochSeconds[1], 0.006);
}

// A resumed run's history comes back from metrics.jsonl without end marks: epochs still split
// where the epoch number changes, and the live steps' marks take over from there.
TEST(RunSummary, HistoryWithoutEndMarksSplitsAtEpochChanges) {
  const RunSummary s = summarise({10, 20, 30, 1, 2, 3, 100, 200, 300}, 4);  // steps 1-4 read back
  ASSERT_EQ(s.epochSeconds.size(), 3u);
  EXPECT_DOUBLE_EQ(s.epochSeconds[0], 0.060);
  EXPECT_DOUBLE_EQ(s.epochSeconds[1], 0.006);
  EXPECT_DOUBLE_EQ(s.epochSeconds[2], 0.600);
}

TEST(RunSummary, TrainerMarksTheLastBatchOfEveryEpoch) {
  RunConfig c;
  for (auto [k, v] : std::vector<std::pair<std::string, std::string>>{
           {"data.name", "spirals"}, {"data.samples", "250"}, {"model.name", "mlp"},
           {"model.hidden", "8"}, {"train.batch_size", "100"}, {"train.steps", "0"},
           {"train.epochs", "3"}, {"train.histogram_every", "0"}, {"amp.mode", "fp32"}})
    setConfigValue(c, k, v);
  Trainer t(c);
  RunSummaryBuilder b;
  std::vector<std::int64_t> ends;
  while (!t.finished()) {
    const StepMetrics m = t.step();
    b.add(m);
    if (m.epochEnd) ends.push_back(m.step);
  }
  // The training split of 250 points in batches of 100 (the last one partial): the epoch's
  // step count is whatever the loader says; the ends fall on its multiples.
  ASSERT_EQ(ends.size(), 3u);
  const std::int64_t per = ends[0];
  EXPECT_GE(per, 2);
  EXPECT_EQ(ends[1], 2 * per);
  EXPECT_EQ(ends[2], 3 * per);
  EXPECT_EQ(b.summary().epochSeconds.size(), 3u);
}

}  // namespace
}  // namespace amp

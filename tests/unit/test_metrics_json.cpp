// metrics.jsonl lines found by fuzzing (tests/fuzz/fuzz_metrics_jsonl): counts a 64-bit integer
// cannot hold were cast from double unchecked (undefined behaviour; on x86 they became
// INT64_MIN). They are clamped, and a line read and written back stays the same.
#include <gtest/gtest.h>

#include <QJsonDocument>
#include <QJsonObject>
#include <cstdint>
#include <limits>

#include "engine/io/metrics_json.h"

using namespace amp;

namespace {

constexpr auto kMax = std::numeric_limits<std::int64_t>::max();
constexpr auto kMin = std::numeric_limits<std::int64_t>::min();

StepMetrics stepOf(const char* line) { return stepMetricsFromJson(QJsonDocument::fromJson(line).object()); }

}  // namespace

TEST(MetricsJson, HugeCountsAreClampedNotWrapped) {
  const StepMetrics m = stepOf(R"({"step": 1e300, "loss": 1, "memory": {"total": -1e300, "weights": 8.9e53},
                                  "memory_peak": {"total": 1e19}})");
  EXPECT_EQ(m.step, kMax);
  EXPECT_EQ(m.memory.totalCurrent, kMin);
  EXPECT_EQ(m.memory.totalPeak, kMax);
  EXPECT_EQ(stepOf(R"({"step": 12, "loss": 1})").step, 12);
}

TEST(MetricsJson, ClampedStepsWriteBackTheSame) {
  const QByteArray once = stepMetricsJsonLine(stepOf(R"({"step": 1e300, "loss": 0.5})"));
  EXPECT_EQ(stepMetricsJsonLine(stepOf(once.constData())), once);
}

TEST(MetricsJson, RoundingCountsAreClamped) {
  HistogramRecord h;
  roundingCountsFromJson(QJsonDocument::fromJson(R"({"flushed_to_zero": 1e300, "rounded_to_inf": 3})").object(), h);
  EXPECT_EQ(h.flushedToZero, kMax);
  EXPECT_EQ(h.roundedToInf, 3);
}

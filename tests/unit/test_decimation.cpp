// Min/max decimation for the charts: spikes survive, x stays monotonic, the output is bounded
// by the pixel columns, degenerate inputs work, and the log variant drops y <= 0.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "engine/telemetry/smoothing.h"
#include "ui/charts/decimation.h"
#include "ui/charts/smoothing.h"

using namespace amp::ui;

namespace {

struct Data {
  std::vector<double> x, y;
};

Data ramp(int n) {
  Data d;
  for (int i = 0; i < n; ++i) {
    d.x.push_back(i + 1);
    d.y.push_back(1.0 + 0.001 * std::sin(i * 0.1));
  }
  return d;
}

}  // namespace

TEST(Decimation, KeepsASingleSpikeAndASingleDip) {
  Data d = ramp(100000);
  d.y[43210] = 1e4;   // an overflow spike
  d.y[77777] = -5.0;  // and a dip
  const auto pts = decimateMinMax(d.x, d.y, {1, 100000, 500});
  bool spike = false, dip = false;
  for (const QPointF& p : pts) {
    spike = spike || (p.x() == 43211 && p.y() == 1e4);
    dip = dip || (p.x() == 77778 && p.y() == -5.0);
  }
  EXPECT_TRUE(spike);
  EXPECT_TRUE(dip);
}

TEST(Decimation, KeepsAScaleHalvingStep) {
  // The loss scale: flat at 2^16, halved once at step 5001.
  Data d;
  for (int i = 1; i <= 100000; ++i) {
    d.x.push_back(i);
    d.y.push_back(i <= 5000 ? 65536.0 : 32768.0);
  }
  const auto pts = decimateMinMax(d.x, d.y, {1, 100000, 300}, YDomain::Log2);
  ASSERT_FALSE(pts.isEmpty());
  EXPECT_DOUBLE_EQ(pts.front().y(), 16.0);
  EXPECT_DOUBLE_EQ(pts.back().y(), 15.0);
  // The drop happens within one column of the true step.
  for (int i = 1; i < pts.size(); ++i)
    if (pts[i].y() == 15.0 && pts[i - 1].y() == 16.0) EXPECT_NEAR(pts[i].x(), 5001, 100000 / 300 + 1);
}

TEST(Decimation, OutputIsMonotonicInXAndInOrderOfOccurrence) {
  Data d = ramp(50000);
  for (int i = 0; i < 50000; i += 997) d.y[std::size_t(i)] = (i % 2) ? 10.0 : -10.0;
  const std::vector<int> idx = decimateMinMaxIndices(d.x, d.y, {1, 50000, 400});
  for (std::size_t i = 1; i < idx.size(); ++i) EXPECT_LT(idx[i - 1], idx[i]);
}

TEST(Decimation, OutputIsBoundedByTwoPointsPerColumnPlusEdges) {
  Data d = ramp(100000);
  for (int columns : {1, 7, 100, 1280, 3840}) {
    const auto idx = decimateMinMaxIndices(d.x, d.y, {1, 100000, columns});
    EXPECT_LE(idx.size(), std::size_t(2 * columns + 2)) << columns;
    EXPECT_GE(idx.size(), std::size_t(columns)) << columns;
  }
}

TEST(Decimation, SmallInputsComeBackWhole) {
  Data d = ramp(50);
  const auto pts = decimateMinMax(d.x, d.y, {1, 50, 800});
  ASSERT_EQ(pts.size(), 50);
  for (int i = 0; i < 50; ++i) EXPECT_EQ(pts[i], QPointF(d.x[std::size_t(i)], d.y[std::size_t(i)]));
}

TEST(Decimation, EmptyAndOnePointInputs) {
  const std::vector<double> none;
  EXPECT_TRUE(decimateMinMax(none, none, {0, 1, 100}).isEmpty());
  const std::vector<double> x{5}, y{0.25};
  const auto pts = decimateMinMax(x, y, {5, 5, 100});  // zero-width range
  ASSERT_EQ(pts.size(), 1);
  EXPECT_EQ(pts[0], QPointF(5, 0.25));
  EXPECT_EQ(decimateMinMax(x, y, {0, 1, 0}).size(), 1);  // no columns: the edge point remains
}

TEST(Decimation, SkipsNonFiniteValues) {
  Data d = ramp(10000);
  const double inf = std::numeric_limits<double>::infinity();
  d.y[100] = inf;
  d.y[200] = -inf;
  d.y[300] = std::nan("");
  for (const QPointF& p : decimateMinMax(d.x, d.y, {1, 10000, 50})) EXPECT_TRUE(std::isfinite(p.y()));
  for (const QPointF& p : decimateMinMax(d.x, d.y, {1, 10000, 100000})) EXPECT_TRUE(std::isfinite(p.y()));
}

TEST(Decimation, RangeKeepsOneNeighbourOnEachSide) {
  Data d = ramp(1000);
  const auto idx = decimateMinMaxIndices(d.x, d.y, {100.5, 200.5, 1000});
  ASSERT_GE(idx.size(), 3u);
  EXPECT_EQ(d.x[std::size_t(idx.front())], 100);  // just left of the range
  EXPECT_EQ(d.x[std::size_t(idx.back())], 201);   // just right of it
}

TEST(Decimation, LogVariantDropsNonPositiveAndMapsToLog) {
  const std::vector<double> x{1, 2, 3, 4, 5};
  const std::vector<double> y{8, 0, -1, 0.5, 1024};
  const auto log2pts = decimateMinMax(x, y, {1, 5, 100}, YDomain::Log2);
  ASSERT_EQ(log2pts.size(), 3);
  EXPECT_EQ(log2pts[0], QPointF(1, 3));
  EXPECT_EQ(log2pts[1], QPointF(4, -1));
  EXPECT_EQ(log2pts[2], QPointF(5, 10));
  const auto log10pts = decimateMinMax(x, y, {1, 5, 100}, YDomain::Log10);
  ASSERT_EQ(log10pts.size(), 3);
  EXPECT_NEAR(log10pts[2].y(), std::log10(1024.0), 1e-12);
  EXPECT_DOUBLE_EQ(fromDomain(toDomain(0.125, YDomain::Log2), YDomain::Log2), 0.125);
  // A non-positive minimum must not hide the column's positive points either.
  Data d = ramp(100000);
  d.y[500] = 0;
  for (const QPointF& p : decimateMinMax(d.x, d.y, {1, 100000, 10}, YDomain::Log10))
    EXPECT_TRUE(std::isfinite(p.y()));
}

TEST(Smoothing, MatchesTensorBoardsDebiasedEma) {
  DebiasedEma ema;
  ema.setWeight(0.6);
  QVector<double> v{1, 2, 3, std::nan(""), 4};
  const QVector<double>& s = ema.update(v);
  ASSERT_EQ(s.size(), 5);
  EXPECT_DOUBLE_EQ(s[0], 1.0);  // debiased: the first value is itself
  // last = 0.4*1 = 0.4; then 0.24+0.8 = 1.04, debias 1-0.36 = 0.64 -> 1.625
  EXPECT_NEAR(s[1], 1.625, 1e-12);
  EXPECT_TRUE(std::isnan(s[3]));  // non-finite values pass through
  // Incremental update gives the same as a fresh one.
  v.append(5);
  DebiasedEma fresh;
  fresh.setWeight(0.6);
  EXPECT_DOUBLE_EQ(ema.update(v)[5], fresh.update(v)[5]);
  // Zero weight: no smoothing at all.
  DebiasedEma none;
  none.setWeight(0);
  EXPECT_DOUBLE_EQ(none.update(v)[2], 3.0);
}

TEST(Smoothing, IncrementalEqualsTheEngineExportSmoothing) {
  // The chart and the CSV/JSON export must draw and write the same curve.
  std::vector<double> values;
  for (int i = 0; i < 5000; ++i) values.push_back(2.0 * std::exp(-i / 900.0) + 0.1 * std::sin(i * 0.37));
  values[1234] = std::numeric_limits<double>::infinity();
  for (double w : {0.0, 0.6, 0.95, 0.999}) {
    DebiasedEma ema;
    ema.setWeight(w);
    QVector<double> growing;
    for (std::size_t i = 0; i < values.size(); ++i) {
      growing.append(values[i]);
      if (i % 777 == 0) ema.update(growing);  // incrementally, as refreshes arrive
    }
    const QVector<double>& chart = ema.update(growing);
    const std::vector<double> exported = amp::smoothTensorBoard(values, w);
    ASSERT_EQ(std::size_t(chart.size()), exported.size());
    for (std::size_t i = 0; i < exported.size(); ++i) {
      if (std::isfinite(exported[i])) ASSERT_EQ(chart[qsizetype(i)], exported[i]) << "w " << w << " at " << i;
    }
  }
}

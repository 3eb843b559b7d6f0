// How long the charts take to show new data: 4 runs x 100,000 steps of synthetic metrics (loss
// spikes, fp16 scale halvings, histograms every 500 steps), the whole dashboard at 1280x800,
// refresh() (re-decimate and replace every series) then grab() (paint every chart), offscreen.
// Target: <= 33 ms per full redraw, so a 30 Hz drain never falls behind.
// And a long session: 8 runs x 1,000,000 steps (tiled from 100k-step synthetic runs), the same
// full redraw, target <= 50 ms.
#include <benchmark/benchmark.h>

#include <QApplication>
#include <QElapsedTimer>
#include <QPixmap>
#include <memory>

#include "ui/charts/chart_panel.h"
#include "ui/charts/dashboard.h"
#include "ui/charts/decimation.h"
#include "ui/charts/synthetic_runs.h"
#include "ui/run_data.h"
#include "ui/theme.h"

using namespace amp;
using namespace amp::ui;

namespace {

constexpr std::int64_t kSteps = 100000;

struct Fixture {
  std::vector<std::unique_ptr<RunData>> runs;
  Fixture(std::int64_t steps) {
    const PrecisionMode modes[] = {PrecisionMode::Fp32, PrecisionMode::AmpFp16, PrecisionMode::AmpBf16,
                                   PrecisionMode::PureFp16};
    const char* names[] = {"fp32", "fp16 amp", "bf16 amp", "pure fp16"};
    const QColor colors[] = {QColor(0x1f, 0x77, 0xb4), QColor(0xd6, 0x27, 0x28), QColor(0x2c, 0xa0, 0x2c),
                             QColor(0x94, 0x67, 0xbd)};
    for (int i = 0; i < 4; ++i) {
      auto run = std::make_unique<RunData>();
      run->id = i + 1;
      fillSyntheticRun(*run, {.name = names[i],
                              .mode = modes[i],
                              .steps = steps,
                              .histogramEvery = 500,
                              .evalEvery = 1000,
                              .spikes = 5,
                              .histogramSamples = 200,
                              .seed = std::uint64_t(i + 1),
                              .color = colors[i]});
      runs.push_back(std::move(run));
    }
  }
  QVector<const RunData*> pointers() const {
    QVector<const RunData*> out;
    for (const auto& r : runs) out.append(r.get());
    return out;
  }
};

const Fixture& fullRuns() {
  static const Fixture f(kSteps);
  return f;
}

void showDashboard(Dashboard& d, const QVector<const RunData*>& runs) {
  d.setLayoutMode(Dashboard::Layout::Grid);  // all six panels drawn (by size alone it could pick tabs)
  d.resize(1280, 800);
  d.setRuns(runs);
  d.show();
  QApplication::processEvents();
  d.refresh();
  QApplication::processEvents();
}

// Everything on screen: refresh() + grab() of the 1280x800 dashboard, data unchanged.
void BM_DashboardRefreshAndRepaint(benchmark::State& state) {
  Dashboard d;
  showDashboard(d, fullRuns().pointers());
  for (auto _ : state) {
    d.refresh();
    QPixmap frame = d.grab();
    benchmark::DoNotOptimize(frame.cacheKey());
  }
}
BENCHMARK(BM_DashboardRefreshAndRepaint)->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(3.0);

// The two halves, per panel: refresh() alone (decimate + replace + re-range), grab() alone.
void BM_PanelRefresh(benchmark::State& state) {
  Dashboard d;
  showDashboard(d, fullRuns().pointers());
  ChartPanel* panel = d.panel(d.chartNames().value(int(state.range(0))));
  state.SetLabel(panel->name().toStdString());
  for (auto _ : state) panel->refreshNow();
}
BENCHMARK(BM_PanelRefresh)->DenseRange(0, 5)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_PanelRepaint(benchmark::State& state) {
  Dashboard d;
  showDashboard(d, fullRuns().pointers());
  ChartPanel* panel = d.panel(d.chartNames().value(int(state.range(0))));
  state.SetLabel(panel->name().toStdString());
  for (auto _ : state) {
    QPixmap frame = panel->grab();
    benchmark::DoNotOptimize(frame.cacheKey());
  }
}
BENCHMARK(BM_PanelRepaint)->DenseRange(0, 5)->Unit(benchmark::kMillisecond)->UseRealTime();

// Live training: each frame 30 more steps per run (all four runs at ~900 steps/s), so the x
// range moves, axes re-range and the loss smoothing extends incrementally.
void BM_DashboardLiveAppend(benchmark::State& state) {
  static Fixture growing(kSteps - 5000);
  static const Fixture& source = fullRuns();
  Dashboard d;
  showDashboard(d, growing.pointers());
  std::int64_t next = kSteps - 5000;
  double refreshNs = 0;
  for (auto _ : state) {
    state.PauseTiming();
    for (std::size_t r = 0; r < growing.runs.size(); ++r) {
      // Copy 30 steps of the full run's columns: what a drain of the metrics buffer appends.
      RunSeries& dst = growing.runs[r]->series;
      const RunSeries& src = source.runs[r]->series;
      for (std::int64_t i = next; i < next + 30 && i < src.size(); ++i) {
        dst.step.append(src.step[i]);
        dst.loss.append(src.loss[i]);
        dst.scale.append(src.scale[i]);
        dst.growthTracker.append(src.growthTracker[i]);
        dst.stepMs.append(src.stepMs[i]);
        dst.samplesPerS.append(src.samplesPerS[i]);
        for (int c = 0; c < kMemCategoryCount; ++c) {
          dst.memCurrent[c].append(src.memCurrent[c][i]);
          dst.memPeak[c].append(src.memPeak[c][i]);
        }
      }
    }
    next = next + 30 < kSteps ? next + 30 : kSteps - 5000;
    state.ResumeTiming();
    QElapsedTimer timer;
    timer.start();
    d.refresh();
    refreshNs += timer.nsecsElapsed();
    QPixmap frame = d.grab();
    benchmark::DoNotOptimize(frame.cacheKey());
  }
  state.counters["refresh_ms"] = benchmark::Counter(refreshNs / 1e6, benchmark::Counter::kAvgIterations);
}
BENCHMARK(BM_DashboardLiveAppend)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(150);

// 8 runs x 1M steps of synthetic metrics, generated whole (a tiled 100k run draws a sawtooth no
// real run has). RunData::append also keeps every StepMetrics for saving; the charts never read
// those, so they are dropped after each run to keep the fixture near 1.5 GB.
struct LongFixture {
  std::vector<std::unique_ptr<RunData>> runs;
  static constexpr int kRuns = 8;
  static constexpr std::int64_t kLongSteps = 1000000;
  LongFixture() {
    const PrecisionMode modes[] = {PrecisionMode::Fp32, PrecisionMode::AmpFp16, PrecisionMode::AmpBf16,
                                   PrecisionMode::PureFp16};
    for (int i = 0; i < kRuns; ++i) {
      auto run = std::make_unique<RunData>();
      run->id = i + 1;
      fillSyntheticRun(*run, {.name = QStringLiteral("run %1").arg(i + 1),
                              .mode = modes[i % 4],
                              .steps = kLongSteps,
                              .histogramEvery = 10000,
                              .evalEvery = 10000,
                              .growthInterval = 2000,
                              .spikes = 5,
                              .histogramSamples = 100,
                              .seed = std::uint64_t(i + 1),
                              .color = runColor(i)});
      std::vector<StepMetrics>().swap(run->steps);
      runs.push_back(std::move(run));
    }
  }
  QVector<const RunData*> pointers() const {
    QVector<const RunData*> out;
    for (const auto& r : runs) out.append(r.get());
    return out;
  }
};

// Everything on screen for a long session: refresh() + grab() of the 1280x800 dashboard with
// 8 runs x 1M steps. Target: <= 50 ms.
void BM_DashboardRefreshAndRepaint8x1M(benchmark::State& state) {
  static const LongFixture fixture;
  Dashboard d;
  showDashboard(d, fixture.pointers());
  for (auto _ : state) {
    d.refresh();
    QPixmap frame = d.grab();
    benchmark::DoNotOptimize(frame.cacheKey());
  }
}
BENCHMARK(BM_DashboardRefreshAndRepaint8x1M)->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(3.0);

// The long session's halves per panel, to see where the 50 ms go.
void BM_PanelRefresh8x1M(benchmark::State& state) {
  static const LongFixture fixture;
  Dashboard d;
  showDashboard(d, fixture.pointers());
  ChartPanel* panel = d.panel(d.chartNames().value(int(state.range(0))));
  state.SetLabel(panel->name().toStdString());
  for (auto _ : state) panel->refreshNow();
}
BENCHMARK(BM_PanelRefresh8x1M)->DenseRange(0, 5)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_PanelRepaint8x1M(benchmark::State& state) {
  static const LongFixture fixture;
  Dashboard d;
  showDashboard(d, fixture.pointers());
  ChartPanel* panel = d.panel(d.chartNames().value(int(state.range(0))));
  state.SetLabel(panel->name().toStdString());
  for (auto _ : state) {
    QPixmap frame = panel->grab();
    benchmark::DoNotOptimize(frame.cacheKey());
  }
}
BENCHMARK(BM_PanelRepaint8x1M)->DenseRange(0, 5)->Unit(benchmark::kMillisecond)->UseRealTime();

// The decimation alone: 100,000 points to 1,000 columns.
void BM_DecimateMinMax(benchmark::State& state) {
  const RunSeries& s = fullRuns().runs[1]->series;
  for (auto _ : state) {
    auto points = decimateMinMax(spanOf(s.step), spanOf(s.loss), {1, double(kSteps), 1000});
    benchmark::DoNotOptimize(points.data());
  }
}
BENCHMARK(BM_DecimateMinMax)->Unit(benchmark::kMicrosecond);

}  // namespace

int main(int argc, char** argv) {
  if (!qEnvironmentVariableIsSet("QT_QPA_PLATFORM")) qputenv("QT_QPA_PLATFORM", "offscreen");
  QApplication app(argc, argv);
  ::benchmark::Initialize(&argc, argv);
  if (::benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  ::benchmark::RunSpecifiedBenchmarks();
  ::benchmark::Shutdown();
  return 0;
}

// Renders the dashboard of one or more run folders to PNG/SVG/PDF without a display: an
// offscreen QApplication, RunData rebuilt from the records, the app's own Dashboard.
#include <QApplication>
#include <QColor>
#include <memory>

#include "app/cli_export_charts.h"
#include "ui/charts/dashboard.h"
#include "ui/run_data.h"

namespace amp::cli {

namespace {

// The app's run colours, so an exported chart looks like the window.
const char* const kColors[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b"};

std::unique_ptr<ui::RunData> toRunData(const RunRecord& r, int id) {
  auto d = std::make_unique<ui::RunData>();
  d->id = id;
  d->name = r.name;
  d->color = QColor(kColors[id % 6]);
  d->config = r.config;
  d->status = r.status == "diverged" ? ui::RunStatus::Diverged : ui::RunStatus::Finished;
  d->totalSteps = r.steps.empty() ? 0 : r.steps.back().step;
  for (const StepMetrics& m : r.steps) d->append(m);
  // Histograms are stored apart from the steps; each frame carries the scale of its step.
  for (const auto& [step, rec] : r.histograms) {
    if (d->histograms.empty() || d->histograms.back().step != step) {
      float scale = 1;
      for (const StepMetrics& m : r.steps)
        if (m.step == step) scale = m.scale;
      d->histograms.push_back({step, scale, {}});
    }
    d->histograms.back().records.push_back(rec);
  }
  for (const QString& e : r.events) d->events.append(e);
  return d;
}

}  // namespace

int exportCharts(const std::vector<RunRecord>& runs, const std::string& format,
                 const std::string& output) {
  std::unique_ptr<QApplication> app;
  if (!QCoreApplication::instance()) {
    // A headless command: render offscreen whatever the environment says.
    qputenv("QT_QPA_PLATFORM", "offscreen");
    static int argc = 1;
    static char name[] = "ampstudio-cli";
    static char* argv[] = {name, nullptr};
    app = std::make_unique<QApplication>(argc, argv);
  }
  std::vector<std::unique_ptr<ui::RunData>> data;
  QVector<const ui::RunData*> pointers;
  for (std::size_t i = 0; i < runs.size(); ++i) {
    data.push_back(toRunData(runs[i], static_cast<int>(i)));
    pointers.append(data.back().get());
  }
  const QString path = QString::fromStdString(output.empty() ? "dashboard." + format : output);
  ui::Dashboard dashboard;
  dashboard.resize(1800, 1050);
  dashboard.setRuns(pointers);
  dashboard.refresh();
  if (!dashboard.exportDashboard(path, QString::fromStdString(format)))
    return usageError(path.toStdString() + ": cannot write the " + format + " export");
  std::fprintf(stderr, "wrote %s\n", qPrintable(path));
  return 0;
}

}  // namespace amp::cli

// Renders the dashboard of one or more run folders to PNG/SVG/PDF without a display: an
// offscreen QApplication, RunData rebuilt from the records, the app's own Dashboard.
#include <QApplication>
#include <memory>

#include "app/cli_export_charts.h"
#include "ui/charts/dashboard.h"
#include "ui/run_data.h"
#include "ui/run_colors.h"

namespace amp::cli {

namespace {

// The app's run colours (a precision's own, a second run of it the next free one), so an
// export looks like the window.
std::unique_ptr<ui::RunData> toRunData(const RunRecord& r, int id, std::vector<QColor>& inUse) {
  auto d = std::make_unique<ui::RunData>();
  d->id = id;
  d->loadRecord(r);
  d->color = ui::colorForNewRun(d->config, inUse);
  inUse.push_back(d->color);
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
  std::vector<QColor> inUse;
  for (std::size_t i = 0; i < runs.size(); ++i) {
    data.push_back(toRunData(runs[i], static_cast<int>(i), inUse));
    pointers.append(data.back().get());
  }
  const QString path = QString::fromStdString(output.empty() ? "dashboard." + format : output);
  ui::Dashboard dashboard;
  dashboard.resize(1800, 1050);
  dashboard.setRuns(pointers);
  QString error;
  if (!dashboard.exportDashboard(path, QString::fromStdString(format), QSize(1800, 1050), 96, &error))
    return usageError(error.toStdString());
  std::fprintf(stderr, "wrote %s\n", qPrintable(path));
  return 0;
}

}  // namespace amp::cli

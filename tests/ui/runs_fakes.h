// Shared by the runs-table tests: runs made by hand (no training), with the figures the table
// shows (step time, peak memory) and a status, so each test sets exactly the situation it
// checks; and lookups of the panel's widgets and the model's columns by their visible names.
#pragma once

#include <QAbstractItemModel>
#include <QAction>
#include <QTableView>
#include <algorithm>
#include <memory>
#include <vector>

#include "ui/run_data.h"
#include "ui/runs_panel.h"

namespace amp::test {

struct FakeRun {
  QString name;
  PrecisionMode mode = PrecisionMode::Fp32;
  QString group;
  double stepMs = 10;
  std::int64_t peakBytes = 1000;
  ui::RunStatus status = ui::RunStatus::Finished;
  std::string model = "mlp";
  std::string data = "spirals";
  std::int64_t batchSize = 50;
  // Each step's time, step 1 first (the speed-up's noise rule reads them); empty: 10 steps of
  // stepMs.
  std::vector<double> stepTimes = {};
};

inline std::unique_ptr<ui::RunData> makeRun(int id, const FakeRun& f) {
  auto r = std::make_unique<ui::RunData>();
  r->id = id;
  r->name = f.name;
  r->group = f.group;
  r->status = f.status;
  r->config.mode = f.mode;
  r->config.model.name = f.model;
  r->config.data.name = f.data;
  r->config.train.batchSize = f.batchSize;
  const std::vector<double> times = f.stepTimes.empty() ? std::vector<double>(10, f.stepMs) : f.stepTimes;
  r->totalSteps = std::int64_t(times.size());
  for (int i = 1; i <= int(times.size()); ++i) {
    StepMetrics m;
    m.step = i;
    m.loss = 1.0;
    m.stepMs = times[std::size_t(i - 1)];
    m.memory.totalPeak = f.peakBytes;
    r->append(m);
  }
  return r;
}

// The model column whose header reads `name`, -1 if none.
inline int columnNamed(const QAbstractItemModel* m, const QString& name) {
  for (int c = 0; c < m->columnCount(); ++c)
    if (m->headerData(c, Qt::Horizontal, Qt::DisplayRole).toString() == name) return c;
  return -1;
}

// The panel's action with this object name (they are the context menu's entries too).
inline QAction* panelAction(ui::RunsPanel* panel, const char* name) {
  return panel->findChild<QAction*>(QString::fromLatin1(name));
}

// Selects the view's rows `rows` (view rows, i.e. after any filter), as ctrl-clicks would.
inline void selectViewRows(QTableView* view, const QList<int>& rows) {
  view->clearSelection();
  for (int row : rows)
    view->selectionModel()->select(view->model()->index(row, 0),
                                   QItemSelectionModel::Select | QItemSelectionModel::Rows);
  if (!rows.isEmpty())
    view->selectionModel()->setCurrentIndex(view->model()->index(rows.last(), 0), QItemSelectionModel::NoUpdate);
}

// The names of the selected runs, top to bottom, as the view shows them.
inline QStringList selectedNames(QTableView* view) {
  QModelIndexList rows = view->selectionModel()->selectedRows();
  std::sort(rows.begin(), rows.end(), [](const QModelIndex& a, const QModelIndex& b) { return a.row() < b.row(); });
  QStringList names;
  for (const QModelIndex& i : rows) names << i.data().toString();
  return names;
}

}  // namespace amp::test

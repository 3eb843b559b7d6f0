// The inspector's per-op dtype trace: for one recorded training step of a run, every op in
// order (forward, backward, scaler and optimizer) with its autocast list, the dtypes it received,
// computed in and produced, the casts autocast inserted and the weight-cache hits.
#pragma once

#include <QWidget>

class QAction;
class QLabel;
class QTableWidget;

namespace amp::ui {

struct RunData;

class TraceView : public QWidget {
  Q_OBJECT

 public:
  TraceView(QAction* traceNextStep, QWidget* parent = nullptr);
  void showRun(const RunData* run);  // nullptr clears
  const RunData* run() const { return m_run; }

 private:
  QLabel* m_title = nullptr;
  QTableWidget* m_table = nullptr;
  const RunData* m_run = nullptr;
};

}  // namespace amp::ui

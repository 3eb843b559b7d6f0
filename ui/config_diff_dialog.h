// "Compare settings…": the keys two runs' configs differ in, with both values side by side, so
// a surprising ratio can be traced to the setting behind it. Workload keys (model, data, batch
// size: what makes ratios incomparable) are marked.
#pragma once

#include <QDialog>

namespace amp::ui {

struct RunData;

class ConfigDiffDialog : public QDialog {
  Q_OBJECT

 public:
  ConfigDiffDialog(const RunData& a, const RunData& b, QWidget* parent = nullptr);
};

}  // namespace amp::ui

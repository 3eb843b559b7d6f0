// The autocast op lists as an editable table: every op PyTorch's CUDA autocast lists (plus the
// ops this engine's layers run), its PyTorch list and the list it should use in this run, so a
// user can ask "what if cross_entropy ran in fp16?". Edits become autocast.<op> config keys.
#pragma once

#include <QWidget>
#include <map>
#include <string>

class QCheckBox;
class QLineEdit;
class QTableWidget;

namespace amp::ui {

class AutocastTable : public QWidget {
  Q_OBJECT

 public:
  explicit AutocastTable(QWidget* parent = nullptr);

  // op -> policy name, only for ops that differ from PyTorch's lists (RunConfig::autocastOverrides).
  std::map<std::string, std::string> overrides() const;
  void setOverrides(const std::map<std::string, std::string>& overrides);  // no signal
  void resetToPyTorch();

 signals:
  void edited();

 private:
  void applyFilter();
  void markRow(int row);

  QTableWidget* m_table = nullptr;
  QLineEdit* m_filter = nullptr;
  QCheckBox* m_showAll = nullptr;
  bool m_updating = false;
};

}  // namespace amp::ui

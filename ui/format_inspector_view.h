// The number-format inspector: type a value and see what fp16, bf16, E4M3, E5M2 and E2M1 keep of it — the bit
// pattern split into sign/exponent/mantissa, the exact value stored, the rounding error and the
// class (normal, subnormal, zero, inf, nan). Backed by engine/telemetry/format_inspector.h.
#pragma once

#include <QWidget>

class QLineEdit;
class QTableWidget;
class QLabel;

namespace amp::ui {

class FormatInspectorView : public QWidget {
  Q_OBJECT

 public:
  explicit FormatInspectorView(QWidget* parent = nullptr);
  void inspect(const QString& text);  // also sets the input field
  // Tests: format 0 = fp16, 1 = bf16, 2 = e4m3, 3 = e5m2, 4 = e2m1; column 0 = bits (hex), 5 = class.
  QString cell(int format, int column) const;

 private:
  void update();

  QLineEdit* m_input = nullptr;
  QTableWidget* m_table = nullptr;
  QLabel* m_status = nullptr;
};

}  // namespace amp::ui

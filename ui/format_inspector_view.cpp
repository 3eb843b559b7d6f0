#include "ui/format_inspector_view.h"

#include <QFontDatabase>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QTableWidget>
#include <QVBoxLayout>
#include <stdexcept>

#include "engine/telemetry/format_inspector.h"
#include "engine/telemetry/format_inspector_fp8.h"
#include "ui/theme.h"

namespace amp::ui {

namespace {
// One row per format, one column per fact: the two 16-bit formats, then fp8's two and fp4
// (rows past the dock's height scroll).
enum Column { BitsHex, Binary, Stored, AbsError, RelError, Class, ColumnCount };
const char* const kMiniRows[] = {"e4m3", "e5m2", "e2m1"};
constexpr int kRows = 2 + 3;

QString num(double v) { return QString::number(v, 'g', 8); }
}  // namespace

FormatInspectorView::FormatInspectorView(QWidget* parent) : QWidget(parent) {
  m_input = new QLineEdit(this);
  m_input->setObjectName(QStringLiteral("formatInput"));
  m_input->setPlaceholderText(tr("a number: 0.1, 65520, 1e-8, 0x1p-24, inf"));
  m_input->setToolTip(tr("Decimal or hex float; rounded once, to nearest with ties to even"));
  auto* top = new QHBoxLayout;
  top->addWidget(new QLabel(tr("Value:"), this));
  top->addWidget(m_input, 1);

  m_table = new QTableWidget(kRows, ColumnCount, this);
  m_table->setHorizontalHeaderLabels({tr("bits"), tr("sign exponent mantissa"), tr("stored exactly"),
                                      tr("abs. error"), tr("rel. error"), tr("class")});
  m_table->setEditTriggers(QAbstractItemView::NoEditTriggers);
  m_table->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  m_table->horizontalHeader()->setSectionResizeMode(Stored, QHeaderView::Stretch);
  m_table->verticalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  m_table->setVerticalScrollBarPolicy(Qt::ScrollBarAsNeeded);
  const QFont mono = QFontDatabase::systemFont(QFontDatabase::FixedFont);
  for (int r = 0; r < kRows; ++r) {
    QTableWidgetItem* header;
    if (r < 2) {
      const FormatFacts& f = kLowPrecisionFormats[r];
      header = new QTableWidgetItem(QStringLiteral("%1 (1/%2/%3)")
                                        .arg(QString::fromUtf8(f.name.data()))
                                        .arg(f.exponentBits)
                                        .arg(f.mantissaBits));
      header->setToolTip(tr("max %1 · min normal 2^%2 · min subnormal 2^%3 · epsilon 2^-%4")
                             .arg(num(f.maxFinite))
                             .arg(f.minExponent)
                             .arg(f.minExponent - f.mantissaBits)
                             .arg(f.mantissaBits));
    } else {
      const std::string name = kMiniRows[r - 2];
      const MiniLayout L = miniLayout(name == "e4m3" ? MiniFormat::E4M3 : name == "e5m2" ? MiniFormat::E5M2 : MiniFormat::E2M1);
      header = new QTableWidgetItem(QStringLiteral("%1 (1/%2/%3)").arg(QString::fromStdString(name)).arg(L.expBits).arg(L.manBits));
      header->setToolTip(QString::fromStdString(miniFormatFacts(name, std::nullopt)).trimmed() +
                         tr(" · as PyTorch casts: the value becomes an fp32 first"));
    }
    m_table->setVerticalHeaderItem(r, header);
    for (int c = 0; c < ColumnCount; ++c) {
      auto* item = new QTableWidgetItem;
      if (c == BitsHex || c == Binary || c == Stored) item->setFont(mono);
      m_table->setItem(r, c, item);
    }
  }
  m_status = new QLabel(this);
  m_status->setWordWrap(true);

  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(4, 4, 4, 4);
  layout->addLayout(top);
  layout->addWidget(m_table, 1);
  layout->addWidget(m_status);
  connect(m_input, &QLineEdit::textChanged, this, &FormatInspectorView::update);
  inspect(QStringLiteral("0.1"));
}

void FormatInspectorView::inspect(const QString& text) {
  if (m_input->text() == text) update();
  else m_input->setText(text);
}

QString FormatInspectorView::cell(int format, int column) const { return m_table->item(format, column)->text(); }

void FormatInspectorView::update() {
  const std::string text = m_input->text().toStdString();
  QStringList notes;
  for (int row = 0; row < 2; ++row) {
    const FormatFacts& f = kLowPrecisionFormats[row];
    FormatInspection r;
    try {
      r = inspectValue(text, f.dtype);
    } catch (const std::exception& e) {
      // Every row: an entry that fails to parse must not leave an earlier value's facts behind.
      for (int r2 = 0; r2 < kRows; ++r2)
        for (int c = 0; c < ColumnCount; ++c) {
          m_table->item(r2, c)->setText(QString());
          m_table->item(r2, c)->setData(Qt::ForegroundRole, QVariant());
        }
      m_status->setText(text.empty() ? QString() : tr("Not a number: %1").arg(QString::fromUtf8(e.what())));
      return;
    }
    m_table->item(row, BitsHex)->setText(QString::fromStdString(r.bitsHex));
    m_table->item(row, Binary)->setText(QString::fromStdString(r.binary));
    m_table->item(row, Stored)->setText(QString::fromStdString(r.representedExact));
    m_table->item(row, AbsError)->setText(num(r.absError));
    m_table->item(row, RelError)->setText(r.value == 0 ? QStringLiteral("0") : num(r.relError));
    QString klass = QString::fromStdString(r.klass);
    if (r.overflowed) klass += tr(" (overflowed)");
    if (r.underflowedToZero) klass += tr(" (underflowed to zero)");
    m_table->item(row, Class)->setText(klass);
    const bool bad = r.overflowed || r.underflowedToZero;
    m_table->item(row, Class)->setData(Qt::ForegroundRole, bad ? QVariant(QBrush(errorColor())) : QVariant());
    if (r.overflowed) notes << tr("%1 overflows: larger than %2").arg(QString::fromUtf8(f.name.data())).arg(num(f.maxFinite));
    if (r.underflowedToZero) notes << tr("%1 underflows to zero: smaller than half of 2^%2")
                                          .arg(QString::fromUtf8(f.name.data())).arg(f.minExponent - f.mantissaBits);
    if (r.klass == "subnormal") notes << tr("%1 keeps it as a subnormal, with fewer significant bits")
                                             .arg(QString::fromUtf8(f.name.data()));
  }
  for (int row = 2; row < kRows; ++row) {
    const MiniInspection r = inspectMiniValue(text, kMiniRows[row - 2], std::nullopt);  // parsed above
    m_table->item(row, BitsHex)->setText(QString::fromStdString(r.codeHex));
    m_table->item(row, Binary)->setText(QString::fromStdString(r.binary));
    m_table->item(row, Stored)->setText(QString::fromStdString(r.representedExact));
    m_table->item(row, AbsError)->setText(num(r.absError));
    m_table->item(row, RelError)->setText(r.value == 0 ? QStringLiteral("0") : num(r.relError));
    const bool bad = r.notes.find("overflow") != std::string::npos || r.notes.find("underflow") != std::string::npos;
    const std::size_t cut = r.notes.find("; the value first");
    m_table->item(row, Class)->setText(QString::fromStdString(r.klass) +
                                       (bad ? QStringLiteral(" (%1)").arg(QString::fromStdString(r.notes.substr(0, cut))) : QString()));
    m_table->item(row, Class)->setData(Qt::ForegroundRole, bad ? QVariant(QBrush(errorColor())) : QVariant());
  }
  // With nothing to warn about, the line recalls the two formats' ranges.
  m_status->setText(notes.isEmpty() ? tr("<small>fp16: max 65504, smallest normal 2<sup>-14</sup>, "
                                         "smallest subnormal 2<sup>-24</sup> ≈ 6e-8 · bf16: fp32's "
                                         "range (max ≈ 3.4e38) with 8 significant bits</small>")
                                    : notes.join(QStringLiteral("; ")));
}

}  // namespace amp::ui

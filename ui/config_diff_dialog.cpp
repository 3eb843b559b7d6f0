#include "ui/config_diff_dialog.h"

#include <QDialogButtonBox>
#include <QHeaderView>
#include <QLabel>
#include <QTableWidget>
#include <QVBoxLayout>

#include "ui/config_diff.h"
#include "ui/run_data.h"
#include "ui/theme.h"

namespace amp::ui {

ConfigDiffDialog::ConfigDiffDialog(const RunData& a, const RunData& b, QWidget* parent) : QDialog(parent) {
  setObjectName(QStringLiteral("configDiffDialog"));
  setWindowTitle(tr("Settings of %1 and %2").arg(a.name, b.name));
  const QVector<ConfigDifference> diffs = configDifferences(a.config, b.config);
  const QStringList workload = workloadDifferences(a.config, b.config);

  auto* summary = new QLabel(this);
  summary->setWordWrap(true);
  if (diffs.isEmpty())
    summary->setText(tr("The two runs have the same settings."));
  else if (workload.isEmpty())
    summary->setText(tr("%n setting(s) differ. Same model, data and batch size: their step times and memory "
                        "compare the precision settings.", nullptr, int(diffs.size())));
  else
    summary->setText(tr("%n setting(s) differ. ⚠ Different workload (%1): speed-up and memory ratios between "
                        "them compare more than precision.", nullptr, int(diffs.size()))
                         .arg(workload.join(QStringLiteral(", "))));

  auto* table = new QTableWidget(int(diffs.size()), 3, this);
  table->setHorizontalHeaderLabels({tr("Setting"), a.name, b.name});
  table->verticalHeader()->hide();
  table->setEditTriggers(QAbstractItemView::NoEditTriggers);
  table->setSelectionBehavior(QAbstractItemView::SelectRows);
  table->setAlternatingRowColors(true);
  for (int row = 0; row < diffs.size(); ++row) {
    const ConfigDifference& d = diffs[row];
    const QString values[3] = {d.key, d.a, d.b};
    for (int col = 0; col < 3; ++col) {
      auto* item = new QTableWidgetItem(values[col]);
      if (workload.contains(d.key)) {
        item->setForeground(warningColor());
        item->setToolTip(tr("A workload setting: ratios across it compare different work"));
      }
      table->setItem(row, col, item);
    }
  }
  table->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  table->horizontalHeader()->setStretchLastSection(true);

  auto* buttons = new QDialogButtonBox(QDialogButtonBox::Close, this);
  connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
  auto* layout = new QVBoxLayout(this);
  layout->addWidget(summary);
  layout->addWidget(table, 1);
  layout->addWidget(buttons);
  resize(640, 420);
}

}  // namespace amp::ui

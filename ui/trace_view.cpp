#include "ui/trace_view.h"

#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QTableWidget>
#include <QToolButton>
#include <QVBoxLayout>

#include "ui/run_data.h"
#include "ui/theme.h"

namespace amp::ui {

namespace {
QString dtypeText(DType t) { return QString::fromUtf8(dtypeName(t).data()); }

// 16-bit dtypes stand out, so a reader sees at a glance where low precision happens.
QColor dtypeTint(DType t) {
  const bool dark = currentTheme() == Theme::Dark;
  if (t == DType::F16) return dark ? QColor(110, 70, 20) : QColor(255, 226, 190);
  if (t == DType::BF16) return dark ? QColor(80, 50, 110) : QColor(228, 212, 250);
  return {};
}

QString policyText(CastPolicy p) {
  switch (p) {
    case CastPolicy::LowerPrecision: return QObject::tr("low");
    case CastPolicy::Fp32: return QObject::tr("fp32");
    case CastPolicy::Fp32Output: return QObject::tr("fp32 out");
    case CastPolicy::Promote: return QObject::tr("promote");
    case CastPolicy::PassThrough: return QObject::tr("pass");
    case CastPolicy::Banned: return QObject::tr("banned");
  }
  return {};
}
}  // namespace

TraceView::TraceView(QAction* traceNextStep, QWidget* parent) : QWidget(parent) {
  m_title = new QLabel(tr("No trace yet: start a run (its first step is traced), or press Step "
                          "while paused."), this);
  m_title->setWordWrap(true);
  auto* trace = new QToolButton(this);
  trace->setDefaultAction(traceNextStep);
  trace->setToolButtonStyle(Qt::ToolButtonTextBesideIcon);
  auto* top = new QHBoxLayout;
  top->addWidget(m_title, 1);
  top->addWidget(trace);

  m_table = new QTableWidget(0, 10, this);
  m_table->setHorizontalHeaderLabels({tr("phase"), tr("layer"), tr("op"), tr("list"), tr("inputs"),
                                      tr("compute"), tr("output"), tr("casts"), tr("cache hits"),
                                      tr("note")});
  m_table->horizontalHeaderItem(3)->setToolTip(tr("The op's autocast list (policy); greyed when "
                                                  "it ran outside an enabled autocast region"));
  m_table->verticalHeader()->hide();
  m_table->verticalHeader()->setDefaultSectionSize(m_table->fontMetrics().height() + 4);
  m_table->setEditTriggers(QAbstractItemView::NoEditTriggers);
  m_table->setSelectionBehavior(QAbstractItemView::SelectRows);
  m_table->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  m_table->horizontalHeader()->setStretchLastSection(true);
  m_table->setWordWrap(false);

  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(4, 4, 4, 4);
  layout->addLayout(top);
  layout->addWidget(m_table, 1);
}

void TraceView::showRun(const RunData* run) {
  m_run = run;
  m_table->setRowCount(0);
  if (!run || run->trace.empty()) {
    m_title->setText(run ? tr("%1: no trace yet.").arg(run->name)
                         : tr("No trace yet: start a run (its first step is traced), or press "
                              "Step while paused."));
    return;
  }
  int casts = 0, hits = 0;
  for (const auto& e : run->trace) casts += e.castsInserted, hits += e.cacheHits;
  m_title->setText(tr("<b>%1</b> — step %2: %3 ops, %4 casts inserted, %5 weight-cache hits")
                       .arg(run->name.toHtmlEscaped())
                       .arg(run->traceStep)
                       .arg(run->trace.size())
                       .arg(casts)
                       .arg(hits));
  m_table->setRowCount(int(run->trace.size()));
  const QColor muted = palette().color(QPalette::Disabled, QPalette::Text);
  for (int row = 0; row < int(run->trace.size()); ++row) {
    const OpTraceEntry& e = run->trace[row];
    QStringList inputs;
    for (DType d : e.inputDtypes) inputs << dtypeText(d);
    const QString cells[] = {QString::fromUtf8(tracePhaseName(e.phase).data()),
                             QString::fromStdString(e.layer),
                             QString::fromStdString(e.op),
                             policyText(e.policy),
                             inputs.join(QStringLiteral(", ")),
                             dtypeText(e.computeDtype),
                             dtypeText(e.outputDtype),
                             e.castsInserted ? QString::number(e.castsInserted) : QString(),
                             e.cacheHits ? QString::number(e.cacheHits) : QString(),
                             QString::fromStdString(e.note)};
    for (int col = 0; col < 10; ++col) {
      auto* item = new QTableWidgetItem(cells[col]);
      if (col == 3 && !e.autocastEnabled) {
        item->setForeground(muted);
        item->setToolTip(tr("ran outside an enabled autocast region"));
      }
      if (col == 5 || col == 6) {
        const QColor tint = dtypeTint(col == 5 ? e.computeDtype : e.outputDtype);
        if (tint.isValid()) item->setBackground(tint);
      }
      if (col == 9) item->setToolTip(cells[col]);
      m_table->setItem(row, col, item);
    }
  }
}

}  // namespace amp::ui

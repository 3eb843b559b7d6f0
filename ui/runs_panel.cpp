#include "ui/runs_panel.h"

#include <QComboBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QMenu>
#include <QSpinBox>
#include <QTableView>
#include <QToolButton>
#include <QVBoxLayout>

#include "ui/runs_model.h"

namespace amp::ui {

RunsPanel::RunsPanel(RunsModel* model, QAction* twinRuns, QWidget* parent)
    : QWidget(parent), m_model(model) {
  auto* bar = new QHBoxLayout;
  bar->setContentsMargins(4, 2, 4, 0);
  auto* twin = new QToolButton(this);
  twin->setDefaultAction(twinRuns);
  twin->setToolButtonStyle(Qt::ToolButtonTextBesideIcon);
  bar->addWidget(twin);
  bar->addSpacing(12);
  bar->addWidget(new QLabel(tr("Baseline:"), this));
  m_baseline = new QComboBox(this);
  m_baseline->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
  m_baseline->setMinimumContentsLength(16);
  m_baseline->setToolTip(tr("Speed-up and memory ratio are measured against this run"));
  bar->addWidget(m_baseline);
  bar->addSpacing(12);
  bar->addWidget(new QLabel(tr("Max concurrent:"), this));
  m_maxConcurrent = new QSpinBox(this);
  m_maxConcurrent->setRange(1, 8);
  m_maxConcurrent->setToolTip(tr("Runs training at the same time; the rest wait in a queue. "
                                 "1 on a 2-core machine keeps step times honest."));
  bar->addWidget(m_maxConcurrent);
  bar->addStretch(1);

  m_view = new QTableView(this);
  m_view->setModel(model);
  m_view->setSelectionBehavior(QAbstractItemView::SelectRows);
  m_view->setSelectionMode(QAbstractItemView::SingleSelection);
  m_view->setAlternatingRowColors(true);
  m_view->setContextMenuPolicy(Qt::CustomContextMenu);
  m_view->verticalHeader()->hide();
  m_view->verticalHeader()->setDefaultSectionSize(m_view->fontMetrics().height() + 6);
  m_view->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  m_view->horizontalHeader()->setSectionResizeMode(RunsModel::Settings, QHeaderView::Stretch);
  m_view->setWordWrap(false);
  m_view->setTextElideMode(Qt::ElideMiddle);

  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->setSpacing(2);
  layout->addLayout(bar);
  layout->addWidget(m_view, 1);

  connect(m_view->selectionModel(), &QItemSelectionModel::currentRowChanged, this,
          [this](const QModelIndex& cur) {
            if (RunData* r = m_model->runAt(cur.row())) emit selectedRunChanged(r->id);
          });
  connect(m_view, &QTableView::customContextMenuRequested, this, &RunsPanel::showContextMenu);
  connect(m_maxConcurrent, &QSpinBox::valueChanged, this, &RunsPanel::maxConcurrentChanged);
  connect(m_baseline, &QComboBox::activated, this,
          [this](int i) { m_model->setBaselineId(m_baseline->itemData(i).toInt()); });
  connect(model, &RunsModel::rowsInserted, this, &RunsPanel::updateBaselineChoices);
  connect(model, &RunsModel::rowsRemoved, this, &RunsPanel::updateBaselineChoices);
  connect(model, &RunsModel::baselineChanged, this, &RunsPanel::updateBaselineChoices);
  updateBaselineChoices();
}

int RunsPanel::selectedRunId() const {
  const RunData* r = m_model->runAt(m_view->currentIndex().row());
  return r ? r->id : 0;
}

void RunsPanel::selectRun(int id) {
  const int row = m_model->rowOf(id);
  if (row >= 0) m_view->selectRow(row);
}

void RunsPanel::setMaxConcurrent(int n) { m_maxConcurrent->setValue(n); }
int RunsPanel::maxConcurrent() const { return m_maxConcurrent->value(); }

void RunsPanel::updateBaselineChoices() {
  m_baseline->clear();
  m_baseline->addItem(tr("(none)"), 0);
  for (const RunData* r : m_model->runs())
    m_baseline->addItem(QStringLiteral("%1 (%2)").arg(r->name, RunsModel::modeText(r->config)), r->id);
  m_baseline->setCurrentIndex(std::max(0, m_baseline->findData(m_model->baselineId())));
}

void RunsPanel::showContextMenu(const QPoint& pos) {
  RunData* r = m_model->runAt(m_view->indexAt(pos).row());
  if (!r) return;
  const int id = r->id;
  const bool active = r->status == RunStatus::Running || r->status == RunStatus::Paused ||
                      r->status == RunStatus::Queued;
  QMenu menu(this);
  menu.addAction(tr("Use as baseline"), this, [this, id] { m_model->setBaselineId(id); });
  menu.addAction(tr("Load its settings into the experiment"), this,
                 [this, r] { emit loadSettingsRequested(r->config); });
  menu.addSeparator();
  menu.addAction(tr("Stop this run"), this, [this, id] { emit stopRunRequested(id); })->setEnabled(active);
  menu.addAction(tr("Remove from the session"), this, [this, id] { emit removeRunRequested(id); })
      ->setEnabled(!active);
  if (!m_fileActions.isEmpty()) {
    selectRun(id);  // the file actions act on the selected run
    menu.addSeparator();
    menu.addActions(m_fileActions);
  }
  menu.exec(m_view->viewport()->mapToGlobal(pos));
}

}  // namespace amp::ui

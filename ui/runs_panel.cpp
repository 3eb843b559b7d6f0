#include "ui/runs_panel.h"

#include <QAction>
#include <QComboBox>
#include <QEvent>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QMenu>
#include <QPushButton>
#include <QMessageBox>
#include <QSpinBox>
#include <QTableView>
#include <QTimer>
#include <QToolButton>
#include <QVBoxLayout>
#include <algorithm>

#include "ui/config_diff_dialog.h"
#include "ui/flow_layout.h"
#include "ui/runs_filter_proxy.h"
#include "ui/runs_model.h"

namespace amp::ui {

RunsPanel::RunsPanel(RunsModel* model, QAction* twinRuns, QWidget* parent)
    : QWidget(parent), m_model(model), m_proxy(new RunsFilterProxy(model, this)) {
  // The controls wrap onto a second row in a narrow panel (a side-panel tab, a small window).
  auto* bar = new FlowLayout(10, 2);
  bar->setContentsMargins(4, 2, 4, 0);
  auto* twin = new QToolButton(this);
  twin->setDefaultAction(twinRuns);
  twin->setToolButtonStyle(Qt::ToolButtonTextBesideIcon);
  bar->addWidget(twin);
  // A label and its control stay together when the row wraps.
  const auto labelled = [this](const QString& text, QWidget* control) {
    auto* box = new QWidget(this);
    auto* row = new QHBoxLayout(box);
    row->setContentsMargins(0, 0, 0, 0);
    row->addWidget(new QLabel(text, box));
    row->addWidget(control);
    return box;
  };
  m_baseline = new QComboBox(this);
  m_baseline->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
  m_baseline->setMinimumContentsLength(16);
  m_baseline->setToolTip(tr("Speed-up and memory ratio are measured against this run; automatic: each run "
                            "against the fp32 run of its own group (a lesson, twin runs)"));
  bar->addWidget(labelled(tr("Baseline:"), m_baseline));
  m_maxConcurrent = new QSpinBox(this);
  m_maxConcurrent->setRange(1, 8);
  m_maxConcurrent->setToolTip(tr("Runs training at the same time; the rest wait in a queue. "
                                 "Runs training together share the CPU cores (each takes its part, at least one). "
                                 "1 on a 2-core machine keeps step times honest. A lesson's runs do not wait for it: "
                                 "they start together and train in turns, a block of steps each."));
  bar->addWidget(labelled(tr("Max concurrent:"), m_maxConcurrent));
  m_filter = new QLineEdit(this);
  m_filter->setObjectName(QStringLiteral("runsFilter"));
  m_filter->setPlaceholderText(tr("Filter runs…"));
  m_filter->setToolTip(tr("Shows the runs whose name, mode, group, tags, note or status contain every word typed"));
  m_filter->setClearButtonEnabled(true);
  m_filter->setMinimumWidth(120);
  bar->addStretchedWidget(m_filter);

  m_view = new QTableView(this);
  m_view->setModel(m_proxy);
  m_view->setSelectionBehavior(QAbstractItemView::SelectRows);
  m_view->setSelectionMode(QAbstractItemView::ExtendedSelection);
  m_view->setEditTriggers(QAbstractItemView::DoubleClicked | QAbstractItemView::EditKeyPressed);
  m_view->setAlternatingRowColors(true);
  m_view->setContextMenuPolicy(Qt::CustomContextMenu);
  m_view->verticalHeader()->hide();
  fitRowHeight();
  m_view->installEventFilter(this);
  // The ratios beside the figures they divide (they sat past the model files' columns, out of
  // view without scrolling at 1024 and 1280): speed-up after ms/step, memory ratio after peak.
  QHeaderView* header = m_view->horizontalHeader();
  header->moveSection(header->visualIndex(RunsModel::SpeedUp), header->visualIndex(RunsModel::MsPerStep) + 1);
  header->moveSection(header->visualIndex(RunsModel::MemoryRatio), header->visualIndex(RunsModel::PeakMemory) + 1);
  m_view->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  m_view->horizontalHeader()->setSectionResizeMode(RunsModel::Settings, QHeaderView::Stretch);
  m_view->setWordWrap(false);
  m_view->setTextElideMode(Qt::ElideMiddle);

  buildActions();
  auto* clear = new QToolButton(this);
  clear->setObjectName(QStringLiteral("archiveFinishedButton"));
  clear->setDefaultAction(m_archiveEnded);
  bar->addWidget(clear);
  auto* archived = new QToolButton(this);
  archived->setObjectName(QStringLiteral("showArchivedButton"));
  archived->setDefaultAction(m_showArchived);
  bar->addWidget(archived);

  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->setSpacing(2);
  layout->addLayout(bar);
  layout->addWidget(m_view, 1);

  connect(m_view->selectionModel(), &QItemSelectionModel::currentRowChanged, this,
          [this](const QModelIndex& cur) {
            if (RunData* r = m_model->runAt(sourceRow(cur.row()))) emit selectedRunChanged(r->id);
          });
  connect(m_view->selectionModel(), &QItemSelectionModel::selectionChanged, this, &RunsPanel::updateActions);
  connect(m_view, &QTableView::customContextMenuRequested, this, &RunsPanel::showContextMenu);
  connect(m_filter, &QLineEdit::textChanged, m_proxy, &RunsFilterProxy::setSearchText);
  connect(m_maxConcurrent, &QSpinBox::valueChanged, this, &RunsPanel::maxConcurrentChanged);
  connect(m_baseline, &QComboBox::activated, this,
          [this](int i) { m_model->setBaselineId(m_baseline->itemData(i).toInt()); });
  connect(model, &RunsModel::rowsInserted, this, &RunsPanel::updateBaselineChoices);
  connect(model, &RunsModel::rowsRemoved, this, &RunsPanel::updateBaselineChoices);
  connect(model, &RunsModel::baselineChanged, this, &RunsPanel::updateBaselineChoices);
  connect(model, &RunsModel::archivedChanged, this, &RunsPanel::updateArchivedButton);
  connect(model, &RunsModel::rowsInserted, this, &RunsPanel::updateArchivedButton);
  connect(model, &RunsModel::rowsRemoved, this, &RunsPanel::updateArchivedButton);
  connect(model, &RunsModel::dataChanged, this, [this] {
    updateActions();
    // Removing rows from within dataChanged would pull them from under the views still handling it.
    if (!m_removeWhenEnded.isEmpty()) QTimer::singleShot(0, this, &RunsPanel::removeStoppedPendingRuns);
  });
  updateBaselineChoices();
  updateArchivedButton();
  updateActions();
}

void RunsPanel::fitRowHeight() {
  // Rows as tall as the font (it grows with the presentation scale): a fixed height set once cut
  // the underscores off "pure_fp16" at x1.5.
  m_view->verticalHeader()->setMinimumSectionSize(m_view->fontMetrics().height() + 4);
  m_view->verticalHeader()->setDefaultSectionSize(m_view->fontMetrics().height() + 6);
}

bool RunsPanel::eventFilter(QObject* watched, QEvent* event) {
  // The table's own font change (the presentation scale reaches it after this panel's).
  if (watched == m_view && event->type() == QEvent::FontChange) fitRowHeight();
  return QWidget::eventFilter(watched, event);
}

void RunsPanel::buildActions() {
  auto make = [this](const QString& text, const char* name, auto slot) {
    auto* a = new QAction(text, this);
    a->setObjectName(QString::fromLatin1(name));
    connect(a, &QAction::triggered, this, slot);
    return a;
  };
  m_delete = make(tr("Remove selected"), "deleteSelectedAction", &RunsPanel::removeSelectedRuns);
  m_delete->setShortcut(QKeySequence::Delete);
  m_delete->setShortcutContext(Qt::WidgetWithChildrenShortcut);
  m_view->addAction(m_delete);  // Delete works while the table has the focus
  m_archiveEnded = make(tr("Archive finished"), "archiveFinishedAction", &RunsPanel::archiveEndedRuns);
  m_archiveEnded->setToolTip(tr("Set every run that has ended aside: out of the charts and the table, "
                              "kept and restorable (“Archived”)"));
  m_archive = make(tr("Archive selected"), "archiveSelectedAction", &RunsPanel::archiveSelectedRuns);
  m_restore = make(tr("Restore selected"), "restoreSelectedAction", &RunsPanel::restoreSelectedRuns);
  m_showArchived = new QAction(this);
  m_showArchived->setObjectName(QStringLiteral("showArchivedAction"));
  m_showArchived->setCheckable(true);
  m_showArchived->setToolTip(tr("List the archived runs (in italics) to restore or delete them"));
  connect(m_showArchived, &QAction::toggled, this, &RunsPanel::setShowArchived);
  m_hide = make(tr("Hide selected from the charts"), "hideSelectedAction", &RunsPanel::hideSelectedRuns);
  m_showOnly = make(tr("Show only selected in the charts"), "showOnlySelectedAction", &RunsPanel::showOnlySelectedRuns);
  m_showAll = make(tr("Show all in the charts"), "showAllAction", &RunsPanel::showAllRuns);
  m_selectGroup = make(tr("Select group"), "selectGroupAction", &RunsPanel::selectCurrentGroup);
  m_compare = make(tr("Compare settings…"), "compareSettingsAction", &RunsPanel::compareSelectedSettings);
  m_editTags = new QAction(tr("Edit tags"), this);
  m_editTags->setObjectName(QStringLiteral("editTagsAction"));
  m_editNote = new QAction(tr("Edit note"), this);
  m_editNote->setObjectName(QStringLiteral("editNoteAction"));
  for (auto [action, column] : {std::pair{m_editTags, int(RunsModel::Tags)}, std::pair{m_editNote, int(RunsModel::Note)}})
    connect(action, &QAction::triggered, this, [this, column] {
      const QModelIndex cur = m_view->currentIndex();
      if (cur.isValid()) m_view->edit(m_proxy->index(cur.row(), column));
    });
}

void RunsPanel::updateActions() {
  const QList<int> ids = selectedRunIds();
  m_delete->setEnabled(!ids.isEmpty());
  bool anyArchived = false, anyArchivable = false;
  for (int id : ids)
    if (const RunData* r = runWithId(id)) {
      anyArchived |= r->archived;
      anyArchivable |= !r->archived && !isActive(r->status);
    }
  m_archive->setEnabled(anyArchivable);
  m_restore->setEnabled(anyArchived);
  m_hide->setEnabled(!ids.isEmpty());
  m_showOnly->setEnabled(!ids.isEmpty());
  m_compare->setEnabled(ids.size() == 2);
  const RunData* current = runWithId(selectedRunId());
  m_editTags->setEnabled(current);
  m_editNote->setEnabled(current);
  const bool grouped = current && !current->group.isEmpty();
  m_selectGroup->setEnabled(grouped);
  m_selectGroup->setText(grouped ? tr("Select group “%1”").arg(current->group) : tr("Select group"));
  bool anyEnded = false;
  for (const RunData* r : m_model->runs()) anyEnded |= !r->archived && !isActive(r->status);
  m_archiveEnded->setEnabled(anyEnded);
}

int RunsPanel::sourceRow(int viewRow) const {
  return m_proxy->mapToSource(m_proxy->index(viewRow, 0)).row();
}

RunData* RunsPanel::runWithId(int id) const { return m_model->runAt(m_model->rowOf(id)); }

int RunsPanel::selectedRunId() const {
  const QModelIndex cur = m_view->currentIndex();
  const QItemSelectionModel* sel = m_view->selectionModel();
  if (cur.isValid() && sel->isRowSelected(cur.row(), {}))
    if (const RunData* r = m_model->runAt(sourceRow(cur.row()))) return r->id;
  const QList<int> ids = selectedRunIds();
  if (!ids.isEmpty()) return ids.first();
  // Nothing selected: the current row (a run just added is current without a selection).
  const RunData* r = cur.isValid() ? m_model->runAt(sourceRow(cur.row())) : nullptr;
  return r ? r->id : 0;
}

QList<int> RunsPanel::selectedRunIds() const {
  QList<int> rows;
  for (const QModelIndex& i : m_view->selectionModel()->selectedRows()) rows << sourceRow(i.row());
  std::sort(rows.begin(), rows.end());
  QList<int> ids;
  for (int row : rows)
    if (const RunData* r = m_model->runAt(row)) ids << r->id;
  return ids;
}

void RunsPanel::selectRun(int id) { selectRuns({id}); }

void RunsPanel::selectRuns(const QList<int>& ids) {
  QItemSelection selection;
  QModelIndex last;
  for (int id : ids) {
    const QModelIndex i = m_proxy->mapFromSource(m_model->index(m_model->rowOf(id), 0));
    if (!i.isValid()) continue;  // filtered out
    selection.select(i, i);
    last = i;
  }
  if (!last.isValid()) return;
  m_view->selectionModel()->setCurrentIndex(last, QItemSelectionModel::NoUpdate);
  m_view->selectionModel()->select(selection, QItemSelectionModel::ClearAndSelect | QItemSelectionModel::Rows);
}

void RunsPanel::setMaxConcurrent(int n) { m_maxConcurrent->setValue(n); }
int RunsPanel::maxConcurrent() const { return m_maxConcurrent->value(); }

void RunsPanel::updateBaselineChoices() {
  m_baseline->clear();
  m_baseline->addItem(tr("(each group's fp32 run)"), 0);
  for (const RunData* r : m_model->runs())
    m_baseline->addItem(QStringLiteral("%1 (%2)").arg(r->name, RunsModel::modeText(r->config)), r->id);
  m_baseline->setCurrentIndex(std::max(0, m_baseline->findData(m_model->baselineId())));
}

void RunsPanel::removeSelectedRuns() {
  QList<int> ended, active;
  QStringList activeNames;
  for (int id : selectedRunIds()) {
    const RunData* r = runWithId(id);
    if (!r) continue;
    if (isActive(r->status)) {
      active << id;
      activeNames << r->name;
    } else {
      ended << id;
    }
  }
  const int n = int(ended.size() + active.size());
  if (n == 0) return;
  // Deleting frees the run's data for good (a run not saved in an experiment file is lost):
  // always asked, with archiving (undoable) offered beside it for runs that have ended.
  QMessageBox box(QMessageBox::Question, tr("Delete runs"),
                  n == 1 ? tr("Delete 1 run? Its steps, histograms and events go for good.")
                         : tr("Delete %1 runs? Their steps, histograms and events go for good.").arg(n),
                  QMessageBox::NoButton, this);
  QString detail;
  if (!active.isEmpty())
    detail = (active.size() == 1 ? tr("One still trains and will be stopped first: %1.")
                                 : tr("%1 still train and will be stopped first: %2.").arg(active.size()))
                 .arg(activeNames.join(QStringLiteral(", ")));
  QPushButton* archiveButton = nullptr;
  if (active.isEmpty()) {
    detail = tr("“Archive” sets them aside instead: out of the charts, restorable.");
    archiveButton = box.addButton(tr("Archive"), QMessageBox::AcceptRole);
  }
  box.setInformativeText(detail);
  box.addButton(QMessageBox::Yes)->setText(tr("Delete"));
  box.addButton(QMessageBox::Cancel);
  box.setDefaultButton(QMessageBox::Cancel);
  box.exec();
  if (archiveButton && box.clickedButton() == archiveButton) {
    archive(ended);
    return;
  }
  if (box.clickedButton() != box.button(QMessageBox::Yes)) return;
  for (int id : active) {
    m_removeWhenEnded.insert(id);  // removed once its status says it has stopped
    emit stopRunRequested(id);
  }
  for (int id : ended) emit removeRunRequested(id);
}

void RunsPanel::removeStoppedPendingRuns() {
  for (int id : QList<int>(m_removeWhenEnded.begin(), m_removeWhenEnded.end())) {
    const RunData* r = runWithId(id);
    if (r && isActive(r->status)) continue;
    m_removeWhenEnded.remove(id);
    if (r) emit removeRunRequested(id);
  }
}

int RunsPanel::archiveEndedRuns() {
  QList<int> ids;
  for (const RunData* r : m_model->runs()) ids << r->id;
  return archive(ids);
}

void RunsPanel::archiveSelectedRuns() { archive(selectedRunIds()); }

int RunsPanel::archive(const QList<int>& ids) {
  QList<int> done;
  for (int id : ids)
    if (const RunData* r = runWithId(id); r && !r->archived && !isActive(r->status)) {
      m_model->setRunArchived(id, true);
      done << id;
    }
  if (!done.isEmpty()) emit runsArchived(done);
  return int(done.size());
}

void RunsPanel::restoreSelectedRuns() {
  for (int id : selectedRunIds()) m_model->setRunArchived(id, false);
}

void RunsPanel::setShowArchived(bool show) {
  m_proxy->setShowArchived(show);
  if (m_showArchived->isChecked() != show) m_showArchived->setChecked(show);
}

void RunsPanel::updateArchivedButton() {
  const int n = m_model->archivedCount();
  // Nothing left to list: the table goes back to the live runs.
  if (n == 0 && m_showArchived->isChecked()) setShowArchived(false);
  m_showArchived->setText(tr("Archived (%1)").arg(n));
  m_showArchived->setEnabled(n > 0 || m_showArchived->isChecked());
}

void RunsPanel::hideSelectedRuns() {
  for (int id : selectedRunIds()) m_model->setRunVisible(id, false);
}

void RunsPanel::showOnlySelectedRuns() {
  const QList<int> ids = selectedRunIds();
  for (const RunData* r : m_model->runs()) m_model->setRunVisible(r->id, ids.contains(r->id));
}

void RunsPanel::showAllRuns() {
  for (const RunData* r : m_model->runs()) m_model->setRunVisible(r->id, true);
}

void RunsPanel::selectCurrentGroup() {
  const RunData* current = runWithId(selectedRunId());
  if (!current || current->group.isEmpty()) return;
  QList<int> ids;
  for (const RunData* r : m_model->runs())
    if (r->group == current->group) ids << r->id;
  selectRuns(ids);
}

void RunsPanel::compareSelectedSettings() {
  const QList<int> ids = selectedRunIds();
  if (ids.size() != 2) return;
  const RunData* a = runWithId(ids[0]);
  const RunData* b = runWithId(ids[1]);
  if (!a || !b) return;
  auto* dialog = new ConfigDiffDialog(*a, *b, this);
  dialog->setAttribute(Qt::WA_DeleteOnClose);
  dialog->show();
}

void RunsPanel::showContextMenu(const QPoint& pos) {
  const QModelIndex at = m_view->indexAt(pos);
  RunData* r = m_model->runAt(sourceRow(at.row()));
  if (!r) return;
  // Right-clicking outside the selection selects that row; inside, the selection stays.
  if (!m_view->selectionModel()->isRowSelected(at.row(), {})) selectRun(r->id);
  m_view->selectionModel()->setCurrentIndex(at, QItemSelectionModel::NoUpdate);
  updateActions();
  const int id = r->id;
  QMenu menu(this);
  menu.addAction(tr("Use as baseline for every run"), this, [this, id] { m_model->setBaselineId(id); });
  if (m_model->baselineId() != 0)
    menu.addAction(tr("Baseline: each group's fp32 run"), this, [this] { m_model->setBaselineId(0); });
  menu.addAction(tr("Load its settings into the experiment"), this,
                 [this, id = r->id] {
                   // By id: the run may have ended and been removed while the menu was open.
                   if (const RunData* run = runWithId(id)) emit loadSettingsRequested(run->config);
                 });
  menu.addAction(m_compare);
  menu.addSeparator();
  menu.addAction(m_selectGroup);
  menu.addAction(m_editTags);
  menu.addAction(m_editNote);
  menu.addSeparator();
  menu.addAction(m_hide);
  menu.addAction(m_showOnly);
  menu.addAction(m_showAll);
  menu.addSeparator();
  menu.addAction(tr("Stop this run"), this, [this, id] { emit stopRunRequested(id); })->setEnabled(isActive(r->status));
  menu.addAction(m_archive);
  menu.addAction(m_restore);
  menu.addAction(m_archiveEnded);
  menu.addAction(m_delete);
  if (!m_fileActions.isEmpty()) {
    menu.addSeparator();
    menu.addActions(m_fileActions);  // they act on selectedRunId(): the row clicked is current
  }
  menu.exec(m_view->viewport()->mapToGlobal(pos));
}

}  // namespace amp::ui

#include "ui/runs_filter_proxy.h"

#include "ui/runs_model.h"

namespace amp::ui {

RunsFilterProxy::RunsFilterProxy(RunsModel* model, QObject* parent)
    : QSortFilterProxyModel(parent), m_runs(model) {
  setSourceModel(model);
  // A status, tag or note that changes may make a row match or stop matching.
  setDynamicSortFilter(true);
}

void RunsFilterProxy::setSearchText(const QString& text) {
  const QStringList words = text.split(QLatin1Char(' '), Qt::SkipEmptyParts);
  if (words == m_words) return;
  m_words = words;
  invalidateFilter();
}

void RunsFilterProxy::setShowArchived(bool show) {
  if (show == m_showArchived) return;
  m_showArchived = show;
  invalidateFilter();
}

QString RunsFilterProxy::searchableText(int sourceRow) const {
  QStringList parts;
  for (int column : {RunsModel::Name, RunsModel::Mode, RunsModel::Group, RunsModel::Status, RunsModel::Tags})
    parts << m_runs->index(sourceRow, column).data(Qt::DisplayRole).toString();
  parts << m_runs->index(sourceRow, RunsModel::Note).data(Qt::EditRole).toString();  // the whole note
  return parts.join(QLatin1Char('\n'));
}

bool RunsFilterProxy::filterAcceptsRow(int sourceRow, const QModelIndex& sourceParent) const {
  if (sourceParent.isValid()) return true;
  if (!m_showArchived)
    if (const RunData* r = m_runs->runAt(sourceRow); r && r->archived) return false;
  if (m_words.isEmpty()) return true;
  const QString text = searchableText(sourceRow);
  for (const QString& w : m_words)
    if (!text.contains(w, Qt::CaseInsensitive)) return false;
  return true;
}

}  // namespace amp::ui

// The runs table's search box behind the view: a row stays when every word typed appears (any
// case) in its name, mode, group, tags, note or status, so "twins fp16" finds the fp16 run of
// the twin groups and "diverged" every diverged run. Archived runs (RunData::archived) are
// listed only while setShowArchived(true).
#pragma once

#include <QSortFilterProxyModel>
#include <QStringList>

namespace amp::ui {

class RunsModel;

class RunsFilterProxy : public QSortFilterProxyModel {
  Q_OBJECT

 public:
  explicit RunsFilterProxy(RunsModel* model, QObject* parent = nullptr);
  void setSearchText(const QString& text);
  void setShowArchived(bool show);
  bool showArchived() const { return m_showArchived; }
  // What a row is searched in, one string (for tests and the search box's tooltip).
  QString searchableText(int sourceRow) const;

 protected:
  bool filterAcceptsRow(int sourceRow, const QModelIndex& sourceParent) const override;

 private:
  RunsModel* m_runs;
  QStringList m_words;
  bool m_showArchived = false;
};

}  // namespace amp::ui

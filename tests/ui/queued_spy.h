// A QSignalSpy for signals emitted on another thread (a TrainingWorker's). QSignalSpy connects
// directly, so it appends to its list on the emitting thread while the test reads that list on
// its own: a data race (ThreadSanitizer reports it). This spy is connected queued instead, so it
// records each emission on the test's thread, when the test's event loop runs (QTRY_* does).
#pragma once

#include <QList>
#include <QObject>
#include <QVariant>

namespace amp::test {

class QueuedSpy : public QObject {
 public:
  template <class Sender, class Signal>
  QueuedSpy(const Sender* sender, Signal signal) {
    connect(
        sender, signal, this,
        [this](const auto&... args) { m_calls.append(QVariantList{QVariant::fromValue(args)...}); },
        Qt::QueuedConnection);
  }
  qsizetype size() const { return m_calls.size(); }
  qsizetype count() const { return m_calls.size(); }
  bool isEmpty() const { return m_calls.isEmpty(); }
  const QVariantList& operator[](qsizetype i) const { return m_calls[i]; }
  const QVariantList& first() const { return m_calls.first(); }
  const QVariantList& last() const { return m_calls.last(); }

 private:
  QList<QVariantList> m_calls;
};

}  // namespace amp::test

#include "app/gui_skip_streak.h"

#include <QCoreApplication>
#include <cmath>

#include "engine/train/event_text.h"

namespace amp::gui {

namespace {
QString tr(const char* text) { return QCoreApplication::translate("SkipStreak", text); }
}  // namespace

QString SkipStreak::cause(const StepMetrics& m) {
  if (!std::isfinite(m.loss)) return tr("non-finite loss");
  if (m.postUnscaleOverflow) return tr("gradients overflowed after unscaling");
  if (!m.firstNonFinite.empty())
    return tr("non-finite gradients in %1").arg(QString::fromStdString(m.firstNonFinite));
  return tr("non-finite gradients");
}

QStringList SkipStreak::add(const StepMetrics& m, const QStringList& lines) {
  if (!m.skipped || m.injected) {
    QStringList out = close();
    out << lines;
    return out;
  }
  const QString why = cause(m);
  if (m_cause.isEmpty() || why != m_cause || m.step != m_last + 1) {
    // A new streak: its first step keeps its full line.
    QStringList out = close();
    out << lines;
    m_cause = why;
    m_first = 0;
    m_last = m.step;
    return out;
  }
  // A follow-up of the open streak: its skip line (the first) is held back until the streak
  // ends; anything else it reports (the divergence) is said now.
  if (m_first == 0) {
    m_first = m.step;
    m_scaleFrom = m.scale;
    m_heldLines = lines.mid(0, 1);
  } else {
    m_heldLines.clear();
  }
  m_last = m.step;
  m_scaleTo = m.scaleAfter;
  return lines.mid(1);
}

QStringList SkipStreak::finish() { return close(); }

QStringList SkipStreak::close() {
  QStringList out;
  if (!m_cause.isEmpty() && m_first > 0) {
    if (m_first == m_last) {
      out = m_heldLines;
    } else {
      QString line = tr("steps %1–%2 skipped: %3").arg(m_first).arg(m_last).arg(m_cause);
      if (m_scaleTo != m_scaleFrom)
        line += tr(", scale %1 → %2")
                    .arg(QString::fromStdString(formatScale(m_scaleFrom)),
                         QString::fromStdString(formatScale(m_scaleTo)));
      out << line;
    }
  }
  m_cause.clear();
  m_first = m_last = 0;
  m_heldLines.clear();
  return out;
}

}  // namespace amp::gui

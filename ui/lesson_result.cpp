#include "ui/lesson_result.h"

#include <QCoreApplication>
#include <QStringList>

namespace amp::ui {

QString verdictName(LessonResult::Verdict v) {
  switch (v) {
    case LessonResult::Verdict::Confirmed: return QCoreApplication::translate("LessonResult", "Confirmed");
    case LessonResult::Verdict::NotConfirmed: return QCoreApplication::translate("LessonResult", "Not confirmed");
    case LessonResult::Verdict::Inconclusive: break;
  }
  return QCoreApplication::translate("LessonResult", "Inconclusive");
}

QString verdictText(const LessonResult& r) {
  if (r.verdict == LessonResult::Verdict::Inconclusive && r.notMeasurable)
    return QCoreApplication::translate("LessonResult", "Inconclusive: not measurable here");
  return verdictName(r.verdict);
}

QString LessonResult::logLine() const {
  QStringList parts;
  for (const Finding& f : findings) parts << QStringLiteral("%1: %2").arg(f.label, f.text);
  QString line = QCoreApplication::translate("LessonResult", "Lesson '%1' measured: %2").arg(title, parts.join(QStringLiteral("; ")));
  if (!criterion.isEmpty()) line += QStringLiteral(" — %1: %2").arg(verdictText(*this).toLower(), criterion);
  if (!note.isEmpty()) line += QStringLiteral(". %1").arg(note);
  return line;
}

}  // namespace amp::ui

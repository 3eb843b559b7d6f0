// What a lesson measured, as its result panel shows it: the claim its text makes in plain words,
// one finding per run in the numbers this machine produced, and whether those numbers confirm
// the claim (by a stated criterion, never by decree). Built in app/gui_lesson_conclusion.cpp from
// the lesson's runs; shown by LessonResultView above the charts, and written to the event log.
#pragma once

#include <QColor>
#include <QString>
#include <QVector>

namespace amp::ui {

struct LessonResult {
  enum class Verdict { Confirmed, NotConfirmed, Inconclusive };
  struct Finding {
    int runId = 0;
    QString label;  // the variant ("fp16_noscale")
    QColor color;   // the run's colour, so the finding points at its line in the charts
    QString text;   // "100% of 0.weight's gradients were zero, final loss 0.7047"
  };
  QString lesson;    // "underflow"
  QString title;     // "Underflow without loss scaling"
  QString claim;     // what the lesson set out to show
  QVector<Finding> findings;
  Verdict verdict = Verdict::Inconclusive;
  // Inconclusive because this machine cannot test the claim (a GPU's speed-up on a CPU that
  // emulates fp16, losses that agree because nothing was learned): "Inconclusive: not measurable
  // here", never a "Confirmed" the screen contradicts.
  bool notMeasurable = false;
  QString criterion;  // what "confirmed" was measured against, with the numbers that decided it
  QString note;       // what else the class should know (e.g. this CPU emulates fp16), or empty
  QString chart;      // the dashboard chart that shows it ("histogram", "scale", "loss", ...)

  bool isEmpty() const { return findings.isEmpty(); }
  // The one event-log line: "Lesson 'X' measured: <finding>; <finding> — confirmed: <criterion>".
  QString logLine() const;
};

QString verdictName(LessonResult::Verdict v);  // "Confirmed", "Not confirmed", "Inconclusive"
// The verdict as the result panel's headline and the log say it: verdictName, or "Inconclusive:
// not measurable here" for a result marked notMeasurable.
QString verdictText(const LessonResult& r);

}  // namespace amp::ui
